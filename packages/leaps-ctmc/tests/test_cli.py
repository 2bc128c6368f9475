"""The console script's own commands: train -> sample round trip, and a tiny reproduce run (the
shared contract checks help, version and usage errors)."""

import json

import pytest
from leaps_ctmc import reproduce
from leaps_ctmc.cli import main


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


TINY = ["--L", "3", "--n-steps", "3", "--walkers", "4", "--batch-size", "4",
        "--kernel-sizes", "3", "--channels", "2"]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--L", "2"], "`L` must be >= 3"),
        (["--refresh-every", "0"], "`refresh_every`"),  # was a ZeroDivisionError
        (["--steps", "-1"], "`steps`"),
        (["--beta", "nan"], "`beta`"),
        (["--checkpoint-dir", "afile"], "--checkpoint-dir afile is a file"),
    ],
)
def test_train_reports_bad_arguments_in_one_line(args, match, tmp_path, run_main, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("x")
    result = run_main(main, "train", *TINY, "--steps", "1", *args, "--out", tmp_path / "x.pt")
    assert match in result.usage_error()
    assert result.err.startswith("leaps-ctmc train: error:")


def test_a_diverging_training_ends_with_one_error_line(tmp_path, run_main):
    result = run_main(main, "train", *TINY, "--lr", "1e12", "--steps", "30", "--out",
                      tmp_path / "x.pt")  # fmt: skip
    assert result.code == 2
    assert "leaps-ctmc train: error: training diverged" in result.err
    assert not (tmp_path / "x.pt").exists()


def test_train_refuses_a_folder_as_out_before_training(tmp_path, run_main):
    result = run_main(main, "train", *TINY, "--steps", "1", "--out", tmp_path)
    assert "is a folder" in result.usage_error()


def test_train_zero_steps_and_a_new_out_directory(tmp_path, capsys):
    out = tmp_path / "new" / "dir" / "x.pt"  # missing parents used to fail after training
    assert main(["train", *TINY, "--steps", "0", "--out", str(out)]) == 0  # was an IndexError
    assert out.exists()
    assert "trained 0 steps; wrote" in capsys.readouterr().out


def test_sample_rejects_files_not_written_by_train(tmp_path, run_main):
    ckpt_dir = tmp_path / "ckpts"
    main(["train", *TINY, "--steps", "1", "--checkpoint-dir", str(ckpt_dir),
          "--out", str(tmp_path / "s.pt")])  # fmt: skip
    (tmp_path / "text.pt").write_text("not a checkpoint")
    for name, match in [(ckpt_dir / "trainer-rank0.pt", "not written by `leaps-ctmc train"),
                        (tmp_path / "text.pt", "not a torch file"),
                        (tmp_path / "missing.pt", "not a file")]:  # fmt: skip
        result = run_main(main, "sample", name, "--walkers", "4")
        assert result.code == 2
        assert match in result.err
    # --n-steps 0 was silently replaced by the training's step count
    result = run_main(main, "sample", tmp_path / "s.pt", "--walkers", "4", "--n-steps", "0")
    assert "`n_steps` must be >= 1" in result.err


def test_help_shows_defaults(run_main):
    for command in ("train", "sample"):
        assert "(default: 0)" in run_main(main, command, "--help").out  # --seed
    assert "(default: 512)" in run_main(main, "train", "--help").out  # --batch-size


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
    assert (tmp_path / "leaps-ctmc_magnetisation.png").exists()
    # a second run resumes from the stored results and checkpoints
    assert main(["reproduce", "--out", str(tmp_path)]) == 0
