"""tools/check_imports.py on small fake repositories."""

import textwrap

import check_imports
import pytest
from _catalogue import CatalogueError

ALPHA_PYPROJECT = """
[project]
name = "alpha"
dependencies = [
    "icml25-core>=0.1,<0.2",
    "numpy>=1.26",
    "Scikit_Learn>=1.6",
    "pillow",
    "Typing.Extensions",
]

[project.optional-dependencies]
plot = ["matplotlib>=3.8"]
torch = ["torch>=2.4; python_version >= '3.11'"]
reproduce = ["alpha[plot]", "tqdm>=4.66"]
all = ["ALPHA[reproduce,torch]"]
test = ["pytest>=8"]
"""

BETA_PYPROJECT = """
[project]
name = "beta"
dependencies = ["icml25-core", "numpy"]
"""

CORE_PYPROJECT = """
[project]
name = "icml25-core"
dependencies = ["numpy>=1.26"]

[project.optional-dependencies]
test = ["pytest>=8"]
"""


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


@pytest.fixture
def repo(tmp_path):
    """Libraries alpha and beta, and the core, with clean sources."""
    _write(tmp_path / "packages/alpha/pyproject.toml", ALPHA_PYPROJECT)
    _write(tmp_path / "packages/alpha/src/alpha/__init__.py", "from .core import f\n")
    _write(tmp_path / "packages/beta/pyproject.toml", BETA_PYPROJECT)
    _write(tmp_path / "packages/beta/src/beta/__init__.py", "import numpy\n")
    _write(tmp_path / "shared/pyproject.toml", CORE_PYPROJECT)
    _write(tmp_path / "shared/src/icml25_core/__init__.py", "import numpy as np\n")
    return tmp_path


def check(root, source, dist="alpha", module="mod.py"):
    """Violations after writing `source` as a module of `dist`."""
    folder = "shared" if dist == "icml25-core" else f"packages/{dist}"
    package = "icml25_core" if dist == "icml25-core" else dist
    _write(root / folder / "src" / package / module, source)
    (target,) = check_imports.find_targets([dist], root)
    return check_imports.check_target(target, root)


def test_clean_module_passes(repo):
    source = """
        from __future__ import annotations

        import collections.abc
        import json
        import os.path
        import xml.etree.ElementTree as ET

        import numpy as np
        from icml25_core import check_array
        from PIL import Image
        from sklearn.base import clone
        from typing_extensions import Self

        import alpha.core
        from alpha import core
        from . import core as same
        from .core import f
    """
    assert check(repo, source) == []


def test_top_level_import_from_extra_is_flagged(repo):
    problems = check(repo, "import numpy\nimport matplotlib.pyplot as plt\n")
    assert len(problems) == 1
    assert problems[0].startswith("packages/alpha/src/alpha/mod.py:2: ")
    assert "'matplotlib.pyplot'" in problems[0]
    assert "[top-level-needs-required]" in problems[0]
    assert "inside the function" in problems[0]


def test_top_level_extra_message_lists_extras_through_self_reference(repo):
    (problem,) = check(repo, "import matplotlib\n")
    # plot declares it; reproduce = ["alpha[plot]"] and all = ["ALPHA[reproduce,torch]"] too.
    assert "[all], [plot], [reproduce]" in problem


def test_top_level_import_in_try_block_is_flagged(repo):
    source = """
        try:
            import torch
        except ImportError:
            torch = None
    """
    (problem,) = check(repo, source)
    assert ":2: " in problem
    assert "[top-level-needs-required]" in problem


def test_class_body_import_counts_as_top_level(repo):
    (problem,) = check(repo, "class A:\n    import tqdm\n")
    assert "[top-level-needs-required]" in problem


def test_lazy_import_from_extra_is_allowed(repo):
    source = """
        def plot():
            import matplotlib.pyplot as plt

            return plt


        class Model:
            def fit(self):
                from torch import nn
                from tqdm import tqdm

                return nn, tqdm

            async def later(self):
                import torch
    """
    assert check(repo, source) == []


def test_lazy_import_undeclared_is_flagged(repo):
    (problem,) = check(repo, "def f():\n    import scipy.stats\n")
    assert problem.startswith("packages/alpha/src/alpha/mod.py:2: lazy import of 'scipy.stats'")
    assert "[undeclared]" in problem
    assert "optional-dependencies" in problem


def test_top_level_import_undeclared_is_flagged(repo):
    (problem,) = check(repo, "import pandas as pd\n")
    assert "module level import of 'pandas' [undeclared]" in problem
    assert "looked for 'pandas'" in problem


def test_type_checking_block_allows_any_declared_dependency(repo):
    source = """
        import typing
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            import torch
            from matplotlib.axes import Axes
        if typing.TYPE_CHECKING:
            import tqdm
        else:
            import tqdm
    """
    (problem,) = check(repo, source)
    assert ":10: " in problem  # only the runtime `else` branch
    assert "[top-level-needs-required]" in problem


def test_type_checking_block_still_needs_a_declaration(repo):
    (problem,) = check(
        repo, "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import jax\n"
    )
    assert "[undeclared]" in problem


@pytest.mark.parametrize("context", ["top", "lazy"])
def test_sibling_library_is_flagged_even_when_declared(repo, context):
    text = (repo / "packages/alpha/pyproject.toml").read_text()
    (repo / "packages/alpha/pyproject.toml").write_text(
        text.replace('"pillow",', '"pillow", "beta",')
    )
    source = "from beta import x\n" if context == "top" else "def f():\n    import beta.sub\n"
    (problem,) = check(repo, source)
    assert "[sibling-library]" in problem
    assert "packages/beta/" in problem


def test_catalogued_but_absent_library_is_a_sibling(repo):
    _write(
        repo / "tools/libraries.toml",
        """
        [[library]]
        dist = "quest-qat"
        paper = "QuEST"
        authors = "Panferov et al."
        arxiv = "2502.05003"
        field = "LLM quantization"
        """,
    )
    (problem,) = check(repo, "def f():\n    import quest_qat\n")
    assert "[sibling-library]" in problem


@pytest.mark.parametrize(
    ("module", "dist"),
    [
        ("sklearn.linear_model", "scikit-learn"),
        ("PIL.Image", "Pillow"),
        ("yaml", "PyYAML"),
        ("cv2", "opencv-python-headless"),
        ("cv2", "opencv-python"),
        ("skimage.io", "scikit-image"),
        ("attr", "attrs"),
        ("google.protobuf.message", "protobuf"),
        ("flwr.server", "flwr"),
        ("Crypto.Cipher", "pycryptodome"),
        ("nacl.public", "PyNaCl"),
        ("jwt", "PyJWT"),
        ("dateutil.parser", "python-dateutil"),
        ("bs4", "beautifulsoup4"),
        ("mpl_toolkits.mplot3d", "matplotlib"),
        ("torchvision.transforms", "torchvision"),
        ("google.cloud.storage", "google-cloud-storage"),
        ("huggingface_hub", "huggingface-hub"),
        ("icml25_core", "icml25_core"),
        ("hidimstat", "hidimstat"),
    ],
)
def test_import_names_map_to_distributions(module, dist):
    assert check_imports.normalize(dist) in check_imports.candidates(module)


def test_alias_is_required_for_a_mismatched_name(repo):
    # scikit-image is not declared by alpha: `skimage` must not pass as some other name.
    (problem,) = check(repo, "import skimage\n")
    assert "looked for 'scikit-image'" in problem


def test_from_import_of_a_namespace_submodule_maps_to_its_distribution(repo):
    text = (repo / "packages/alpha/pyproject.toml").read_text()
    (repo / "packages/alpha/pyproject.toml").write_text(text.replace('"pillow",', '"protobuf",'))
    assert check(repo, "from google import protobuf\n") == []


def test_self_referencing_extras_resolve_recursively():
    extras = {
        "plot": ["matplotlib>=3.8"],
        "reproduce": ["alpha[plot]", "tqdm"],
        "all": ["alpha[reproduce, torch]", "alpha[all]"],  # a cycle is harmless
        "torch": ["torch>=2.4"],
    }
    assert check_imports.resolve(["alpha[all]"], "alpha", extras) == {
        "matplotlib",
        "tqdm",
        "torch",
    }


def test_undefined_self_extra_is_an_error(repo):
    text = (repo / "packages/alpha/pyproject.toml").read_text()
    (repo / "packages/alpha/pyproject.toml").write_text(text.replace("alpha[plot]", "alpha[plots]"))
    with pytest.raises(CatalogueError, match=r"extra \[plots\]"):
        check_imports.find_targets(["alpha"], repo)


def test_stdlib_is_ignored_at_any_level(repo):
    source = """
        import asyncio
        import tomllib
        from concurrent.futures import ProcessPoolExecutor


        def f():
            import sqlite3
            import zoneinfo
    """
    assert check(repo, source) == []


def test_core_imports_only_numpy_at_module_level(repo):
    source = """
        import os

        import numpy as np
        import scipy


        def seed():
            import jax
            import torch
    """
    (problem,) = check(repo, source, dist="icml25-core")
    assert problem.startswith("shared/src/icml25_core/mod.py:4: ")
    assert "[core-numpy-only]" in problem


def test_core_never_imports_a_library(repo):
    (problem,) = check(repo, "def f():\n    import alpha\n", dist="icml25-core")
    assert "[sibling-library]" in problem


def test_unparsable_file_is_reported(repo):
    (problem,) = check(repo, "def f(:\n")
    assert problem.startswith("packages/alpha/src/alpha/mod.py:1: cannot parse")


def test_cli_reports_violations_and_exits_1(repo, capsys):
    _write(repo / "packages/alpha/src/alpha/mod.py", "import matplotlib\n")
    assert check_imports.main([], root=repo) == 1
    out = capsys.readouterr()
    assert out.out == (
        "packages/alpha/src/alpha/mod.py:1: "
        + check(repo, "import matplotlib\n")[0].split(": ", 1)[1]
        + "\n"
    )
    assert "1 import violation(s) in alpha, beta, icml25-core" in out.err


def test_cli_exits_0_on_clean_selection_by_name_or_folder(repo, capsys):
    _write(repo / "packages/alpha/src/alpha/mod.py", "import matplotlib\n")
    assert check_imports.main(["beta", "icml25-core"], root=repo) == 0
    assert check_imports.main([str(repo / "packages/beta"), "shared"], root=repo) == 0
    assert "imports ok: beta, icml25-core" in capsys.readouterr().err


def test_cli_unknown_library_exits_2(repo, capsys):
    assert check_imports.main(["gamma"], root=repo) == 2
    assert "no library 'gamma'" in capsys.readouterr().err
