"""Regression tests for the findings of new-user trial 22b (loud files, attack budget, gate and
purifier argument checks, CLI ranges)."""

import numpy as np
import pytest
import soundfile as sf
import torch
from phonepure import (
    DiffWave,
    DiffWavePurifier,
    attackvc_emb,
    gated_activation,
    gated_activation_reference,
    load,
)
from phonepure.cli import main

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in exp:RuntimeWarning")


def _encoder(x):  # a differentiable stand-in speaker encoder: (T,) -> (4,)
    return torch.stack([x.mean(), x.std(), x.abs().max(), (x[1:] * x[:-1]).mean()])


def test_load_refuses_float_files_beyond_full_scale(tmp_path):
    # M1: a float WAV with peak 2 was clipped silently
    loud = tmp_path / "loud.wav"
    sf.write(loud, 2.0 * np.sin(np.arange(8000) / 5.0), 16000, subtype="FLOAT")
    with pytest.raises(ValueError, match=r"beyond \[-1, 1\] \(max \|x\| = 2.000\).*loud.wav"):
        load(loud)
    full = tmp_path / "full.wav"
    sf.write(full, np.sign(np.sin(np.arange(8000) / 5.0)), 16000, subtype="PCM_16")
    wav = load(full, sr=22050)  # int16 full scale, resampled: loads, ringing clipped
    assert float(wav.abs().max()) <= 1.0


def test_cli_names_a_loud_file(tmp_path, capsys):
    loud = tmp_path / "loud.wav"
    sf.write(loud, 3.0 * np.ones(4000), 16000, subtype="FLOAT")
    with pytest.raises(SystemExit) as exc:
        main(["eval", str(loud), "--enrol", str(loud)])
    assert exc.value.code == 2
    assert "loud.wav" in capsys.readouterr().err


@pytest.mark.parametrize("eps", [float("inf"), 5.0, float("nan"), 0.0, -0.1])
def test_attack_budget_must_be_in_0_1(eps):
    # M2: eps=inf returned NaN audio
    wav = 0.1 * torch.sin(torch.arange(800) / 4.0)
    with pytest.raises(ValueError, match=r"`eps` must be in \(0, 1\]"):
        attackvc_emb(wav, _encoder, wav.flip(0), eps=eps, iters=1)
    with pytest.raises(ValueError, match=r"`eps` must be in \(0, 1\]"):
        attackvc_emb([wav], lambda xs: torch.stack([_encoder(x) for x in xs]), [wav], eps=eps)


def test_attack_type_and_target_errors():
    wav = 0.1 * torch.sin(torch.arange(800) / 4.0)
    with pytest.raises(TypeError, match="`eps` must be a Python number"):
        attackvc_emb(wav, _encoder, wav.flip(0), eps=torch.tensor(0.01), iters=1)
    with pytest.raises(ValueError, match=r"`target_wav` must lie in \[-1, 1\]"):
        attackvc_emb(wav, _encoder, 30 * wav, iters=1)
    with pytest.raises(ValueError, match=r"`target_wav\[0\]` must lie in \[-1, 1\]"):
        attackvc_emb([wav], lambda xs: torch.stack([_encoder(x) for x in xs]), [30 * wav])


def test_a_budget_of_one_still_keeps_the_bound():
    wav = 0.1 * torch.sin(torch.arange(800) / 4.0)
    out = attackvc_emb(wav, _encoder, wav.flip(0), eps=1.0, iters=2)
    assert float((out - wav).abs().max()) <= 1.0 + 1e-6


@pytest.mark.parametrize(
    ("bias", "exc", "match"),
    [
        (torch.ones(4, dtype=torch.int64), TypeError, "`bias` must be a floating-point"),
        (torch.ones(4, dtype=torch.bool), TypeError, "`bias` must be a floating-point"),
        (np.ones(4, dtype=np.float32), TypeError, "got ndarray"),
    ],
)
def test_gate_bias_types(bias, exc, match):
    with pytest.raises(exc, match=match):
        gated_activation(torch.randn(1, 4, 5), bias)


def test_gate_keeps_float64_on_the_reference_path(monkeypatch):
    # L2: the Triton kernel computes in float32; float64 must not lose precision silently
    pytest.importorskip("triton")
    monkeypatch.setenv("ICML25_BACKEND", "triton-interpret")
    z = torch.randn(2, 6, 33, dtype=torch.float64)
    b = torch.randn(6, dtype=torch.float64)
    with torch.no_grad():
        got = gated_activation(z, b)
    assert torch.equal(got, gated_activation_reference(z, b))


def test_purifier_generator_must_be_a_generator():
    pur = DiffWavePurifier(DiffWave(4, 4, 1, 1), t_star=1)
    with pytest.raises(TypeError, match=r"`generator` must be a torch\.Generator, got int"):
        pur(torch.zeros(100), generator=3)


@pytest.mark.parametrize(
    "args",
    [
        ["eval", "a.wav", "--enrol", "b.wav", "--threshold", "nan"],
        ["eval", "a.wav", "--enrol", "b.wav", "--threshold", "5"],
        ["protect", "a.wav", "--target", "b.wav", "-o", "c.wav", "--eps", "inf"],
        ["protect", "a.wav", "--target", "b.wav", "-o", "c.wav", "--eps", "0"],
    ],
)
def test_cli_ranges(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    assert "must be in" in capsys.readouterr().err


def test_train_cli_documents_its_options(capsys):
    from phonepure.train import main as train_main

    with pytest.raises(SystemExit):
        train_main(["--help"])
    out = capsys.readouterr().out
    assert "--checkpoint-every" in out
    assert "optimiser steps (default: 10)" in out
