"""The console script: help, train -> sample round trip, and a tiny reproduce run."""

import json

import pytest
from leaps_ctmc import __version__, reproduce
from leaps_ctmc.cli import main


def test_help_lists_commands(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for command in ("train", "sample", "reproduce"):
        assert command in out


def test_reproduce_help_lists_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["reproduce", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "--out" in out
    assert "--full" in out


def test_version_is_printed(capsys):
    with pytest.raises(SystemExit):
        main(["--version"])
    assert __version__ in capsys.readouterr().out


@pytest.mark.parametrize(("model", "exact"), [("ising", "exact log Z 15.5222"), ("potts", "exact")])
def test_train_then_sample_prints_ess_and_log_z(model, exact, tmp_path, capsys):
    ckpt = tmp_path / "ckpt.pt"
    assert main(["train", "--model", model, "--L", "4", "--steps", "3", "--n-steps", "5",
                 "--walkers", "8", "--batch-size", "16", "--kernel-sizes", "3", "3",
                 "--channels", "4", "--out", str(ckpt)]) == 0  # fmt: skip
    assert ckpt.exists()
    assert main(["sample", str(ckpt), "--walkers", "64"]) == 0
    out = capsys.readouterr().out
    assert "ESS" in out
    assert "log Z" in out
    assert exact in out


def test_train_rejects_bad_lattice(tmp_path):
    with pytest.raises(ValueError, match="L"):
        main(["train", "--L", "2", "--steps", "1", "--out", str(tmp_path / "x.pt")])


def test_reproduce_writes_report_with_three_judged_claims(tmp_path, monkeypatch):
    tiny = reproduce.Settings(L=3, n_steps=4, kernel_sizes=(3, 3), channels=4, iterations=2,
                              rollout_walkers=8, refresh_every=1, batch_size=16,
                              eval_walkers=32, potts_L=3, potts_iterations=1,
                              potts_walkers=32)  # fmt: skip
    monkeypatch.setattr(reproduce, "DEFAULT", tiny)
    assert main(["reproduce", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "leaps-ctmc.json").read_text())
    assert len(report["claims"]) == 3
    assert all(c["threshold"] for c in report["claims"])
    assert (tmp_path / "leaps-ctmc.md").exists()
    assert (tmp_path / "leaps-ctmc-magnetisation.png").exists()
    # a second run resumes from the stored results and checkpoints
    assert main(["reproduce", "--out", str(tmp_path)]) == 0
