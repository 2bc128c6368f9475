"""The in-process driver: determinism, checkpoint/resume, client sampling and bad input."""

import pytest
import torch
from fedswa import AlgorithmConfig, get_algorithm, run_federated
from fedswa.simulate import ShuffledBatches, sample_clients

torch.manual_seed(0)
PARTS = [(torch.randn(30, 5), torch.randint(0, 3, (30,))) for _ in range(5)]


def _mlp():
    return torch.nn.Sequential(torch.nn.Linear(5, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3))


def _run(**kw):
    args = dict(rounds=4, clients_per_round=2, local_steps=3, batch_size=8, eta0=0.1, seed=2)
    args.update(kw)
    model_fn = args.pop("model_fn", _mlp)
    return run_federated(model_fn, PARTS, args.pop("algorithm", "fedmoswa"), **args)


def test_same_seed_same_result_bitwise():
    a, b = _run(), _run()
    assert all(torch.equal(v, b.state.model_state[k]) for k, v in a.state.model_state.items())
    assert a.metric("clients") == b.metric("clients")


def test_resume_after_interruption(tmp_path, monkeypatch):
    """Kill the run after round 2 (an exception in eval_fn), rerun: rounds 3-4 continue from
    the checkpoint and the end state is bitwise the uninterrupted one."""
    path = tmp_path / "run.pt"
    calls = {"n": 0}

    def flaky(model):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return {}

    with pytest.raises(KeyboardInterrupt):
        _run(checkpoint=path, eval_fn=flaky)
    assert torch.load(path, weights_only=False)["state"].round == 2
    resumed = _run(checkpoint=path, eval_fn=lambda m: {})
    full = _run(eval_fn=lambda m: {})
    for k, v in full.state.model_state.items():
        assert torch.equal(v, resumed.state.model_state[k])
    for cid in range(5):
        a, b = full.controls.get(cid), resumed.controls.get(cid)
        assert all(torch.equal(a[k], b[k]) for k in a)


def test_checkpoint_of_other_settings_is_refused(tmp_path):
    path = tmp_path / "run.pt"
    _run(rounds=2, checkpoint=path)
    with pytest.raises(ValueError, match="other settings"):
        _run(rounds=3, checkpoint=path)


def test_sampling_is_uniform_without_replacement():
    picks = [sample_clients(10, 3, seed=0, round_index=t) for t in range(2000)]
    assert all(len(set(p)) == 3 for p in picks)
    counts = torch.bincount(torch.tensor([c for p in picks for c in p]), minlength=10)
    assert (counts - 600).abs().max() < 100  # each client in 3/10 of the rounds


def test_shuffled_batches_cover_every_example_each_pass():
    x = torch.arange(10.0).unsqueeze(1)
    batches = ShuffledBatches(x, torch.arange(10), 4, seed=0)
    for _ in range(2):
        seen = torch.cat([b[1] for b in batches])
        assert sorted(seen.tolist()) == list(range(10))
    assert len(batches) == 3


def test_nan_divergence_names_the_client():
    bad = [*PARTS[:2], (torch.full((30, 5), 1e38), torch.randint(0, 3, (30,)))]
    with pytest.raises((FloatingPointError, ValueError), match=r"client 2|`batches`"):
        run_federated(
            _mlp, bad, get_algorithm("fedavg", clip_norm=None), rounds=1, clients_per_round=3,
            local_steps=3, batch_size=8, eta0=1e3,
        )  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(rounds=0), ValueError, "`rounds`"),
        (dict(clients_per_round=0), ValueError, "`clients_per_round`"),
        (dict(clients_per_round=6), ValueError, "`clients_per_round`"),
        (dict(local_steps=0), ValueError, "`local_steps`"),
        (dict(batch_size=0), ValueError, "`batch_size`"),
        (dict(eta0=0.0), ValueError, "`eta0`"),
        (dict(seed=-1), ValueError, "`seed`"),
        (dict(algorithm="fedprox"), ValueError, "`algorithm` must be one of"),  # not `name`
        (dict(algorithm=3), TypeError, "`algorithm`"),
        (dict(model_fn=_mlp()), TypeError, "`model_fn`.*callable"),
        (dict(checkpoint="/nonexistent-dir-fedswa/run.pt"), ValueError, "`checkpoint`.*directory"),
        (dict(eval_fn=lambda m: 0.5), TypeError, "`eval_fn`"),
        (dict(eval_fn=lambda m: {"round": 99}), ValueError, r"`eval_fn`.*\['round'\]"),
    ],
)
def test_run_federated_rejects_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        _run(**kwargs)


def test_checkpoint_of_other_data_or_model_is_refused(tmp_path):
    path = tmp_path / "run.pt"
    _run(rounds=2, checkpoint=path)
    other = [(x + 1.0, y) for x, y in PARTS]
    with pytest.raises(ValueError, match="data_hash"):
        run_federated(_mlp, other, "fedmoswa", rounds=2, clients_per_round=2, local_steps=3,
                      batch_size=8, eta0=0.1, seed=2, checkpoint=path)  # fmt: skip
    with pytest.raises(ValueError, match="model"):
        run_federated(lambda: torch.nn.Linear(5, 3), PARTS, "fedmoswa", rounds=2,
                      clients_per_round=2, local_steps=3, batch_size=8, eta0=0.1, seed=2,
                      checkpoint=path)  # fmt: skip


@pytest.mark.parametrize("content", [b"garbage", b""])
def test_unreadable_checkpoint_is_refused(tmp_path, content):
    path = tmp_path / "run.pt"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=r"`checkpoint`.*not a readable"):
        _run(rounds=1, checkpoint=path)
    with pytest.raises(ValueError, match=r"`checkpoint`.*is a directory"):
        _run(rounds=1, checkpoint=tmp_path)


@pytest.mark.parametrize(
    ("parts", "error", "match"),
    [
        ([], ValueError, "`partitions`"),
        ([(torch.randn(3, 5),)], TypeError, r"`partitions\[0\]`"),
        ([(torch.randn(3, 5), torch.zeros(2))], ValueError, r"`partitions\[0\]`"),
        ([(torch.randn(0, 5), torch.zeros(0))], ValueError, r"`partitions\[0\]`"),
        ([([1, 2], [0, 1])], TypeError, r"`partitions\[0\]`"),
    ],
)
def test_run_federated_rejects_bad_partitions(parts, error, match):
    with pytest.raises(error, match=match):
        run_federated(_mlp, parts, "fedavg", rounds=1, clients_per_round=1, local_steps=1,
                      batch_size=2, eta0=0.1)  # fmt: skip


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        (dict(rho=2.0), "`rho`"),
        (dict(gamma=0.0), "`gamma`"),
        (dict(alpha=0.0), "`alpha`"),
        (dict(lr_factor=0.0), "`lr_factor`"),
        (dict(control="both"), "`control`"),
        (dict(weights="size"), "`weights`"),
        (dict(weight_decay=-1.0), "`weight_decay`"),
        (dict(sam_rho=-0.1), "`sam_rho`"),
        (dict(lr_schedule="step"), "`lr_schedule`"),
    ],
)
def test_algorithm_config_rejects_bad_fields(overrides, match):
    with pytest.raises(ValueError, match=match):
        get_algorithm("fedswa", **overrides)


@pytest.mark.parametrize("flag", ["warm_start", "scale_by_participation"])
def test_algorithm_config_flags_must_be_bools(flag):
    """New-user trial 34: ``warm_start="no"`` was accepted, and acted as True."""
    with pytest.raises(TypeError, match=f"`{flag}` must be a bool, got str"):
        AlgorithmConfig("x", **{flag: "no"})


def test_get_algorithm_lists_the_fields_of_an_unknown_override():
    with pytest.raises(TypeError, match=r"\['foo'\].*valid.*'rho'"):
        get_algorithm("fedswa", foo=1)


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((torch.zeros(4, 2).numpy(), torch.zeros(4)), TypeError, "`x`"),
        ((torch.zeros(4, 2), [0, 1, 2, 3]), TypeError, "`y`"),
    ],
)
def test_shuffled_batches_rejects_bad_input(args, error, match):
    with pytest.raises(error, match=match):
        ShuffledBatches(*args, batch_size=2, seed=0)
