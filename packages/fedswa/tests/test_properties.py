"""Property-based tests of FedSWA's maths: schedules, client weights, server step, local round."""

import itertools
import math

import numpy as np
import pytest
import torch
from _helpers import Quadratic, half_sq_error
from fedswa import (
    ClientControl,
    LocalResult,
    ServerState,
    client_weights,
    cyclic_lr,
    dirichlet_fixed_size,
    label_entropy,
    local_update,
    round_lr,
    server_step,
)
from hypothesis import assume, given
from hypothesis import strategies as st

finite = st.floats(-10.0, 10.0, allow_nan=False, width=64)
rates = st.floats(1e-3, 1.0, allow_nan=False)
ratios = st.floats(0.0, 1.0, allow_nan=False)


@given(K=st.integers(1, 60), eta=rates, rho=ratios)
def test_cyclic_lr_sum_and_monotone_closed_form(K, eta, rho):
    """eta_k falls monotonically from eta to >= rho*eta and sums to K*eta*(1+rho)/2 +
    eta*(1-rho)/2 (cyclic SWA rate, official main_FedSWA.py; ``cyclic_lr`` Notes)."""
    lrs = [cyclic_lr(k, K, eta, rho) for k in range(K)]
    assert lrs[0] == pytest.approx(eta)
    assert all(a >= b - 1e-15 for a, b in itertools.pairwise(lrs))
    assert all(rho * eta - 1e-15 <= lr <= eta + 1e-15 for lr in lrs)
    closed = K * eta * (1 + rho) / 2 + eta * (1 - rho) / 2
    assert math.fsum(lrs) == pytest.approx(closed, rel=1e-12)


@given(T=st.integers(1, 500), data=st.data(), eta0=rates)
def test_round_lr_cosine_symmetric_bounded_decreasing(T, data, eta0):
    """Cosine round rate: eta_t + eta_{T-t} = eta0 (cos(pi - a) = -cos a), in [0, eta0] and
    non-increasing in t (official HEAD cosine schedule)."""
    t = data.draw(st.integers(0, T))
    a, b = round_lr(t, T, eta0), round_lr(T - t, T, eta0)
    assert a + b == pytest.approx(eta0, rel=1e-12, abs=1e-15)
    assert -1e-15 <= a <= eta0 + 1e-15
    if t < T:
        assert round_lr(t + 1, T, eta0) <= a + 1e-15


def _result(delta, n, control=None):
    return LocalResult(
        delta=delta,
        new_control=None,
        control_delta=control,
        local_control_delta=None,
        num_examples=n,
        lr_sum=1.0,
        loss=0.0,
        steps=1,
    )


clients = st.lists(
    st.tuples(
        st.lists(finite, min_size=3, max_size=3),  # Delta_i, 3 parameters
        st.lists(finite, min_size=3, max_size=3),  # delta_i, the control upload
        st.integers(1, 1000),  # n_i
    ),
    min_size=1,
    max_size=6,
)


@given(parts=clients, weights=st.sampled_from(["num_examples", "uniform"]), seed=st.integers(0, 99))
def test_client_weights_simplex_and_order_free(parts, weights, seed):
    """w_i >= 0, sum_i w_i = 1, w_i proportional to n_i (FedAvg, McMahan et al. 2017) or 1/|S|;
    a mapping's weights follow the client id, not the arrival order."""
    results = {cid: _result({"w": torch.zeros(1)}, n) for cid, (_, _, n) in enumerate(parts)}
    w = client_weights(results, weights)
    assert all(x >= 0 for x in w)
    assert math.fsum(w) == pytest.approx(1.0, abs=1e-12)
    total = sum(n for _, _, n in parts)
    for wi, (_, _, n) in zip(w, parts, strict=True):
        assert wi == pytest.approx(n / total if weights == "num_examples" else 1 / len(parts))
    order = np.random.default_rng(seed).permutation(len(parts))
    shuffled = {int(cid): results[int(cid)] for cid in order}
    assert client_weights(shuffled, weights) == w


@given(
    parts=clients,
    x=st.lists(finite, min_size=3, max_size=3),
    c=st.lists(finite, min_size=3, max_size=3),
    alpha=st.floats(0.01, 1.0),
    gamma=st.floats(0.01, 1.0),
    participation=st.one_of(st.none(), st.floats(0.01, 1.0)),
    round_=st.integers(0, 3),
    warm_start=st.booleans(),
    seed=st.integers(0, 99),
)
def test_server_step_matches_loop_and_is_order_free(
    parts, x, c, alpha, gamma, participation, round_, warm_start, seed
):
    """x+ = x + alpha sum_i w_i Delta_i; c+ = sum_i w_i delta_i on a warm first round, else
    c + gamma p sum_i w_i delta_i (official main.py / HEAD; SCAFFOLD Alg. 1 lines 16-17), against
    a plain loop; permuting the clients' arrival order changes nothing."""
    f64 = torch.float64
    results = {
        cid: _result({"w": torch.tensor(d, dtype=f64)}, n, {"w": torch.tensor(u, dtype=f64)})
        for cid, (d, u, n) in enumerate(parts)
    }
    state = ServerState(
        {"w": torch.tensor(x, dtype=f64)}, {"w": torch.tensor(c, dtype=f64)}, round_
    )
    kwargs = dict(alpha=alpha, gamma=gamma, participation=participation, warm_start=warm_start)
    new = server_step(state, results, **kwargs)

    total = sum(n for _, _, n in parts)
    mean_d, mean_u = np.zeros(3), np.zeros(3)
    for d, u, n in parts:
        mean_d += n / total * np.asarray(d)
        mean_u += n / total * np.asarray(u)
    expect_x = np.asarray(x) + alpha * mean_d
    if warm_start and round_ == 0:
        expect_c = mean_u
    else:
        expect_c = (
            np.asarray(c) + gamma * (1.0 if participation is None else participation) * mean_u
        )
    np.testing.assert_allclose(new.model_state["w"].numpy(), expect_x, rtol=1e-10, atol=1e-10)
    assert new.control is not None
    np.testing.assert_allclose(new.control["w"].numpy(), expect_c, rtol=1e-10, atol=1e-10)
    assert new.round == round_ + 1

    order = np.random.default_rng(seed).permutation(len(parts))
    again = server_step(state, {int(i): results[int(i)] for i in order}, **kwargs)
    assert torch.equal(again.model_state["w"], new.model_state["w"])
    assert again.control is not None
    assert torch.equal(again.control["w"], new.control["w"])


@given(
    d=st.integers(1, 4),
    K=st.integers(1, 8),
    eta=st.floats(0.01, 0.5),
    rho=ratios,
    lam=st.floats(0.0, 0.5),
    with_control=st.booleans(),
    data=st.data(),
)
def test_local_update_quadratic_closed_form(d, K, eta, rho, lam, with_control, data):
    """On f(y) = 1/2 ||y - b||^2 (full batch, no clip) the corrected step is affine:
    y_K - y* = prod_k (1 - eta_k (1 + lam)) (x - y*) with y* = (b - c + c_i) / (1 + lam); the
    control is c_i+ = c_i - c + (x - y_K) / sum_k eta_k (``local_update``; SCAFFOLD Eq. (4))."""
    vec = st.lists(finite, min_size=d, max_size=d)
    x, b = (np.asarray(data.draw(vec)) for _ in range(2))
    c, ci = (np.asarray(data.draw(vec)) if with_control else np.zeros(d) for _ in range(2))
    model = Quadratic(d)
    with torch.no_grad():
        model.x.copy_(torch.tensor(x))
    control = None
    if with_control:
        control = ClientControl({"x": torch.tensor(c)}, {"x": torch.tensor(ci)})
    batch = (torch.eye(d, dtype=torch.float64), torch.tensor(b))
    res = local_update(
        model, [batch], steps=K, eta=eta, rho=rho, weight_decay=lam, clip_norm=None,
        loss_fn=half_sq_error, control=control,
    )  # fmt: skip

    lrs = [cyclic_lr(k, K, eta, rho) for k in range(K)]
    y_star = (b - c + ci) / (1 + lam)
    y_k = y_star + math.prod(1 - e * (1 + lam) for e in lrs) * (x - y_star)
    np.testing.assert_allclose(res.delta["x"].numpy(), y_k - x, rtol=1e-9, atol=1e-9)
    assert res.steps == K
    assert res.lr_sum == pytest.approx(math.fsum(lrs), rel=1e-12)
    assert torch.equal(model.x.detach(), torch.tensor(x))  # the global model is not modified
    if with_control:
        assert res.new_control is not None
        expect = ci - c + (x - y_k) / math.fsum(lrs)
        np.testing.assert_allclose(res.new_control["x"].numpy(), expect, rtol=1e-8, atol=1e-8)
    else:
        assert res.new_control is None


@given(
    labels=st.lists(st.integers(0, 4), min_size=1, max_size=30),
    num_clients=st.integers(1, 4),
    size=st.integers(1, 8),
    alpha=st.floats(0.05, 100.0),
    replace=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_dirichlet_split_sizes_range_and_disjointness(
    labels, num_clients, size, alpha, replace, seed
):
    """Every client gets `size` valid indices; without replacement no index is used twice
    (flwr-datasets InnerDirichletPartitioner rule); label entropies lie in [0, log C]
    (official dirichlet_data.py split)."""
    assume(replace or num_clients * size <= len(labels))
    parts = dirichlet_fixed_size(labels, num_clients, alpha, size, seed=seed, replace=replace)
    assert len(parts) == num_clients
    for p in parts:
        assert p.shape == (size,)
        assert p.dtype == np.int64
        assert p.min() >= 0
        assert p.max() < len(labels)
    if not replace:
        flat = np.concatenate(parts)
        assert len(np.unique(flat)) == len(flat)
    classes = max(labels) + 1
    h = label_entropy(labels, parts, classes)
    assert np.all(h >= -1e-12)
    assert np.all(h <= math.log(classes) + 1e-12)
    shuffled = [p[::-1] for p in parts]  # a histogram does not see the order
    np.testing.assert_allclose(label_entropy(labels, shuffled, classes), h)
