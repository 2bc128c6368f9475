"""Make the tools importable by name, as they are when run as ``python tools/<tool>.py``; the
fake repository of the release and CI tools' tests."""

import sys
import textwrap
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parent.parent
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))


# A small repository for the release and CI tools: the core, a library that needs the core and
# Debian packages, and one whose name holds "-v" (tags are <dist>-v<version>) and needs neither.
RELEASE_REPO = {
    "shared/pyproject.toml": """
        [project]
        name = "icml25-core"
        dynamic = ["version"]
        dependencies = ["numpy>=1.26"]

        [tool.hatch.version]
        path = "src/icml25_core/_version.py"
        """,
    "shared/src/icml25_core/_version.py": '__version__ = "0.1.0"\n',
    "shared/CHANGELOG.md": """
        # Changelog

        ## Unreleased

        ### Added

        - `seed_everything`.
        """,
    "packages/alpha-lib/pyproject.toml": """
        [project]
        name = "alpha-lib"
        dynamic = ["version"]
        dependencies = ["icml25-core>=0.1,<0.2", "numpy>=1.26"]

        [tool.hatch.version]
        path = "src/alpha_lib/_version.py"

        [tool.icml25]
        debian = ["fortunes", "dataset-fashion-mnist"]
        """,
    "packages/alpha-lib/src/alpha_lib/_version.py": '"""Version."""\n\n__version__ = "0.1.0"\n',
    "packages/alpha-lib/CHANGELOG.md": """
        # Changelog

        All notable changes to `alpha-lib` are recorded here.

        ## Unreleased

        ### Fixed

        - `fit` refuses NaN.

        ## 0.1.0 (2026-01-05)

        ### Added

        - `fit`.
        """,
    "packages/beta-v2/pyproject.toml": """
        [project]
        name = "beta-v2"
        dynamic = ["version"]
        dependencies = []

        [tool.hatch.version]
        path = "src/beta_v2/_version.py"

        [tool.icml25]
        debian = ["dataset-fashion-mnist"]
        """,
    "packages/beta-v2/src/beta_v2/_version.py": '__version__ = "1.0.0rc1"\n',
    "packages/beta-v2/CHANGELOG.md": "# Changelog\n\n## Unreleased\n",
}


@pytest.fixture
def release_repo(tmp_path):
    """A fresh copy of ``RELEASE_REPO`` under `tmp_path`; returns its root."""
    for name, text in RELEASE_REPO.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return tmp_path
