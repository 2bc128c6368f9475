"""The console script's own commands (train, eval) and errors, and a tiny reproduce run. Help,
version and usage errors, the README's blocks and the bare import are checked by the shared
contract (icml25_core.testing)."""

import json

import numpy as np
import pytest
from riskaverse_np import reproduce
from riskaverse_np.cli import main


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "ckpt.msgpack"
    code = main(["train", "--tasks", "gp-mix", "--method", "erm", "--grad-budget", "160",
                 "--hidden", "8", "--out", str(out)])  # fmt: skip
    assert code == 0
    return out


def test_train_then_eval_agree(trained, run_main):
    result = run_main(main, "eval", trained, "--tasks", "gp-mix", "--hidden", "8")
    assert result.code == 0, result.err
    scores = json.loads(result.out.strip().splitlines()[-1])
    assert set(scores) == {"alpha", "mean", "cvar", "worst_1pct"}
    assert scores["alpha"] == 0.7  # the training alpha by default
    assert scores["mean"] <= scores["cvar"] <= scores["worst_1pct"]


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["train", "--alpha", "1.5", "--out", "x"], "alpha"),
        (["train", "--alpha", "nan", "--out", "x"], "alpha"),
        (["train", "--grad-budget", "0", "--out", "x"], "grad-budget"),
        (["train", "--method", "sgd", "--out", "x"], "method"),
        (["eval", "{missing}"], "no such file"),
        (["eval", "{text}"], "not a riskaverse-np checkpoint"),
        (["eval", "{trained}", "--tasks", "digits"], "trained on --tasks gp-mix"),
        (["eval", "{trained}", "--hidden", "16"], "hidden"),
    ],
)
def test_bad_arguments_are_one_line_usage_errors(argv, match, run_main, tmp_path, trained):
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    names = {"missing": tmp_path / "none.msgpack", "text": text, "trained": trained}
    result = run_main(main, *(a.format(**names) for a in argv))
    assert result.code == 2
    assert match in result.err


def test_one_reproduce_unit_trains_and_evaluates_on_held_out_digits():
    tiny = reproduce.Settings(hidden=8, digits_budget=1200, inner_steps=16)
    result = reproduce._run_unit("digits", 0, "mirror_prox", tiny)
    assert len(result["per_task"]) == 500
    assert result["grad_evals"] <= 1200
    assert result["pool_share"]["0"] + result["pool_share"]["8"] == pytest.approx(0.1, abs=0.01)
    assert sum(result["p_mass"].values()) == pytest.approx(1.0, abs=1e-9)


def _fake_unit(mp_shift):
    """Stand-in for a training run: held-out NLLs whose tail mirror prox shifts by mp_shift."""

    def run(part, seed, method, settings):
        rng = np.random.default_rng(seed)
        per_task = rng.gamma(2.0, size=40)
        if method == "mirror_prox":
            per_task = np.where(
                per_task > np.quantile(per_task, 0.7), per_task + mp_shift, per_task
            )
        out = {
            "per_task": per_task.tolist(),
            "groups": [i % 2 for i in range(40)],
            "group_names": ["a", "b"],
            "steps": 10,
            "grad_evals": 100,
            "seconds": 0.0,
        }
        if method == "mirror_prox":
            out["p_mass"], out["pool_share"] = {"a": 0.4, "b": 0.6}, {"a": 0.5, "b": 0.5}
        return out  # fmt: skip

    return run


@pytest.mark.parametrize(("shift", "verdict"), [(-1.0, "reproduced"), (1.0, "not reproduced")])
def test_reproduce_judges_by_its_written_rules_and_resumes(tmp_path, monkeypatch, shift, verdict):
    monkeypatch.setattr(reproduce, "_run_unit", _fake_unit(shift))
    report = reproduce.run(out=tmp_path)
    assert len(report.claims) == 4
    assert [c.threshold for c in report.claims] == [
        reproduce.DIGITS_RULE,
        reproduce.TOPK_RULE,
        reproduce.GP_RULE,
        reproduce.TOPK_RULE,
    ]
    for claim in (report.claims[0], report.claims[2]):  # MP vs ERM: shifted tails decide
        assert claim.verdict.value.startswith(verdict)
    assert (tmp_path / "riskaverse-np_nll_hist.png").exists()
    md, _ = report.write(tmp_path)
    assert "CVaR_0.7(MP)" in md.read_text()
    monkeypatch.setattr(reproduce, "_run_unit", None)  # a resumed run trains nothing
    again = reproduce.run(out=tmp_path)
    assert any("18 of 18 training runs were reused" in n for n in again.notes)
