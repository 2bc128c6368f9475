"""Spec tests 3 and 8 (server side): the server step against exact weighted means, the control
rules, integer buffers, and bad input."""

import pytest
import torch
from fedswa import LocalResult, ServerState, server_step


def _result(delta, n=1, control=None, local_control=None):
    return LocalResult(
        delta=delta, new_control=None, control_delta=control, local_control_delta=local_control,
        num_examples=n, lr_sum=1.0, loss=0.0, steps=1,
    )  # fmt: skip


def _state(control=None, rnd=0):
    return ServerState(
        {"w": torch.tensor([1.0, -2.0, 0.5]), "steps": torch.tensor(7, dtype=torch.int64)},
        control,
        rnd,
    )


def test_alpha_one_is_the_exact_weighted_mean():
    # dyadic values and weights (1/4, 1/4, 1/2): every sum is exact in float32
    deltas = [
        torch.tensor([1.0, 2.0, -4.0]),
        torch.tensor([3.0, 0.0, 8.0]),
        torch.tensor([-2.0, 6.0, 1.0]),
    ]
    results = [_result({"w": d}, n) for d, n in zip(deltas, [1, 1, 2], strict=True)]
    new = server_step(_state(), results, alpha=1.0)
    expected = torch.tensor([1.0, -2.0, 0.5]) + (deltas[0] + deltas[1]) / 4 + deltas[2] / 2
    torch.testing.assert_close(new.model_state["w"], expected, atol=0, rtol=0)
    uniform = server_step(_state(), results, weights="uniform")
    mean = torch.stack(deltas).sum(0) / 3
    torch.testing.assert_close(uniform.model_state["w"] - _state().model_state["w"], mean)


@pytest.mark.parametrize("alpha", [1.0, 0.5, 0.25])
def test_constant_delta_for_T_rounds_moves_T_alpha_delta(alpha):
    delta = {"w": torch.tensor([2.0, -4.0, 1.0])}
    state, T = _state(), 12
    for _ in range(T):
        state = server_step(state, [_result(delta, 3), _result(delta, 5)], alpha=alpha)
    expected = _state().model_state["w"] + T * alpha * delta["w"]
    torch.testing.assert_close(state.model_state["w"], expected, atol=0, rtol=0)
    assert state.round == T


@pytest.mark.parametrize("alpha", [1.0, 0.3])
def test_integer_buffers_keep_value_and_dtype(alpha):
    new = server_step(_state(), [_result({"w": torch.ones(3)})], alpha=alpha)
    assert new.model_state["steps"].dtype == torch.int64
    assert int(new.model_state["steps"]) == 7


def test_batchnorm_num_batches_tracked_survives_a_round_with_alpha_below_one():
    from fedswa import local_update

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    net(torch.randn(5, 4))  # one forward in train mode: num_batches_tracked = 1
    state = ServerState({k: v.clone() for k, v in net.state_dict().items()})
    data = [(torch.randn(8, 4), torch.randint(0, 3, (8,)))]
    results = {i: local_update(net, data, steps=2, eta=0.1) for i in range(2)}
    new = server_step(state, results, alpha=0.5)
    tracked = new.model_state["1.num_batches_tracked"]
    assert tracked.dtype == torch.int64
    assert int(tracked) == 1
    running = state.model_state["1.running_mean"] + 0.5 * results[0].delta["1.running_mean"]
    torch.testing.assert_close(new.model_state["1.running_mean"], running)


def test_control_warm_start_then_momentum():
    c0 = {"w": torch.zeros(3)}
    d1, d2 = torch.tensor([1.0, 2.0, 4.0]), torch.tensor([3.0, -2.0, 0.0])
    results = [_result({"w": d1}, 1, {"w": d1}), _result({"w": d2}, 3, {"w": d2})]
    mean = d1 / 4 + 3 * d2 / 4
    first = server_step(_state(c0, 0), results, gamma=0.5)
    torch.testing.assert_close(first.control["w"], mean, atol=0, rtol=0)
    second = server_step(first, results, gamma=0.5)
    torch.testing.assert_close(second.control["w"], mean + 0.5 * mean, atol=0, rtol=0)
    cold = server_step(_state(c0, 0), results, gamma=0.5, warm_start=False)
    torch.testing.assert_close(cold.control["w"], 0.5 * mean, atol=0, rtol=0)


def test_scaffold_control_step_scales_by_participation():
    c0 = {"w": torch.ones(3)}
    d = torch.tensor([2.0, -4.0, 8.0])
    results = [
        _result({"w": d}, 1, local_control={"w": d}),
        _result({"w": d}, 1, local_control={"w": d}),
    ]
    new = server_step(
        _state(c0, 3), results, gamma=1.0, warm_start=False, participation=0.25,
        weights="uniform", control_key="local_control_delta",
    )  # fmt: skip
    torch.testing.assert_close(new.control["w"], 1.0 + 0.25 * d, atol=0, rtol=0)


def test_mapping_order_does_not_change_the_sums():
    torch.manual_seed(0)
    results = {cid: _result({"w": torch.randn(3)}, cid + 1) for cid in range(7)}
    backwards = dict(reversed(list(results.items())))
    a = server_step(_state(), results).model_state["w"]
    b = server_step(_state(), backwards).model_state["w"]
    assert torch.equal(a, b)


_GOOD = [_result({"w": torch.ones(3)})]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(alpha=0.0), ValueError, "`alpha`"),
        (dict(alpha=1.5), ValueError, "`alpha`"),
        (dict(gamma=0.0), ValueError, "`gamma`"),
        (dict(gamma=2.0), ValueError, "`gamma`"),
        (dict(participation=0.0), ValueError, "`participation`"),
        (dict(weights="size"), ValueError, "`weights`"),
        (dict(results=[]), ValueError, "`results` is empty"),
        (dict(results={}), ValueError, "`results` is empty"),
        (dict(results=[_result({"v": torch.ones(3)})]), ValueError, r"keys differ.*\['v', 'w'\]"),
        (dict(results=[_result({"w": torch.ones(4)})]), ValueError, r"shapes differ.*\['w'\]"),
        (dict(results=[{"w": torch.ones(3)}]), TypeError, "LocalResult"),
        (dict(results="abc"), TypeError, "`results`"),
        (dict(state={"w": torch.ones(3)}), TypeError, "`state`"),
        (dict(gamma=0.4), ValueError, "control"),
        (
            dict(state=ServerState({"w": torch.tensor([float("nan"), 0.0, 0.0])})),
            ValueError,
            r"`state.model_state` holds NaN.*\['w'\]",
        ),
    ],
)
def test_server_step_rejects_bad_input(kwargs, error, match):
    args = dict(state=_state(), results=_GOOD)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        server_step(args.pop("state"), args.pop("results"), **args)


def test_nan_delta_names_the_client():
    results = {
        "site-a": _result({"w": torch.ones(3)}),
        "site-b": _result({"w": torch.tensor([0.0, float("nan"), 1.0])}),
    }
    with pytest.raises(FloatingPointError, match="site-b"):
        server_step(_state(), results)


def test_opposite_infinities_name_the_first_client():
    """+inf and -inf cancel to NaN in the sum; the scan still names a culprit."""
    results = {
        "site-a": _result({"w": torch.tensor([float("inf"), 0.0, 0.0])}),
        "site-b": _result({"w": torch.ones(3)}),
        "site-c": _result({"w": torch.tensor([float("-inf"), 0.0, 0.0])}),
    }
    with pytest.raises(FloatingPointError, match="site-a"):
        server_step(_state(), results)


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        (("x",), TypeError, "`model_state`"),
        (({"w": 1.0},), TypeError, "`model_state`"),
        (({"w": torch.ones(1)}, [torch.ones(1)]), TypeError, "`control`"),
        (({"w": torch.ones(1)}, None, -1), ValueError, "`round`"),
        (({"w": torch.ones(1)}, None, 1.5), ValueError, "`round`"),
    ],
)
def test_server_state_rejects_bad_input(args, error, match):
    with pytest.raises(error, match=match):
        ServerState(*args)
