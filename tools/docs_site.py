"""Sources of the API reference site, collected statically, and the public-docstring check.

Run by ``nox -s docs`` inside the docs venv (mkdocs-material, mkdocstrings-python and griffe; no
torch, no library installed): the libraries' sources are read, never imported, by griffe.

    python tools/docs_site.py check              # every public name has a docstring, else exit 1
    python tools/docs_site.py write OUT --katex DIR   # OUT/mkdocs.yml and OUT/docs/*.md

What a library's API page documents: the package's ``__all__`` and every other module of it that
declares an ``__all__`` naming something the package does not export (the modules of an extra,
such as ``fedswa.flower``, which ``import fedswa`` never imports). "Public" means exported by
such an ``__all__``; for a class, also its methods and properties whose names do not start with
``_``, defined in the class itself. mkdocs' strict mode fails on broken references but not on a
missing docstring: ``check`` is that second gate.
"""

from __future__ import annotations

import argparse
import difflib
import itertools
import json
import logging
import re
import shutil
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import griffe

ROOT = Path(__file__).resolve().parent.parent
CORE = "icml25-core"
SITE_NAME = "icml25 — ICML 2025 methods as libraries"
LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")  # Markdown links and images
REPR_HOOKS = {"extra_repr"}  # torch's repr hook: nothing a reader looks up
ALIASES = {"shared": CORE}  # folder names accepted for a distribution name (as nox does)
# numpydoc's section titles (numpydoc format guide); an underlined title close to one of them is
# a typo griffe would render as a plain heading instead of the section
SECTIONS = {
    "Parameters", "Returns", "Yields", "Receives", "Other Parameters", "Raises", "Warns",
    "Warnings", "See Also", "Notes", "References", "Examples", "Attributes", "Methods",
}  # fmt: skip


@dataclass(frozen=True)
class Library:
    """One distribution of the repository: its name, folder and import name."""

    dist: str
    folder: Path

    @property
    def package(self) -> str:
        return self.dist.replace("-", "_")

    @property
    def src(self) -> Path:
        return self.folder / "src"

    @property
    def card(self) -> dict:
        text = (self.folder / "pyproject.toml").read_text(encoding="utf-8")
        return tomllib.loads(text).get("tool", {}).get("icml25", {})


def libraries() -> list[Library]:
    """The core, then every library under ``packages/`` in name order."""
    found = [
        Library(p.parent.name, p.parent) for p in sorted(ROOT.glob("packages/*/pyproject.toml"))
    ]
    return [Library(CORE, ROOT / "shared"), *found]


def load(library: Library) -> griffe.Module:
    """The library's package as griffe reads it from its sources (aliases inside it resolved)."""
    loader = griffe.GriffeLoader(search_paths=[str(library.src)], allow_inspection=False)
    package = loader.load(library.package)
    loader.resolve_aliases(implicit=False, external=False)
    return package  # type: ignore[return-value]


def _modules(module: griffe.Module) -> Iterator[griffe.Module]:
    yield module
    for member in module.modules.values():
        if not member.is_alias:
            yield from _modules(member)


def _exports(module: griffe.Module) -> list[str]:
    return [str(name) for name in module.exports or ()]


def documented_modules(package: griffe.Module) -> list[griffe.Module]:
    """The package, then each submodule whose ``__all__`` names something the package does not
    export (path order)."""
    top = set(_exports(package))
    extra = [
        module
        for module in _modules(package)
        if module is not package
        and not any(part.startswith("_") for part in module.path.split("."))
        and set(_exports(module)) - top
    ]
    return [package, *sorted(extra, key=lambda m: m.path)]


def _target(module: griffe.Module, name: str) -> griffe.Object | None:
    try:
        member = module[name]
        return member.final_target if member.is_alias else member
    except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None


def own_exports(module: griffe.Module, package: griffe.Module) -> list[str]:
    """The names of `module`'s ``__all__`` (the package's own for the package, else those the
    package does not export: documented once, on the package's section)."""
    if module is package:
        return _exports(module)
    top = set(_exports(package))
    return [name for name in _exports(module) if name not in top]


def _documented(obj: griffe.Object | griffe.Alias) -> bool:
    return bool(obj.docstring and obj.docstring.value.strip())


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def parse_warnings(obj: griffe.Object) -> list[str]:
    """What griffe's numpydoc parser warns about `obj`'s docstring (a section it cannot read, a
    documented parameter the signature lacks): what mkdocs' strict build would fail on."""
    if not _documented(obj):
        return []
    handler = _Collect()
    logger = logging.getLogger("griffe")
    logger.addHandler(handler)
    try:
        obj.docstring.parse("numpy")  # type: ignore[union-attr]
    finally:
        logger.removeHandler(handler)
    messages = [m.split(": ", 1)[-1] if ": " in m else m for m in handler.messages]
    lines = obj.docstring.value.splitlines()  # type: ignore[union-attr]
    for above, below in itertools.pairwise(lines):
        title, underline = above.strip(), below.strip()
        is_heading = set(underline) == {"-"} and len(underline) == len(title) > 0
        near = difflib.get_close_matches(title, SECTIONS, n=1, cutoff=0.75) if is_heading else []
        if near and title not in SECTIONS:  # other headings are a module's own (Markdown h2)
            messages.append(f"section {title!r} is not numpydoc's {near[0]!r} (misspelt?)")
    return messages


def missing_docstrings(library: Library) -> list[str]:
    """``"<path>: <why>"`` for each public name of the library without a docstring."""
    problems = []
    package = load(library)
    for module in documented_modules(package):
        checked: list[tuple[str, griffe.Object]] = [(module.path, module)]
        for name in own_exports(module, package):
            obj = _target(module, name)
            if obj is None:
                problems.append(f"{module.path}.{name}: in __all__ but not found in the sources")
                continue
            if obj.is_attribute or obj.is_module:
                continue  # constants and re-exported modules are described where they are used
            checked.append((f"{module.path}.{name}", obj))
            if obj.is_class:
                for member_name, member in obj.members.items():
                    if member_name.startswith("_") or member.is_alias or member_name in REPR_HOOKS:
                        continue
                    is_property = member.is_attribute and "property" in member.labels
                    if member.is_function or is_property:
                        checked.append((f"{module.path}.{name}.{member_name}", member))
        for path, obj in checked:
            if not _documented(obj):
                problems.append(f"{path}: no docstring")
            problems += [f"{path}: docstring: {warning}" for warning in parse_warnings(obj)]
    return problems


def check(selected: list[Library]) -> int:
    failures = {lib.dist: missing_docstrings(lib) for lib in selected}
    for dist, problems in failures.items():
        for problem in problems:
            print(f"{dist}: {problem}")
    total = sum(map(len, failures.values()))
    print(
        f"public docstrings: {total} problems in {len(selected)} distributions"
        if total
        else f"public docstrings: complete in {len(selected)} distributions"
    )
    return 1 if total else 0


def _page_links(text: str, library: Library) -> str:
    """README links as the site serves them: a link into the repository (a figure, a results
    file) points at the file beside the page; anchors, absolute URLs and anything inside code
    (fenced blocks, inline spans such as ``net[0](x)``) are unchanged."""

    def fix(match: re.Match[str]) -> str:
        bang, label, target = match.groups()
        if re.match(r"^[a-z]+:|^#|^/", target):
            return match.group(0)
        if (library.folder / target / "README.md").is_file():
            target = f"{target.rstrip('/')}/README.md"  # a folder's page is its README
        return f"{bang}[{label}]({library.dist}/{target})"

    out, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced or line.lstrip().startswith("```"):
            out.append(line)
            continue
        parts = re.split(r"(`[^`]*`)", line)  # odd parts are inline code spans
        out.append("".join(p if i % 2 else LINK.sub(fix, p) for i, p in enumerate(parts)))
    return "\n".join(out)


LIST_ITEM = re.compile(r"^([-*+]|\d+\.) ")


def separate_lists(text: str) -> str:
    """A blank line before each list that starts right under a paragraph line, outside code
    blocks: GitHub renders such a list, Python-Markdown reads it as the paragraph's text."""
    out: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        previous = out[-1] if out else ""
        if (
            not fenced
            and LIST_ITEM.match(line)
            and previous.strip()
            and not LIST_ITEM.match(previous)
            and not previous.startswith((" ", "#", "|", ">"))
        ):
            out.append("")
        out.append(line)
    return "\n".join(out)


def library_page(library: Library, package: griffe.Module) -> str:
    readme = (library.folder / "README.md").read_text(encoding="utf-8")
    lines = [separate_lists(_page_links(readme, library)).rstrip(), "", "## API reference", ""]
    for module in documented_modules(package):
        names = [n for n in own_exports(module, package) if not n.startswith("__")]
        members = json.dumps(names)
        lines += [f"### `{module.path}`", "", f"::: {module.path}", "    options:"]
        lines += [f"      members: {members}", ""]
    return "\n".join(lines)


def _repository_files(text: str) -> set[str]:
    return {
        target for _, _, target in LINK.findall(text) if not re.match(r"^[a-z]+:|^#|^/", target)
    }


def write(out: Path, katex: Path) -> None:
    """``out/mkdocs.yml`` and ``out/docs/``: a home page, one page per distribution (README card
    and API reference), the files the READMEs link to, and KaTeX from `katex` (its ``dist``)."""
    katex, out = katex.resolve(), out.resolve()
    if not (katex / "katex.min.js").is_file():
        raise SystemExit(f"--katex {katex}: no katex.min.js there (KaTeX's dist folder expected)")
    if out == katex or katex in out.parents or out in katex.parents:
        raise SystemExit(f"the output {out} and --katex {katex} must not contain each other")
    docs = out / "docs"
    if docs.exists() and not (out / "mkdocs.yml").is_file():
        raise SystemExit(f"{docs} exists and is not a site this tool wrote: refusing to replace it")
    shutil.rmtree(docs, ignore_errors=True)
    docs.mkdir(parents=True)
    nav, rows = [], []
    for library in libraries():
        package = load(library)
        page = f"{library.dist}.md"
        (docs / page).write_text(library_page(library, package), encoding="utf-8")
        readme = (library.folder / "README.md").read_text(encoding="utf-8")
        for target in _repository_files(readme):
            source = library.folder / target.split("#")[0]
            if source.is_file():
                (docs / library.dist / target).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, docs / library.dist / target.split("#")[0])
            elif source.is_dir():
                shutil.copytree(source, docs / library.dist / target, dirs_exist_ok=True)
        summary = (
            (package.docstring.value.strip().splitlines() or [""])[0] if package.docstring else ""
        )
        nav.append({"Core (icml25-core)" if library.dist == CORE else library.dist: page})
        paper = library.card.get("paper", "the shared core of every library")
        rows.append(f"| [{library.dist}]({page}) | `{library.package}` | {paper} | {summary} |")
    home = [
        f"# {SITE_NAME}",
        "",
        "Each ICML 2025 paper ships as its own pip-installable library; this site gathers their",
        "README cards and API references (built from the public docstrings, `__all__`).",
        "",
        "| Distribution | Import | Paper | Summary |",
        "|---|---|---|---|",
        *rows,
        "",
    ]
    (docs / "index.md").write_text("\n".join(home), encoding="utf-8")
    assets = docs / "assets" / "katex"
    shutil.copytree(katex, assets)
    (docs / "assets" / "katex-render.js").write_text(KATEX_RENDER, encoding="utf-8")
    (out / "mkdocs.yml").write_text(mkdocs_yml(nav), encoding="utf-8")


KATEX_RENDER = """\
// Typeset the math pymdownx.arithmatex wrapped (generic mode), also after instant navigation.
function renderMath() {
  document.querySelectorAll(".arithmatex").forEach(function (element) {
    renderMathInElement(element, {
      delimiters: [
        { left: "\\\\(", right: "\\\\)", display: false },
        { left: "\\\\[", right: "\\\\]", display: true },
      ],
      throwOnError: true,
    });
  });
}
if (typeof document$ !== "undefined") { document$.subscribe(renderMath); }
else { document.addEventListener("DOMContentLoaded", renderMath); }
"""


def mkdocs_yml(nav: list[dict[str, str]]) -> str:
    """The site's configuration (YAML; lists and strings written as JSON, YAML's subset)."""
    return f"""\
site_name: {json.dumps(SITE_NAME)}
docs_dir: docs
site_dir: site
use_directory_urls: false  # the site opens from file:// as well as from a server
strict: true
theme:
  name: material
  features: [navigation.sections, navigation.top, content.code.copy, toc.follow]
  font: false  # no Google Fonts request: the site renders offline
markdown_extensions:
  - admonition
  - attr_list
  - tables
  - toc:
      permalink: true
  - pymdownx.arithmatex:
      generic: true
  - pymdownx.highlight
  - pymdownx.superfences
extra_css: [assets/katex/katex.min.css]
extra_javascript:
  - assets/katex/katex.min.js
  - assets/katex/contrib/auto-render.min.js
  - assets/katex-render.js
plugins:
  - search
  - mkdocstrings:
      handlers:
        python:
          paths: {json.dumps([str(lib.src) for lib in libraries()])}
          options:
            docstring_style: numpy
            show_source: false
            show_root_heading: false
            show_root_toc_entry: false
            members_order: source
            filters: ["!^_"]
            show_if_no_docstring: false
            heading_level: 4
            merge_init_into_class: true
            separate_signature: true
            show_signature_annotations: true
            allow_inspection: false
validation:
  links:
    not_found: warn
    anchors: warn
    absolute_links: info
    unrecognized_links: warn
nav: {json.dumps([{"Home": "index.md"}, nav[0], {"Libraries": nav[1:]}])}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    check_cmd = commands.add_parser("check", help="fail on a public name without a docstring")
    check_cmd.add_argument("dists", nargs="*", help="distributions (default: all)")
    write_cmd = commands.add_parser("write", help="write mkdocs.yml and the pages")
    write_cmd.add_argument("out", type=Path)
    write_cmd.add_argument("--katex", type=Path, required=True, help="KaTeX's dist/ folder")
    args = parser.parse_args(argv)
    if args.command == "check":
        known = {lib.dist: lib for lib in libraries()}
        names = [ALIASES.get(d, d) for d in args.dists]
        unknown = [d for d in names if d not in known]
        if unknown:
            parser.error(
                f"unknown distribution(s): {', '.join(unknown)}; known: {', '.join(known)}"
            )
        return check([known[d] for d in names] if names else list(known.values()))
    write(args.out, args.katex)
    return 0


if __name__ == "__main__":
    sys.exit(main())
