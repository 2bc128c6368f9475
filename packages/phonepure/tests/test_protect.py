import pytest
import torch
from phonepure import attackvc_emb, cosine


@pytest.fixture(scope="module")
def victim(alsa_dir, espeak):
    from phonepure import load

    w = load(alsa_dir / "Front_Center.wav")[0]
    return w, espeak("Our good doctor washed the wooden chair.", "en-us+m3")


def test_budget_drop_and_determinism(encoder, victim):
    w, tgt = victim
    a = attackvc_emb(
        w, encoder.embed, tgt, eps=0.01, iters=8, generator=torch.Generator().manual_seed(0)
    )
    b = attackvc_emb(
        w, encoder.embed, tgt, eps=0.01, iters=8, generator=torch.Generator().manual_seed(0)
    )
    assert (a - w).abs().max() <= 0.01 + 1e-7
    torch.testing.assert_close(a, b, atol=0, rtol=0)
    with torch.no_grad():
        e0 = encoder.embed(w)
        g = torch.Generator().manual_seed(1)
        rand = (w + 0.01 * torch.sign(torch.randn(w.shape, generator=g))).clamp(-1, 1)
        c_adv, c_rand = cosine(encoder.embed(a), e0), cosine(encoder.embed(rand), e0)
    assert c_adv < c_rand - 0.01, (c_adv, c_rand)  # same L-inf budget, random direction


def test_batched_list_protects_each(encoder, victim):
    w, tgt = victim
    out = attackvc_emb(
        [w, w[:20000]],
        encoder.embed_many,
        [tgt, tgt],
        eps=0.01,
        iters=3,
        generator=torch.Generator().manual_seed(0),
    )
    assert [o.shape for o in out] == [w.shape, (20000,)]
    assert (
        max(float((o - x).abs().max()) for o, x in zip(out, [w, w[:20000]], strict=True))
        <= 0.01 + 1e-7
    )


def test_adaptive_bpda_and_exact_run(victim):
    w, tgt = victim
    w, tgt = w[:4000], tgt[:4000]

    def enc(x):
        return torch.stack([x[::2].mean(), x.abs().mean(), (x**2).mean()])

    def pur(x, generator=None):
        return 0.9 * x

    for mode in ("bpda", "exact"):
        out = attackvc_emb(
            w,
            enc,
            tgt,
            iters=2,
            purifier=pur,
            adaptive=mode,
            eot=2,
            generator=torch.Generator().manual_seed(0),
        )
        assert (out - w).abs().max() <= 0.01 + 1e-7


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"eps": 0.0}, "eps"),
        ({"iters": 0}, "iters"),
        ({"lr": -1.0}, "lr"),
        ({"adaptive": "magic"}, "adaptive"),
        ({"adaptive": "bpda"}, "purifier"),
        ({"eot": 0}, "eot"),
    ],
)
def test_bad_arguments(kwargs, match):
    w = torch.zeros(1000)
    with pytest.raises(ValueError, match=match):
        attackvc_emb(w, lambda x: x[:3], w, **kwargs)


@pytest.mark.parametrize(
    ("wav", "match"),
    [
        (torch.zeros(2, 100), "shape"),
        (torch.full((100,), float("nan")), "NaN"),
        (torch.zeros(0), "empty"),
        (torch.full((100,), 2.0), r"\[-1, 1\]"),
    ],
)
def test_bad_wav(wav, match):
    with pytest.raises(ValueError, match=match):
        attackvc_emb(wav, lambda x: x[:3], torch.zeros(100))
