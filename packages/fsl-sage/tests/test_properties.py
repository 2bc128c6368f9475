"""Property-based tests of FSL-SAGE's maths: gradient estimates, alignment, buffer, averaging."""

import math

import numpy as np
import torch
from fsl_sage import (
    AlignmentBuffer,
    CommMeter,
    FServer,
    GradScalarAux,
    LinearGradScalarAux,
    dirichlet_equal_split,
    nmse,
)
from fsl_sage.comm import DIRECTIONS, KINDS
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from torch import nn

F64 = torch.float64
values = st.floats(-3.0, 3.0, allow_nan=False, width=64)


@st.composite
def smashed(draw, max_batch=6):
    """(z [B, *S] float64, y [B] int64, C) with a cut shape S of 1 or 3 dims."""
    shape = draw(st.sampled_from([(1,), (3,), (5,), (2, 1, 2), (1, 2, 3)]))
    batch = draw(st.integers(1, max_batch))
    classes = draw(st.integers(2, 4))
    z = draw(hnp.arrays(np.float64, (batch, *shape), elements=values))
    y = draw(hnp.arrays(np.int64, (batch,), elements=st.integers(0, classes - 1)))
    return torch.from_numpy(z), torch.from_numpy(y), classes


def _linear_aux(shape, classes, seed) -> LinearGradScalarAux:
    torch.manual_seed(seed)
    return LinearGradScalarAux(shape, classes).to(F64)


@given(data=smashed(), seed=st.integers(0, 2**16), shift=hnp.arrays(np.float64, 5, elements=values))
def test_linear_estimate_matches_autograd_and_softmax_shift(data, seed, shift):
    """The closed form g_b = W^T (softmax(W z_b + b) - e_{y_b}) equals autograd's input
    gradient of NLL(a(z), y) (Sec. 3, official linear_grad_scalar); it is unchanged by
    W -> W + 1 v^T, since softmax ignores a shift shared by all logits and 1^T (p - e_y) = 0."""
    z, y, classes = data
    aux = _linear_aux(tuple(z.shape[1:]), classes, seed)
    closed = aux.estimate(z, y)
    by_autograd = GradScalarAux.estimate(aux, z, y)  # the base class: autograd
    torch.testing.assert_close(closed, by_autograd, rtol=1e-10, atol=1e-12)
    d = aux.linear.weight.shape[1]
    v = torch.from_numpy(np.resize(shift, d))
    with torch.no_grad():
        aux.linear.weight += v  # broadcast: every class row gets + v^T
    torch.testing.assert_close(aux.estimate(z, y), closed, rtol=1e-8, atol=1e-9)


@given(data=smashed(), seed=st.integers(0, 2**16), g_seed=st.integers(0, 2**16))
def test_alignment_grad_closed_form_matches_double_backward(data, seed, g_seed):
    """L = sum_b ||g_hat_b - g*_b||^2 and its gradients in W and b: the closed form of
    ``alignment_grad`` equals autograd's double backward through ``alignment_loss`` (Sec. 3
    alignment objective)."""
    z, y, classes = data
    aux = _linear_aux(tuple(z.shape[1:]), classes, seed)
    g_star = torch.randn(z.shape, generator=torch.Generator().manual_seed(g_seed), dtype=F64)
    loss, grad_w, grad_b = aux.alignment_grad(z, y, g_star)
    auto = aux.alignment_loss(z, y, g_star)
    auto_w, auto_b = torch.autograd.grad(auto, [aux.linear.weight, aux.linear.bias])
    torch.testing.assert_close(loss, auto.detach(), rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(grad_w, auto_w, rtol=1e-9, atol=1e-10)
    torch.testing.assert_close(grad_b, auto_b, rtol=1e-9, atol=1e-10)
    assert float(loss) >= 0.0


@given(data=smashed(max_batch=8), seed=st.integers(0, 2**16), max_size=st.integers(1, 10))
def test_server_equal_aux_has_zero_error_and_targets_scale(data, seed, max_size):
    """An aux equal to a linear log-softmax server estimates its gradient exactly: g_hat = g*,
    NMSE 0 (the fixed point of the alignment, Sec. 3); a zero aux has NMSE 1; the mean-loss
    targets are the per-sample ones over M (official mean-over-M scale)."""
    z, y, classes = data
    shape = tuple(z.shape[1:])
    aux = _linear_aux(shape, classes, seed)
    server = nn.Sequential(nn.Flatten(), nn.Linear(math.prod(shape), classes), nn.LogSoftmax(1))
    server = server.to(F64)
    server[1].load_state_dict(aux.linear.state_dict())
    buffer = AlignmentBuffer(max_size)
    buffer.add(z, y)
    zb, yb, g_star = buffer.targets(server)
    assert zb.shape[0] == min(max_size, z.shape[0])
    per_sample = aux.estimate(zb, yb) * zb.shape[0]  # estimate: batch-mean scale
    torch.testing.assert_close(per_sample, g_star, rtol=1e-10, atol=1e-12)
    if float((g_star**2).sum()) > 1e-20:
        assert nmse(aux, zb, yb, g_star) <= 1e-18
        with torch.no_grad():
            aux.linear.weight.zero_()
        assert nmse(aux, zb, yb, g_star) == 1.0
    _, _, g_mean = buffer.targets(server, mean=True)
    torch.testing.assert_close(g_mean, g_star / zb.shape[0], rtol=1e-12, atol=1e-15)


@given(sizes=st.lists(st.integers(1, 7), min_size=1, max_size=6), max_size=st.integers(1, 12))
def test_buffer_is_fifo_of_last_max_size_samples(sizes, max_size):
    """After any sequence of adds the buffer holds exactly the last M samples in arrival order
    (official max_dataset_size FIFO, src/algos/fsl_sage.py), against a plain list."""
    buffer, seen_z, seen_y = AlignmentBuffer(max_size), [], []
    start = 0
    for n in sizes:
        z = torch.arange(start, start + n, dtype=F64).reshape(n, 1)
        y = torch.arange(start, start + n, dtype=torch.int64) % 3
        buffer.add(z, y)
        seen_z += z.tolist()
        seen_y += y.tolist()
        start += n
        assert len(buffer) == min(max_size, len(seen_y))
        assert buffer.z is not None
        assert buffer.y is not None
        assert buffer.z.tolist() == seen_z[-max_size:]
        assert buffer.y.tolist() == seen_y[-max_size:]


@given(
    states=st.integers(1, 5).flatmap(
        lambda m: st.tuples(
            hnp.arrays(np.float64, (m, 2, 3), elements=values),
            st.lists(st.floats(0.1, 100.0), min_size=m, max_size=m),
            st.lists(st.integers(0, 9), min_size=m, max_size=m),
        )
    ),
    scale=st.floats(0.01, 100.0),
    seed=st.integers(0, 99),
)
def test_fserver_aggregate_is_weighted_mean(states, scale, seed):
    """sum_i (n_i / n) theta_i against a loop; invariant to scaling the weights and to permuting
    clients with their weights; integer buffers come from the first state (FedAvg averaging,
    McMahan et al. 2017; official F-server)."""
    arrays, weights, counters = states
    dicts = [
        {"w": torch.from_numpy(a), "n": torch.tensor(c)}
        for a, c in zip(arrays, counters, strict=True)
    ]
    out = FServer.aggregate(dicts, weights)
    expect = sum(w * a for w, a in zip(weights, arrays, strict=True)) / sum(weights)
    np.testing.assert_allclose(out["w"].numpy(), expect, rtol=1e-10, atol=1e-12)
    assert torch.equal(out["n"], dicts[0]["n"])
    scaled = FServer.aggregate(dicts, [scale * w for w in weights])
    torch.testing.assert_close(scaled["w"], out["w"], rtol=1e-10, atol=1e-12)
    order = np.random.default_rng(seed).permutation(len(dicts))
    permuted = FServer.aggregate([dicts[i] for i in order], [weights[i] for i in order])
    torch.testing.assert_close(permuted["w"], out["w"], rtol=1e-10, atol=1e-12)


@given(
    labels=st.lists(st.integers(0, 4), min_size=1, max_size=30),
    data=st.data(),
    alpha=st.floats(0.05, 100.0),
    seed=st.integers(0, 1000),
)
def test_dirichlet_equal_split_is_disjoint_and_equal(labels, data, alpha, seed):
    """m disjoint index arrays of floor(n / m) valid indices each (official
    noniid_dirichlet_equal_split: drawn without replacement)."""
    m = data.draw(st.integers(1, len(labels)))
    parts = dirichlet_equal_split(labels, m, alpha, seed=seed)
    assert len(parts) == m
    for p in parts:
        assert p.shape == (len(labels) // m,)
        assert p.dtype == np.int64
    flat = np.concatenate(parts)
    assert len(np.unique(flat)) == len(flat)
    assert flat.min() >= 0
    assert flat.max() < len(labels)


@given(
    adds=st.lists(
        st.tuples(st.sampled_from(KINDS), st.sampled_from(DIRECTIONS), st.integers(0, 10**9))
    )
)
def test_comm_meter_totals_add_up(adds):
    """Totals are sums of what was added; official = all but labels (official accounting);
    by kind and by direction partition the total; as_dict/from_dict round-trips."""
    meter = CommMeter()
    for kind, direction, n in adds:
        meter.add(kind, direction, n)
    assert meter.total() == sum(n for _, _, n in adds)
    labels = sum(n for k, _, n in adds if k == "labels")
    assert meter.official_total() == meter.total() - labels
    assert meter.total() == meter.total(direction="up") + meter.total(direction="down")
    assert sum(meter.total(k) for k in KINDS) == meter.total()
    again = CommMeter.from_dict(meter.as_dict())
    assert again.as_dict() == meter.as_dict()
    assert again.official_total() == meter.official_total()
