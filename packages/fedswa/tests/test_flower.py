"""Spec tests 7, 8 (Flower side) and 11: Flower strategies and ClientApp called directly, no Ray.

Rounds are driven by hand: ``configure_train`` -> each message to its node's ClientApp with that
node's ``Context`` -> ``aggregate_train`` on the replies.
"""

import pytest
import torch
from fedswa import ClientControl, ServerState, get_algorithm, local_update, server_step
from fedswa.flower import FedMoSWA, FedSWA, Scaffold, make_client_app, pack_update, strategy_for
from fedswa.flower.client import STATE_KEY
from fedswa.simulate import ShuffledBatches, client_seed
from flwr.app import ArrayRecord, ConfigRecord, Context, Error, Message, MetricRecord, RecordDict

pytestmark = pytest.mark.usefixtures("flower_task")  # Messages need a task identity

NUM = 3


torch.manual_seed(0)
DATA = [(torch.randn(24, 4), torch.randint(0, 3, (24,))) for _ in range(NUM)]


def model_fn():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(4, 5), torch.nn.BatchNorm1d(5), torch.nn.ReLU(), torch.nn.Linear(5, 3)
    )


def data_fn(pid, num):
    return DATA[pid]


class Grid:
    """The part of ``flwr.serverapp.Grid`` the strategies use: the connected node ids."""

    def __init__(self, node_ids):
        self.node_ids = list(node_ids)

    def get_node_ids(self):
        return list(self.node_ids)


def _context(node_id, pid):
    return Context(
        run_id=1, node_id=node_id, node_config={"partition-id": pid, "num-partitions": NUM},
        state=RecordDict(), run_config={},
    )  # fmt: skip


def _drive(strategy, assignment, rounds, reply_order=None):
    """Run `rounds` rounds; node ``n`` hosts partition ``assignment[n]``. Returns the final
    state dict and each partition's stored control."""
    app = make_client_app(model_fn, data_fn)
    contexts = {node: _context(node, pid) for node, pid in assignment.items()}
    arrays = ArrayRecord(model_fn().state_dict())
    grid = Grid(sorted(contexts))
    for rnd in range(1, rounds + 1):
        messages = strategy.configure_train(rnd, arrays, ConfigRecord(), grid)
        replies = [app(m, contexts[m.metadata.dst_node_id]) for m in messages]
        if reply_order is not None:
            replies = reply_order(replies)
        arrays, _ = strategy.aggregate_train(rnd, replies)
    controls = {
        int(ctx.node_config["partition-id"]): ctx.state[STATE_KEY].to_torch_state_dict()
        for ctx in contexts.values()
        if STATE_KEY in ctx.state
    }
    return arrays.to_torch_state_dict(), controls


def _strategy(cls=FedMoSWA, **kwargs):
    args = dict(
        num_rounds=3, eta0=0.1, local_steps=4, batch_size=8, seed=5, min_available_nodes=1,
        min_train_nodes=1,
    )  # fmt: skip
    args.update(kwargs)
    return cls(**args)


def test_client_app_equals_local_update_and_remembers_its_control():
    app = make_client_app(model_fn, data_fn)
    strategy = _strategy()
    ctx = _context(11, 1)
    arrays = ArrayRecord(model_fn().state_dict())
    msg = next(iter(strategy.configure_train(1, arrays, ConfigRecord(), Grid([11]))))
    reply = app(msg, ctx)
    cfg = strategy.config
    eta = strategy.train_config(1)["eta"]
    zeros = {k: torch.zeros_like(v) for k, v in model_fn().named_parameters()}
    expected = local_update(
        model_fn(), ShuffledBatches(*DATA[1], 8, client_seed(5, 0, 1)), steps=4, eta=eta,
        rho=cfg.rho, control=ClientControl(zeros, dict(zeros)), num_examples=24,
    )  # fmt: skip
    got = reply.content["update"].to_torch_state_dict()
    for k, v in expected.delta.items():
        assert torch.equal(got["model/" + k], v), k
    for k, v in expected.control_delta.items():
        assert torch.equal(got["control/" + k], v), k
    stored = ctx.state[STATE_KEY].to_torch_state_dict()
    assert all(torch.equal(stored[k], expected.new_control[k]) for k in stored)
    assert reply.content["metrics"]["num-examples"] == 24
    # second round, same context: the client trains with the c_i it stored
    c = {k: torch.full_like(v, 0.01) for k, v in zeros.items()}
    strategy.control = c
    msg2 = next(iter(strategy.configure_train(2, arrays, ConfigRecord(), Grid([11]))))
    reply2 = app(msg2, ctx)
    expected2 = local_update(
        model_fn(), ShuffledBatches(*DATA[1], 8, client_seed(5, 1, 1)), steps=4,
        eta=strategy.train_config(2)["eta"], rho=cfg.rho,
        control=ClientControl(c, expected.new_control), num_examples=24,
    )  # fmt: skip
    got2 = reply2.content["update"].to_torch_state_dict()
    for k, v in expected2.delta.items():
        assert torch.equal(got2["model/" + k], v), k


def _reply(request, result, pid, control_key):
    upload = getattr(result, control_key)
    metrics = MetricRecord(
        {"num-examples": result.num_examples, "train-loss": result.loss, "lr-sum": result.lr_sum,
         "steps": result.steps, "partition-id": pid, "control-norm": 0.0}
    )  # fmt: skip
    content = RecordDict({"update": pack_update(result.delta, upload), "metrics": metrics})
    return Message(content=content, reply_to=request)


@pytest.mark.parametrize("name", ["fedswa", "fedmoswa", "scaffold", "fedsam"])
def test_aggregate_train_equals_server_step(name):
    strategy = strategy_for(
        name, num_rounds=3, eta0=0.1, local_steps=4, batch_size=8, seed=5, alpha=0.5,
        min_available_nodes=1, min_train_nodes=1, fraction_train=0.75,
    )  # fmt: skip
    cfg = strategy.config
    model = model_fn()
    arrays = ArrayRecord(model.state_dict())
    grid = Grid([101, 102, 103, 104])  # one node stays idle: participation 3/4
    messages = list(strategy.configure_train(1, arrays, ConfigRecord(), grid))
    assert len(messages) == 3
    zeros = {k: torch.zeros_like(v) for k, v in model.named_parameters()}
    results = {}
    for pid, _msg in enumerate(messages):
        control = ClientControl(zeros, dict(zeros)) if cfg.uses_control else None
        results[pid] = local_update(
            model, ShuffledBatches(*DATA[pid], 8, pid), steps=3, eta=0.1, control=control,
            sam_rho=cfg.sam_rho, num_examples=10 + pid,
        )  # fmt: skip
    replies = [_reply(m, results[pid], pid, cfg.control_key) for pid, m in enumerate(messages)]
    got, _ = strategy.aggregate_train(1, list(reversed(replies)))
    expected = server_step(
        ServerState(model.state_dict(), zeros if cfg.uses_control else None, 0),
        results,
        alpha=0.5,
        gamma=cfg.gamma if cfg.uses_control else None,
        weights=cfg.weights,
        warm_start=cfg.warm_start,
        participation=0.75 if cfg.scale_by_participation else None,
        control_key=cfg.control_key,
    )
    state = got.to_torch_state_dict()
    assert state.keys() == expected.model_state.keys()
    for k, v in expected.model_state.items():
        assert torch.equal(state[k], v), k
    if cfg.uses_control:
        for k, v in expected.control.items():
            assert torch.equal(strategy.control[k], v), k


@pytest.mark.parametrize("cls", [FedMoSWA, Scaffold])
def test_controls_follow_the_client_not_the_node(cls):
    """Spec test 7: permuting which node hosts which partition, and the order replies come
    back in, leaves the final model and every c_i bitwise unchanged."""
    state_a, controls_a = _drive(_strategy(cls), {1: 0, 2: 1, 3: 2}, rounds=3)
    state_b, controls_b = _drive(
        _strategy(cls), {7: 2, 8: 0, 9: 1}, rounds=3, reply_order=lambda r: r[::-1]
    )
    for k in state_a:
        assert torch.equal(state_a[k], state_b[k]), k
    assert sorted(controls_a) == sorted(controls_b) == [0, 1, 2]
    for pid in controls_a:
        for k in controls_a[pid]:
            assert torch.equal(controls_a[pid][k], controls_b[pid][k]), (pid, k)
        assert any(v.abs().sum() > 0 for v in controls_a[pid].values())


def test_strategy_keeps_num_batches_tracked_int64_with_alpha_below_one():
    """Spec test 8 (Flower side)."""
    net = model_fn()
    net(torch.randn(6, 4))  # num_batches_tracked = 1
    before = net.state_dict()["1.num_batches_tracked"].clone()
    strategy = _strategy(FedSWA, alpha=0.3)
    app = make_client_app(model_fn, data_fn)
    contexts = {n: _context(n, n) for n in range(NUM)}
    messages = strategy.configure_train(
        1, ArrayRecord(net.state_dict()), ConfigRecord(), Grid(contexts)
    )
    replies = [app(m, contexts[m.metadata.dst_node_id]) for m in messages]
    arrays, _ = strategy.aggregate_train(1, replies)
    tracked = arrays.to_torch_state_dict()["1.num_batches_tracked"]
    assert tracked.dtype == torch.int64
    assert torch.equal(tracked, before)


def test_strategy_sends_the_round_config():
    strategy = _strategy(FedSWA)
    config = strategy.train_config(1)
    assert config["eta"] == pytest.approx(2 * 0.1)  # FedSWA: twice the round rate at t = 0
    assert config["rho"] == 0.0
    assert config["local-steps"] == 4
    assert config["weight-decay"] == pytest.approx(1e-3)
    assert config["clip-norm"] == 10.0
    assert get_algorithm("fedswa") == strategy.config


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(num_rounds=0), ValueError, "`num_rounds`"),
        (dict(eta0=0.0), ValueError, "`eta0`"),
        (dict(local_steps=0), ValueError, "`local_steps`"),
        (dict(gamma=0.0), ValueError, "`gamma`"),
        (dict(rho=2.0), ValueError, "`rho`"),
        (dict(alpha=1.5), ValueError, "`alpha`"),
    ],
)
def test_strategy_rejects_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        _strategy(FedMoSWA, **kwargs)


def test_client_app_needs_partition_id():
    app = make_client_app(model_fn, data_fn)
    strategy = _strategy(FedSWA)
    msg = next(
        iter(
            strategy.configure_train(
                1, ArrayRecord(model_fn().state_dict()), ConfigRecord(), Grid([1])
            )
        )
    )
    ctx = Context(run_id=1, node_id=1, node_config={}, state=RecordDict(), run_config={})
    with pytest.raises(ValueError, match="partition-id"):
        app(msg, ctx)


@pytest.mark.parametrize(
    ("overrides", "error", "match"),
    [
        ({"rounds": 1}, ValueError, r"unknown run-config keys \['rounds'\]"),
        ([("num-rounds", 1)], TypeError, "`overrides`"),
    ],
)
def test_simulate_rejects_unknown_run_config_keys(overrides, error, match):
    from fedswa.flower.simulation import simulate

    with pytest.raises(error, match=match):
        simulate(overrides, num_supernodes=2)


def _stock_reply(request, state, num_examples, pid):
    """What a stock Flower ClientApp returns: the trained weights and ``num-examples``."""
    metrics = MetricRecord({"num-examples": num_examples, "partition-id": pid, "train-loss": 0.5})
    content = RecordDict({"arrays": ArrayRecord(state), "metrics": metrics})
    return Message(content=content, reply_to=request)


@pytest.mark.parametrize("name", ["fedavg", "fedswa", "fedsam"])
def test_stock_flower_replies_are_averaged_as_weights(name):
    """Issue 34: a ClientApp that returns full weights (Flower's standard reply) works for the
    algorithms without controls: the new model is x_t + alpha * sum_i w_i (y_i - x_t)."""
    strategy = strategy_for(name, num_rounds=2, eta0=0.1, alpha=0.5, min_available_nodes=1,
                            min_train_nodes=1)  # fmt: skip
    model = model_fn()
    start = model.state_dict()
    messages = list(strategy.configure_train(1, ArrayRecord(start), ConfigRecord(), Grid([1, 2])))
    torch.manual_seed(1)
    trained = [
        {k: v + torch.randn_like(v) if v.is_floating_point() else v for k, v in start.items()}
        for _ in messages
    ]
    sizes = [10, 30]
    replies = [_stock_reply(m, trained[i], sizes[i], i) for i, m in enumerate(messages)]
    got, metrics = strategy.aggregate_train(1, replies)
    state = got.to_torch_state_dict()
    for k, v in start.items():
        if not v.is_floating_point():
            assert torch.equal(state[k], v), k
            continue
        mean = (10 * trained[0][k] + 30 * trained[1][k]) / 40
        torch.testing.assert_close(state[k], v + 0.5 * (mean - v), rtol=1e-6, atol=1e-6)
    assert "partition-id" not in metrics  # ids are not averaged
    assert float(metrics["train-loss"]) == pytest.approx(0.5)


@pytest.mark.parametrize("name", ["fedmoswa", "scaffold"])
def test_stock_replies_are_refused_with_the_client_to_use_for_control_variates(name):
    strategy = strategy_for(name, num_rounds=2, eta0=0.1, min_available_nodes=1,
                            min_train_nodes=1)  # fmt: skip
    start = model_fn().state_dict()
    messages = list(strategy.configure_train(1, ArrayRecord(start), ConfigRecord(), Grid([1])))
    with pytest.raises(ValueError, match=r"needs control variates.*make_client_app"):
        strategy.aggregate_train(1, [_stock_reply(messages[0], start, 10, 0)])


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda s: {k: v for k, v in s.items() if k != "0.weight"}, "missing"),
        (lambda s: {**s, "0.weight": torch.zeros(2, 2)}, "shape"),
    ],
)
def test_stock_replies_that_do_not_fit_the_model_are_refused(change, match):
    strategy = strategy_for("fedavg", num_rounds=2, eta0=0.1, min_available_nodes=1,
                            min_train_nodes=1)  # fmt: skip
    start = model_fn().state_dict()
    messages = list(strategy.configure_train(1, ArrayRecord(start), ConfigRecord(), Grid([1])))
    with pytest.raises(ValueError, match=match):
        strategy.aggregate_train(1, [_stock_reply(messages[0], change(start), 10, 0)])


def test_fedswa_metrics_leave_partition_ids_out():
    strategy = _strategy(FedSWA)
    app = make_client_app(model_fn, data_fn)
    contexts = {n: _context(n, n - 1) for n in (1, 2, 3)}
    messages = strategy.configure_train(1, ArrayRecord(model_fn().state_dict()), ConfigRecord(),
                                        Grid(contexts))  # fmt: skip
    replies = [app(m, contexts[m.metadata.dst_node_id]) for m in messages]
    _, metrics = strategy.aggregate_train(1, replies)
    assert "partition-id" not in metrics
    assert "train-loss" in metrics


@pytest.mark.parametrize(
    ("num_examples", "match"), [(-5, ">= 1"), (0, ">= 1"), (float("nan"), "whole number")]
)
def test_replies_with_a_bad_num_examples_are_refused(num_examples, match):
    """New-user trial (issue 34): a negative weight used to be averaged without complaint."""
    strategy = strategy_for("fedavg", num_rounds=2, eta0=0.1, min_available_nodes=1,
                            min_train_nodes=1)  # fmt: skip
    start = model_fn().state_dict()
    messages = list(strategy.configure_train(1, ArrayRecord(start), ConfigRecord(), Grid([1])))
    with pytest.raises(ValueError, match=match):
        strategy.aggregate_train(1, [_stock_reply(messages[0], start, num_examples, 0)])


def test_stock_replies_with_integer_weights_are_refused():
    strategy = strategy_for("fedavg", num_rounds=2, eta0=0.1, min_available_nodes=1,
                            min_train_nodes=1)  # fmt: skip
    start = model_fn().state_dict()
    messages = list(strategy.configure_train(1, ArrayRecord(start), ConfigRecord(), Grid([1])))
    ints = {k: v.long() if v.is_floating_point() else v for k, v in start.items()}
    with pytest.raises(ValueError, match="floating"):
        strategy.aggregate_train(1, [_stock_reply(messages[0], ints, 10, 0)])


@pytest.mark.parametrize("value", [2.0, -1.0])
def test_strategies_refuse_a_fraction_outside_0_1(value):
    with pytest.raises(ValueError, match="fraction_train"):
        strategy_for("fedswa", num_rounds=2, eta0=0.1, fraction_train=value)


def test_strategy_for_names_the_algorithm_argument():
    """New-user trial 34: an unknown algorithm was reported as `name`."""
    with pytest.raises(ValueError, match="`algorithm` must be one of"):
        strategy_for("fedprox", num_rounds=2, eta0=0.1)
    with pytest.raises(ValueError, match="`algorithm` must be one of"):
        FedSWA(num_rounds=2, eta0=0.1, algorithm="fedprox")


def test_a_stock_reply_with_swa_average_warns_that_swa_has_no_effect():
    strategy = strategy_for("fedswa", num_rounds=2, eta0=0.1, swa="average",
                            min_available_nodes=1, min_train_nodes=1)  # fmt: skip
    start = model_fn().state_dict()
    messages = list(strategy.configure_train(1, ArrayRecord(start), ConfigRecord(), Grid([1])))
    with pytest.warns(UserWarning, match="swa='average' has no effect on a stock"):
        strategy.aggregate_train(1, [_stock_reply(messages[0], start, 10, 0)])


def test_a_round_without_any_reply_fails_loudly_naming_round_and_failures():
    """New-user trial 34: when every ClientApp failed, Flower's Strategy.start went on with
    nothing aggregated and returned an empty ArrayRecord."""
    strategy = _strategy(FedSWA)
    messages = strategy.configure_train(1, ArrayRecord(model_fn().state_dict()), ConfigRecord(),
                                        Grid([4, 5]))  # fmt: skip
    failed = [Message(Error(0, "ClientApp raised"), reply_to=m) for m in messages]
    with pytest.raises(RuntimeError, match=r"round 1: no ClientApp reply .*2 failed: node "):
        strategy.aggregate_train(1, failed)
    with pytest.raises(RuntimeError, match=r"round 2: .*none answered"):
        strategy.aggregate_train(2, [])


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((model_fn(), data_fn), {}, TypeError, "`model_fn` must be a callable returning a fresh"),
        ((model_fn, None), {}, TypeError, "`data_fn` must be callable"),
        ((model_fn, data_fn), {"loss_fn": "ce"}, TypeError, "`loss_fn` must be callable"),
        ((model_fn, data_fn), {"device": "gpu"}, ValueError, "`device` 'gpu'"),
        ((model_fn, data_fn), {"device": "meta"}, ValueError, "`device` 'meta'"),
    ],
)
def test_make_client_app_checks_its_arguments_up_front(args, kwargs, error, match):
    """New-user trial 34: these were accepted and failed on every node."""
    with pytest.raises(error, match=match):
        make_client_app(*args, **kwargs)


@pytest.mark.parametrize(
    ("data", "error", "match"),
    [
        (lambda pid, num: DATA[pid][0], TypeError, r"`data_fn\(1, 3\)` must be a pair \(x, y\)"),
        (lambda pid, num: (DATA[pid][0], DATA[pid][1][:5]), ValueError,
         r"`data_fn\(1, 3\)` is empty or its x and y differ in length \(24 vs 5\)"),
    ],
)  # fmt: skip
def test_client_app_names_data_fn_when_it_returns_the_wrong_thing(data, error, match):
    app = make_client_app(model_fn, data)
    strategy = _strategy(FedSWA)
    arrays = ArrayRecord(model_fn().state_dict())
    msg = next(iter(strategy.configure_train(1, arrays, ConfigRecord(), Grid([7]))))
    with pytest.raises(error, match=match):
        app(msg, _context(7, 1))
