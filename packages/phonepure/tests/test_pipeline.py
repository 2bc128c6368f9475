import warnings

import numpy as np
import pytest
import torch
from phonepure import (
    OUVESDE,
    DiffWave,
    DiffWavePurifier,
    PhoneAlignment,
    PhonemeGuidedRefiner,
    PhonemeTemplates,
    PhonePuRe,
    ScoreUNet,
    load_bundle,
    save_bundle,
    train_diffwave,
    train_refiner,
)


def _tiny():
    torch.manual_seed(0)
    dw = DiffWave(4, 4, 2, 2).eval()
    net = ScoreUNet(6, 4, 2).eval()
    tpl = PhonemeTemplates({"sil": np.zeros(256), "AH": np.full(256, 0.3)})
    return dw, net, tpl


def test_refiner_shapes_and_zero_score_identity_in_mean():
    _, net, _ = _tiny()
    ref = PhonemeGuidedRefiner(net, N=3)
    x = 0.3 * torch.sin(torch.arange(3000) / 5.0)
    out = ref(x, None, generator=torch.Generator().manual_seed(0))
    assert out.shape == x.shape
    assert torch.isfinite(out).all()
    with pytest.raises(ValueError, match="template"):
        ref(x, torch.zeros(100, 24))
    with pytest.raises(ValueError, match="N"):
        PhonemeGuidedRefiner(net, N=0)


def test_pipeline_with_aligner_and_without_text():
    dw, net, tpl = _tiny()

    def aligner(w, text):
        n = 1 + w.shape[-1] // 128
        return PhoneAlignment(["sil", "AH", "sil"], [1, n - 2, 1])

    pp = PhonePuRe(DiffWavePurifier(dw), PhonemeGuidedRefiner(net, N=2), tpl, aligner=aligner)
    x = 0.2 * torch.sin(torch.arange(4000) / 9.0)[None]
    assert pp(x, text="ah", generator=torch.Generator().manual_seed(0)).shape == x.shape
    with pytest.warns(UserWarning, match="zero template"):
        pp(x)
    assert pp(x, stage1_only=True).shape == x.shape
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        pp(x * 10)


def test_bundle_round_trip(tmp_path):
    dw, net, tpl = _tiny()
    path = save_bundle(
        tmp_path / "b.pt",
        dw,
        {"res_channels": 4, "skip_channels": 4, "layers": 2, "cycle": 2},
        net,
        {"in_channels": 6, "base": 4, "levels": 2},
        tpl,
        N=2,
    )
    pp = load_bundle(path)
    x = torch.zeros(1, 2000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert pp(x).shape == x.shape
    with pytest.raises(FileNotFoundError):
        load_bundle(tmp_path / "missing.pt")


def test_train_resume_continues_step_count(tmp_path):
    wavs = [0.3 * torch.sin(torch.arange(3000) / 4.0)]
    dw = DiffWave(4, 4, 2, 2)
    ck = tmp_path / "dw.pt"
    assert train_diffwave(dw, wavs, steps=2, batch=2, seg=500, checkpoint=ck)["steps"] == 2
    dw2 = DiffWave(4, 4, 2, 2)
    assert train_diffwave(dw2, wavs, steps=4, batch=2, seg=500, checkpoint=ck)["steps"] == 4
    net = ScoreUNet(6, 4, 2)
    pairs = [(wavs[0], wavs[0] * 0.9, None)]
    _ema, info = train_refiner(net, pairs, steps=2, batch=2, frames=8, checkpoint=tmp_path / "r.pt")
    assert info["steps"] == 2
    assert np.isfinite(info["loss"])
    _, info = train_refiner(
        ScoreUNet(6, 4, 2), pairs, steps=3, batch=2, frames=8, checkpoint=tmp_path / "r.pt"
    )
    assert info["steps"] == 3
    with pytest.raises(ValueError, match="steps"):
        train_diffwave(dw, wavs)
    with pytest.raises(ValueError, match="wavs"):
        train_diffwave(dw, [], steps=1)
    with pytest.raises(ValueError, match="pairs"):
        train_refiner(net, [], steps=1)


def test_refiner_loss_optimum_is_exact_score():
    # |s std + z|^2 is minimised by s = -z / std (denoising score matching), i.e. the loss at
    # the exact score is 0 for the noise actually drawn.
    sde = OUVESDE()
    t = torch.tensor([0.3])
    z = torch.randn(4, dtype=torch.complex64)
    s = -z / sde.std(t)
    assert float((s * sde.std(t) + z).abs().pow(2).mean()) < 1e-10


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
def test_runs_on_cuda():
    dw = DiffWave(4, 4, 2, 2).cuda()
    out = DiffWavePurifier(dw)(torch.zeros(1, 1000, device="cuda"))
    assert out.device.type == "cuda"
