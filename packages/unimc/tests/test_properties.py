"""Invariants of the maths (hypothesis; CI profile < 20 s)."""

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from unimc import (
    AP10K17,
    COCO17,
    ConditionTokenizer,
    area_from_keypoints,
    fourier_embed,
    oks_matrix,
)

SKEL = {0: COCO17, 1: AP10K17}
torch.manual_seed(0)
TOK = ConditionTokenizer(2, 8, skeleton_of_class=SKEL, num_freqs=2)
coords = arrays(np.float64, (3, 2), elements=st.floats(0, 1))


@given(x=arrays(np.float64, (4,), elements=st.floats(-10, 10)), f=st.integers(1, 6))
def test_fourier_sin_cos_pairs_have_unit_norm(x, f):
    e = fourier_embed(torch.from_numpy(x), f).view(f, 2, 4)
    assert torch.allclose(e[:, 0] ** 2 + e[:, 1] ** 2, torch.ones(f, 4, dtype=torch.float64))


def _kp(rng, n, k=17):
    kp = np.c_[rng.uniform(0, 100, (n * k, 2)), rng.integers(0, 3, n * k)].reshape(n, k, 3)
    return kp


@given(seed=st.integers(0, 10_000), nd=st.integers(1, 4), ng=st.integers(1, 4))
def test_oks_in_unit_interval_and_one_on_self(seed, nd, ng):
    rng = np.random.default_rng(seed)
    gt = _kp(rng, ng)
    gt[:, 0, 2] = 2  # at least one labelled point each
    dt = _kp(rng, nd)
    area = rng.uniform(10, 1000, ng)
    box = np.c_[rng.uniform(0, 50, (ng, 2)), rng.uniform(1, 50, (ng, 2))]
    o = oks_matrix(dt, gt, area, box, COCO17.sigma_array())
    assert o.shape == (nd, ng)
    assert (o >= 0).all()
    assert (o <= 1 + 1e-12).all()
    np.testing.assert_allclose(np.diag(oks_matrix(gt, gt, area, box, COCO17.sigma_array())), 1.0)


@given(seed=st.integers(0, 10_000), shift=st.floats(-50, 50))
def test_oks_and_area_translation_invariant(seed, shift):
    rng = np.random.default_rng(seed)
    gt, dt = _kp(rng, 2), _kp(rng, 3)
    area, box = (
        rng.uniform(10, 1000, 2),
        np.c_[rng.uniform(0, 50, (2, 2)), rng.uniform(1, 50, (2, 2))],
    )
    o1 = oks_matrix(dt, gt, area, box, COCO17.sigma_array())
    gt2, dt2, box2 = gt.copy(), dt.copy(), box.copy()
    for a in (gt2, dt2):
        a[..., :2] += shift
    box2[:, :2] += shift
    np.testing.assert_allclose(
        oks_matrix(dt2, gt2, area, box2, COCO17.sigma_array()), o1, atol=1e-9
    )
    np.testing.assert_allclose(area_from_keypoints(gt2), area_from_keypoints(gt), atol=1e-8)


@given(seed=st.integers(0, 10_000), perm_seed=st.integers(0, 100))
@settings(deadline=None, max_examples=25)
def test_tokens_permutation_equivariant(seed, perm_seed):
    g = torch.Generator().manual_seed(seed)
    n = 3
    c = torch.randint(0, 2, (1, n), generator=g)
    xy = torch.rand(1, n, 2, 2, generator=g).sort(-2).values
    b = torch.cat([xy[..., 0, :], xy[..., 1, :]], -1)
    k = torch.cat(
        [
            torch.rand(1, n, 17, 2, generator=g),
            torch.randint(0, 3, (1, n, 17, 1), generator=g).float(),
        ],
        -1,
    )
    m = torch.rand(1, n, generator=g) < 0.7
    perm = torch.from_numpy(np.random.default_rng(perm_seed).permutation(n))
    with torch.no_grad():
        a = TOK(c, b, k, m).tokens.view(1, n, 18, -1)
        p = TOK(c[:, perm], b[:, perm], k[:, perm], m[:, perm]).tokens.view(1, n, 18, -1)
    assert torch.allclose(a[:, perm], p, atol=1e-6)  # exact up to BLAS row blocking


@given(seed=st.integers(0, 10_000))
@settings(deadline=None, max_examples=25)
def test_masked_tokens_are_zero_and_mask_counts_labelled(seed):
    g = torch.Generator().manual_seed(seed)
    c = torch.randint(0, 2, (2, 2), generator=g)
    b = torch.tensor([[[0.1, 0.1, 0.5, 0.5]] * 2] * 2)
    k = torch.cat(
        [
            torch.rand(2, 2, 17, 2, generator=g),
            torch.randint(0, 3, (2, 2, 17, 1), generator=g).float(),
        ],
        -1,
    )
    m = torch.rand(2, 2, generator=g) < 0.5
    with torch.no_grad():
        out = TOK(c, b, k, m)
    assert (out.tokens[~out.mask] == 0).all()
    assert int(out.mask.sum()) == int(m.sum() + (m[..., None] & (k[..., 2] > 0)).sum())
