"""tools/check_imports.py on small fake repositories."""

import re
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


def _list_optional(root, table, dist="alpha"):
    """Append a card with ``optional-modules = <table>`` to `dist`'s pyproject."""
    folder = "shared" if dist == "icml25-core" else f"packages/{dist}"
    pyproject = root / folder / "pyproject.toml"
    card = f"\n[tool.icml25]\noptional-modules = {table}\n"
    pyproject.write_text(pyproject.read_text() + card)


@pytest.fixture
def viz(repo):
    """alpha with ``alpha.viz`` (a package) listed under its extra [plot]."""
    _write(repo / "packages/alpha/src/alpha/viz/__init__.py", "import matplotlib\n")
    _list_optional(repo, '{ "alpha.viz" = "plot" }')
    return repo


def test_listed_module_and_its_submodules_import_their_extra_at_module_level(viz):
    source = """
        import matplotlib.pyplot as plt
        import numpy as np
        from mpl_toolkits.mplot3d import Axes3D


        def progress():
            import tqdm
            import torch
    """
    assert check(viz, source, module="viz/figure.py") == []
    assert check(viz, "from matplotlib import colors\n", module="viz/__init__.py") == []


def test_listed_module_importing_another_extra_at_module_level_is_flagged(viz):
    (problem,) = check(viz, "import matplotlib\nimport tqdm\n", module="viz/figure.py")
    assert problem.startswith("packages/alpha/src/alpha/viz/figure.py:2: module level import")
    assert "[outside-module-extra]" in problem
    assert "alpha.viz.figure belongs to extra [plot]" in problem
    assert "'tqdm' is declared only in extra [all], [reproduce]" in problem


def test_listed_module_importing_an_undeclared_distribution_is_flagged(viz):
    (problem,) = check(viz, "import seaborn\n", module="viz/figure.py")
    assert "[outside-module-extra]" in problem
    assert "no declared distribution provides it (looked for 'seaborn')" in problem
    assert "add it to [plot] of alpha/pyproject.toml" in problem


def test_listed_module_through_self_referencing_extra(repo):
    _write(repo / "packages/alpha/src/alpha/report.py", "")
    _list_optional(repo, '{ "alpha.report" = "REPRODUCE" }')  # = alpha[plot] + tqdm
    assert check(repo, "import matplotlib\nimport tqdm\n", module="report.py") == []
    (problem,) = check(repo, "import torch\n", module="report.py")
    assert "belongs to extra [reproduce]" in problem


def test_unlisted_module_keeps_lazy_only_rule_and_is_told_of_the_card_field(viz):
    (problem,) = check(viz, "import matplotlib\n")
    assert "[top-level-needs-required]" in problem
    assert "alpha.mod under that extra in optional-modules" in problem


@pytest.mark.parametrize(
    ("module", "statement"),
    [
        ("mod.py", "import alpha.viz"),
        ("mod.py", "import alpha.viz.figure as figure"),
        ("mod.py", "from alpha.viz import plot"),
        ("mod.py", "from alpha import core, viz"),
        ("__init__.py", "from .viz import plot"),
        ("__init__.py", "from . import viz"),
        ("sub/__init__.py", "from ..viz import plot"),
        ("sub/deep.py", "from ..viz.figure import plot"),
        ("mod.py", "try:\n    from .viz import plot\nexcept ImportError:\n    plot = None"),
    ],
)
def test_unlisted_module_importing_a_listed_one_at_module_level_is_flagged(viz, module, statement):
    (problem,) = check(viz, statement + "\n", module=module)
    assert "[imports-optional-module]" in problem
    assert re.search(r"alpha\.viz(\.figure)? belongs to extra \[plot\]", problem)
    assert re.search(r"alpha(\.\w+)* to no extra: .* need \[plot\]", problem)


def test_unlisted_module_may_import_a_listed_one_lazily_or_for_typing(viz):
    source = """
        from typing import TYPE_CHECKING

        from . import core
        from .core import f

        if TYPE_CHECKING:
            from .viz import plot


        def show():
            from .viz import plot

            return plot
    """
    assert check(viz, source) == []


def test_relative_import_above_the_top_package_is_ignored(viz):
    assert check(viz, "from ... import x\n") == []


@pytest.mark.parametrize(
    ("level", "module", "importer", "is_package", "expected"),
    [
        (0, "numpy.linalg", "alpha.mod", False, "numpy.linalg"),
        (1, "viz", "alpha.mod", False, "alpha.viz"),
        (1, "", "alpha.mod", False, "alpha"),
        (1, "figure", "alpha.viz", True, "alpha.viz.figure"),
        (2, "core", "alpha.viz.figure", False, "alpha.core"),
        (2, "", "alpha.viz", True, "alpha"),
        (2, "x", "alpha.mod", False, None),
    ],
)
def test_relative_imports_resolve_against_the_importing_module(
    level, module, importer, is_package, expected
):
    imp = check_imports.Import(module, 1, check_imports.TOP, (), level)
    assert check_imports.absolute(imp, importer, is_package) == expected


FLOWER_PYPROJECT = """
[project]
name = "gamma"
dependencies = ["numpy"]

[project.optional-dependencies]
flower = ["flwr>=1.42"]
simulation = ["flwr[simulation]>=1.42"]
all = ["gamma[flower,simulation]"]

[tool.icml25]
optional-modules = { "gamma.fl" = "flower", "gamma.fl.sim" = "simulation", "gamma.fl.run" = "all" }
"""


@pytest.fixture
def flower(repo):
    """gamma: package gamma.fl of [flower], its submodule gamma.fl.sim of [simulation]."""
    _write(repo / "packages/gamma/pyproject.toml", FLOWER_PYPROJECT)
    for module in ("__init__", "fl/__init__", "fl/sim", "fl/run"):
        _write(repo / f"packages/gamma/src/gamma/{module}.py", "")
    return repo


def test_innermost_listed_module_decides_the_extra(flower):
    (target,) = check_imports.find_targets(["gamma"], flower)
    assert target.extra_of("gamma.fl.records") == "flower"
    assert target.extra_of("gamma.fl.sim.engine") == "simulation"
    assert target.extra_of("gamma.flx") is None
    assert target.extra_of("gamma") is None


def test_listed_module_may_import_a_listed_module_of_an_extra_it_includes(flower):
    assert check(flower, "from ..app import server_app\n", "gamma", "fl/sim.py") == []
    assert check(flower, "from .sim import run\n", "gamma", "fl/run.py") == []
    (problem,) = check(flower, "from .sim import run\n", "gamma", "fl/__init__.py")
    assert "[imports-optional-module]" in problem
    assert "gamma.fl.sim belongs to extra [simulation]" in problem
    assert "gamma.fl to extra [flower], which does not include it" in problem


def test_extra_inclusion_compares_the_extras_of_each_requirement(flower):
    (target,) = check_imports.find_targets(["gamma"], flower)
    assert target.includes("simulation", "flower")  # flwr[simulation] installs flwr
    assert not target.includes("flower", "simulation")  # flwr does not install flwr[simulation]
    assert target.includes("all", "simulation")
    assert not target.includes(None, "flower")


def test_core_module_listed_under_an_extra_may_import_it(repo):
    _write(repo / "shared/src/icml25_core/testing/__init__.py", "")
    _list_optional(repo, '{ "icml25_core.testing" = "test" }', dist="icml25-core")
    source = "import numpy\nimport pytest\n"
    assert check(repo, source, dist="icml25-core", module="testing/plugin.py") == []
    (problem,) = check(repo, "import pytest\n", dist="icml25-core")
    assert "[core-numpy-only]" in problem


@pytest.mark.parametrize(
    ("table", "match"),
    [
        ('"alpha.viz"', r'must be a table of module = "extra"'),
        ('{ "beta.viz" = "plot" }', r"'beta.viz' is not a submodule of the library's package"),
        ('{ "alpha" = "plot" }', r"'alpha' is not a submodule"),
        ('{ "alpha.v-z" = "plot" }', r"'alpha.v-z' is not a submodule"),
        ('{ "alpha.missing" = "plot" }', r"'alpha.missing' not found \(no src/alpha/missing.py"),
        ('{ "alpha.viz" = "plots" }', r"must name an extra .*\(plot, torch, .*got 'plots'"),
        ('{ "alpha.viz" = 1 }', r"must name an extra .* got 1"),
    ],
)
def test_malformed_optional_modules_is_an_error_naming_the_pyproject(repo, table, match):
    _write(repo / "packages/alpha/src/alpha/viz.py", "")
    _list_optional(repo, table)
    with pytest.raises(CatalogueError, match=r"packages/alpha/pyproject.toml: \[tool.icml25\] "):
        check_imports.find_targets(["alpha"], repo)
    with pytest.raises(CatalogueError, match=match):
        check_imports.find_targets(["alpha"], repo)


def test_cli_reports_a_malformed_card_and_exits_1(repo, capsys):
    _list_optional(repo, '{ "alpha.missing" = "plot" }')
    assert check_imports.main(["alpha"], root=repo) == 1
    assert "error: " in capsys.readouterr().err
