"""Priors and chunk synchronisation against their written-out formulas (spec test 6)."""

import math

import pytest
import torch
from monoattn_transducer import alignment_prior, chunk_synchronize


def test_chunk_diagonal_prior_formula_and_support():
    T_b, U_b, cf, a = 10, 3, 4, 1.0  # chunks: frames 0-3, 4-7, 8-9 (partial)
    p = alignment_prior("chunk_diagonal", torch.tensor([T_b]), torch.tensor([U_b]), chunk_frames=cf)
    C = math.ceil(T_b / cf)
    ends = [3, 7, 9]
    assert p.shape == (1, U_b + 1, T_b)
    assert p[0, 0, 3] == 1.0
    assert p[0, 0].sum() == 1.0
    for u in range(1, U_b + 1):
        i = u - 1
        scores = torch.tensor([math.exp(-a * abs(i - c * U_b / C)) for c in range(C)])
        want = scores / scores.sum()
        torch.testing.assert_close(p[0, u, ends], want.float())
        mask = torch.ones(T_b, dtype=torch.bool)
        mask[ends] = False
        assert (p[0, u, mask] == 0).all()


def test_diagonal_and_uniform_priors_formula():
    T_b, U_b = 6, 2
    p = alignment_prior("diagonal", torch.tensor([T_b]), torch.tensor([U_b]), alpha=0.5)
    for u in range(1, U_b + 1):
        s = torch.tensor([math.exp(-0.5 * abs(u - 1 - t * U_b / T_b)) for t in range(T_b)])
        torch.testing.assert_close(p[0, u], (s / s.sum()).float())
    q = alignment_prior("uniform", torch.tensor([T_b]), torch.tensor([U_b]))
    torch.testing.assert_close(q[0, 1:], torch.full((U_b, T_b), 1 / T_b))


def test_prior_rows_do_not_depend_on_the_batch():
    enc, tgt = torch.tensor([9, 4, 13]), torch.tensor([2, 0, 5])
    for kind in ("chunk_diagonal", "diagonal", "uniform"):
        batch = alignment_prior(kind, enc, tgt, chunk_frames=4)
        for b in range(3):
            alone = alignment_prior(kind, enc[b : b + 1], tgt[b : b + 1], chunk_frames=4)
            T, R = alone.shape[2], alone.shape[1]
            torch.testing.assert_close(batch[b, :R, :T], alone[0])
            assert (batch[b, R:] == 0).all()
            assert (batch[b, :, T:] == 0).all()


def test_chunk_synchronize_moves_mass_to_chunk_final_frames():
    g = torch.Generator().manual_seed(0)
    enc = torch.tensor([10, 7])  # chunk_frames 4, downsample 2: decision frames 0, 2, 4, ...
    tgt = torch.tensor([3, 2])
    T_dec = 5
    post = torch.rand(2, T_dec, 3, generator=g)
    post[1, 4:] = 0  # decision frame 4 = encoder frame 8 >= 7: outside sample 1
    post[1, :, 2:] = 0
    post = post / post.sum(1, keepdim=True).clamp_min(1e-9)
    out = chunk_synchronize(post, enc, tgt, chunk_frames=4, downsample=2)
    assert out.shape == (2, 4, 10)
    # sample 0: decision i -> encoder 2i -> chunk end min(4*(2i//4)+3, 9)
    for b, T_b in ((0, 10), (1, 7)):
        for u in range(int(tgt[b])):
            want = torch.zeros(10)
            for i in range(T_dec):
                if 2 * i < T_b:
                    want[min((2 * i // 4 + 1) * 4 - 1, T_b - 1)] += post[b, i, u]
            torch.testing.assert_close(out[b, u + 1], want)
            torch.testing.assert_close(out[b, u + 1].sum(), post[b, :, u].sum())
    assert out[0, 0, 3] == 1
    assert out[1, 0, 3] == 1
    assert (out[1, 3] == 0).all()  # padded row stays 0 (official code: 1/T_max)
    # the partial last chunk of sample 1 lands on its last valid frame 6, never on padding
    assert out[1, :, 7:].sum() == 0


def test_chunk_synchronize_rejects_chunk_not_multiple_of_downsample():
    with pytest.raises(ValueError, match="chunk_frames"):
        chunk_synchronize(torch.ones(1, 3, 1), torch.tensor([6]), torch.tensor([1]),
                          chunk_frames=3, downsample=2)  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"kind": "bogus"}, "kind"),
        ({"enc_lengths": torch.tensor([0])}, "enc_lengths"),
        ({"target_lengths": torch.tensor([-1])}, "target_lengths"),
        ({"enc_lengths": torch.tensor([2.0])}, "enc_lengths"),
        ({"chunk_frames": None}, "chunk_frames"),
        ({"alpha": -1.0}, "alpha"),
    ],
)
def test_alignment_prior_bad_input_raises(kwargs, name):
    args = {"kind": "chunk_diagonal", "enc_lengths": torch.tensor([5]),
            "target_lengths": torch.tensor([2]), "chunk_frames": 2, "alpha": 1.0}  # fmt: skip
    args.update(kwargs)
    kind = args.pop("kind")
    enc, tgt = args.pop("enc_lengths"), args.pop("target_lengths")
    with pytest.raises((ValueError, TypeError), match=name):
        alignment_prior(kind, enc, tgt, **args)


def test_chunk_synchronize_rows_do_not_depend_on_the_batch():
    g = torch.Generator().manual_seed(1)
    enc, tgt = torch.tensor([13, 6, 9]), torch.tensor([3, 1, 0])
    post = torch.rand(3, 7, 3, generator=g)
    batch = chunk_synchronize(post, enc, tgt, chunk_frames=4, downsample=2)
    for b in range(3):
        T_dec = -(-int(enc[b]) // 2)
        U = max(int(tgt[b]), 0)
        alone = chunk_synchronize(post[b : b + 1, :T_dec, :U], enc[b : b + 1], tgt[b : b + 1],
                                  chunk_frames=4, downsample=2)  # fmt: skip
        torch.testing.assert_close(batch[b, : U + 1, : int(enc[b])], alone[0])
        assert (batch[b, U + 1 :] == 0).all()
        assert (batch[b, :, int(enc[b]) :] == 0).all()
