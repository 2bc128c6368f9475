"""Seeding: one call for global RNGs, and explicit generators for ``random_state`` arguments.

An integer seed is an ``int`` (or numpy integer, never ``bool``) in ``[0, 2**32 - 1]``, the range
every seeded library here accepts. torch and jax are imported only when used.
"""

import numbers
import random
from importlib.util import find_spec

import numpy as np

from icml25_core.validation import check_scalar

_MAX_SEED = 2**32 - 1


def _check_seed(seed, name: str) -> int:
    return int(check_scalar(seed, name, kind=int, low=0, high=_MAX_SEED))


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, numpy's legacy global RNG and, if installed, torch.

    Parameters
    ----------
    seed : int
        Seed in ``[0, 2**32 - 1]``.

    Raises
    ------
    TypeError
        If `seed` is not an int (``bool`` included).
    ValueError
        If `seed` is outside ``[0, 2**32 - 1]``.

    Notes
    -----
    torch is seeded on the CPU and on every CUDA device (``torch.cuda.manual_seed_all``, which is
    deferred until CUDA is initialised). Code that takes a ``random_state`` should still use
    :func:`as_generator` rather than rely on global state.

    Examples
    --------
    >>> seed_everything(0)
    """
    seed = _check_seed(seed, "seed")
    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002 - seeding the legacy global RNG is the point here
    if find_spec("torch") is not None:
        import torch

        torch.manual_seed(seed)
        torch.cuda.manual_seed_all(seed)


def jax_key(seed: int):
    """Return ``jax.random.PRNGKey(seed)``.

    Parameters
    ----------
    seed : int
        Seed in ``[0, 2**32 - 1]``.

    Returns
    -------
    jax.Array
        A jax PRNG key.

    Raises
    ------
    TypeError
        If `seed` is not an int.
    ValueError
        If `seed` is outside ``[0, 2**32 - 1]``.
    ImportError
        If jax is not installed.
    """
    seed = _check_seed(seed, "seed")
    try:
        import jax
    except ImportError as error:
        raise ImportError("jax_key needs jax: pip install jax") from error
    return jax.random.PRNGKey(seed)


def _seed_sequence(random_state) -> np.random.SeedSequence:
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    # A generator seeds the sequence with four 32-bit words drawn from it (and so advances).
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(random_state.integers(2**32, size=4, dtype=np.uint32))
    if isinstance(random_state, np.random.RandomState):
        return np.random.SeedSequence(random_state.randint(2**32, size=4, dtype=np.uint32))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool | np.bool_):
        return np.random.SeedSequence(_check_seed(random_state, "random_state"))
    raise TypeError(
        "`random_state` must be None, an int, a numpy SeedSequence, Generator or RandomState; "
        f"got {type(random_state).__name__}"
    )


def as_generator(random_state=None) -> np.random.Generator:
    """Turn a ``random_state`` argument into a :class:`numpy.random.Generator`.

    Parameters
    ----------
    random_state : None, int, SeedSequence, Generator or RandomState, default=None
        ``None`` gives fresh OS entropy; an int in ``[0, 2**32 - 1]`` gives the same stream as
        ``np.random.default_rng(seed)``; a ``SeedSequence`` seeds a new generator; a
        ``Generator`` is returned as is; a ``RandomState`` seeds a new generator from four
        32-bit words it draws (deterministic, and it advances that ``RandomState``).

    Returns
    -------
    numpy.random.Generator

    Raises
    ------
    TypeError
        If `random_state` has another type (``bool`` included).
    ValueError
        If an int `random_state` is outside ``[0, 2**32 - 1]``.

    Examples
    --------
    >>> rng = as_generator(0)
    >>> float(rng.random()) == float(np.random.default_rng(0).random())
    True
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(_seed_sequence(random_state))


def spawn_seeds(random_state, n: int) -> list[np.random.SeedSequence]:
    """Make `n` independent child seed sequences, one per parallel unit of work.

    Give child ``i`` to work item ``i`` (``np.random.default_rng(child)``) and results no longer
    depend on how the items are spread over workers (``n_jobs``).

    Parameters
    ----------
    random_state : None, int, SeedSequence, Generator or RandomState
        Source of the children. An int gives ``SeedSequence(seed).spawn(n)``, the same children
        on every call. A ``SeedSequence`` spawns from itself (each call continues its spawn
        counter). A ``Generator`` or ``RandomState`` draws four 32-bit words of entropy, so the
        children follow its state and the call advances it.
    n : int
        Number of children, ``>= 0``.

    Returns
    -------
    list of numpy.random.SeedSequence
        `n` children.

    Raises
    ------
    TypeError
        If `n` is not an int, or `random_state` has an unsupported type.
    ValueError
        If `n` is negative or an int `random_state` is outside ``[0, 2**32 - 1]``.

    Examples
    --------
    >>> children = spawn_seeds(0, 3)
    >>> rngs = [np.random.default_rng(child) for child in children]
    """
    n = int(check_scalar(n, "n", kind=int, low=0))
    return _seed_sequence(random_state).spawn(n)
