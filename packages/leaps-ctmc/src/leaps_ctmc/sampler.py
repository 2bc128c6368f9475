"""The LEAPS sampler: a CTMC driven by a locally equivariant net, with Jarzynski log-weights.

Source: Holderrieth, Albergo, Jaakkola, "LEAPS", ICML 2025, Algorithm 1 and Sec. 4 (discrete
Jarzynski): A_0 = 0, dA = g_t(X_t) dt, g_t = -dU_t/dt - K_t, so that for ANY rate matrix Q
E[e^{A_t} h(X_t)] / E[e^{A_t}] = E_{rho_t}[h] and E[e^{A_t}] = Z_t / Z_0. Q = 0 is annealed
importance sampling (AIS) without MCMC.

Per step on the grid 0 = t_0 < ... < t_N = 1 (h = t_{k+1} - t_k): optional rho_t-invariant
Metropolis sweeps; one net pass G at (X, t_k) giving the out-rates and K; A += h g_{t_k}(X);
a CTMC step with the same rates; systematic resampling when ESS <= delta (log Z carried over).
Time discretisation makes the weights exact only as h -> 0 (O(h) bias): report N with results.
Axis letters: M walkers, S site shape, q states.
"""

import math
import warnings
from dataclasses import dataclass, field

import torch

from icml25_core import check_choice, check_scalar

from .estimators import bootstrap_log_z, ess, log_mean_exp, pareto_khat, systematic_resample
from .mcmc import metropolis_sweep
from .nets import check_net_fits, corrector, rates
from .paths import _Path, check_generator

__all__ = ["time_grid", "SampleResult", "StiffStepWarning", "sample", "ais"]

MAX_STEPS = 10**7  # grid steps: beyond this a grid (and a rollout) does not fit in memory

# A step is stiff when h times a walker's total exit rate exceeds 1: the Euler jump probability
# min(1, h * rate) is then clamped, and tau-leaping's per-site probability too (Ising).
STIFF = 1.0


class StiffStepWarning(RuntimeWarning):
    """h times a walker's exit rate exceeded 1 at some step: the jump probability was clamped.

    The Jarzynski weights stay those of the discretised process, whose E[e^A] then differs from
    Z_1 / Z_0 by far more than O(h), and the ESS and standard error can look confident while the
    estimate is wrong (issue 30). Use more steps (the message says how many) or fewer rates.
    """


def time_grid(n_steps=None, *, dt=None, grid="uniform") -> torch.Tensor:
    """Time points 0 = t_0 < t_1 < ... < t_N = 1.0 exactly, float64 [N + 1].

    Parameters
    ----------
    n_steps : int in [1, 10^7], optional
        N. Give either `n_steps` or `dt`.
    dt : float in [1e-7, 1], optional
        Uniform step; the last step is shortened so the grid ends at 1 exactly (the official
        code's ``int(1 / dt)`` steps stop short of 1 when dt does not divide 1).
    grid : {"uniform", "exp"} or callable, default="uniform"
        "exp" is the official Potts inference grid t = ((1 - e^{-5 s}) / (1 - e^{-5}))^3 on a
        uniform s; a callable maps a uniform float64 s in [0, 1] to increasing times.

    Raises
    ------
    ValueError
        Neither or both of n_steps / dt, n_steps outside [1, 10^7], dt outside [1e-7, 1], a
        callable grid that is not increasing from 0 to 1 (within 1e-9).
    """
    if (n_steps is None) == (dt is None):
        raise ValueError("give exactly one of `n_steps` and `dt`")
    if dt is not None:
        dt = float(check_scalar(dt, "dt", low=1.0 / MAX_STEPS, high=1.0))
        n_steps = math.ceil(1.0 / dt - 1e-9)
        s = torch.clamp(torch.arange(n_steps + 1, dtype=torch.float64) * dt, max=1.0)
    else:
        n_steps = int(check_scalar(n_steps, "n_steps", kind=int, low=1, high=MAX_STEPS))
        s = torch.linspace(0.0, 1.0, n_steps + 1, dtype=torch.float64)
    if grid == "uniform":
        t = s
    elif grid == "exp":
        t = ((1 - torch.exp(-5 * s)) / (1 - math.exp(-5))) ** 3
    elif callable(grid):
        t = torch.as_tensor(grid(s), dtype=torch.float64)
        if t.shape != s.shape or abs(float(t[0])) > 1e-9 or abs(float(t[-1]) - 1) > 1e-9:
            raise ValueError("`grid` must map [0, 1] onto [0, 1] with grid(0) = 0, grid(1) = 1")
    else:
        raise ValueError(f"`grid` must be 'uniform', 'exp' or a callable; got {grid!r}")
    t = t.clone()
    t[0], t[-1] = 0.0, 1.0
    if not bool((t[1:] > t[:-1]).all()):
        raise ValueError("`grid` must give strictly increasing times")
    return t


@dataclass
class SampleResult:
    """Output of :func:`sample`.

    Attributes
    ----------
    x : Tensor, [M, *S]
        Final states (Ising float spins, Potts int64).
    log_w : Tensor, float64 [M]
        Log-weights A (plus the log-mean of each population at a resampling), so that
        softmax(log_w) are the SNIS weights and logmeanexp(log_w) estimates log Z_1 / Z_0.
    ess : float
        (mean e^A)^2 / mean e^{2A} over all walkers (all ranks under torch.distributed).
    log_z : float
        Estimate of log Z_1 / Z_0.
    log_z_se : float
        Delta-method standard error of `log_z`, std(w) / (sqrt(M) mean(w)). Trust it only
        when `pareto_k` <= 0.7 and no step was stiff.
    pareto_k : float
        Pareto k̂ of the weights' right tail (PSIS, Vehtari et al. 2024, through arviz-stats):
        k̂ <= 0.5 good, <= 0.7 usable with care, above 0.7 the variance of the weights is not
        estimable from M walkers: do not trust `ess`, `log_z_se` or `log_z_ci`.
    log_z_ci : (float, float)
        95 % percentile bootstrap interval of `log_z` (1000 resamples of the walkers).
    meta : dict
        Provenance: scheme, n_steps, grid, mcmc_sweeps, resample_threshold, n_resamples,
        energy_evals (neighbour-Delta-U / energy passes per walker), net_evals, seed, world_size;
        stiffness per step (lists of length horizon, 0 for AIS): ``max_h_rate`` (largest h x
        total exit rate over the walkers; Ising tau-leaping: over sites) and
        ``clamped_fraction`` (walkers whose jump probability was clamped at 1, or whose
        h x rate exceeded 1 for Potts tau-leaping).
    trajectory : list of (Tensor, Tensor) or None
        With ``keep_trajectory=True``: (t [M], x [M, *S]) at each left grid point.
    """

    x: torch.Tensor
    log_w: torch.Tensor
    ess: float
    log_z: float
    log_z_se: float
    pareto_k: float = math.nan
    log_z_ci: tuple[float, float] = (math.nan, math.nan)
    meta: dict = field(default_factory=dict)
    trajectory: list | None = None

    def problems(self) -> list[str]:
        """Why `log_z`, `log_z_se` and `ess` may not be trusted; empty when no check fails.

        An empty list is not a certificate: no check here can see the O(h) bias of the Euler
        step when no step is stiff (compare log Z at n_steps and 2 x n_steps; on <= 2^16
        states :func:`leaps_ctmc.exact.euler_weight_moments` gives the discretised value).

        Checks: resampling (the diagnostics then see only the weights since the last
        resampling); a stiff step (h x exit rate > 1, see :class:`StiffStepWarning`); Pareto
        k̂ > 0.7, or fewer walkers than 10^{1 / (1 - k̂)}, the minimum sample size of
        Vehtari et al. (2024, Sec. 3.2), or k̂ not computable while ESS < 0.99; fewer than 100
        effective
        walkers M x ESS (our rule: the delta-method s.e. is itself estimated from the few
        walkers that carry the weight). Each can fail while another passes: with one walker
        far above all others k̂ may even come out negative, so read them together.
        """
        found = []
        if self.meta.get("n_resamples", 0):
            found.append(
                f"resampled: {self.meta['n_resamples']} resamplings; ess, log_z_se, log_z_ci "
                "and pareto_k see only the weights since the last one, so they understate the "
                "uncertainty of log_z (rerun without resample_threshold to measure it)"
            )
        stiff = [f for f in self.meta.get("clamped_fraction", []) if f > 0]
        if stiff:
            found.append(
                f"stiff: h x exit rate > 1 at {len(stiff)} steps (max "
                f"{max(self.meta['max_h_rate']):.3g}); the weights are those of the "
                "discretised process"
            )
        M = self.log_w.numel() * self.meta.get("world_size", 1)
        k = self.pareto_k
        if math.isnan(k) and self.ess < 0.99:
            found.append("pareto_k: not computable (the largest weights are all equal)")
        elif k > 0.7 or (k < 1 and 10 ** (1 / (1 - k)) > M):
            found.append(f"pareto_k: k̂ = {k:.2f} (> 0.7 or M below 10^(1/(1-k̂))): heavy tail")
        if M * self.ess < 100:
            found.append(
                f"ess: {M * self.ess:.1f} effective walkers of {M} (< 100): the standard "
                "error is unreliable"
            )
        return found


def check_uniform_start(path) -> None:
    """Raise ValueError unless rho_0 is uniform (J = 0 and no field at t = 0): the walkers start
    from uniform draws and the weights estimate Z_1 / Z_0 only from there."""
    try:
        _ = path.log_z0  # the path's own check: J = 0 (and no field) at t = 0
    except ValueError:
        raise ValueError(
            "`path` does not start from the uniform distribution (J or the field is non-zero "
            "at t = 0): the sampler draws uniform start states; pass `x0` drawn from rho_0 or "
            "start the path at J = 0"
        ) from None


def _gather(log_w: torch.Tensor) -> torch.Tensor:
    """All ranks' log-weights when torch.distributed is initialised, else `log_w`."""
    dist = torch.distributed
    if not (dist.is_available() and dist.is_initialized()):
        return log_w
    parts = [torch.empty_like(log_w) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, log_w.contiguous())
    return torch.cat(parts)


def _log_z_se(log_w: torch.Tensor) -> float:
    w = torch.exp(log_w - log_w.max())
    return float(w.std() / (math.sqrt(w.numel()) * w.mean())) if w.numel() > 1 else math.inf


def _jump(path, x, out_rate, h, scheme, generator):
    """One CTMC step from out-rates [M, *S] (Ising) or [M, q, *S] (Potts).

    Returns the new states, the largest h x rate and the fraction of walkers for which it
    exceeded 1 (the clamp of the jump probability; see :data:`STIFF`)."""
    M = x.shape[0]
    if scheme == "tau_leap":
        u = torch.rand(x.shape, generator=generator, dtype=torch.float64)
        if path.spin:  # each site flips independently w.p. clip(h * rate, 0, 1) (code)
            h_rate = h * out_rate
            stiff = (h_rate > STIFF).reshape(M, -1).any(1)
            return torch.where(u < h_rate.clamp(0, 1), -x, x), float(h_rate.max()), stiff
        total = out_rate.sum(1)  # a site moves w.p. 1 - exp(-h sum_tau rate); tau ~ rate
        move = u < -torch.expm1(-h * total)
        probs = out_rate.movedim(1, -1).reshape(-1, path.q)
        probs = torch.where(probs.sum(1, keepdim=True) > 0, probs, 1.0)
        tau = torch.multinomial(probs, 1, generator=generator).reshape(x.shape)
        h_rate = h * total
        stiff = (h_rate > STIFF).reshape(M, -1).any(1)
        return torch.where(move, tau, x), float(h_rate.max()), stiff
    flat = out_rate.reshape(M, -1)  # euler: one jump w.p. min(1, h * total rate), move ~ rate
    total = flat.sum(1)
    h_rate = h * total
    move = torch.rand(M, generator=generator, dtype=torch.float64) < h_rate.clamp(max=1)
    probs = torch.where(total[:, None] > 0, flat, 1.0)
    choice = torch.multinomial(probs, 1, generator=generator)[:, 0]
    n = path.n_sites
    site, tau = choice % n, choice // n
    xf = x.reshape(M, n).clone()
    rows = torch.arange(M)[move]
    if path.spin:
        xf[rows, site[move]] = -xf[rows, site[move]]
    else:
        xf[rows, site[move]] = tau[move]
    return xf.reshape(x.shape), float(h_rate.max()), h_rate > STIFF


def _warn_if_stiff(max_h_rate, clamped, n_steps, scheme):
    stiff = [k for k, f in enumerate(clamped) if f > 0]
    if not stiff:
        return
    worst = max(max_h_rate)
    warnings.warn(
        f"LEAPS sampler ({scheme}): h x exit rate exceeded 1 at {len(stiff)} of {len(clamped)} "
        f"steps (max {worst:.4f}, up to {100 * max(clamped):.1f} % of walkers), so the jump "
        "probability was clamped and log Z, ESS and their errors describe the discretised "
        f"process, not rho_1; try n_steps >= {suggested_steps(n_steps, worst)} (same grid). "
        "Rates depend on the states visited, so check the new run's meta['max_h_rate'], and "
        "compare log Z at n_steps and 2 x n_steps: a non-stiff step is still O(h)-biased",
        StiffStepWarning,
        stacklevel=3,
    )


def suggested_steps(n_steps: int, max_h_rate: float) -> int:
    """Steps for which h x rate would stay below about 1/2 at the worst step seen: the step
    count scaled by 2 x max h·rate (the factor 2 leaves room for the rates of states the new
    run visits; it is a suggestion, not a guarantee)."""
    return math.ceil(2 * n_steps * max_h_rate)


def sample(
    path,
    net,
    n_walkers: int,
    n_steps: int,
    *,
    grid="uniform",
    scheme: str = "euler",
    mcmc_sweeps: int = 0,
    resample_threshold: float | None = None,
    generator: torch.Generator | None = None,
    keep_trajectory: bool = False,
    x0: torch.Tensor | None = None,
    horizon: int | None = None,
) -> SampleResult:
    """Run LEAPS (Algorithm 1): CTMC walkers from rho_0 to rho_1 with Jarzynski log-weights.

    Parameters
    ----------
    path : IsingPath, PottsPath or GraphIsingPath
        The annealing path U_t.
    net : nn.Module or None
        Locally equivariant net ``net(x, t) -> G`` matching the path (q = 2: Ising). None
        means Q = 0 (AIS).
    n_walkers : int >= 1
        M walkers on this process (each torch.distributed rank runs its own M).
    n_steps : int >= 1
        N grid steps.
    grid : {"uniform", "exp"} or callable, default="uniform"
        See :func:`time_grid`.
    scheme : {"euler", "tau_leap"}, default="euler"
        "euler": at most one jump per walker and step (paper); "tau_leap": every site may move
        (official code). Both are O(h)-biased in the weights.
    mcmc_sweeps : int >= 0, default=0
        Metropolis sweeps targeting rho_t before each step (0 at inference in the paper).
    resample_threshold : float in (0, 1], optional
        Resample systematically when the ESS drops to or below it (delta of Algorithm 1).
    generator : torch.Generator, optional
        Source of randomness (CPU).
    keep_trajectory : bool, default=False
        Keep (t, x) at every left grid point (training replay buffer).
    x0 : Tensor [M, *S], optional
        Start states (default: M draws from rho_0 = uniform).
    horizon : int in [1, n_steps], optional
        Run only the first `horizon` steps of the grid (training curriculum); the estimates
        then refer to Z_{t_horizon} / Z_0.

    Returns
    -------
    SampleResult
        With the weights' diagnostics: ``pareto_k``, ``log_z_ci`` and the per-step
        stiffness in ``meta`` (read them before ``ess`` and ``log_z_se``).

    Warns
    -----
    StiffStepWarning
        When h x a walker's exit rate exceeded 1 at some step (the jump probability was
        clamped); the message gives the n_steps that avoids it.

    Raises
    ------
    ValueError
        n_walkers / n_steps < 1, a path not starting from the uniform distribution without
        `x0`, unknown scheme, threshold outside (0, 1], a net whose q or
        n_sites differs from the path's, a Potts path with q = 2 and a net (use IsingPath),
        bad x0.
    TypeError
        `path` not a path object, `net` not an nn.Module, `generator` not a torch.Generator.
    """
    if not isinstance(path, _Path):
        raise TypeError(
            f"`path` must be an IsingPath, PottsPath or GraphIsingPath, got {type(path).__name__}"
        )
    check_generator(generator)
    n_walkers = int(check_scalar(n_walkers, "n_walkers", kind=int, low=1))
    check_scalar(n_steps, "n_steps", kind=int, low=1)
    check_choice(scheme, "scheme", ("euler", "tau_leap"))
    check_scalar(mcmc_sweeps, "mcmc_sweeps", kind=int, low=0)
    if resample_threshold is not None:
        check_scalar(resample_threshold, "resample_threshold", low=0.0, high=1.0,
                     inclusive="right")  # fmt: skip
    if net is not None:
        check_net_fits(net, path)
        if not path.spin and path.q == 2:
            raise ValueError("a q = 2 net uses Ising spins: write a q = 2 Potts path as IsingPath")
    times = time_grid(n_steps, grid=grid)
    horizon = (
        n_steps
        if horizon is None
        else int(check_scalar(horizon, "horizon", kind=int, low=1, high=n_steps))
    )
    if x0 is None:
        check_uniform_start(path)
        x = path.sample_base(n_walkers, generator)
    else:
        x = path.check_state(x0, "x0")
        if x.shape[0] != n_walkers:
            raise ValueError(f"`x0` must hold {n_walkers} walkers, got {x.shape[0]}")
    log_w = torch.zeros(n_walkers, dtype=torch.float64)
    offset, n_resamples, energy_evals = 0.0, 0, 0
    max_h_rate, clamped = [0.0] * horizon, [0.0] * horizon
    trajectory: list | None = [] if keep_trajectory else None
    colors = int(path.coloring().max()) + 1 if mcmc_sweeps else 0
    param = next(net.parameters(), None) if net is not None else None
    net_dtype = param.dtype if param is not None else torch.float32
    with torch.inference_mode():
        for k in range(horizon):
            t, h = float(times[k]), float(times[k + 1] - times[k])
            if mcmc_sweeps:
                x = metropolis_sweep(path, x, t, mcmc_sweeps, generator)
                energy_evals += mcmc_sweeps * colors
            if trajectory is not None:
                trajectory.append((torch.full((n_walkers,), t), x.clone()))
            tt = torch.full((n_walkers,), t, dtype=torch.float64)
            g = -path.dU_dt(x, tt.to(x.dtype) if path.spin else tt).to(torch.float64)
            energy_evals += 1
            if net is not None:
                xin = x.to(net_dtype) if path.spin else x
                G = net(xin, tt.to(net_dtype)).to(torch.float64)
                delta = path.neighbor_delta(x, tt.to(x.dtype) if path.spin else tt)
                energy_evals += 1
                g = g - corrector(G, x, delta.to(torch.float64))
                x, max_h_rate[k], stiff = _jump(path, x, rates(G, x)[0], h, scheme, generator)
                clamped[k] = float(stiff.to(torch.float64).mean())
            log_w = log_w + h * g
            if resample_threshold is not None and ess(log_w) <= resample_threshold:
                offset += log_mean_exp(log_w)
                x = x[systematic_resample(log_w, generator)]
                log_w = torch.zeros_like(log_w)
                n_resamples += 1
    log_w = log_w + offset
    everyone = _gather(log_w)
    dist = torch.distributed
    world = dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1
    meta = {
        "scheme": scheme, "n_steps": int(n_steps), "horizon": horizon,
        "grid": grid if isinstance(grid, str) else "callable",
        "mcmc_sweeps": int(mcmc_sweeps), "resample_threshold": resample_threshold,
        "n_resamples": n_resamples, "energy_evals": energy_evals,
        "net_evals": horizon if net is not None else 0,
        "seed": generator.initial_seed() if generator is not None else None,
        "n_walkers": n_walkers, "world_size": world,
        "max_h_rate": max_h_rate, "clamped_fraction": clamped,
    }  # fmt: skip
    _warn_if_stiff(max_h_rate, clamped, n_steps, scheme)
    return SampleResult(
        x=x,
        log_w=log_w,
        ess=ess(everyone),
        log_z=log_mean_exp(everyone),
        log_z_se=_log_z_se(everyone),
        pareto_k=pareto_khat(everyone),
        log_z_ci=bootstrap_log_z(everyone, generator=generator),
        meta=meta,
        trajectory=trajectory,
    )


def ais(path, n_walkers: int, n_steps: int, **kwargs) -> SampleResult:
    """Annealed importance sampling: :func:`sample` with Q = 0 (same keywords, no net).

    With ``mcmc_sweeps > 0`` this is AIS with Metropolis transitions (Neal 2001); with 0 it is
    plain importance sampling from rho_0 along the path.
    """
    return sample(path, None, n_walkers, n_steps, **kwargs)
