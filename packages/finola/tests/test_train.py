"""fit: the loss goes down on real patches; a killed, resumed run equals an uninterrupted one."""

import math

import pytest
import torch
from finola.train import fit
from torch import nn


def _autoencoder(seed=0, dropout=0.0):
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, stride=2, padding=1),
        nn.GELU(),
        nn.Dropout(dropout),
        nn.Conv2d(8, 8, 3, padding=1),
        nn.GELU(),
        nn.Upsample(scale_factor=2, mode="nearest"),
        nn.Conv2d(8, 3, 3, padding=1),
    )


@pytest.fixture(scope="module")
def patches():
    pytest.importorskip("skimage")
    from finola.data import load_images, sample_patches

    images = load_images("skimage")
    return sample_patches(images, 256, size=16, seed=0)


def _weights(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


def test_loss_goes_down_on_real_patches(patches):
    model = _autoencoder()
    model.eval()
    with torch.no_grad():
        before = float(nn.functional.mse_loss(model(patches), patches))
    history = fit(model, patches, 60, batch_size=16, lr=3e-3, progress=False)
    assert len(history["loss"]) == 60
    assert history["steps"] == 60
    assert history["resumed_from"] == 0
    assert history["device"] == "cpu"
    assert all(math.isfinite(v) for v in history["loss"])
    assert not model.training  # the previous mode is restored
    with torch.no_grad():
        after = float(nn.functional.mse_loss(model(patches), patches))
    assert after < 0.5 * before
    assert sum(history["loss"][-10:]) < 0.5 * sum(history["loss"][:10])


def test_seeded_and_global_rng_untouched(patches):
    state = torch.get_rng_state()
    a, b = _autoencoder(dropout=0.2), _autoencoder(dropout=0.2)
    ha = fit(a, patches, 5, progress=False, seed=3)
    hb = fit(b, patches, 5, progress=False, seed=3)
    assert ha["loss"] == hb["loss"]
    assert all(torch.equal(a.state_dict()[k], v) for k, v in b.state_dict().items())
    assert torch.equal(torch.get_rng_state(), state)
    hc = fit(_autoencoder(dropout=0.2), patches, 5, progress=False, seed=4)
    assert hc["loss"] != ha["loss"]


class _Interrupt(Exception):
    pass


def _kill_after(model, calls):
    """Make the forward pass after `calls` passes raise (a kill mid-run); returns the hook."""
    left = [calls]

    def hook(module, args):
        if left[0] == 0:
            raise _Interrupt
        left[0] -= 1

    return model.register_forward_pre_hook(hook)


def test_resume_equals_uninterrupted_bitwise(patches, tmp_path):
    # dropout makes the torch RNG state part of what must be restored
    kwargs = dict(batch_size=8, checkpoint_every=3, seed=7, progress=False)
    straight = _autoencoder(seed=1, dropout=0.1)
    reference = fit(straight, patches, 10, **kwargs)

    path = tmp_path / "run" / "ckpt.pt"
    killed = _autoencoder(seed=1, dropout=0.1)
    handle = _kill_after(killed, calls=7)
    with pytest.raises(_Interrupt):
        fit(killed, patches, 10, checkpoint=path, **kwargs)
    handle.remove()
    assert path.exists()
    assert not list(path.parent.glob(".*tmp"))
    state = torch.load(path, weights_only=True)
    assert state["step"] == 6
    assert len(state["history"]) == 6

    resumed = _autoencoder(seed=99, dropout=0.1)  # other init: the checkpoint replaces it
    history = fit(resumed, patches, 10, checkpoint=path, **kwargs)
    assert history["resumed_from"] == 6
    assert history["loss"] == reference["loss"]
    for key, value in straight.state_dict().items():
        assert torch.equal(resumed.state_dict()[key], value), key

    # a finished checkpoint trains nothing more; a longer run continues it
    again = _autoencoder(seed=5, dropout=0.1)
    assert fit(again, patches, 10, checkpoint=path, **kwargs)["loss"] == reference["loss"]
    assert torch.equal(again[0].weight, straight[0].weight)
    longer = fit(_autoencoder(seed=5, dropout=0.1), patches, 12, checkpoint=path, **kwargs)
    assert longer["resumed_from"] == 10
    assert len(longer["loss"]) == 12


def test_checkpoint_mismatch(patches, tmp_path):
    path = tmp_path / "ckpt.pt"
    fit(_autoencoder(), patches, 2, checkpoint=path, progress=False)
    with pytest.raises(ValueError, match=r"`checkpoint`.*other settings"):
        fit(_autoencoder(), patches, 4, checkpoint=path, lr=1e-2, progress=False)
    with pytest.raises(ValueError, match=r"`checkpoint`.*other settings"):
        fit(_autoencoder(), patches[:100], 4, checkpoint=path, progress=False)
    with pytest.raises(ValueError, match="`steps`"):
        fit(_autoencoder(), patches, 1, checkpoint=path, progress=False)
    other = nn.Sequential(nn.Conv2d(3, 3, 1))
    with pytest.raises(ValueError, match=r"`checkpoint`.*another model"):
        fit(other, patches, 4, checkpoint=path, progress=False)
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="`checkpoint`"):
        fit(_autoencoder(), patches, 2, checkpoint=junk, progress=False)
    with pytest.raises(ValueError, match=r"`checkpoint`.*folder"):
        fit(_autoencoder(), patches, 2, checkpoint=tmp_path, progress=False)


def test_bad_input(patches):
    model = _autoencoder()
    with pytest.raises(ValueError, match=r"`patches`.*\[0, 1\]"):
        fit(model, patches * 255, 2, progress=False)
    bad = patches.clone()
    bad[0, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match=r"`patches`.*NaN"):
        fit(model, bad, 2, progress=False)
    with pytest.raises(ValueError, match=r"`patches`.*shape"):
        fit(model, patches[0], 2, progress=False)
    with pytest.raises(ValueError, match=r"`patches`.*empty"):
        fit(model, patches[:0], 2, progress=False)
    with pytest.raises(TypeError, match="`patches`"):
        fit(model, (patches * 255).to(torch.uint8), 2, progress=False)
    with pytest.raises(TypeError, match="`patches`"):
        fit(model, patches.tolist(), 2, progress=False)
    for name, value in [
        ("steps", 0),
        ("batch_size", 0),
        ("lr", 0.0),
        ("lr", math.inf),
        ("weight_decay", -0.1),
        ("seed", -1),
        ("checkpoint_every", 0),
    ]:
        kwargs = {"steps": 2, name: value}
        with pytest.raises(ValueError, match=f"`{name}`"):
            fit(model, patches, progress=False, **kwargs)
    with pytest.raises(TypeError, match="`steps`"):
        fit(model, patches, 2.5, progress=False)
    with pytest.raises(TypeError, match="`model`"):
        fit(lambda x: x, patches, 2, progress=False)
    with pytest.raises(ValueError, match=r"`model`.*trainable"):
        fit(nn.Identity(), patches, 2, progress=False)
    with pytest.raises(ValueError, match="`model` must return"):
        fit(nn.Conv2d(3, 3, 3), patches, 2, progress=False)
    with pytest.raises(ValueError, match="`device`"):
        fit(model, patches, 2, device="gpu", progress=False)
    with pytest.raises(FloatingPointError, match="`lr`"):
        fit(_autoencoder(), patches, 50, lr=1e12, weight_decay=0.0, progress=False)


def test_resume_refuses_a_finola_with_other_settings(tmp_path):
    # new-user trial: LayerNorm weights resumed silently into an RMS-norm model
    from finola import FINOLA, FinolaAutoencoder, SmallConvEncoder, UpConvDecoder

    def model(**kw):
        return FinolaAutoencoder(SmallConvEncoder(16), FINOLA(16, 8, **kw), UpConvDecoder(16, 2))

    patches = torch.rand(32, 3, 32, 32)
    fit(model(), patches, 2, checkpoint=tmp_path / "c.pt", progress=False)
    with pytest.raises(ValueError, match=r"another model.*norm='rms'"):
        fit(model(norm="rms"), patches, 4, checkpoint=tmp_path / "c.pt", progress=False)
