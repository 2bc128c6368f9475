"""The console script's own commands and their errors (the shared contract checks the rest)."""

import numpy as np
import pandas as pd
import pytest
from permucate import datasets
from permucate.cli import main
from statsmodels.stats.multitest import multipletests


def test_module_runs_the_run_command(run_console):
    result = run_console("permucate.cli", "run", "--help", module=True)
    assert result.code == 0
    assert "--treatment" in result.out


def test_output_paths_that_would_lose_work_are_refused(tmp_path):
    csv = tmp_path / "d.csv"
    pd.DataFrame({"x": np.arange(20.0), "t": [0, 1] * 10, "y": np.arange(20.0)}).to_csv(csv)
    (tmp_path / "folder.csv").mkdir()
    args = ["run", str(csv), "--treatment", "t", "--outcome", "y", "--out"]
    with pytest.raises(SystemExit, match="is a folder"):
        main([*args, str(tmp_path / "folder.csv")])
    with pytest.raises(SystemExit, match="would overwrite the input data"):
        main([*args, str(csv)])
    (tmp_path / "blank.csv").write_text("")
    with pytest.raises(SystemExit, match="cannot read"):
        main(["run", str(tmp_path / "blank.csv"), *args[2:], str(tmp_path / "o.csv")])


def test_a_saved_row_index_is_not_a_covariate(tmp_path, capsys):
    data = datasets.hines(300, random_state=0)
    csv = tmp_path / "with_index.csv"
    data.X.assign(treated=data.T, outcome=data.Y).to_csv(csv)  # pandas writes the index
    out = tmp_path / "imp.csv"
    main(["run", str(csv), "--treatment", "treated", "--outcome", "outcome",
          "--n-permutations", "2", "--out", str(out)])  # fmt: skip
    assert "Unnamed: 0" not in pd.read_csv(out, index_col=0).index
    assert "looks like a saved row index" in capsys.readouterr().out


def test_empty_csv_is_reported(tmp_path):
    csv = tmp_path / "empty.csv"
    csv.write_text("x,t,y\n")
    with pytest.raises(SystemExit, match="has no rows"):
        main(
            [
                "run",
                str(csv),
                "--treatment",
                "t",
                "--outcome",
                "y",
                "--out",
                str(tmp_path / "o.csv"),
            ]
        )


def test_cli_and_python_defaults_agree(tmp_path):
    """`--learner dr-linear --seed 0` is PermuCATE(random_state=0) with its default learner."""
    from permucate import PermuCATE

    data = datasets.hines(300, random_state=1)
    frame = data.X.assign(treated=data.T, outcome=data.Y)
    csv = tmp_path / "trial.csv"
    frame.to_csv(csv, index=False)
    out = tmp_path / "imp.json"
    main(["run", str(csv), "--treatment", "treated", "--outcome", "outcome",
          "--n-permutations", "3", "--seed", "0", "--out", str(out)])  # fmt: skip
    cli = pd.read_json(out, orient="index")
    api = PermuCATE(n_permutations=3, random_state=0).fit(data.X, data.T, data.Y).summary()
    np.testing.assert_allclose(cli.importance.to_numpy(), api.importance.to_numpy(), rtol=1e-10)


def test_run_writes_the_importance_table(tmp_path, capsys):
    data = datasets.hines(300, random_state=0)
    frame = data.X.assign(treated=data.T, outcome=data.Y)
    csv = tmp_path / "trial.csv"
    frame.to_csv(csv, index=False)
    out = tmp_path / "imp.csv"
    main(["run", str(csv), "--treatment", "treated", "--outcome", "outcome", "--n-permutations",
          "5", "--n-repeats", "2", "--adjust", "bh", "--out", str(out)])  # fmt: skip
    table = pd.read_csv(out, index_col=0)
    assert list(table.index) == ["x1", "x2", "x3", "x4", "x5", "x6"]
    assert np.isfinite(table.pvalue).all()
    bh = multipletests(table.pvalue, method="fdr_bh")[1]
    np.testing.assert_allclose(table.pvalue_adjusted, bh, rtol=1e-12)
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--treatment", "nope", "--outcome", "y"], "columns \\['nope'\\] not in"),
        (["--treatment", "t", "--outcome", "y", "--covariates", "name"], "must be numeric"),
        (["--treatment", "y", "--outcome", "t", "--covariates", "x"], "is `T` continuous"),
        (["--treatment", "t", "--outcome", "t"], "name the same column"),
        (["--treatment", "t", "--outcome", "y", "--covariates", "t", "x"], "must not include"),
        (["--treatment", "t", "--outcome", "y", "--out", "/no/such/dir/i.csv"], "does not exist"),
        (["--treatment", "t", "--outcome", "y", "--out", "imp.txt"], "must end in .csv or .json"),
    ],
)
def test_run_reports_bad_input_clearly(tmp_path, extra, match, monkeypatch):
    monkeypatch.chdir(tmp_path)
    csv = tmp_path / "d.csv"
    frame = pd.DataFrame({"x": np.arange(20.0), "name": ["a"] * 20, "t": [0, 1] * 10})
    frame.assign(y=np.arange(20.0)).to_csv(csv, index=False)
    with pytest.raises(SystemExit, match=match):
        main(["run", str(csv), *extra, "--n-permutations", "2", "--cv", "2"])
