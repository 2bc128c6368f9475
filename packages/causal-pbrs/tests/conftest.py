"""Random confounded MDPs and behaviour policies for the exact-distribution tests."""

import numpy as np
import pytest
from causal_pbrs import Demonstrator, TabularCMDP


def random_cmdp(rng, *, S=None, A=None, K=None, H=None, terminals=True):
    """A random CMDP with S <= 6, A <= 3, |U| <= 3, H <= 4 and (optionally) terminal states."""
    S = int(rng.integers(2, 7)) if S is None else S
    A = int(rng.integers(1, 4)) if A is None else A
    K = int(rng.integers(1, 4)) if K is None else K
    H = int(rng.integers(1, 5)) if H is None else H
    u_prob = rng.dirichlet(np.ones(K), size=S)
    terminal = np.zeros(S, dtype=bool)
    if terminals:
        terminal[rng.choice(S, size=int(rng.integers(0, S // 2 + 1)), replace=False)] = True
    terminal[0] = False  # at least one state to start from
    initial = np.where(terminal, 0.0, rng.random(S) * (rng.random(S) < 0.7))
    initial[0] += 0.1
    initial /= initial.sum()
    next_state = rng.integers(0, S, size=(S, A, K))
    reward = rng.uniform(-1.0, 1.0, size=(S, A, K))
    return TabularCMDP(u_prob, next_state, reward, terminal, initial, H)


def random_behaviour(env, rng):
    """A U-dependent behaviour: random probabilities, some rows deterministic."""
    shape = (env.horizon, env.n_states, env.n_cells, env.n_actions)
    table = rng.dirichlet(np.ones(env.n_actions), size=shape[:3])
    hard = rng.random(shape[:3]) < 0.4
    picks = np.eye(env.n_actions)[rng.integers(0, env.n_actions, size=shape[:3])]
    return Demonstrator(env, np.where(hard[..., None], picks, table))


COUNT_FIELDS = ("n_s", "n_sa", "n_sas", "n_end", "y_sum")


def dense(counts, name):
    """A field of Counts as a dense array (n_sas is stored sparse)."""
    return counts.transition_counts() if name == "n_sas" else getattr(counts, name)


@pytest.fixture
def rng():
    return np.random.default_rng(20250511)
