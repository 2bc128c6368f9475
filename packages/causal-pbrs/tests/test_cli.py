"""The console script's own commands, `bound` and `run` (the shared contract checks the rest)."""

import json

import numpy as np
import pytest
from causal_pbrs import WindyGrid, causal_upper_bound, random_policy
from causal_pbrs.cli import main


def test_module_runs_the_bound_command(run_console):
    result = run_console("causal_pbrs.cli", "bound", "--help", module=True)
    assert result.code == 0
    assert "--reward-max" in result.out


def test_bound_writes_the_same_bound_as_python(tmp_path, capsys):
    env = WindyGrid.preset("lava_extreme")
    data = env.collect(random_policy(env), 3000, rng=0)
    path = data.save(tmp_path / "data.npz")
    out = tmp_path / "phi.npy"
    main(["bound", str(path), "--reward-max", "0", "--out", str(out)])
    np.testing.assert_array_equal(np.load(out), causal_upper_bound(data, 0.0))
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--reward-max", "-5"], "`reward_max` = -5.0 is below a reward"),
        (["--reward-max", "0", "--out", "phi.txt"], "--out must end in .npy"),
        (["--reward-max", "0", "--out", "/no/such/dir/phi.npy"], "does not exist"),
        (["--reward-max", "0", "--horizon", "1"], "`h` must lie in"),
        (["--reward-max", "0", "--out", "folder.npy"], "--out folder.npy is a folder"),
        (["--reward-max", "0", "--delta", "0.05"], "--delta needs --reward-min"),
    ],
)
def test_bound_reports_bad_input(tmp_path, extra, match, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "folder.npy").mkdir()
    env = WindyGrid.preset("empty8")
    env.collect(random_policy(env), 200, rng=0).save(tmp_path / "d.npz")
    with pytest.raises(SystemExit, match=match):
        main(["bound", "d.npz", *extra])


def test_bound_writes_the_finite_sample_bound(tmp_path):
    env = WindyGrid.preset("lava_extreme")
    data = env.collect(random_policy(env), 3000, rng=0)
    path, out = data.save(tmp_path / "data.npz"), tmp_path / "phi.npy"
    main(["bound", str(path), "--reward-max", "0", "--delta", "0.05", "--reward-min", "-2",
          "--out", str(out)])  # fmt: skip
    expected = causal_upper_bound(data, 0.0, delta=0.05, reward_min=-2.0)
    np.testing.assert_array_equal(np.load(out), expected)


def test_bound_reports_a_missing_file(tmp_path):
    with pytest.raises(SystemExit, match="no such file"):
        main(["bound", str(tmp_path / "none.npz"), "--reward-max", "0"])


def test_run_prints_and_writes_regrets(tmp_path, capsys):
    out = tmp_path / "r.json"
    main(["run", "empty8", "--episodes", "30", "--seeds", "2", "--transitions", "500",
          "--out", str(out)])  # fmt: skip
    table = json.loads(out.read_text())
    assert table["seeds"] == [1234, 5678]
    assert set(table["gap_regret"]) == {"vanilla", "causal bound", "phi = 0"}
    assert "cumulative gap regret" in capsys.readouterr().out


def test_run_rejects_bad_sizes():
    with pytest.raises(SystemExit, match="must be >= 1"):
        main(["run", "empty8", "--episodes", "0"])
    with pytest.raises(SystemExit):
        main(["run", "no-such-env"])


def test_bound_names_the_first_step_zero_based(tmp_path, capsys):
    env = WindyGrid.preset("empty8")
    path = env.collect(random_policy(env), 300, rng=0).save(tmp_path / "d.npz")
    main(["bound", str(path), "--reward-max", "0", "--out", str(tmp_path / "phi.npy")])
    assert "φ_0 (h = 0) in [" in capsys.readouterr().out


def test_bound_reports_files_that_are_not_logs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("not a log\n")
    with pytest.raises(SystemExit, match=r"is not an \.npz archive"):
        main(["bound", str(tmp_path / "notes.txt"), "--reward-max", "0"])
    np.savez(tmp_path / "bare.npz", h=[0], s=[0], x=[0], y=[0.0], s_next=[1], done=[False])
    with pytest.raises(SystemExit, match="command line: --n-states"):
        main(["bound", str(tmp_path / "bare.npz"), "--reward-max", "0"])


def test_run_checks_its_output_folder_before_running(capsys, tmp_path):
    with pytest.raises(SystemExit, match="--out: folder /no/such/dir does not exist"):
        main(["run", "empty8", "--episodes", "5", "--out", "/no/such/dir/r.json"])
    with pytest.raises(SystemExit, match="is a folder"):
        main(["run", "empty8", "--episodes", "5", "--out", str(tmp_path)])
    assert "cumulative gap regret" not in capsys.readouterr().out  # nothing was run
