"""The library's own commands; help, version and usage errors come from icml25_core.testing."""

import numpy as np
import pytest
import soundfile as sf
import torch
from phonepure import DiffWave, PhonemeTemplates, ScoreUNet, save_bundle
from phonepure.cli import main


@pytest.fixture
def bundle(tmp_path):
    torch.manual_seed(0)
    return save_bundle(
        tmp_path / "b.pt",
        DiffWave(4, 4, 2, 2),
        {"res_channels": 4, "skip_channels": 4, "layers": 2, "cycle": 2},
        ScoreUNet(6, 4, 2),
        {"in_channels": 6, "base": 4, "levels": 2},
        PhonemeTemplates({"sil": np.zeros(256)}),
        N=2,
    )


def test_purify_file(tmp_path, bundle):
    src = tmp_path / "a.wav"
    sf.write(src, 0.1 * np.sin(np.arange(4000) / 3), 16000)
    assert main(["purify", str(src), "--model", str(bundle), "-o", str(tmp_path / "o.wav")]) == 0
    assert sf.read(tmp_path / "o.wav")[0].shape == (4000,)


@pytest.mark.parametrize("args", [["--shard", "2/2"], ["--shard", "x"], ["--t-star", "0"]])
def test_purify_usage_errors(tmp_path, bundle, args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["purify", str(tmp_path), "--model", str(bundle), "-o", str(tmp_path / "o"), *args])
    assert exc.value.code == 2


def test_missing_files_are_usage_errors(tmp_path, bundle):
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "purify",
                str(tmp_path / "nope.wav"),
                "--model",
                str(bundle),
                "-o",
                str(tmp_path / "o.wav"),
            ]
        )
    assert exc.value.code == 2


def test_protect_and_eval(tmp_path, alsa_dir, encoder, capsys):
    out = tmp_path / "p.wav"
    assert (
        main(
            [
                "protect",
                str(alsa_dir / "Front_Center.wav"),
                "--target",
                str(alsa_dir / "Rear_Left.wav"),
                "-o",
                str(out),
                "--iters",
                "2",
            ]
        )
        == 0
    )
    assert (
        main(
            ["eval", str(out), "--enrol", str(alsa_dir / "Front_Center.wav"), "--threshold", "0.5"]
        )
        == 0
    )
    assert "cosine" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["protect", str(out), "--target", str(out), "-o", str(out), "--eps", "-1"])
