"""Regression tests for the first-use trial's findings (trial 26): small and fast."""

import json
import signal
import warnings

import jax.numpy as jnp
import numpy as np
import pytest
from _linear import Linear, least_squares_tasks, loss_fn_for
from flax import nnx, serialization
from riskaverse_np import (
    CNP,
    MirrorProxCVaR,
    RiskAverseTrainer,
    TaskPool,
    cvar,
    cvar_weights,
    gp_pool,
    kde_var,
    make_batch,
    project_capped_simplex_kl,
)
from riskaverse_np.cli import main

KW = {"progress": False, "tasks_per_step": 4, "inner_steps": 4}


@pytest.fixture(scope="module")
def pool():
    return gp_pool(12, n_points=8, context=(2, 4), seed=0)


@pytest.fixture(scope="module")
def lsq():
    a, y = least_squares_tasks(n_tasks=20)
    return loss_fn_for(a, y)


def mp(n=20, **kw):
    args = {"lr": 0.02, "step_rule": "constant", "tasks_per_step": 4, "total_steps": 10}
    return MirrorProxCVaR(Linear(3), n, 0.7, **(args | kw))


# ------------------------------------------------------------------------------- HIGH
def test_h1_resume_on_another_pool_of_the_same_size_is_refused(pool, tmp_path):
    ckpt = tmp_path / "g.msgpack"
    other = gp_pool(12, n_points=8, context=(2, 4), seed=1)
    RiskAverseTrainer(CNP(1, 1, hidden=4), pool, method="erm", grad_budget=40, checkpoint=ckpt,
                      **KW).fit(max_steps=2)  # fmt: skip
    with pytest.raises(ValueError, match="pool"):
        RiskAverseTrainer(CNP(1, 1, hidden=4), other, method="erm", grad_budget=40,
                          checkpoint=ckpt, **KW)  # fmt: skip
    # default seeds give reproducible pools
    assert gp_pool(5).fingerprint() == gp_pool(5).fingerprint()


def test_h2_integer_losses_are_refused(lsq):
    opt = mp()
    with pytest.raises(TypeError, match="floating"):
        opt.step(lambda m, i, k: lsq(m, i, k).astype(jnp.int32))


def test_h3_n_tasks_larger_than_the_data_is_refused(lsq):
    opt = mp(n=40)
    with pytest.raises(ValueError, match="n_tasks"):
        opt.step(lsq)
    mp(n=20).step(lsq)  # the right size passes


def test_h4_large_losses_do_not_break_the_p_update():
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, (20, 12, 1))
    y = np.sin(3 * x) * 1e3
    big = TaskPool(make_batch(x[:, :4], y[:, :4], x, y))
    trainer = RiskAverseTrainer(CNP(1, 1, hidden=8), big, method="mirror_prox", lr=50.0,
                                grad_budget=800, progress=False)  # fmt: skip
    trainer.fit()
    p = trainer.mp.p
    assert np.isclose(p.sum(), 1.0)
    assert p.max() <= trainer.mp.cap * (1 + 1e-9)
    # the log-space projection on weights beyond float64's range
    out = project_capped_simplex_kl(np.array([0.0, -1e5, -2e5, -3e5, -4e5]), 0.25,
                                    log_weights=True)  # fmt: skip
    np.testing.assert_allclose(out, [0.25, 0.25, 0.25, 0.25, 0.0])


def test_h5_infinite_cap_is_the_plain_simplex():
    q = np.array([4.0, 1, 1, 2])
    np.testing.assert_allclose(project_capped_simplex_kl(q, float("inf")), q / q.sum())


def test_h6_kde_var_refuses_alpha_zero_clearly(pool):
    with pytest.raises(ValueError, match="alpha > 0"):
        kde_var(np.array([0.2, 1.5, 0.7, 3.0, 0.9]), 0.0)
    with pytest.raises(ValueError, match="alpha > 0"):
        RiskAverseTrainer(CNP(1, 1, hidden=4), pool, alpha=0.0, method="kde_var",
                          grad_budget=40, **KW)  # fmt: skip
    assert np.isfinite(kde_var(np.array([0.2, 1.5, 0.7, 3.0, 0.9]), 1e-30))


# ----------------------------------------------------------------------------- MEDIUM
class NaNModel(nnx.Module):
    def __init__(self):
        self.c = CNP(1, 1, hidden=4)

    def task_loss(self, batch):
        return self.c.task_loss(batch).at[0].set(jnp.nan)

    def predict(self, batch):
        return self.c.predict(batch)


@pytest.mark.parametrize("method", ["mirror_prox", "erm", "kde_var"])
def test_m1_nan_losses_raise_for_every_method(pool, tmp_path, method):
    ckpt = tmp_path / "n.msgpack"
    trainer = RiskAverseTrainer(NaNModel(), pool, method=method, grad_budget=60,
                                checkpoint=ckpt, **KW)  # fmt: skip
    with pytest.raises(FloatingPointError, match=f"{method}.*step 0"):
        trainer.fit()
    assert not ckpt.exists()


def test_m2_corrupt_checkpoint_names_the_file(pool, tmp_path):
    ckpt = tmp_path / "c.msgpack"
    RiskAverseTrainer(CNP(1, 1, hidden=4), pool, method="erm", grad_budget=40, checkpoint=ckpt,
                      **KW).fit()  # fmt: skip
    raw = ckpt.read_bytes()
    for bad in (raw[: len(raw) // 2], b"", b"garbage"):
        ckpt.write_bytes(bad)
        with pytest.raises(ValueError, match=r"c\.msgpack.*corrupt"):
            RiskAverseTrainer(CNP(1, 1, hidden=4), pool, method="erm", grad_budget=40,
                              checkpoint=ckpt, **KW)  # fmt: skip


def test_m3_load_state_dict_checks_settings_and_p(lsq):
    opt = mp()
    opt.step(lsq)
    state = opt.state_dict()
    with pytest.raises(ValueError, match="step_rule"):
        mp(step_rule="adam").load_state_dict(state)
    with pytest.raises(ValueError, match="lr"):
        mp(lr=5.0).load_state_dict(state)
    for p in (np.full(20, np.nan), np.full(20, 0.1)):
        with pytest.raises(ValueError, match="'p'"):
            mp().load_state_dict(state | {"p": p})


def test_m4_empty_pool_is_refused():
    x = np.zeros((0, 4, 1))
    with pytest.raises(ValueError, match="N = 0"):
        TaskPool(make_batch(x, x, x, x))


def test_m5_cli_train_user_errors_exit_2(tmp_path, capsys):
    out = tmp_path / "c.msgpack"
    with pytest.raises(SystemExit) as info:
        main(["train", "--grad-budget", "5", "--out", str(out)])
    assert info.value.code == 2
    assert "minimum is" in capsys.readouterr().err
    out.write_bytes(b"")
    with pytest.raises(SystemExit) as info:
        main(["train", "--grad-budget", "400", "--out", str(out)])
    assert info.value.code == 2
    assert "corrupt" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["train", "--out", str(tmp_path)])
    assert info.value.code == 2
    assert "directory" in capsys.readouterr().err


def test_m6_ctrl_c_writes_a_checkpoint(pool, tmp_path, monkeypatch):
    ckpt = tmp_path / "i.msgpack"
    trainer = RiskAverseTrainer(CNP(1, 1, hidden=4), pool, method="erm", grad_budget=400,
                                checkpoint=ckpt, checkpoint_every=100, **KW)  # fmt: skip
    original = trainer._one_step

    def step_then_interrupt():
        loss = original()
        if trainer.step == 2:
            signal.raise_signal(signal.SIGINT)
        return loss

    monkeypatch.setattr(trainer, "_one_step", step_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        trainer.fit()
    state = serialization.msgpack_restore(ckpt.read_bytes())
    assert state["step"] == 3  # the step in progress finishes, then the checkpoint is written


def test_m7_a_trainer_on_a_finished_checkpoint_loads_it(pool, tmp_path):
    ckpt = tmp_path / "e.msgpack"
    first = RiskAverseTrainer(CNP(1, 1, hidden=4), pool, method="erm", grad_budget=40,
                              checkpoint=ckpt, **KW)  # fmt: skip
    first.fit()
    second = RiskAverseTrainer(CNP(1, 1, hidden=4), pool, method="erm", grad_budget=40,
                               checkpoint=ckpt, **KW)  # fmt: skip
    assert second.step == first.step
    assert second.evaluate()["cvar"] == pytest.approx(first.evaluate()["cvar"], rel=1e-6)


# -------------------------------------------------------------------------------- LOW
def test_lows_risk_inputs():
    assert float(cvar([1.0, 2, 3], 0.5)) == pytest.approx(2.6666666666666665)
    w = cvar_weights(np.array([1, 2, 3], np.float16), 0.5)
    assert w.dtype == np.float32
    assert w.sum() == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(TypeError, match="static"):
        cvar(np.array([1.0, 2.0]), np.array(0.5))


def test_lows_make_batch():
    x = np.zeros((2, 3, 1))
    with pytest.raises(ValueError, match="overflows float32"):
        make_batch(np.full((2, 3, 1), 1e39), x, x, x)
    batch = make_batch(x, x, x, x, mask_c=np.array([[1, 0, 0], [1, 1, 0]]))
    assert batch.mask_c.dtype == jnp.bool_


def test_lows_trainer_arguments(pool, lsq):
    full = RiskAverseTrainer(CNP(1, 1, hidden=4), pool, method="erm", grad_budget=24,
                             progress=False, tasks_per_step=None)  # fmt: skip
    assert full.total_steps == 2
    with pytest.raises(ValueError, match="mesh"):
        RiskAverseTrainer(CNP(1, 1, hidden=4), pool, method="erm", grad_budget=40, mesh=object(),
                          **KW)  # fmt: skip
    for bad in (-1, 2.5):
        with pytest.raises((TypeError, ValueError), match="max_steps"):
            full.fit(max_steps=bad)
    opt = mp(total_steps=1, average_start=0.0)
    opt.step(lsq)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opt.step(lsq)
    assert any("total_steps" in str(w.message) for w in caught)


def test_lows_cli_eval_reports_alpha(tmp_path, capsys):
    out = tmp_path / "a.msgpack"
    assert main(["train", "--grad-budget", "16", "--method", "erm", "--hidden", "4",
                 "--out", str(out)]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["eval", str(out), "--hidden", "4", "--alpha", "0.5"]) == 0
    assert json.loads(capsys.readouterr().out)["alpha"] == 0.5
