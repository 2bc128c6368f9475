import numpy as np
import pytest
import torch
from phonepure import compute_partial_slices, eer


def _clips(espeak, alsa_dir):
    from phonepure import load

    texts = [
        "The young boy measured the yellow coin.",
        "A quiet teacher caught a huge cloud.",
        "Our good doctor washed the wooden chair.",
    ]
    clips = [espeak(t, v) for t in texts[:2] for v in ("en-us+m1", "en-us+f2")]
    clips += [espeak(texts[2], v) for v in ("en-us+m4", "en-us+f3")]
    clips += [
        load(alsa_dir / f"{n}.wav")[0]
        for n in ("Front_Center", "Front_Left", "Rear_Right", "Side_Left")
    ]
    return clips


def test_embedding_matches_resemblyzer(encoder, espeak, alsa_dir):
    from resemblyzer import VoiceEncoder
    from resemblyzer.audio import normalize_volume

    ve = VoiceEncoder("cpu", verbose=False)
    for w in _clips(espeak, alsa_dir):
        ref = ve.embed_utterance(normalize_volume(w.numpy(), -30, increase_only=True))
        with torch.no_grad():
            ours = encoder.embed(w).numpy()
        assert float(ours @ ref) >= 0.995


def test_mel_matches_librosa(encoder, alsa_dir):
    import librosa
    from phonepure import load

    w = load(alsa_dir / "Front_Center.wav")[0]
    ref = librosa.feature.melspectrogram(
        y=w.numpy(), sr=16000, n_fft=400, hop_length=160, n_mels=40
    ).T
    with torch.no_grad():
        ours = encoder.mel(w).numpy()
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-4 * float(np.abs(ref).max()))


@pytest.mark.parametrize("n", [1, 100, 16000, 25600, 27000, 50000, 123457])
def test_partial_slices_match_resemblyzer(n):
    from resemblyzer import VoiceEncoder

    assert compute_partial_slices(n) == VoiceEncoder.compute_partial_slices(n, 1.3, 0.75)


def test_gradcheck_embedding():
    torch.manual_seed(0)
    from phonepure import GE2E

    enc = GE2E(mel_basis=np.abs(np.random.default_rng(0).standard_normal((40, 201)))).double()
    base = 0.1 * torch.randn(3300, dtype=torch.float64)
    dirs = torch.randn(3, 3300, dtype=torch.float64)

    def f(u):
        enc.float()
        enc.double()
        x = base + u @ dirs * 0.01
        return enc.embed(x)[:4]

    # embed casts to float32 internally: check the float64 path of its parts
    u = torch.zeros(3, dtype=torch.float64, requires_grad=True)

    def parts(u):
        x = base + u @ dirs * 0.01
        m = enc.mel(x)
        return enc.embed_partials(m[None, :160])[0, :4]

    assert torch.autograd.gradcheck(parts, (u,), eps=1e-6, atol=1e-4)


def test_embed_many_equals_embed(encoder, alsa_dir):
    from phonepure import load

    ws = [load(alsa_dir / f"{n}.wav")[0] for n in ("Front_Center", "Side_Left")]
    with torch.no_grad():
        many = encoder.embed_many(ws)
        one = torch.stack([encoder.embed(w) for w in ws])
    torch.testing.assert_close(many, one, atol=1e-5, rtol=0)


def test_eer_closed_form():
    e, thr = eer([0.9, 0.8, 0.7, 0.2, 0.1, 0.75], [1, 1, 1, 0, 0, 0])
    assert e == pytest.approx(0.0) or e <= 1 / 3
    e, thr = eer([0.9, 0.8, 0.3, 0.2], [1, 1, 0, 0])
    assert e == 0.0
    assert 0.3 < thr <= 0.8
    with pytest.raises(ValueError, match="labels"):
        eer([0.1, 0.2], [1, 1])
    with pytest.raises(ValueError, match="scores"):
        eer([float("nan"), 0.2], [1, 0])
    with pytest.raises(ValueError, match="scores"):
        eer([], [])


def test_embed_bad_input(encoder):
    with pytest.raises(ValueError, match="shape"):
        encoder.embed(torch.zeros(2, 1000))
    with pytest.raises(ValueError, match="NaN"):
        encoder.embed(torch.full((1000,), float("nan")))
    with pytest.raises(ValueError, match="empty"):
        encoder.embed(torch.zeros(0))
    with pytest.raises(ValueError, match="wavs"):
        encoder.embed_many([])
