"""pytest plugin of the icml25 libraries: the test helpers every library needs, written once.

Registration
------------
Through the ``pytest11`` entry point of ``icml25-core`` (``[project.entry-points.pytest11]`` of
``shared/pyproject.toml``): it loads in every pytest run of an environment where icml25-core and
pytest are installed, whether nox runs ``python -m pytest packages/<dist>/tests`` from the
repository root (rootdir = the root, ``--import-mode=importlib``) or a user runs ``pytest``
inside ``packages/<dist>/``. ``pytest_plugins`` in each library's ``tests/conftest.py`` was not
used: it would be repeated per library, and pytest refuses it in a conftest that is not loaded
first (``pytest packages/``). Nothing here runs unless asked for: ``import icml25_core`` never
imports this package, its fixtures act only when a test requests them, and the contract below is
collected only for a library that declares it in its card. ``-p no:icml25_core`` turns it off.

The contract
------------
A library whose card (``[tool.icml25]`` of its pyproject) names its console script and README::

    console = "fedswa"
    readme = "README.md"

gets, beside its ``tests/`` (node ids ``packages/<dist>/pyproject.toml::test_...``), the tests of
:mod:`icml25_core.testing.contract`: ``--help`` exits 0 and lists every command; ``--version``
prints the distribution's version; an unknown command or option is a one-line usage error with
exit status 2 and no traceback; ``reproduce --help`` lists ``--out`` and ``--full``, and an
``--out`` that cannot be a folder is such a usage error; the README
has the card's sections, a short usage block, and each Python block runs (one test per block, in
order, in one namespace, in the folder of the ``readme_folder`` fixture); ``import <lib>`` works
with every distribution that only its extras install made unimportable. The contract runs when
the library's ``tests/`` folder is collected, not when single test files are named; the tests of
the console script and the import are skipped where the library is not installed.

Fixtures
--------
``run_console(command, *args, module=False)``
    An installed console script, or ``python -m <module>``, in a subprocess:
    :class:`ConsoleResult` ``(code, out, err)``.
``run_main(main, *args)``
    The script's ``main(argv)`` in-process, with the same result (faster, for a library's own
    commands and their errors).
``readme_folder`` (session)
    The empty folder the README's blocks run in. Override it in ``tests/conftest.py``, asking for
    it, to put there what a user would have (input files), e.g.::

        @pytest.fixture(scope="session")
        def readme_folder(readme_folder):
            make_trial_csv(readme_folder / "trial.csv")
            return readme_folder

``readme_run``
    The library's README with the blocks run so far (:class:`ReadmeRun`; ``blocks`` without
    running any).
``readme``
    The library's README after all its blocks ran (:class:`ReadmeRun`: ``namespace``, ``stdout``,
    ``folder``), for the library's own assertions on what the blocks made; the blocks run once
    per session, shared with the contract's block tests.
``flower_task``
    Flower's task identity (run, task and node id 1, 1, 0) set as a SuperLink or SuperNode
    process has it, so that tests can build ``flwr.app.Message`` objects and call a ServerApp,
    strategy or ClientApp directly, without Flower's runtime; restored afterwards. Needs flwr.

Hypothesis profiles
-------------------
Every library's ``tests/test_properties.py`` runs under one of two profiles registered here:
``ci`` (50 examples, derandomized: the same examples on every run, so a red CI is reproducible
and never flaky; no deadline, since a 2-core runner's timings say nothing) and ``dev`` (100
random examples, the failing one kept in hypothesis' database). ``HYPOTHESIS_PROFILE`` picks
one; without it, ``ci`` where the ``CI`` variable is set (``.ci/run``, GitHub Actions), else
``dev``.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from icml25_core.testing import console
from icml25_core.testing.card import CardError, LibraryCard, declares_contract, find_card
from icml25_core.testing.console import ConsoleResult
from icml25_core.testing.readme import CARD_SECTIONS, ReadmeBlock, ReadmeRun, readme_blocks

__all__ = [
    "CARD_SECTIONS",
    "CardError",
    "ConsoleResult",
    "LibraryCard",
    "ReadmeBlock",
    "ReadmeRun",
    "readme_blocks",
    "HYPOTHESIS_PROFILES",
]

pytest.register_assert_rewrite("icml25_core.testing.contract")

HYPOTHESIS_PROFILES = {
    "ci": settings(
        max_examples=50, derandomize=True, deadline=None, print_blob=True, database=None,
        suppress_health_check=[HealthCheck.too_slow],
    ),
    "dev": settings(max_examples=100, derandomize=False, deadline=None, print_blob=True),
}  # fmt: skip
for _name, _profile in HYPOTHESIS_PROFILES.items():
    settings.register_profile(_name, _profile)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)
_CONTRACT = "icml25_core.testing.contract"
_RUNS = pytest.StashKey[dict[Path, ReadmeRun]]()


class Contract(pytest.Module):
    """The contract tests, collected for one library; `path` is the library's pyproject."""

    def _getobj(self):
        return importlib.import_module(_CONTRACT)

    def collect(self):
        try:
            LibraryCard.load(self.path)
        except CardError as error:
            raise self.CollectError(str(error)) from None
        return super().collect()


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    """Add the contract beside the tests of a library whose card declares it."""
    report = yield
    if (
        report.passed
        and isinstance(collector, pytest.Directory)
        and collector.path.name == "tests"
        and declares_contract(collector.path.parent)
    ):
        pyproject = collector.path.parent / "pyproject.toml"
        report.result.append(Contract.from_parent(collector, path=pyproject))
    return report


@pytest.fixture
def run_console():
    """``run_console(command, *args, module=False, timeout=300, cwd=None)`` -> ConsoleResult:
    an installed console script (or ``python -m command``) in a subprocess."""
    return console.run_console


@pytest.fixture
def run_main(capsys: pytest.CaptureFixture):
    """``run_main(main, *args)`` -> ConsoleResult: the script's ``main(argv)`` in-process."""

    def run(main, *args: object) -> ConsoleResult:
        return console.call_main(main, capsys, *args)

    return run


@pytest.fixture
def flower_task():
    """Flower's task identity set as in a Flower process (messages read it); restored after."""
    from flwr.supercore.task_identity import TaskIdentity

    saved = TaskIdentity._task_id, TaskIdentity._run_id, TaskIdentity._node_id
    TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, 1, 0
    yield
    TaskIdentity._task_id, TaskIdentity._run_id, TaskIdentity._node_id = saved


@pytest.fixture(scope="session")
def readme_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The empty folder the README's blocks run in (override it to add a user's files)."""
    return tmp_path_factory.mktemp("readme")


@pytest.fixture
def readme_run(request: pytest.FixtureRequest, readme_folder: Path) -> ReadmeRun:
    """The requesting library's README, its blocks run so far (one run per session)."""
    try:
        path = find_card(request.path).readme
    except CardError as error:
        pytest.fail(str(error), pytrace=False)
    runs = request.config.stash.setdefault(_RUNS, {})
    if path not in runs:
        runs[path] = ReadmeRun(path, readme_folder)
    return runs[path]


@pytest.fixture
def readme(readme_run: ReadmeRun) -> ReadmeRun:
    """The requesting library's README after all its Python blocks ran."""
    return readme_run.run_all()
