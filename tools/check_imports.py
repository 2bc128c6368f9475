"""Check statically that each library imports only what its pyproject declares.

Rules, for every ``import x`` / ``from x import y`` under ``src/`` (the standard library is
skipped; relative imports are resolved against the importing module):

``top-level-needs-required``
    An import that runs when the module is imported (module level, including ``try:`` and
    ``if`` blocks there, and class bodies) must come from ``[project].dependencies``.
``outside-module-extra``
    A module listed in the card's ``optional-modules`` (``[tool.icml25]`` of the pyproject, e.g.
    ``optional-modules = { "fedswa.flower" = "flower" }``), and each of its submodules, belongs to
    that extra: at module level it may import the dependencies and the extra's requirements, and
    nothing else. Lazily it may import anything declared, like any module.
``imports-optional-module``
    A module may not import, at module level, a listed module of the library whose extra its own
    does not include (a module of no extra includes none; relative imports count): ``import
    <lib>`` and its other modules must work without the extras.
``undeclared``
    An import inside a function or method body (lazy) may come from the dependencies or from any
    ``[project.optional-dependencies]`` extra; so may one under ``if TYPE_CHECKING:``. Anything
    else is undeclared.
``sibling-library``
    Importing another library of this repository is always an error, even if declared.
``core-numpy-only``
    The core (``shared/``, ``icml25-core``) imports only numpy at module level; anything else
    lazily, inside the function that needs it, or in a module its card lists under an extra.

Import names map to distributions by PEP 503 normalisation (``icml25_core`` <-> ``icml25-core``)
and the alias table ``ALIASES`` for the known mismatches (``sklearn`` -> ``scikit-learn``).
Extras that name the library itself (``permucate[plot]``) are resolved recursively. A malformed
``optional-modules`` (not a table of module = extra, a module outside the library's package or
without a file under ``src/``, an extra that is not declared) is an error naming the pyproject.

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

Requirement = tuple[str, frozenset[str]]  # normalised distribution name, the extras it asks for

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
    "open_clip_train": ("open-clip-torch",),
    "imwatermark": ("invisible-watermark",),
    "igraph": ("igraph", "python-igraph"),
    "pkg_resources": ("setuptools",),
}

RULE_TOP = "top-level-needs-required"
RULE_UNDECLARED = "undeclared"
RULE_SIBLING = "sibling-library"
RULE_CORE = "core-numpy-only"
RULE_MODULE_EXTRA = "outside-module-extra"
RULE_OPTIONAL_MODULE = "imports-optional-module"
OPTIONAL_MODULES = "optional-modules"  # the card field: module -> the extra it belongs to
CORE_TOP_LEVEL = frozenset({"numpy"})
# Contexts an import statement runs in.
TOP, LAZY, TYPING = "module level", "lazy", "TYPE_CHECKING"
_REQUIREMENT = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def _names(requirements: set[Requirement]) -> set[str]:
    return {name for name, _ in requirements}


@dataclass
class Target:
    """One distribution to check: a library under packages/ or the core."""

    dist: str
    folder: Path
    import_name: str
    dependencies: set[Requirement] = field(default_factory=set)
    extras: dict[str, set[Requirement]] = field(default_factory=dict)  # extra -> requirements
    is_core: bool = False
    optional_modules: dict[str, str] = field(default_factory=dict)  # module -> its extra

    @property
    def required(self) -> set[str]:
        """The distributions of ``[project].dependencies``."""
        return _names(self.dependencies)

    @property
    def optional(self) -> dict[str, set[str]]:
        """Extra -> the distributions it installs."""
        return {extra: _names(group) for extra, group in self.extras.items()}

    def extra_of(self, module: str) -> str | None:
        """The extra `module` belongs to: that of the innermost listed module holding it."""
        owners = [m for m in self.optional_modules if module == m or module.startswith(m + ".")]
        return self.optional_modules[max(owners, key=len)] if owners else None

    def module_level(self, extra: str | None) -> set[str]:
        """The distributions a module of `extra` (None: of no extra) may import at its top."""
        base = self.required & CORE_TOP_LEVEL if self.is_core else self.required
        return base | (_names(self.extras[extra]) if extra else set())

    def includes(self, extra: str | None, other: str) -> bool:
        """Whether installing `extra` (None: no extra) installs all that `other` installs."""
        have = self.dependencies | (self.extras[extra] if extra else set())
        return all(
            any(name == got and wanted <= given for got, given in have)
            for name, wanted in self.extras[other]
        )


@dataclass(frozen=True)
class Import:
    module: str
    line: int
    context: str
    names: tuple[str, ...] = ()  # for `from module import a, b`: the imported names
    level: int = 0  # leading dots of a relative import (`from ..x import y`: 2, module "x")


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
    requirements: list[str], self_name: str, extras_table: dict[str, list[str]]
) -> set[str]:
    """Distributions named by `requirements`, following ``<self>[extra]`` references.

    Raises
    ------
    ValueError
        If a requirement is malformed or names an extra of the library that is not defined.
    """
    return _names(resolve_requirements(requirements, self_name, extras_table))


def resolve_requirements(
    requirements: list[str], self_name: str, extras_table: dict[str, list[str]], seen=None
) -> set[Requirement]:
    """Like :func:`resolve`, keeping the extras each distribution is asked for."""
    seen = set() if seen is None else seen
    found = set()
    for text in requirements:
        name, extras = parse_requirement(text)
        if name != self_name:
            found.add((name, frozenset(normalize(e) for e in extras)))
            continue
        for extra in extras:
            key = normalize(extra)
            if key in seen:
                continue
            seen.add(key)
            group = next((v for k, v in extras_table.items() if normalize(k) == key), None)
            if group is None:
                raise ValueError(f"{text!r} refers to an extra [{extra}] that is not defined")
            found |= resolve_requirements(group, self_name, extras_table, seen)
    return found


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
    data = read_toml(pyproject)
    project = data.get("project", {})
    dist = project.get("name") or folder.name
    self_name = normalize(dist)
    extras_table = project.get("optional-dependencies", {})
    try:
        dependencies = resolve_requirements(
            project.get("dependencies", []), self_name, extras_table
        )
        extras = {
            extra: resolve_requirements(reqs, self_name, extras_table)
            for extra, reqs in extras_table.items()
        }
    except ValueError as error:
        raise CatalogueError(f"{pyproject}: {error}") from error
    card = data.get("tool", {}).get("icml25", {})
    package = import_name(self_name)
    modules = optional_modules(card.get(OPTIONAL_MODULES, {}), pyproject, package, extras_table)
    return Target(dist, folder, package, dependencies, extras, is_core, modules)


def optional_modules(
    table, pyproject: Path, package: str, extras_table: dict[str, list[str]]
) -> dict[str, str]:
    """The card's ``optional-modules`` checked: module -> its extra, spelt as the pyproject does.

    Raises
    ------
    CatalogueError
        If `table` is not a table of module names to extra names, a module is not a submodule of
        `package` or has no file under ``src/``, or an extra is not declared in
        ``[project.optional-dependencies]``.
    """
    where = f"{pyproject}: [tool.icml25] {OPTIONAL_MODULES}"
    if not isinstance(table, dict):
        raise CatalogueError(
            f'{where} must be a table of module = "extra", such as '
            f'{{ "{package}.flower" = "flower" }}, got {table!r}'
        )
    declared = {normalize(extra): extra for extra in extras_table}
    modules = {}
    for module, extra in table.items():
        if not _DOTTED.fullmatch(module) or not module.startswith(package + "."):
            raise CatalogueError(
                f"{where}: {module!r} is not a submodule of the library's package {package!r} "
                f"(a dotted name such as '{package}.flower')"
            )
        path = pyproject.parent.joinpath("src", *module.split("."))
        if not (path.with_name(path.name + ".py").is_file() or (path / "__init__.py").is_file()):
            shown = "/".join(module.split("."))
            raise CatalogueError(
                f"{where}: module {module!r} not found (no src/{shown}.py or "
                f"src/{shown}/__init__.py)"
            )
        if not isinstance(extra, str) or normalize(extra) not in declared:
            raise CatalogueError(
                f"{where}: {module!r} must name an extra of [project.optional-dependencies] "
                f"({', '.join(extras_table) or 'none declared'}), got {extra!r}"
            )
        modules[module] = declared[normalize(extra)]
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


class _Collector(ast.NodeVisitor):
    """Collect imports with the context they run in."""

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
        if node.module == "__future__":
            return
        names = tuple(a.name for a in node.names if a.name != "*")
        module = node.module or ""
        self.imports.append(Import(module, node.lineno, self.context, names, node.level))


def collect_imports(source: str, filename: str = "<source>") -> list[Import]:
    """Imports of a module's source, absolute and relative, each with its line and context.

    Raises
    ------
    SyntaxError
        If `source` does not parse.
    """
    collector = _Collector()
    collector.visit(ast.parse(source, filename=filename))
    return collector.imports


def module_name(path: Path, src: Path) -> str:
    """The dotted name of the module in file `path` under `src` (a package's ``__init__``: it)."""
    parts = path.relative_to(src).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def absolute(imp: Import, module: str, is_package: bool) -> str | None:
    """The absolute module `imp` imports from, seen from `module`; None above the top package."""
    if not imp.level:
        return imp.module
    package = module.split(".") if is_package else module.split(".")[:-1]
    if imp.level > len(package):
        return None  # Python refuses it ("beyond top-level package"); nothing to check
    base = package[: len(package) - imp.level + 1]
    return ".".join([*base, imp.module] if imp.module else base)


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
        module = module_name(path, src)
        for imp in imports:
            name = absolute(imp, module, path.name == "__init__.py")
            top = (name or "").split(".")[0]
            if top == target.import_name:
                message = _judge_own(target, imp, name, module)
            elif imp.level or top in sys.stdlib_module_names:
                continue
            else:
                message = _judge(target, imp, module, others)
            if message:
                problems.append(f"{shown}:{imp.line}: {message}")
    return problems


def _judge_own(target: Target, imp: Import, name: str, module: str) -> str | None:
    """The violation message of `module` importing its library's `name`, or None if allowed."""
    if imp.context != TOP:
        return None
    extra = target.extra_of(module)
    for dotted in (name, *(f"{name}.{n}" for n in imp.names)):
        needed = target.extra_of(dotted)
        if needed is None or needed == extra or target.includes(extra, needed):
            continue
        importer = f"to extra [{extra}], which does not include it" if extra else "to no extra"
        return (
            f"{imp.context} import of {name!r} [{RULE_OPTIONAL_MODULE}]: {dotted} belongs to "
            f"extra [{needed}] ({OPTIONAL_MODULES} of the card) and {module} {importer}: "
            f"importing it at module level makes `import {module}` need [{needed}]; import it "
            f"inside the function that needs it"
        )
    return None


def _judge(target: Target, imp: Import, module: str, others: dict) -> str | None:
    """The violation message of `module`'s import of another distribution, or None."""
    what = f"{imp.context} import of {imp.module!r}"
    top = imp.module.split(".")[0]
    if top in others:
        return (
            f"{what} [{RULE_SIBLING}]: {top!r} is another library of this repository "
            f"({others[top]}); libraries never import each other, even when declared: copy the "
            f"code into {target.dist}, or move it into {CORE_DIST} if three libraries need it"
        )
    dists = candidates(imp.module, imp.names)
    provider = " or ".join(expected(imp.module))
    extras = ", ".join(f"[{e}]" for e in _extras_of(target, dists))
    if imp.context == TOP:
        extra = target.extra_of(module)
        if dists & target.module_level(extra):
            return None
        if extra:
            declared = (
                f"{provider!r} is declared only in extra {extras}"
                if extras
                else f"no declared distribution provides it (looked for {provider!r})"
            )
            return (
                f"{what} [{RULE_MODULE_EXTRA}]: {module} belongs to extra [{extra}] "
                f"({OPTIONAL_MODULES} of the card), so at module level it imports only the "
                f"dependencies and [{extra}]; {declared}: add it to [{extra}] of "
                f"{target.folder.name}/pyproject.toml, or import it inside the function that "
                f"needs it"
            )
        if target.is_core:
            return (
                f"{what} [{RULE_CORE}]: {CORE_DIST} imports only numpy at module level; "
                f"import {imp.module!r} inside the function that needs it"
            )
        if extras:
            listing = (
                ""
                if module == target.import_name
                else (f", list {module} under that extra in {OPTIONAL_MODULES} of the card")
            )
            return (
                f"{what} [{RULE_TOP}]: {provider!r} is declared only in extra {extras}, which "
                f"users may not install; import it inside the function that needs it{listing}, "
                f"or move it to [project].dependencies"
            )
        return (
            f"{what} [{RULE_UNDECLARED}]: no declared distribution provides it (looked for "
            f"{provider!r}); add it to [project].dependencies of "
            f"{target.folder.name}/pyproject.toml (or to an extra and import it lazily); if the "
            f"distribution's name differs from the import name, add it to ALIASES in "
            f"tools/check_imports.py"
        )
    if target.is_core or dists & target.required.union(*target.optional.values()):
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
        "(module-level imports: required dependencies, plus its extra in a module of the "
        "card's optional-modules; lazy ones: dependencies or extras) and no other library of "
        "this repository.",
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
