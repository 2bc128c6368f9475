"""Check statically that each library imports only what its pyproject declares.

Rules, for every absolute ``import x`` / ``from x import y`` under ``src/`` (relative imports,
the standard library and the library's own package are skipped):

``top-level-needs-required``
    An import that runs when the module is imported (module level, including ``try:`` and
    ``if`` blocks there, and class bodies) must come from ``[project].dependencies``.
``undeclared``
    An import inside a function or method body (lazy) may come from the dependencies or from any
    ``[project.optional-dependencies]`` extra; so may one under ``if TYPE_CHECKING:``. Anything
    else is undeclared.
``sibling-library``
    Importing another library of this repository is always an error, even if declared.
``core-numpy-only``
    The core (``shared/``, ``icml25-core``) imports only numpy at module level; anything else
    lazily, inside the function that needs it (it has no extras to declare it in).

Import names map to distributions by PEP 503 normalisation (``icml25_core`` <-> ``icml25-core``)
and the alias table ``ALIASES`` for the known mismatches (``sklearn`` -> ``scikit-learn``).
Extras that name the library itself (``permucate[plot]``) are resolved recursively.

Usage::

    python tools/check_imports.py                       # every library and the core
    python tools/check_imports.py permucate icml25-core # by distribution name
    python tools/check_imports.py packages/permucate shared
"""

import argparse
import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from _catalogue import (
    CATALOGUE,
    CORE_DIR,
    CORE_DIST,
    REPO_ROOT,
    CatalogueError,
    import_name,
    load_catalogue,
    normalize,
    package_dirs,
    read_toml,
)

# Import name (or dotted prefix) -> the distributions that provide it, where PEP 503
# normalisation of the import name does not give the distribution's name. Extend as needed.
ALIASES: dict[str, tuple[str, ...]] = {
    "sklearn": ("scikit-learn",),
    "skimage": ("scikit-image",),
    "skopt": ("scikit-optimize",),
    "PIL": ("pillow",),
    "yaml": ("pyyaml",),
    "cv2": (
        "opencv-python",
        "opencv-python-headless",
        "opencv-contrib-python",
        "opencv-contrib-python-headless",
    ),
    "attr": ("attrs",),
    "google.protobuf": ("protobuf",),
    "flwr": ("flwr",),
    "Crypto": ("pycryptodome",),
    "Cryptodome": ("pycryptodomex",),
    "nacl": ("pynacl",),
    "jwt": ("pyjwt",),
    "OpenSSL": ("pyopenssl",),
    "dateutil": ("python-dateutil",),
    "dotenv": ("python-dotenv",),
    "bs4": ("beautifulsoup4",),
    "mpl_toolkits": ("matplotlib",),
    "torchvision": ("torchvision",),
    "faiss": ("faiss-cpu", "faiss-gpu"),
    "cupy": ("cupy", "cupy-cuda11x", "cupy-cuda12x"),
    "umap": ("umap-learn",),
    "Bio": ("biopython",),
    "git": ("gitpython",),
    "OpenGL": ("pyopengl",),
    "fitz": ("pymupdf",),
    "zmq": ("pyzmq",),
    "hydra": ("hydra-core",),
    "whisper": ("openai-whisper",),
    "open_clip": ("open-clip-torch",),
    "igraph": ("igraph", "python-igraph"),
    "pkg_resources": ("setuptools",),
}

RULE_TOP = "top-level-needs-required"
RULE_UNDECLARED = "undeclared"
RULE_SIBLING = "sibling-library"
RULE_CORE = "core-numpy-only"
CORE_TOP_LEVEL = frozenset({"numpy"})
# Contexts an import statement runs in.
TOP, LAZY, TYPING = "module level", "lazy", "TYPE_CHECKING"
_REQUIREMENT = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?")


@dataclass
class Target:
    """One distribution to check: a library under packages/ or the core."""

    dist: str
    folder: Path
    import_name: str
    required: set[str] = field(default_factory=set)
    optional: dict[str, set[str]] = field(default_factory=dict)  # extra -> dists
    is_core: bool = False


@dataclass(frozen=True)
class Import:
    module: str
    line: int
    context: str
    names: tuple[str, ...] = ()  # for `from module import a, b`: the imported names


def parse_requirement(text: str) -> tuple[str, tuple[str, ...]]:
    """The normalised name and extras of a PEP 508 requirement string.

    Raises
    ------
    ValueError
        If `text` does not start with a distribution name.
    """
    match = _REQUIREMENT.match(text)
    if not match:
        raise ValueError(f"not a requirement: {text!r}")
    extras = tuple(e.strip() for e in (match.group(2) or "").split(",") if e.strip())
    return normalize(match.group(1)), extras


def resolve(
    requirements: list[str], self_name: str, extras_table: dict[str, list[str]], seen=None
) -> set[str]:
    """Distributions named by `requirements`, following ``<self>[extra]`` references."""
    seen = set() if seen is None else seen
    dists = set()
    for text in requirements:
        name, extras = parse_requirement(text)
        if name != self_name:
            dists.add(name)
            continue
        for extra in extras:
            key = normalize(extra)
            if key in seen:
                continue
            seen.add(key)
            group = next((v for k, v in extras_table.items() if normalize(k) == key), None)
            if group is None:
                raise ValueError(f"{text!r} refers to an extra [{extra}] that is not defined")
            dists |= resolve(group, self_name, extras_table, seen)
    return dists


def load_target(folder: Path, is_core: bool = False) -> Target:
    """Read the dependencies of the distribution in `folder`.

    Raises
    ------
    CatalogueError, ValueError
        If the pyproject is missing or malformed.
    """
    pyproject = folder / "pyproject.toml"
    if not pyproject.is_file():
        raise CatalogueError(f"{pyproject} not found")
    project = read_toml(pyproject).get("project", {})
    dist = project.get("name") or folder.name
    self_name = normalize(dist)
    extras_table = project.get("optional-dependencies", {})
    try:
        required = resolve(project.get("dependencies", []), self_name, extras_table)
        optional = {
            extra: resolve(reqs, self_name, extras_table) for extra, reqs in extras_table.items()
        }
    except ValueError as error:
        raise CatalogueError(f"{pyproject}: {error}") from error
    return Target(dist, folder, import_name(self_name), required, optional, is_core)


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


class _Collector(ast.NodeVisitor):
    """Collect absolute imports with the context they run in."""

    def __init__(self):
        self.imports: list[Import] = []
        self.context = TOP

    def _within(self, context: str, nodes) -> None:
        saved, self.context = self.context, context
        for node in nodes:
            self.visit(node)
        self.context = saved

    def visit_FunctionDef(self, node):
        for child in (*node.decorator_list, node.args, node.returns):
            if child is not None:
                self.visit(child)
        self._within(TYPING if self.context == TYPING else LAZY, node.body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node):
        self.visit(node.test)
        if _is_type_checking(node.test):
            self._within(TYPING, node.body)
        else:
            self._within(self.context, node.body)
        self._within(self.context, node.orelse)

    def visit_Import(self, node):
        for alias in node.names:
            self.imports.append(Import(alias.name, node.lineno, self.context))

    def visit_ImportFrom(self, node):
        if node.level or not node.module or node.module == "__future__":
            return
        names = tuple(a.name for a in node.names if a.name != "*")
        self.imports.append(Import(node.module, node.lineno, self.context, names))


def collect_imports(source: str, filename: str = "<source>") -> list[Import]:
    """Absolute imports of a module's source, each with its line and context.

    Raises
    ------
    SyntaxError
        If `source` does not parse.
    """
    collector = _Collector()
    collector.visit(ast.parse(source, filename=filename))
    return collector.imports


def candidates(module: str, names: tuple[str, ...] = ()) -> set[str]:
    """Normalised distribution names that may provide `module` (and `module.<name>`)."""
    found = set()
    for dotted in (module, *(f"{module}.{name}" for name in names)):
        parts = dotted.split(".")
        for end in range(1, len(parts) + 1):
            prefix = ".".join(parts[:end])
            found |= {normalize(d) for d in ALIASES.get(prefix, ())}
            found.add(normalize(prefix))
    return found


def expected(module: str) -> list[str]:
    """The distribution names a contributor should declare for `module`, for messages."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        aliased = ALIASES.get(".".join(parts[:end]))
        if aliased:
            return list(aliased)
    return [normalize(parts[0])]


def siblings(root: Path) -> dict[str, str]:
    """Import name -> folder of every library of the repository (catalogued ones included)."""
    found = {}
    for folder in package_dirs(root):
        found[import_name(folder.name)] = f"packages/{folder.name}/"
        src = folder / "src"
        if src.is_dir():
            for package in src.iterdir():
                if package.is_dir() and package.name.isidentifier():
                    found.setdefault(package.name, f"packages/{folder.name}/")
    kernels = Path(root) / "kernels"
    if kernels.is_dir():
        for folder in kernels.iterdir():
            if folder.is_dir():
                found[import_name(folder.name) + "_kernels"] = f"kernels/{folder.name}/"
    if (Path(root) / CATALOGUE).is_file():
        try:
            for library in load_catalogue(root):
                found.setdefault(library.import_name, f"packages/{library.dist}/ (planned)")
        except CatalogueError:
            pass
    return found


def _extras_of(target: Target, dists: set[str]) -> list[str]:
    return sorted(extra for extra, group in target.optional.items() if group & dists)


def check_target(target: Target, root: Path) -> list[str]:
    """Violations of one distribution, as ``path:line: message`` lines."""
    root = Path(root)
    others = {
        name: where
        for name, where in siblings(root).items()
        if name not in (target.import_name, f"{target.import_name}_kernels")
    }
    any_extra = set().union(*target.optional.values()) if target.optional else set()
    src = target.folder / "src"
    files = sorted(src.rglob("*.py")) if src.is_dir() else []
    problems = []
    for path in files:
        try:
            shown = path.relative_to(root)
        except ValueError:
            shown = path
        try:
            imports = collect_imports(path.read_text(encoding="utf-8"), str(path))
        except SyntaxError as error:
            problems.append(f"{shown}:{error.lineno or 0}: cannot parse: {error.msg}")
            continue
        for imp in imports:
            top = imp.module.split(".")[0]
            if top == target.import_name or top in sys.stdlib_module_names:
                continue
            message = _judge(target, imp, top, others, any_extra)
            if message:
                problems.append(f"{shown}:{imp.line}: {message}")
    return problems


def _judge(target: Target, imp: Import, top: str, others: dict, any_extra: set) -> str | None:
    """The violation message of one import, or None if it is allowed."""
    what = f"{imp.context} import of {imp.module!r}"
    if top in others:
        return (
            f"{what} [{RULE_SIBLING}]: {top!r} is another library of this repository "
            f"({others[top]}); libraries never import each other, even when declared: copy the "
            f"code into {target.dist}, or move it into {CORE_DIST} if three libraries need it"
        )
    dists = candidates(imp.module, imp.names)
    provider = " or ".join(expected(imp.module))
    if target.is_core:
        if imp.context != TOP:
            return None
        if dists & CORE_TOP_LEVEL & target.required:
            return None
        return (
            f"{what} [{RULE_CORE}]: {CORE_DIST} imports only numpy at module level; "
            f"import {imp.module!r} inside the function that needs it"
        )
    if imp.context == TOP:
        if dists & target.required:
            return None
        extras = _extras_of(target, dists)
        if extras:
            listed = ", ".join(f"[{e}]" for e in extras)
            return (
                f"{what} [{RULE_TOP}]: {provider!r} is declared only in extra {listed}, which "
                f"users may not install; import it inside the function that needs it, or move "
                f"it to [project].dependencies"
            )
        return (
            f"{what} [{RULE_UNDECLARED}]: no declared distribution provides it (looked for "
            f"{provider!r}); add it to [project].dependencies of "
            f"{target.folder.name}/pyproject.toml (or to an extra and import it lazily); if the "
            f"distribution's name differs from the import name, add it to ALIASES in "
            f"tools/check_imports.py"
        )
    if dists & (target.required | any_extra):
        return None
    return (
        f"{what} [{RULE_UNDECLARED}]: no declared distribution provides it (looked for "
        f"{provider!r}); add it to an extra in [project.optional-dependencies] of "
        f"{target.folder.name}/pyproject.toml (or to [project].dependencies); if the "
        f"distribution's name differs from the import name, add it to ALIASES in "
        f"tools/check_imports.py"
    )


def find_targets(selection: list[str], root: Path) -> list[Target]:
    """Targets named by distribution name or folder; all libraries and the core if empty.

    Raises
    ------
    LookupError
        If a name matches no library.
    """
    root = Path(root)
    libraries = {folder.name: folder for folder in package_dirs(root)}
    core = root / CORE_DIR
    if not selection:
        targets = [load_target(folder) for folder in libraries.values()]
        if (core / "pyproject.toml").is_file():
            targets.append(load_target(core, is_core=True))
        return targets
    targets = []
    for name in selection:
        path = Path(name)
        folder = (path if path.is_absolute() or path.is_dir() else root / path).resolve()
        if name in (CORE_DIST, CORE_DIR) or folder == core.resolve():
            targets.append(load_target(core, is_core=True))
        elif name in libraries:
            targets.append(load_target(libraries[name]))
        elif folder.parent == (root / "packages").resolve() and folder.is_dir():
            targets.append(load_target(folder))
        else:
            known = ", ".join([*libraries, CORE_DIST]) or "none"
            raise LookupError(f"no library {name!r} (known: {known})")
    return targets


def main(argv=None, root: Path = REPO_ROOT) -> int:
    """Command line entry point; returns the exit status (1 if any violation)."""
    parser = argparse.ArgumentParser(
        prog="python tools/check_imports.py",
        description="Check that each library's src/ imports only what its pyproject declares "
        "(module-level imports: required dependencies; lazy ones: dependencies or extras) and no "
        "other library of this repository.",
    )
    parser.add_argument(
        "dist",
        nargs="*",
        help=f"distribution names or folders (default: every packages/* and {CORE_DIST})",
    )
    parser.add_argument(
        "--root", type=Path, default=root, help="repository root (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    root = args.root
    try:
        targets = find_targets(args.dist, root)
    except LookupError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except (CatalogueError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    problems = [line for target in targets for line in check_target(target, root)]
    for line in problems:
        print(line)
    names = ", ".join(t.dist for t in targets) or "nothing"
    if problems:
        print(f"{len(problems)} import violation(s) in {names}", file=sys.stderr)
        return 1
    print(f"imports ok: {names}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
