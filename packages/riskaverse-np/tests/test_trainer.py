"""The trainer: equal budgets, resumable checkpoints (spec test 11), evaluation, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from riskaverse_np import CNP, METHODS, RiskAverseTrainer, cvar, evaluate_model, gp_pool


@pytest.fixture(scope="module")
def pool():
    return gp_pool(48, n_points=12, context=(2, 6), seed=0)


def leaves(tree):
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]


@pytest.mark.parametrize("method", METHODS)
def test_every_method_spends_at_most_its_budget(pool, method):
    budget = 400
    trainer = RiskAverseTrainer(
        CNP(1, 1, hidden=8), pool, 0.7, method, budget, tasks_per_step=8, inner_steps=4,
        progress=False,
    )  # fmt: skip
    trainer.fit()
    assert trainer.grad_evals <= budget
    per_step = 2 * 8 if method == "mirror_prox" else 8
    assert trainer.grad_evals > budget - per_step - 48  # the next step (and snapshot) won't fit
    assert np.all(np.isfinite(trainer.history["batch_loss"]))


@pytest.mark.parametrize("method", ["mirror_prox", "erm"])
def test_a_resumed_run_continues_identically(pool, tmp_path, method):
    kwargs = {"tasks_per_step": 6, "inner_steps": 5, "progress": False, "checkpoint_every": 7}
    straight = RiskAverseTrainer(CNP(1, 1, hidden=8), pool, 0.7, method, 480, seed=2, **kwargs)
    straight.fit()
    ckpt = tmp_path / "run.msgpack"
    first = RiskAverseTrainer(CNP(1, 1, hidden=8), pool, 0.7, method, 480, 2, ckpt, **kwargs)
    first.fit(max_steps=11)  # "interrupted" after 11 steps (checkpoint at 7 and at the stop)
    resumed = RiskAverseTrainer(CNP(1, 1, hidden=8), pool, 0.7, method, 480, 2, ckpt, **kwargs)
    resumed.fit()
    assert resumed.step == straight.step
    assert resumed.grad_evals == straight.grad_evals
    assert resumed.history == straight.history
    a, b = resumed.state_dict(), straight.state_dict()
    if method == "mirror_prox":
        for key in ("p", "snap_p", "snap_losses", "avg_p"):
            np.testing.assert_array_equal(a["mp"][key], b["mp"][key])
        for key in ("params", "snap_params", "avg_params", "opt_state"):
            for x, y in zip(leaves(a["mp"][key]), leaves(b["mp"][key]), strict=True):
                np.testing.assert_array_equal(x, y)
        assert a["mp"]["avg_weight"] == b["mp"]["avg_weight"]
    else:
        for x, y in zip(leaves(a["params"]), leaves(b["params"]), strict=True):
            np.testing.assert_array_equal(x, y)


def test_checkpoint_of_other_settings_is_refused(pool, tmp_path):
    ckpt = tmp_path / "run.msgpack"
    RiskAverseTrainer(CNP(1, 1, hidden=8), pool, 0.7, "erm", 80, 0, ckpt, progress=False).fit()
    with pytest.raises(ValueError, match="alpha"):  # the checkpoint is loaded on construction
        RiskAverseTrainer(CNP(1, 1, hidden=8), pool, 0.5, "erm", 80, 0, ckpt, progress=False)


def test_evaluate_reports_mean_cvar_and_worst_percent(pool):
    model = CNP(1, 1, hidden=8)
    out = evaluate_model(model, pool, alpha=0.7)
    per_task = out["per_task"]
    batch = pool.batch(np.arange(pool.n_tasks))
    np.testing.assert_allclose(per_task, np.asarray(model.task_loss(batch)), rtol=1e-6)
    assert out["mean"] == pytest.approx(per_task.mean())
    assert out["cvar"] == pytest.approx(cvar(per_task, 0.7))
    assert out["worst_1pct"] == pytest.approx(per_task.max())  # 1 % of 48 tasks < 1 task
    assert set(out["per_group"]) == {"l=1", "l=0.25"}


BAD = [
    ({"method": "sgd"}, ValueError, "method"),
    ({"alpha": 1.5}, ValueError, "alpha"),
    ({"grad_budget": 0}, ValueError, "grad_budget"),
    ({"grad_budget": 10}, ValueError, "grad_budget"),
    ({"tasks_per_step": 100}, ValueError, "tasks_per_step"),
    ({"seed": -1}, ValueError, "seed"),
    ({"checkpoint": 3}, TypeError, "checkpoint"),
]


@pytest.mark.parametrize(("kwargs", "error", "match"), BAD, ids=range(len(BAD)))
def test_bad_arguments_are_refused_naming_them(pool, kwargs, error, match):
    args = {"grad_budget": 400, "progress": False, **kwargs}
    with pytest.raises(error, match=match):
        RiskAverseTrainer(CNP(1, 1, hidden=8), pool, **args)


def test_a_model_that_does_not_fit_the_pool_is_refused(pool):
    with pytest.raises(ValueError, match="dim_x = 1"):
        RiskAverseTrainer(CNP(2, 1, hidden=8), pool, grad_budget=400, progress=False)
    with pytest.raises(TypeError, match="task_loss"):
        RiskAverseTrainer(nnx.Linear(1, 1, rngs=nnx.Rngs(0)), pool, grad_budget=400)
    with pytest.raises(ValueError, match="dim_x = 1"):
        evaluate_model(CNP(2, 1, hidden=8), pool)


def test_a_loss_fn_of_the_wrong_shape_or_diverged_is_named(pool):
    from riskaverse_np import MirrorProxCVaR

    opt = MirrorProxCVaR(CNP(1, 1, hidden=8), pool.n_tasks, 0.5, total_steps=3, tasks_per_step=4)
    with pytest.raises(ValueError, match="loss_fn"):
        opt.step(lambda model, idx, key: jnp.zeros(3))
    with pytest.raises(FloatingPointError, match="loss_fn"):
        opt.step(lambda model, idx, key: jnp.full(idx.shape, jnp.nan))


def test_n_tasks_differing_from_the_pool_is_refused(pool):
    from riskaverse_np import MirrorProxCVaR

    opt = MirrorProxCVaR(CNP(1, 1, hidden=8), 60, 0.5, total_steps=3, tasks_per_step=4)
    with pytest.raises(ValueError, match="n_tasks"):
        opt.step(pool.loss_fn())


def test_pool_of_another_size_is_refused_by_the_optimiser(pool):
    from riskaverse_np import MirrorProxCVaR

    opt = MirrorProxCVaR(CNP(1, 1, hidden=8), 10, 0.5, total_steps=3, tasks_per_step=4)
    state = opt.state_dict()
    other = MirrorProxCVaR(CNP(1, 1, hidden=8), 12, 0.5, total_steps=3, tasks_per_step=4)
    with pytest.raises(ValueError, match="n_tasks"):
        other.load_state_dict(state)
