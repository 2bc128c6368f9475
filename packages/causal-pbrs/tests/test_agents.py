"""Q-UCB against a plain dictionary reference, and its regret growth."""

import math
from collections import defaultdict

import numpy as np
import pytest
from causal_pbrs import QUCB, ConfoundedToyText, WindyGrid, regret

from .conftest import random_cmdp


class DictQUCB:
    """Q-UCB written from Jin et al. (2018, Alg. 1) and the paper's three changes, with dicts."""

    def __init__(self, S, A, H, K, phi=None, *, c=4.0, p=0.1, homogeneous=False, clip="valid",
                 precision=None, r_min=None):  # fmt: skip
        self.A, self.H, self.c = A, H, c
        self.homogeneous, self.clip, self.precision = homogeneous, clip, precision
        self.shaped = phi is not None
        self.phi = np.zeros((H + 1, S)) if phi is None else phi
        init = 0.0 if self.shaped else float(H)
        self.Q = defaultdict(lambda: init)
        self.V = defaultdict(lambda: init)
        self.N = defaultdict(int)
        self.iota = math.log(S * A * H * K / p)
        if not self.shaped:
            self.scale = H**3
        elif r_min is None:
            self.scale = H * max(self.phi[h][s] for h in range(H) for s in range(S)) ** 2
        else:
            worst = max(
                self.phi[h][s] - (H - h) * min(r_min, 0) for h in range(H) for s in range(S)
            )
            self.scale = H * worst**2

    def row(self, h):
        return 0 if self.homogeneous else h

    def act(self, h, s):
        qs = [self.Q[self.row(h), s, a] for a in range(self.A)]
        return qs.index(max(qs))

    def update(self, h, s, a, y, s_next, terminated):
        H, i = self.H, self.row(h)
        self.N[i, s, a] += 1
        t = self.N[i, s, a]
        alpha = (H + 1) / (H + t)
        bonus = self.c * math.sqrt(self.scale * self.iota / t)
        ends = terminated or h == H - 1
        r = (y + (0.0 if ends else self.phi[h + 1][s_next])) - self.phi[h][s]
        v_next = 0.0 if ends else self.V[self.row(h + 1), s_next]
        q = (1 - alpha) * self.Q[i, s, a] + alpha * (r + v_next + bonus)
        if self.precision is not None:
            q = float(np.round(q, self.precision))  # the official call
        self.Q[i, s, a] = q
        cap = self.phi[h][s] if self.shaped and self.clip == "official" else 0.0
        cap = cap if self.shaped else float(H)
        self.V[i, s] = min(max(self.Q[i, s, b] for b in range(self.A)), cap)

    def table(self, S):
        rows = 1 if self.homogeneous else self.H
        return np.array([[[self.Q[i, s, a] for a in range(self.A)] for s in range(S)]
                         for i in range(rows)])  # fmt: skip


CONFIGS = {
    "vanilla": {},
    "shaped": {"shaped": True},
    "official": {"shaped": True, "homogeneous": True, "clip": "official", "precision": 3},
    "vanilla-official": {"homogeneous": True, "precision": 2},
    "range": {"shaped": True, "range": True},
}


def _envs():
    rng = np.random.default_rng(11)
    return {
        "random-cmdp": random_cmdp(rng, S=6, A=3, K=3, H=4),
        "lava": WindyGrid.preset("lava_extreme"),
        "frozenlake": ConfoundedToyText("FrozenLake-v1", 25),
    }


@pytest.mark.parametrize("env_name", ["random-cmdp", "lava", "frozenlake"])
@pytest.mark.parametrize("config", list(CONFIGS))
def test_qucb_equals_the_dict_reference_step_for_step(env_name, config):
    """Spec §5.6: 200 episodes, fixed seed, identical actions and identical Q."""
    env = _envs()[env_name]
    S, A, H, K = env.n_states, env.n_actions, env.horizon, 200
    opts = dict(CONFIGS[config])
    phi = None
    if opts.pop("shaped", False):
        phi = np.random.default_rng(3).normal(size=(H + 1, S)) - 0.5
        phi[H] = 0.0
    r_min = env.reward_range[0] if opts.pop("range", False) else None
    ours = QUCB(S, A, H, K, potential=phi, reward_min=r_min,
                bonus_range="range" if r_min is not None else "max_phi", **opts)  # fmt: skip
    ref = DictQUCB(S, A, H, K, phi, r_min=r_min, **opts)
    for k in range(K):
        s, _ = env.reset(seed=1000 + k)
        for h in range(H):
            a = ours.act(h, s)
            assert a == ref.act(h, s), (k, h)
            s_next, y, terminated, truncated, _ = env.step(a)
            ours.update(h, s, a, y, s_next, terminated)
            ref.update(h, s, a, y, s_next, terminated)
            if terminated or truncated:
                break
            s = s_next
    rows = 1 if ours.homogeneous else H
    np.testing.assert_array_equal(ours.Q[:rows], ref.table(S))


def test_vanilla_regret_grows_sublinearly_on_a_random_5_state_mdp():
    """Spec §5.6: regret(2K) / regret(K) < 1.8 (past the bonus's exploration phase)."""
    env = random_cmdp(np.random.default_rng(5), S=5, A=2, K=1, H=3, terminals=False)
    K = 5000
    agents = [QUCB(5, 2, 3, 2 * K) for _ in range(2)]
    for out in regret.run_batch(env, agents, [0, 1], 2 * K):
        cum = np.cumsum(out["episode_regret"])
        assert cum[2 * K - 1] / cum[K - 1] < 1.8


def test_random_tie_breaking_picks_among_the_maxima_only():
    agent = QUCB(2, 4, 2, 10, random_state=0)
    agent._Q[0, 0] = [1.0, 3.0, 3.0, 2.0]
    picks = {agent.act(0, 0) for _ in range(50)}
    assert picks == {1, 2}
    assert QUCB(2, 4, 2, 10)._act(0, 0) == 0  # first index without a generator


def test_shaped_agent_starts_at_zero_and_vanilla_at_h():
    phi = np.full(4, -1.0)
    shaped, vanilla = QUCB(4, 2, 5, 10, potential=phi), QUCB(4, 2, 5, 10)
    assert (shaped.Q == 0).all()
    assert (vanilla.Q == 5).all()
    assert shaped.bonus_scale_ == pytest.approx(5 * 1.0)  # H φ_m², φ_m = max φ = −1
    assert vanilla.bonus_scale_ == 125.0
    assert shaped.iota_ == pytest.approx(math.log(4 * 2 * 5 * 10 / 0.1))
