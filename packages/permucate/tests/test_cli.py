import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from permucate import datasets
from permucate.cli import main


def test_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "run" in out
    assert "reproduce" in out


def test_console_script_is_installed():
    done = subprocess.run(
        [sys.executable, "-m", "permucate.cli", "run", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0
    assert "--treatment" in done.stdout


def test_run_writes_the_importance_table(tmp_path, capsys):
    data = datasets.hines(300, random_state=0)
    frame = data.X.assign(treated=data.T, outcome=data.Y)
    csv = tmp_path / "trial.csv"
    frame.to_csv(csv, index=False)
    out = tmp_path / "imp.csv"
    main(["run", str(csv), "--treatment", "treated", "--outcome", "outcome",
          "--n-permutations", "5", "--out", str(out)])  # fmt: skip
    table = pd.read_csv(out, index_col=0)
    assert list(table.index) == ["x1", "x2", "x3", "x4", "x5", "x6"]
    assert np.isfinite(table.pvalue).all()
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--treatment", "nope", "--outcome", "y"], "columns \\['nope'\\] not in"),
        (["--treatment", "t", "--outcome", "y", "--covariates", "name"], "must be numeric"),
        (["--treatment", "y", "--outcome", "t", "--covariates", "x"], "`T` must be binary"),
    ],
)
def test_run_reports_bad_input_clearly(tmp_path, extra, match):
    csv = tmp_path / "d.csv"
    frame = pd.DataFrame({"x": np.arange(20.0), "name": ["a"] * 20, "t": [0, 1] * 10})
    frame.assign(y=np.arange(20.0)).to_csv(csv, index=False)
    with pytest.raises(SystemExit, match=match):
        main(["run", str(csv), *extra, "--n-permutations", "2", "--cv", "2"])
