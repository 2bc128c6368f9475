"""nox sessions of the icml25 monorepo — the only entry points a contributor needs.

Every library under ``packages/*/`` (and the core, ``shared/``) gets its own virtual environment
per session, holding only ``icml25-core``, the library and the extras that session needs: a test
that passes here proves the library works with nothing but what it declares. Environments live in
``.nox/<session>-<dist>/`` and are reused until the library's ``pyproject.toml``, the core's or
``tools/constraints.txt`` changes (pass ``--fresh`` after ``--`` to rebuild them). With
``ICML25_DROP_VENVS=1`` (set by ``.ci/run``) each library's test venv is deleted once its tests have
run, so disk use peaks at one venv (a torch + Triton venv is ~2.4 GB) instead of all of them.

    nox -s tests                     # core, tools and every library
    nox -s tests -- permucate        # one library (names after --; pytest options after them)
    nox -s tests -- permucate -m "not slow"
    nox -s reproduce                 # every finished library's main job + one summary table
    nox -s compose                   # every library in one venv: pip check, imports, examples
    nox -s typecheck -- permucate    # mypy alone, in the library's test venv (tests runs it too)
    nox -s docs                      # the API reference site, strict, into build/docs/site/
    nox -s lint | build | kernels | bench
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
from pathlib import Path

import nox
from nox.command import CommandFailed

ROOT = Path(__file__).resolve().parent
CORE = "icml25-core"
CONSTRAINTS = ROOT / "tools" / "constraints.txt"
REPORTS = ROOT / "reports"
DIST = ROOT / "dist"
COMPOSE_EXAMPLES = ROOT / "examples" / "compose"
COMPOSE_PIP_LOG = ROOT / ".nox" / "compose-pip.log"  # pip's --log: what --quiet hides
ALIASES = {"shared": CORE}  # folder names a user may type for a distribution name
IMPORT_EACH = """import importlib, sys
for name in sys.argv[1:]:
    print(name, getattr(importlib.import_module(name), "__version__", "imported"))"""
CORE_TORCH_TESTS = [str(p) for p in sorted((ROOT / "shared" / "tests").glob("*torch*.py"))]
# One dev venv for lint, the tools' tests (hypothesis: the core's pytest plugin, which the
# scaffold's generated tests load) and the docs.
DEV_TOOLS = ("pytest", "hypothesis", "ruff", "nox", "mkdocs-material", "mkdocstrings")
DOCS_BUILD = ROOT / "build" / "docs"  # generated pages, mkdocs.yml and the site (site/)
# The site's math renderer, from npm (never a CDN: the site renders offline); the tarball is
# checked against npm's published integrity before use.
KATEX = (
    "0.19.1",
    "sha512-jG8uKntjSEcm2EpQOh0XturpPuuC9r3Sq5HLHdsFdWZT27E672SF19QEi+of0/YeOy15lDgRhKvr5614uRrEf"
    "A==",
)

nox.options.sessions = ["lint", "tests"]
nox.options.default_venv_backend = "none"  # each session builds its own per-library venvs


# ----------------------------------------------------------------------------- discovery
def _pyproject(folder: Path) -> dict:
    return tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))


def libraries() -> dict[str, Path]:
    """``{dist-name: folder}`` of every library under ``packages/``."""
    return {p.parent.name: p.parent for p in sorted(ROOT.glob("packages/*/pyproject.toml"))}


def source_files(folder: Path) -> tuple[Path, ...]:
    """Every file under `folder` except build outputs (``build``, ``dist``, ``__pycache__``)."""
    return tuple(
        path
        for path in sorted(folder.rglob("*"))
        if path.is_file()
        and not {"build", "dist", "__pycache__"} & set(path.relative_to(folder).parts)
    )


def kernel_packages() -> dict[str, Path]:
    """``{name: folder}`` of every native kernel package under ``kernels/``."""
    return {p.parent.name: p.parent for p in sorted(ROOT.glob("kernels/*/pyproject.toml"))}


def card(folder: Path) -> dict:
    """The library's ``[tool.icml25]`` catalogue card (empty for folders without a pyproject)."""
    if not (folder / "pyproject.toml").exists():
        return {}
    return _pyproject(folder).get("tool", {}).get("icml25", {})


def import_name(dist: str) -> str:
    return dist.replace("-", "_")


def select(session: nox.Session, pool: dict[str, Path]) -> tuple[dict[str, Path], list[str]]:
    """Split ``session.posargs`` into the selected names (default: all of ``pool``) and the
    options passed on to the tool (everything from the first argument starting with ``-``)."""
    args = list(session.posargs)
    split = next((i for i, a in enumerate(args) if a.startswith("-")), len(args))
    names = [ALIASES.get(n, n) for n in args[:split]]
    rest = [a for a in args[split:] if a != "--fresh"]
    unknown = [n for n in names if n not in pool]
    if unknown:
        hints = [
            f"{n!r} (did you mean {close[0]!r}?)" if close else repr(n)
            for n in unknown
            for close in [difflib.get_close_matches(n, pool, n=1)]
        ]
        session.error(f"unknown: {', '.join(hints)}; known: {', '.join(pool)}")
    return ({n: pool[n] for n in names} if names else dict(pool)), rest


# ------------------------------------------------------------------------ environments
def _bin(venv: Path, tool: str) -> str:
    return str(venv / "bin" / tool)


def make_venv(
    session: nox.Session,
    name: str,
    requirements: list[str],
    *,
    stamp_files: tuple[Path, ...] = (),
    no_deps: tuple[str, ...] = (),
    fresh: bool = False,
) -> Path:
    """Create (or reuse) ``.nox/<name>`` with ``requirements`` installed under the constraints,
    then ``no_deps`` with ``pip --no-deps``.

    Reused as is while the requirements and the contents of ``stamp_files`` are unchanged.
    """
    venv = ROOT / ".nox" / name
    digest = hashlib.sha256(sys.version.encode())
    for item in (*requirements, "--no-deps", *no_deps, CONSTRAINTS, *stamp_files):
        digest.update(Path(item).read_bytes() if isinstance(item, Path) else item.encode())
    stamp = venv / ".icml25-stamp"
    fresh = fresh or "--fresh" in session.posargs
    if fresh and venv.exists():
        shutil.rmtree(venv)
    if stamp.exists() and stamp.read_text() == digest.hexdigest():
        return venv
    if not (venv / "bin" / "python").exists():
        session.run(sys.executable, "-m", "venv", str(venv), external=True)
    session.run(
        _bin(venv, "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
        "-c", str(CONSTRAINTS), *requirements, external=True,
    )  # fmt: skip
    if no_deps:
        session.run(
            _bin(venv, "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
            "--no-deps", "-c", str(CONSTRAINTS), *no_deps, external=True,
        )  # fmt: skip
    stamp.write_text(digest.hexdigest())
    return venv


def library_venv(session: nox.Session, kind: str, dist: str, folder: Path, extras: list[str]):
    """``.nox/<kind>-<dist>``: the core and the library (editable) with ``extras``; a test venv
    also gets the type checker (mypy, at the root dev group's range), which checks the library
    there against only what it declares.

    Install quirks a library declares in its card are applied here: ``no-deps = [...]``
    requirements are installed with ``--no-deps`` afterwards (a dependency whose own metadata
    would pull in something that breaks, e.g. a CUDA build of torch). ``test-kernels = [...]``
    names CPU kernel packages under ``kernels/`` built and installed into the test and bench
    venvs, so their equality tests run wherever the library's tests do (the venv is rebuilt
    when a kernel source changes).
    """
    declared = _pyproject(folder).get("project", {}).get("optional-dependencies", {})
    extras = [e for e in extras if e in declared]
    target = f"{folder}[{','.join(extras)}]" if extras else str(folder)
    stamp_files = (folder / "pyproject.toml", ROOT / "shared" / "pyproject.toml")
    kernels = []
    if kind in ("tests", "bench"):
        pool = kernel_packages()
        for name in card(folder).get("test-kernels", []):
            if name not in pool:
                session.error(f"{folder}: test-kernels names no package under kernels/: {name}")
            kernels.append(str(pool[name]))
            stamp_files += source_files(pool[name])
    return make_venv(
        session,
        f"{kind}-{dist}",
        ["-e", str(ROOT / "shared"), "-e", target, *kernels]
        + (dev_specs("mypy") if kind == "tests" else []),
        stamp_files=stamp_files,
        no_deps=tuple(card(folder).get("no-deps", [])),
    )


def library_env(folder: Path) -> dict[str, str]:
    """Environment for a library's commands: headless plots plus the card's ``env`` table
    (e.g. ``OMP_NUM_THREADS = "1"`` where unpinned threads thrash on 2 cores)."""
    return {"MPLBACKEND": "Agg", **{k: str(v) for k, v in card(folder).get("env", {}).items()}}


def core_venv(session: nox.Session, kind: str, *extra: str) -> Path:
    """The core alone (numpy only; mypy too for tests), or with `extra` requirements in
    ``<kind>-icml25-core-...``."""
    return make_venv(
        session,
        "-".join((kind, CORE, *extra)),
        ["-e", f"{ROOT / 'shared'}[test]", *extra, *(dev_specs("mypy") if kind == "tests" else [])],
        stamp_files=(ROOT / "shared" / "pyproject.toml",),
    )


def dev_specs(*names: str) -> list[str]:
    """The requirement specs of the named tools in the root ``[dependency-groups] dev``."""
    group = _pyproject(ROOT)["dependency-groups"]["dev"]
    specs = [spec for spec in group if re.split(r"[<>=!~\[ ]", spec, maxsplit=1)[0] in names]
    if len(specs) != len(names):
        raise ValueError(f"not all of {names} are in the root dev group: {group}")
    return specs


def dev_tools(session: nox.Session, *names: str) -> Path:
    """A venv with the named dev tools at the versions of the root ``[dependency-groups] dev``."""
    return make_venv(
        session, "dev" if names == DEV_TOOLS else "dev-" + "-".join(names), dev_specs(*names)
    )


def type_check(session: nox.Session, venv: Path, folder: Path) -> None:
    """mypy (the root pyproject's ``[tool.mypy]``) over the library's ``src/`` and the core's, in
    the library's test venv `venv`: imports resolve to what the library declares; the cache lives
    in the venv and goes with it."""
    targets = dict.fromkeys([folder / "src", ROOT / "shared" / "src"])
    session.run(
        _bin(venv, "python"), "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
        "--cache-dir", str(venv / ".mypy_cache"), *map(str, targets), external=True,
    )  # fmt: skip


def tests_venv(session: nox.Session, dist: str, folder: Path) -> Path:
    """The venv ``nox -s tests`` uses for `dist` (built or reused)."""
    if dist == CORE:
        return core_venv(session, "tests")
    ensure_debian(session, card(folder).get("debian", []))
    return library_venv(session, "tests", dist, folder, ["test"])


def katex_dist(session: nox.Session) -> Path:
    """KaTeX's files the site needs, from the npm tarball checked against `KATEX`'s integrity
    (cached in ``.nox/katex-<version>/``)."""
    version, integrity = KATEX
    target = ROOT / ".nox" / f"katex-{version}"
    if (target / "katex.min.js").exists():
        return target
    npm = shutil.which("npm")
    if npm is None:
        session.error("the docs take KaTeX from npm: install Node.js and npm (Debian: npm)")
    download = target.with_name(target.name + ".download")
    shutil.rmtree(download, ignore_errors=True)
    download.mkdir(parents=True)
    session.run(
        npm, "pack", f"katex@{version}", "--pack-destination", str(download), "--silent",
        external=True,
    )  # fmt: skip
    tarball = download / f"katex-{version}.tgz"
    digest = "sha512-" + base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()
    if digest != integrity:
        session.error(f"{tarball.name}: integrity {digest} is not the pinned {integrity}")
    with tarfile.open(tarball) as tar:
        tar.extractall(download, filter="data")
    dist = download / "package" / "dist"
    shutil.rmtree(target, ignore_errors=True)
    (target / "contrib").mkdir(parents=True)
    for name in ("katex.min.js", "katex.min.css", "contrib/auto-render.min.js"):
        shutil.copy2(dist / name, target / name)
    shutil.copytree(dist / "fonts", target / "fonts")
    shutil.copy2(download / "package" / "LICENSE", target / "LICENSE")
    shutil.rmtree(download)
    return target


def ensure_debian(session: nox.Session, packages: list[str]) -> None:
    """Install the Debian packages a library's real input needs (as root), else say how."""
    missing = [
        p
        for p in packages
        if subprocess.run(["dpkg", "-s", p], capture_output=True, check=False).returncode != 0
    ]
    if not missing:
        return
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        wait = ("-o", "DPkg::Lock::Timeout=300")  # for a dpkg/apt lock another process holds
        session.run("apt-get", *wait, "update", "-qq", external=True)
        session.run("apt-get", *wait, "install", "-y", "-qq", *missing, external=True)
    else:
        session.error(f"missing Debian packages; run: sudo apt-get install -y {' '.join(missing)}")


def compose_requirement(session: nox.Session, folder: Path) -> str:
    """The library (a wheel built from `folder`, as a user installs it) with its card's
    ``compose-extras``; a name that is no extra of its pyproject is an error."""
    extras = card(folder).get("compose-extras", [])
    declared = _pyproject(folder).get("project", {}).get("optional-dependencies", {})
    unknown = [extra for extra in extras if extra not in declared]
    if unknown:
        session.error(
            f"{folder / 'pyproject.toml'}: compose-extras names no extra of the library: "
            f"{', '.join(unknown)} (declared: {', '.join(declared)})"
        )
    return f"{folder}[{','.join(extras)}]" if extras else str(folder)


def resolver_conflict(pip_log: str) -> list[str]:
    """The requirements pip's resolver blames under "The conflict is caused by:" in a ``--log``
    file, one per item, without the log's timestamps; empty if it has none."""
    stamp = re.compile(r"^\d{4}-\d\d-\d\dT[\d:,.]+")
    lines = [stamp.sub("", line).strip() for line in pip_log.splitlines()]
    heading = "The conflict is caused by:"
    if heading not in lines:
        return []
    start = len(lines) - lines[::-1].index(heading)  # the last report
    end = lines.index("", start) if "" in lines[start:] else len(lines)
    return lines[start:end]


def compose_venv(session: nox.Session, libs: dict[str, Path]) -> Path:
    """``.nox/compose``: the core and every library with its compose-extras, installed as wheels
    (not editable: what runs is what a user gets), rebuilt when a pyproject or source changes.

    A resolver conflict fails the session with the requirements pip blames.
    """
    folders = [ROOT / "shared", *libs.values()]
    sources = [path for f in folders for path in (f / "pyproject.toml", *source_files(f / "src"))]
    COMPOSE_PIP_LOG.unlink(missing_ok=True)
    requirements = [str(ROOT / "shared"), *(compose_requirement(session, f) for f in libs.values())]
    try:
        venv = make_venv(
            session, "compose", ["--log", str(COMPOSE_PIP_LOG), *requirements],
            stamp_files=tuple(sources),
        )  # fmt: skip
    except CommandFailed:
        log = COMPOSE_PIP_LOG.read_text() if COMPOSE_PIP_LOG.exists() else ""
        conflict = resolver_conflict(log)
        if conflict:
            session.error(
                "the libraries' requirements conflict:\n    " + "\n    ".join(conflict) + "\n"
                "widen a range, or leave the extra that brings one out of its card's "
                "compose-extras and list it in README.md's compose section"
            )
        raise
    COMPOSE_PIP_LOG.unlink(missing_ok=True)  # ~60 MB of debug lines, kept only when pip fails
    return venv


def report_timings(session: nox.Session, title: str, timings: dict[str, float]) -> None:
    lines = [f"{title}:", *(f"  {name:<24} {seconds:8.1f} s" for name, seconds in timings.items())]
    session.log("\n".join(lines))


# ----------------------------------------------------------------------------- sessions
@nox.session
def tests(session: nox.Session) -> None:
    """pytest for the core, the tools and each library, each in its own venv (timed)."""
    libs, pytest_args = select(
        session, {CORE: ROOT / "shared", "tools": ROOT / "tools", **libraries()}
    )
    timings, failed = {}, []
    for dist, folder in libs.items():
        if dist == "tools":
            venv = dev_tools(session, *DEV_TOOLS)
        else:
            venv = tests_venv(session, dist, folder)
        start = time.perf_counter()
        if dist != "tools":
            try:
                type_check(session, venv, folder)
            except CommandFailed:
                failed.append(f"{dist} (types)")
        try:
            session.run(
                _bin(venv, "python"), "-m", "pytest", str(folder / "tests"), *pytest_args,
                external=True, env=library_env(folder),
            )  # fmt: skip
            if dist == CORE:  # the lazy torch helpers, which the numpy-only venv skips
                torch_venv = core_venv(session, "tests", "torch")
                try:
                    session.run(
                        _bin(torch_venv, "python"), "-m", "pytest", *CORE_TORCH_TESTS,
                        *pytest_args, external=True, success_codes=[0, 5],  # 5: -k left none
                    )  # fmt: skip
                finally:
                    if os.environ.get("ICML25_DROP_VENVS") == "1":
                        shutil.rmtree(torch_venv)
        except CommandFailed:
            failed.append(dist)
        timings[dist] = time.perf_counter() - start
        if os.environ.get("ICML25_DROP_VENVS") == "1" and dist not in (CORE, "tools"):
            shutil.rmtree(venv)
    report_timings(session, "test time per library", timings)
    if failed:
        session.error(f"tests failed for: {', '.join(failed)}")


@nox.session
def reproduce(session: nox.Session) -> None:
    """Each finished library's main job on real input, then one summary table.

    Names after ``--`` run those libraries, finished or not. A library whose reproduce fails
    does not stop the others; the session fails at the end, naming it.
    """
    named = bool(session.posargs) and not session.posargs[0].startswith("-")
    pool = {d: f for d, f in libraries().items() if named or card(f).get("status") == "done"}
    libs, extra_args = select(session, pool)
    timings, venv, failed = {}, None, []
    for dist, folder in libs.items():
        ensure_debian(session, card(folder).get("debian", []))
        venv = library_venv(session, "reproduce", dist, folder, ["reproduce"])
        start = time.perf_counter()
        try:
            session.run(
                _bin(venv, dist), "reproduce", "--out", str(REPORTS), *extra_args,
                external=True, env=library_env(folder),
            )  # fmt: skip
        except CommandFailed:
            failed.append(dist)
        timings[dist] = time.perf_counter() - start
    if venv is None:
        session.error("no finished library to reproduce")
    report_timings(session, "reproduce time per library", timings)
    try:
        session.run(_bin(venv, "python"), "-m", "icml25_core", str(REPORTS), external=True)
    finally:  # a failed library is named even when the summary fails too (no reports at all)
        if failed:
            session.error(
                f"reproduce failed for: {', '.join(failed)} (their reports are not fresh)"
            )


@nox.session
def compose(session: nox.Session) -> None:
    """Every library with its card's compose-extras in ONE venv, as a downstream project has them:
    ``pip check``, import each library (and the modules of those extras), run examples/compose/.

    Requirements that cannot be installed together fail the session, naming them. A failing
    example does not stop the others; the session names it at the end.
    """
    libs = libraries()
    debian = {package for folder in libs.values() for package in card(folder).get("debian", [])}
    ensure_debian(session, sorted(debian))  # the real inputs the examples draw from
    start = time.perf_counter()
    venv = compose_venv(session, libs)
    timings, failed = {"install": time.perf_counter() - start}, []
    python = _bin(venv, "python")
    try:
        session.run(python, "-m", "pip", "check", external=True)
        modules = [import_name(dist) for dist in libs] + [
            module
            for folder in libs.values()
            for module, extra in card(folder).get("optional-modules", {}).items()
            if extra in card(folder).get("compose-extras", [])
        ]
        session.run(python, "-c", IMPORT_EACH, *modules, external=True)
        env = {k: v for f in libs.values() for k, v in library_env(f).items()}  # all cards' env
        for script in sorted(COMPOSE_EXAMPLES.glob("*.py")):
            start = time.perf_counter()
            try:
                session.run(python, str(script), external=True, env=env)
            except CommandFailed:
                failed.append(script.name)
            timings[script.name] = time.perf_counter() - start
    finally:
        if os.environ.get("ICML25_DROP_VENVS") == "1":
            shutil.rmtree(venv)
    report_timings(session, "compose time", timings)
    if failed:
        session.error(f"examples/compose/ failed: {', '.join(failed)}")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy over each named library (default: the core and all) in its test venv (no other venv
    is built: the one ``nox -s tests`` uses, built here if missing)."""
    libs, _ = select(session, {CORE: ROOT / "shared", **libraries()})
    failed = []
    for dist, folder in libs.items():
        try:
            type_check(session, tests_venv(session, dist, folder), folder)
        except CommandFailed:
            failed.append(dist)
    if failed:
        session.error(f"type errors in: {', '.join(failed)}")


@nox.session
def docs(session: nox.Session) -> None:
    """The API reference site into ``build/docs/site/`` (open ``index.html``): a page per library
    (README card and the API of its public docstrings) and the core.

    mkdocs-material with mkdocstrings-python, which reads the sources statically (griffe): the
    docs venv holds no torch and no library. Fails on a public name without a docstring or with
    a docstring griffe cannot parse (``tools/docs_site.py check``), then on any mkdocs warning
    (``--strict``). Math renders with KaTeX from npm, copied into the site.
    """
    venv = dev_tools(session, *DEV_TOOLS)  # no --quiet below: it hides what --strict counts
    tool = str(ROOT / "tools" / "docs_site.py")
    session.run(_bin(venv, "python"), tool, "check", external=True)
    session.run(
        _bin(venv, "python"), tool, "write", str(DOCS_BUILD), "--katex", str(katex_dist(session)),
        external=True,
    )  # fmt: skip
    session.run(
        _bin(venv, "mkdocs"), "build", "--strict", "-f", str(DOCS_BUILD / "mkdocs.yml"),
        external=True, env={"NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    session.log(f"site: {DOCS_BUILD / 'site' / 'index.html'}")


@nox.session
def lint(session: nox.Session) -> None:
    """ruff, the import-declaration check, the README table check, then the type check of the
    core and every library in its test venv (``-- --no-typecheck`` leaves it to ``tests``)."""
    venv = dev_tools(session, *DEV_TOOLS)
    session.run(_bin(venv, "ruff"), "check", str(ROOT), external=True)
    session.run(_bin(venv, "ruff"), "format", "--check", str(ROOT), external=True)
    session.run(_bin(venv, "python"), str(ROOT / "tools" / "check_imports.py"), external=True)
    session.run(
        _bin(venv, "python"), str(ROOT / "tools" / "readme_table.py"), "--check", external=True
    )
    if "--no-typecheck" not in session.posargs:
        session.notify("typecheck", posargs=[])


@nox.session
def build(session: nox.Session) -> None:
    """hatch builds sdist + wheel; each wheel is installed alone in a fresh venv and imported."""
    libs, _ = select(session, {CORE: ROOT / "shared", **libraries()})
    hatch = dev_tools(session, "hatch")
    core_dist = DIST / CORE
    for dist, folder in {CORE: ROOT / "shared", **libs}.items():
        out = DIST / dist
        shutil.rmtree(out, ignore_errors=True)
        with session.chdir(folder):
            session.run(
                _bin(hatch, "hatch"), "build", "-t", "sdist", "-t", "wheel", str(out), external=True
            )
        if dist == CORE and CORE not in libs:
            continue  # built only as the libraries' dependency
        wheel = next(out.glob("*.whl"))
        venv = make_venv(
            session, f"build-{dist}", ["--find-links", str(core_dist), str(wheel)], fresh=True
        )
        session.run(
            _bin(venv, "python"), "-c",
            f"import {import_name(dist)} as m; print(m.__name__, m.__version__)", external=True,
        )  # fmt: skip
        if dist != CORE:
            session.run(_bin(venv, dist), "--help", external=True)
    session.log(f"sdists and wheels in {DIST}")


@nox.session
def kernels(session: nox.Session) -> None:
    """Build each native kernel package under kernels/ and run its tests (compile-only on CPU)."""
    pool = kernel_packages()
    if not pool:
        session.log("no native kernel packages under kernels/ yet: nothing to build")
        return
    selected, pytest_args = select(session, pool)
    for name, folder in selected.items():
        sources = source_files(folder)  # rebuilt whenever a source, CMakeLists or pyproject changes
        venv = make_venv(session, f"kernels-{name}", [f"{folder}[test]"], stamp_files=sources)
        session.run(
            _bin(venv, "python"), "-m", "pytest", str(folder / "tests"), *pytest_args, external=True
        )


@nox.session
def bench(session: nox.Session) -> None:
    """Run each library's benchmarks/bench_*.py (one process each) and print their tables."""
    libs, bench_args = select(session, libraries())
    for dist, folder in libs.items():
        scripts = sorted((folder / "benchmarks").glob("bench_*.py"))
        if not scripts:
            session.log(f"{dist}: no benchmarks")
            continue
        venv = library_venv(session, "bench", dist, folder, ["bench", "test"])
        for script in scripts:
            session.run(
                _bin(venv, "python"), str(script), *bench_args, external=True,
                env=library_env(folder),
            )  # fmt: skip
