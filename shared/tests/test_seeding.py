import random
import sys
import types

import numpy as np
import pytest

from icml25_core import as_generator, jax_key, seed_everything, spawn_seeds
from icml25_core import seeding as seeding_module


@pytest.fixture
def fake_torch(monkeypatch):
    """A stand-in torch that records seeds; find_spec reports it installed."""
    calls = []
    torch = types.SimpleNamespace(
        manual_seed=lambda s: calls.append(("cpu", s)),
        cuda=types.SimpleNamespace(manual_seed_all=lambda s: calls.append(("cuda", s))),
    )
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(seeding_module, "find_spec", lambda name: object())
    return calls


def test_seed_everything_repeats_random_and_numpy_draws():
    seed_everything(3)
    first = (random.random(), np.random.rand())  # noqa: NPY002 - the legacy global RNG is tested
    seed_everything(3)
    assert (random.random(), np.random.rand()) == first  # noqa: NPY002


def test_seed_everything_seeds_torch_cpu_and_cuda_when_installed(fake_torch):
    seed_everything(7)
    assert fake_torch == [("cpu", 7), ("cuda", 7)]


def test_seed_everything_leaves_torch_alone_when_absent(fake_torch, monkeypatch):
    monkeypatch.setattr(seeding_module, "find_spec", lambda name: None)
    seed_everything(7)
    assert fake_torch == []


def test_seed_everything_accepts_numpy_integer_and_bounds():
    seed_everything(np.int64(0))
    seed_everything(2**32 - 1)


def test_jax_key_calls_prngkey_when_jax_installed(monkeypatch):
    fake_jax = types.SimpleNamespace(random=types.SimpleNamespace(PRNGKey=lambda s: ("key", s)))
    monkeypatch.setitem(sys.modules, "jax", fake_jax)
    assert jax_key(5) == ("key", 5)


def test_jax_key_names_jax_when_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)  # makes `import jax` fail
    with pytest.raises(ImportError, match="jax_key needs jax"):
        jax_key(0)


def test_as_generator_int_matches_default_rng():
    assert as_generator(42).random() == np.random.default_rng(42).random()


def test_as_generator_returns_generator_unchanged():
    rng = np.random.default_rng(0)
    assert as_generator(rng) is rng


def test_as_generator_seed_sequence_is_deterministic():
    a = as_generator(np.random.SeedSequence(9)).integers(1000, size=5)
    b = as_generator(np.random.SeedSequence(9)).integers(1000, size=5)
    np.testing.assert_array_equal(a, b)


def test_as_generator_random_state_is_deterministic():
    a = as_generator(np.random.RandomState(1)).random(3)
    b = as_generator(np.random.RandomState(1)).random(3)
    np.testing.assert_array_equal(a, b)


def test_as_generator_none_gives_fresh_entropy():
    assert as_generator(None).integers(2**62) != as_generator(None).integers(2**62)


def test_spawn_seeds_int_matches_seed_sequence_spawn():
    ours = [c.generate_state(2) for c in spawn_seeds(5, 3)]
    numpys = [c.generate_state(2) for c in np.random.SeedSequence(5).spawn(3)]
    np.testing.assert_array_equal(ours, numpys)


def test_spawn_seeds_int_gives_same_children_every_call():
    a = [np.random.default_rng(c).random() for c in spawn_seeds(11, 4)]
    b = [np.random.default_rng(c).random() for c in spawn_seeds(11, 4)]
    assert a == b
    assert len(set(a)) == 4


@pytest.mark.parametrize("chunk", [1, 2, 3, 6])
def test_spawn_seeds_results_do_not_depend_on_chunking(chunk):
    # Work item i always draws from child i, however items are grouped into jobs.
    children = spawn_seeds(0, 6)
    jobs = [range(start, min(start + chunk, 6)) for start in range(0, 6, chunk)]
    results = [np.random.default_rng(children[i]).random() for job in jobs for i in job]
    assert results == [np.random.default_rng(c).random() for c in spawn_seeds(0, 6)]


def test_spawn_seeds_generator_follows_its_state():
    a = spawn_seeds(np.random.default_rng(3), 2)
    b = spawn_seeds(np.random.default_rng(3), 2)
    assert [c.generate_state(1)[0] for c in a] == [c.generate_state(1)[0] for c in b]


def test_spawn_seeds_random_state_is_deterministic():
    a = spawn_seeds(np.random.RandomState(3), 2)
    b = spawn_seeds(np.random.RandomState(3), 2)
    assert [c.generate_state(1)[0] for c in a] == [c.generate_state(1)[0] for c in b]


def test_spawn_seeds_zero_gives_empty_list():
    assert spawn_seeds(0, 0) == []


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"seed": -1}, ValueError, r"`seed` must be in \[0, 4294967295\], got -1"),
        ({"seed": 2**32}, ValueError, "`seed` must be in"),
        ({"seed": True}, TypeError, "`seed` must be an int, got bool"),
        ({"seed": 1.0}, TypeError, "`seed` must be an int, got float"),
        ({"seed": "0"}, TypeError, "`seed` must be an int, got str"),
    ],
)
def test_seed_everything_raises_on_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        seed_everything(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"seed": -3}, ValueError, "`seed` must be in"),
        ({"seed": 0.5}, TypeError, "`seed` must be an int, got float"),
    ],
)
def test_jax_key_raises_on_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        jax_key(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"random_state": -1}, ValueError, "`random_state` must be in"),
        ({"random_state": True}, TypeError, "`random_state` must be None, an int.*got bool"),
        ({"random_state": 1.5}, TypeError, "`random_state` must be.*got float"),
        ({"random_state": "7"}, TypeError, "`random_state` must be.*got str"),
    ],
)
def test_as_generator_raises_on_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        as_generator(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"random_state": 0, "n": -1}, ValueError, "`n` must be >= 0, got -1"),
        ({"random_state": 0, "n": 2.0}, TypeError, "`n` must be an int, got float"),
        ({"random_state": 0, "n": False}, TypeError, "`n` must be an int, got bool"),
        ({"random_state": [1], "n": 2}, TypeError, "`random_state` must be.*got list"),
        ({"random_state": 2**32, "n": 2}, ValueError, "`random_state` must be in"),
    ],
)
def test_spawn_seeds_raises_on_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        spawn_seeds(**kwargs)
