"""PermuCATE and LOCO: cross-fitted variable importance for the CATE, with p-values.

Both estimators share the cross-fitting scheme of the official ``importance.cross_val_vim``
(StratifiedKFold on ``T``, shuffled): on each train part they fit the CATE learner ``τ̂`` and the
risk nuisances; on the test part they compare the per-sample risk of a perturbed prediction with
that of ``τ̂(X)``. Nuisances, pseudo-outcomes, ``Y`` and ``T`` always stay at the original ``X``.

- :class:`PermuCATE` perturbs the input of the *same* fitted ``τ̂`` with conditional
  permutations (no refit per feature): ``ψ̂_j^(k) = ½ · mean_{i ∈ test, p ≤ P}
  [ℓ_i(τ̂(X̃^(j,p))) − ℓ_i(τ̂(X))]``.
- :class:`LOCO` refits without the feature: ``ψ̂_j^(k) = mean_i [ℓ_i(τ̂_−j(X_−j)) − ℓ_i(τ̂(X))]``.

``n_repeats`` repeats the whole cross-fitting on ``R`` re-drawn splits; the ``R·K`` fold values
feed one corrected repeated k-fold t-test (Bouckaert & Frank 2004). A multi-valued discrete
treatment gives one importance per (arm against the base arm, feature), from per-arm effects.

The estimand (Hines et al. 2022) is ``ψ_j = E[(τ(X) − E[τ(X) | X_−j])²]``; the ``½`` makes the
conditional-permutation estimate unbiased for it (with an oracle ``τ̂`` and an independent
residual copy, ``E[(τ(X̃) − τ(X))²] = 2ψ_j``).
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, clone, is_regressor
from sklearn.model_selection import StratifiedKFold
from sklearn.multioutput import MultiOutputRegressor
from sklearn.utils.validation import check_is_fitted

from icml25_core import check_choice, check_scalar, spawn_seeds

from ._validation import check_design, check_treatment
from .inference import ADJUSTMENTS, adjust_pvalues, corrected_ttest
from .learners import CateModel, PerArmRegressor, as_cate, dr_learner
from .nuisance import RiskNuisances, dr_pseudo_outcome
from .risks import RISKS, dr_risk, r_risk, tau_risk
from .sampling import ConditionalSampler, MarginalSampler, resolve_feature_types

__all__ = ["LOCO", "PermuCATE"]

#: Largest perturbed design (elements) sent to ``effect`` in one call; bigger ones are chunked.
MAX_BATCH_ELEMENTS = 2**24


@dataclass
class _Fold:
    """What one cross-fitting fold hands to its (fold, feature) importance units.

    ``C`` is the number of contrasts (arms − 1); ``targets`` holds ``pseudo`` / ``tau`` of shape
    (n_test, C) and, for the R-risk (two arms), ``y``, ``t``, ``m``, ``pi`` of shape (n_test,).
    """

    test: np.ndarray
    X_test: np.ndarray
    targets: dict
    model: CateModel
    nuisances: RiskNuisances | None
    base_loss: np.ndarray  # (C, n_test)
    vte: np.ndarray  # (C,)
    extra: dict = field(default_factory=dict)


def _risk(risk, tau_hat, targets, contrast):
    """Per-sample risk of ``tau_hat`` (..., n) for contrast ``contrast`` (a column of targets)."""
    if risk == "dr":
        return dr_risk(tau_hat, targets["pseudo"][:, contrast])
    if risk == "r":
        return r_risk(tau_hat, targets["y"], targets["t"], targets["m"], targets["pi"])
    return tau_risk(tau_hat, targets["tau"][:, contrast])


def _columns(effect):
    """Effects as (n, C): a two-arm effect (n,) becomes one column."""
    return effect.reshape(len(effect), -1)


def _check_tau(tau, n, n_contrasts):
    """True CATE as (n, C): (n,) for two arms, one column per arm against the base otherwise."""
    if n_contrasts == 1:
        return check_design(tau, "tau", ndim=1, n=n)[:, None]
    tau = check_design(tau, "tau", ndim=2, n=n)
    if tau.shape[1] != n_contrasts:
        raise ValueError(
            f"`tau` must have shape (n, {n_contrasts}), one column per arm against the base arm; "
            f"got {tau.shape}"
        )
    return tau


def _check_aligned(X, named):
    """Refuse pandas inputs whose indexes differ (rows would be paired by position, silently
    mismatched after a sort, filter or merge): T / Y / tau against a DataFrame X, else against
    each other."""
    frames = {"X": X, **named}
    indexed = {k: v.index for k, v in frames.items() if isinstance(v, pd.Series | pd.DataFrame)}
    if len(indexed) < 2:
        return
    (ref_name, ref), *others = indexed.items()
    for name, index in others:
        if not index.equals(ref):
            raise ValueError(
                f"`{name}` has a different index from `{ref_name}`: align them first "
                f"(e.g. {name}.loc[{ref_name}.index]) or pass numpy arrays"
            )


def _warn_collinear(X, names, threshold=0.999):
    """Warn about (near-)duplicate columns: each one's conditional importance given the other is
    ~0, so the pair hides its joint effect unless grouped."""
    if X.shape[1] < 2 or X.shape[1] > 2000:
        return
    varying = X.std(axis=0) > 0
    if varying.sum() < 2:
        return
    idx = np.flatnonzero(varying)
    corr = np.corrcoef(X[:, idx], rowvar=False)
    a, b = np.nonzero(np.triu(np.abs(corr) > threshold, k=1))
    if a.size:
        pairs = ", ".join(
            f"{names[idx[i]]} ~ {names[idx[j]]}" for i, j in zip(a[:5], b[:5], strict=True)
        )
        warnings.warn(
            f"(near-)collinear columns ({pairs}): the importance of each given the other is "
            "close to 0; pass them as one group (`groups=`) to score them jointly",
            RuntimeWarning,
            stacklevel=3,
        )


def _as_matrix(X):
    """``X`` as float64 ndarray plus its column names (DataFrame columns, else ``x0, x1, ...``)."""
    if isinstance(X, pd.DataFrame):
        names = [str(c) for c in X.columns]
        if len(set(names)) != len(names):
            raise ValueError("`X` has duplicate column names")
        X = X.to_numpy()
    else:
        names = None
    X = check_design(X, "X")
    return X, names or [f"x{j}" for j in range(X.shape[1])]


class _CrossFitImportance(BaseEstimator):
    """Shared machinery: validation, folds, nuisances, inference and reporting."""

    _scale = 1.0

    def __init__(
        self,
        learner=None,
        *,
        risk="dr",
        cv=5,
        n_repeats=1,
        outcome_model=None,
        propensity_model=None,
        groups=None,
        features=None,
        alpha=0.05,
        n_jobs=1,
        random_state=None,
    ):
        self.learner = learner
        self.risk = risk
        self.cv = cv
        self.n_repeats = n_repeats
        self.outcome_model = outcome_model
        self.propensity_model = propensity_model
        self.groups = groups
        self.features = features
        self.alpha = alpha
        self.n_jobs = n_jobs
        self.random_state = random_state

    # ----------------------------------------------------------------------------------- fit
    def fit(self, X, T, Y, tau=None):
        """Cross-fit the learner and nuisances, then score every feature (or group).

        Parameters
        ----------
        X : ndarray or DataFrame of shape (n, d), float
            Covariates; DataFrame column names become feature names.
        T : array-like of shape (n,), integer codes
            Discrete treatment: {0, 1}, or ``A > 2`` arms (any integers; the lowest is the base
            arm of every contrast). Continuous treatments are refused.
        Y : array-like of shape (n,), float
            Outcome.
        tau : array-like of shape (n,) or (n, A − 1), float, default=None
            True CATE (of each arm against the base arm), required by ``risk="tau"``
            (simulations, semi-synthetic data).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Non-integer (continuous) or single-arm ``T``, mismatched lengths, NaN/inf, an arm
            with fewer than ``cv`` units, ``cv < 2``, ``n_repeats < 1``, unknown ``risk``,
            ``risk="r"`` with more than two arms, ``risk="tau"`` without ``tau`` or with ``tau``
            of the wrong shape, unknown or overlapping ``features`` / ``groups``, a
            ``PerArmRegressor`` built for another number of arms, or an out-of-range parameter.
        TypeError
            A ``learner`` with neither ``effect`` nor ``predict`` that is not callable.
        """
        self._check_params()
        _check_aligned(X, {"T": T, "Y": Y, "tau": tau})
        X, names = _as_matrix(X)
        n = X.shape[0]
        T, arms = check_treatment(T, n=n, min_per_arm=self.cv)
        n_contrasts = arms.size - 1
        if self.risk == "r" and n_contrasts > 1:
            raise ValueError(
                f'`risk`="r" (the R-loss) needs two arms, `T` has {arms.size}: use risk="dr" '
                'or "tau" for a multi-valued treatment'
            )
        Y = check_design(Y, "Y", ndim=1, n=n)
        if self.risk == "tau" and tau is None:
            raise ValueError(
                '`tau` is required when risk="tau" (the oracle risk needs the true CATE)'
            )
        if self.risk != "tau" and tau is not None:
            warnings.warn(
                f'`tau` is used by risk="tau" only; ignored with risk="{self.risk}"',
                UserWarning,
                stacklevel=2,
            )
        tau = None if tau is None else _check_tau(tau, n, n_contrasts)
        unit_names, units = self._resolve_units(names)
        self._check_units(X, names, unit_names, units)
        _warn_collinear(X, names)
        # Repeat r takes children [r·m, (r+1)·m) of one SeedSequence spawn: split, learner, then
        # one per (fold, unit). Repeat 0 is exactly the single-repeat layout.
        per_repeat = 2 + self.cv * len(units)
        seeds = spawn_seeds(self.random_state, self.n_repeats * per_repeat)
        user_learner = None if self.learner is None else as_cate(self.learner)
        folds, fold_jobs = [], []
        for r in range(self.n_repeats):
            split_child, learner_child = seeds[r * per_repeat : r * per_repeat + 2]
            split_seed, learner_seed = (
                int(s.generate_state(1)[0]) for s in (split_child, learner_child)
            )
            learner = (
                as_cate(dr_learner(random_state=learner_seed, n_arms=arms.size))
                if user_learner is None
                else user_learner
            )
            self._check_learner(learner, arms.size)
            splitter = StratifiedKFold(n_splits=self.cv, shuffle=True, random_state=split_seed)
            for train, test in splitter.split(X, T):
                folds.append((train, test))
                fold_jobs.append((learner, train, test, learner_child))
        parallel = Parallel(n_jobs=self.n_jobs)
        states = parallel(
            delayed(self._fit_fold)(learner.clone(), X, T, Y, tau, train, test, units, seed)
            for learner, train, test, seed in fold_jobs
        )
        n_units = len(units)
        jobs = [(f, g) for f in range(len(folds)) for g in range(n_units)]
        unit_seeds = [
            seeds[(f // self.cv) * per_repeat + 2 + (f % self.cv) * n_units + g] for f, g in jobs
        ]
        per_unit = parallel(
            delayed(self._unit_importance)(states[f], g, units[g], seed)
            for (f, g), seed in zip(jobs, unit_seeds, strict=True)
        )
        # Rows: contrast-major, row c·G + g; each sample is in one test fold per repeat.
        self.per_sample_ = np.zeros((n_contrasts * n_units, n))
        self.importances_folds_ = np.empty((n_contrasts * n_units, len(folds)))
        for (f, g), values in zip(jobs, per_unit, strict=True):
            rows = np.arange(n_contrasts) * n_units + g
            self.per_sample_[rows[:, None], states[f].test] += values / self.n_repeats
            self.importances_folds_[rows, f] = values.mean(axis=1)
        self.importances_ = self.importances_folds_.mean(axis=1)
        variance = np.mean([s.vte for s in states], axis=0)
        self.variance_tau_ = float(variance[0]) if n_contrasts == 1 else variance
        if (variance <= 0).any():
            shown = ", ".join(f"{v:.3g}" for v in variance)
            warnings.warn(
                f"the estimate of Var(τ(X)) is not positive ({shown}): the effect "
                "heterogeneity cannot be told from noise here, so importances_normalized_ is NaN"
                + ("" if n_contrasts == 1 else " for that contrast"),
                RuntimeWarning,
                stacklevel=2,
            )
        positive = np.where(variance > 0, variance, np.nan)
        self.importances_normalized_ = self.importances_ / np.repeat(positive, n_units)
        self.pvalues_, self.conf_int_, self.std_err_ = corrected_ttest(
            self.importances_folds_, self.alpha, n_folds=self.cv
        )
        self.feature_names_in_ = np.asarray(names, dtype=object)
        self.importance_names_ = np.asarray(unit_names, dtype=object)
        self.arms_ = arms
        self.contrasts_ = np.asarray([f"{a} vs {arms[0]}" for a in arms[1:]], dtype=object)
        self.groups_ = units
        self.folds_ = folds
        self.learners_ = [s.model.estimator for s in states]
        self.nuisances_ = [s.nuisances for s in states]
        self._store_fold_extras(states)
        return self

    def _fit_fold(self, learner, X, T, Y, tau, train, test, units, seed):
        X_te, T_te, Y_te = X[test], T[test], Y[test]
        extra: dict = {}
        model = self._fit_model(learner, X[train], T[train], Y[train], units, seed, extra)
        tau_hat = _columns(model.effect(X_te))
        nuisances = None
        if self.risk != "tau":
            nuisances = self._nuisances().fit(X[train], T[train], Y[train])
            predicted = nuisances.predict(X_te)
            arm = nuisances.arm_index(T_te, n=len(test))
            pseudo = dr_pseudo_outcome(predicted["mu"], predicted["propensity"], arm, Y_te)
            targets = {
                "pseudo": pseudo,
                "y": Y_te,
                "t": arm,
                "m": predicted["m"],
                "pi": predicted["propensity"][:, -1],
            }
            # One-step (influence-function) estimate of Var(τ(X)) on the test part, per contrast
            # (Levy et al. 2021; Hines et al. 2022, Sec. 4): mean(2τ̂φ − τ̂²) − mean(φ)².
            vte = np.mean(2 * tau_hat * pseudo - tau_hat**2, axis=0) - np.mean(pseudo, axis=0) ** 2
        else:
            targets = {"tau": tau[test]}
            vte = np.var(tau[test], axis=0)
        base_loss = np.stack(
            [_risk(self.risk, tau_hat[:, c], targets, c) for c in range(tau_hat.shape[1])]
        )
        return _Fold(test, X_te, targets, model, nuisances, base_loss, vte, extra)

    def _unit_importance(self, state, g, group, seed):
        """Per-sample importance of unit ``g`` on one fold: (C, n_test)."""
        tau_perturbed = self._perturbed_effects(state, g, group, np.random.default_rng(seed))
        return np.stack(
            [
                self._scale
                * (_risk(self.risk, tau_perturbed[..., c], state.targets, c) - loss).mean(axis=0)
                for c, loss in enumerate(state.base_loss)
            ]
        )

    def _nuisances(self):
        return RiskNuisances(self.outcome_model, self.propensity_model)  # clones in fit

    # ---------------------------------------------------------------------------- checks
    def _check_params(self):
        check_choice(self.risk, "risk", RISKS)
        check_scalar(self.cv, "cv", kind=int, low=2)
        check_scalar(self.n_repeats, "n_repeats", kind=int, low=1)
        check_scalar(self.alpha, "alpha", kind=float, low=0, high=1, inclusive="neither")
        if not (self.n_jobs is None or (isinstance(self.n_jobs, int) and self.n_jobs != 0)):
            raise ValueError(f"`n_jobs` must be None or a non-zero integer, got {self.n_jobs!r}")

    def _check_learner(self, learner, n_arms):
        """A ``PerArmRegressor`` inside an econml learner must expect ``T``'s number of arms."""
        regression = getattr(learner.estimator, "model_regression", None)
        if isinstance(regression, PerArmRegressor) and regression.n_arms != n_arms:
            raise ValueError(
                f"`learner` routes outcomes through PerArmRegressor(n_arms={regression.n_arms}) "
                f"but `T` has {n_arms} arms: build it with dr_learner(..., n_arms={n_arms})"
            )

    def _check_units(self, X, names, unit_names, units):
        """Hook for estimator-specific checks of the features / groups, before any fit."""

    def _store_fold_extras(self, states):
        """Hook to keep estimator-specific fitted objects of each fold."""

    def _resolve_units(self, names):
        index = {name: j for j, name in enumerate(names)}

        def position(col, arg):
            if isinstance(col, int | np.integer) and not isinstance(col, bool):
                if 0 <= col < len(names):
                    return int(col)
            elif col in index:
                return index[col]
            raise ValueError(f"`{arg}` names an unknown feature {col!r}; known: {names}")

        if self.groups is not None and self.features is not None:
            raise ValueError("pass either `features` or `groups`, not both")
        if self.groups is not None:
            if isinstance(self.groups, str) or not hasattr(self.groups, "__iter__"):
                raise TypeError(
                    "`groups` must be a dict {name: [columns]} or a list of lists of columns, "
                    f"got {self.groups!r}"
                )
            items = (
                self.groups.items()
                if isinstance(self.groups, dict)
                else ((None, g) for g in self.groups)
            )
            unit_names, units = [], []
            if not self.groups:
                raise ValueError("`groups` is empty")
            for key, members in items:
                members = [members] if isinstance(members, str | int) else list(members)
                if not members:
                    raise ValueError("`groups` contains an empty group")
                idx = np.array([position(c, "groups") for c in members], dtype=np.intp)
                units.append(idx)
                unit_names.append(str(key) if key is not None else "+".join(names[j] for j in idx))
            flat = np.concatenate(units)
            if np.unique(flat).size != flat.size:
                raise ValueError("`groups` overlap: a feature belongs to more than one group")
            return unit_names, units
        if self.features is not None:
            cols = [self.features] if isinstance(self.features, str | int) else list(self.features)
            if not cols:
                raise ValueError("`features` is empty")
            chosen = [position(c, "features") for c in cols]
            if len(set(chosen)) != len(chosen):
                raise ValueError("`features` lists a feature twice")
            return [names[j] for j in chosen], [np.array([j]) for j in chosen]
        return list(names), [np.array([j]) for j in range(len(names))]

    # ------------------------------------------------------------------------- reporting
    def summary(self, adjust=None):
        """One row per feature or group (per arm against the base arm, with several arms).

        Parameters
        ----------
        adjust : {None, "holm", "bh"}, default=None
            Multiplicity adjustment of the p-values over all rows (statsmodels
            ``multipletests``): ``"holm"`` controls the family-wise error rate (Holm 1979),
            ``"bh"`` the false discovery rate (Benjamini & Hochberg 1995). ``None``: unadjusted.

        Returns
        -------
        pandas.DataFrame
            Index: feature / group names (with several arms, a MultiIndex ``(contrast,
            feature)``, contrasts like ``"2 vs 0"``). Columns: ``importance``,
            ``importance_normalized`` (divided by the estimated ``Var(τ(X))``), ``std_err``,
            ``ci_low``, ``ci_high`` (two-sided ``1 − alpha`` interval, not adjusted), ``pvalue``
            (one-sided test of ``ψ_j > 0``), ``pvalue_adjusted`` (only with ``adjust``) and
            ``significant`` (the p-value used, adjusted or not, ``< alpha``). A one-sided
            p-value in ``[alpha/2, alpha)`` is significant while the two-sided interval still
            covers 0.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before :meth:`fit`.
        ValueError
            An unknown ``adjust``.
        """
        check_choice(adjust, "adjust", (None, *ADJUSTMENTS))
        check_is_fitted(self, "importances_")
        columns = {
            "importance": self.importances_,
            "importance_normalized": self.importances_normalized_,
            "std_err": self.std_err_,
            "ci_low": self.conf_int_[:, 0],
            "ci_high": self.conf_int_[:, 1],
            "pvalue": self.pvalues_,
        }
        significant = self.pvalues_ < self.alpha
        if adjust is not None:
            columns["pvalue_adjusted"], significant = adjust_pvalues(
                self.pvalues_, adjust, self.alpha
            )
        columns["significant"] = significant
        if len(self.contrasts_) == 1:
            index = pd.Index(self.importance_names_, name="feature")
        else:
            index = pd.MultiIndex.from_product(
                [self.contrasts_, self.importance_names_], names=["contrast", "feature"]
            )
        return pd.DataFrame(columns, index=index)

    def plot(self, ax=None):
        """Horizontal bars of the importances with their ``1 − alpha`` intervals.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Drawn into a new figure when ``None``.

        Returns
        -------
        matplotlib Axes

        Raises
        ------
        ImportError
            Without matplotlib (``pip install permucate[plot]``).
        """
        from .plotting import plot_importances

        table = self.summary()
        return plot_importances(table, ax=ax, title=self._plot_title(), alpha=self.alpha)

    def _plot_title(self):
        return f"{type(self).__name__} ({self.risk} risk)"


class PermuCATE(_CrossFitImportance):
    r"""Conditional permutation importance of each covariate for the CATE, with p-values.

    Estimand (Hines et al. 2022) and its cross-fitted estimate on fold k, with $\tilde X^{(j,p)}$
    the p-th conditional permutation of covariate j and $\ell_i$ the per-sample risk:

    $$
    \psi_j = \mathbb{E}\!\left[ \big(\tau(X) - \mathbb{E}[\tau(X) \mid X_{-j}]\big)^2 \right]
    $$

    $$
    \hat\psi_j^{(k)} = \frac{1}{2} \operatorname*{mean}_{i \in \text{test},\, p \le P}
        \left[ \ell_i\big(\hat\tau(\tilde X^{(j,p)})\big) - \ell_i\big(\hat\tau(X)\big) \right]
    $$

    Parameters
    ----------
    learner : CATE learner or callable, default=None
        econml / causalml estimator, an object with ``fit(X, T, Y)`` and ``effect(X)``, or a
        fixed callable ``τ̂(X)`` (see :func:`~permucate.as_cate`); cloned per fold. ``None``:
        :func:`~permucate.dr_learner` (RidgeCV / LogisticRegressionCV nuisances, RidgeCV final,
        inner cv=5, ``n_arms`` from ``T``) — the official ``config.yaml`` setting.
    method : {"cpi", "pfi"}, default="cpi"
        ``"cpi"``: conditional permutation (the paper). ``"pfi"``: marginal permutation of each
        covariate (:class:`~permucate.MarginalSampler`), scored from the same fitted learner and
        folds (same ``random_state``) to show what conditioning buys: PFI scores a null
        covariate correlated with a relevant one above 0.
    risk : {"dr", "r", "tau"}, default="dr"
        Per-sample CATE risk (:mod:`permucate.risks`); ``"dr"`` is the paper's simulation risk.
        ``"r"`` needs a binary treatment.
    n_permutations : int >= 1, default=50
        Permutations ``P`` per feature and fold (official ``n_perm=50``).
    cv : int >= 2, default=5
        Outer cross-fitting folds ``K`` (official ``n_splits_simul=5``).
    n_repeats : int >= 1, default=1
        Repetitions ``R`` of the cross-fitting on re-drawn splits (``SeedSequence.spawn``
        children of ``random_state``); the ``R·K`` fold values feed one corrected repeated k-fold
        t-test (Bouckaert & Frank 2004). ``1``: the paper's single split.
    outcome_model, propensity_model : sklearn estimators, default=None
        Risk nuisances (:class:`~permucate.RiskNuisances`), fitted on each whole train part.
    sampler : sampler, default=None
        Object with ``fit(X, groups)`` and ``sample(X, group, n_samples, rng) -> (P, n, |g|)``;
        ``None``: :class:`~permucate.ConditionalSampler` with ``feature_types``. ``method="cpi"``
        only.
    feature_types : "auto", "continuous", "categorical", list or dict, default="auto"
        Column types for the default sampler: one name for all columns, a list with one entry
        per column, or a dict ``{column: type}`` (other columns inferred). ``"auto"``: at most
        10 distinct values -> categorical (drawn from ``predict_proba``), else continuous.
        Not used with a custom ``sampler`` or ``method="pfi"``.
    groups : dict of name -> columns, or list of lists, default=None
        Feature groups permuted jointly; one importance per group.
    features : list of names or indices, default=None
        Subset of features to score (all when ``None``).
    alpha : float in (0, 1), default=0.05
        Level of the confidence intervals and of ``significant`` in :meth:`summary`.
    n_jobs : int or None, default=1
        joblib workers over folds and (fold, feature) units; results do not depend on it. Any
        joblib backend works (``parallel_config(backend="dask")`` on a Dask cluster).
    random_state : int, SeedSequence or None, default=None

    Attributes
    ----------
    importances_ : ndarray of shape (C·G,)
        ``ψ̂_j``, the mean of the ``R·K`` fold values. G = number of features or groups, C =
        number of contrasts (arms − 1; 1 for a binary treatment); row ``c·G + g`` is unit ``g``
        for arm ``arms_[c + 1]`` against ``arms_[0]``.
    importances_normalized_ : ndarray of shape (C·G,)
        ``ψ̂_j / Var̂(τ(X))`` (Hines et al. 2022's ``Θ_s``); whether the paper normalises is
        unverified, so both are given. NaN, with a ``RuntimeWarning``, when the estimate of
        ``Var(τ(X))`` is not positive (heterogeneity lost in the noise). Under ``risk="r"`` the
        numerator is the ``π(1−π)``-weighted importance: use it for ranking only.
    importances_folds_ : ndarray of shape (C·G, R·K)
        Column ``r·K + k`` is fold ``k`` of repetition ``r``.
    per_sample_ : ndarray of shape (C·G, n)
        Per-sample contributions on each sample's test fold, averaged over the repetitions.
    pvalues_ : ndarray of shape (C·G,)
        One-sided corrected (repeated) k-fold t-test of ``ψ_j > 0``
        (:func:`permucate.inference.corrected_ttest`); not adjusted for multiplicity
        (``summary(adjust=...)``).
    conf_int_ : ndarray of shape (C·G, 2)
    std_err_ : ndarray of shape (C·G,)
    variance_tau_ : float, or ndarray of shape (C,) with more than two arms
        Estimated ``Var(τ(X))`` (one-step DR estimate; the true one for ``risk="tau"``).
    arms_ : ndarray of shape (C + 1,), int64
        Treatment labels, sorted; ``arms_[0]`` is the base arm.
    contrasts_ : ndarray of str, shape (C,)
        ``"<arm> vs <base>"``.
    feature_types_ : list of str or None
        Column types the default sampler used (``None`` with a custom ``sampler`` or PFI).
    feature_names_in_ : ndarray of str, shape (d,)
    importance_names_ : ndarray of str, shape (G,)
    learners_, nuisances_, samplers_ : lists of the R·K fitted learners, risk nuisances, samplers
    folds_ : list of R·K (train, test) index pairs

    Notes
    -----
    Source: Paillard et al. (2025), "Measuring Variable Importance in Heterogeneous Treatment
    Effects with Confidence", Sec. 3 (Algorithm 1) and the official ``importance.cross_val_vim``
    with ``method="permucate"``; the ``½`` is applied in the official experiment script
    (``vi_arr /= 2``) and here inside the library. Conditional sampling: Chamma et al. (2023).
    Repetitions: Bouckaert & Frank (2004). Several arms: one DR pseudo-outcome per arm against
    the base (Kennedy 2023; econml ``DRLearner``) and ``ψ_j`` of each arm's CATE.

    Examples
    --------
    >>> from permucate import PermuCATE, datasets
    >>> data = datasets.hines(n=400, random_state=0)
    >>> est = PermuCATE(n_permutations=10, random_state=0).fit(data.X, data.T, data.Y)
    >>> est.summary().shape
    (6, 7)
    """

    _scale = 0.5

    def __init__(
        self,
        learner=None,
        *,
        method="cpi",
        risk="dr",
        n_permutations=50,
        cv=5,
        n_repeats=1,
        outcome_model=None,
        propensity_model=None,
        sampler=None,
        feature_types="auto",
        groups=None,
        features=None,
        alpha=0.05,
        n_jobs=1,
        random_state=None,
    ):
        super().__init__(
            learner,
            risk=risk,
            cv=cv,
            n_repeats=n_repeats,
            outcome_model=outcome_model,
            propensity_model=propensity_model,
            groups=groups,
            features=features,
            alpha=alpha,
            n_jobs=n_jobs,
            random_state=random_state,
        )
        self.method = method
        self.n_permutations = n_permutations
        self.sampler = sampler
        self.feature_types = feature_types

    def _check_params(self):
        super()._check_params()
        check_choice(self.method, "method", ("cpi", "pfi"))
        check_scalar(self.n_permutations, "n_permutations", kind=int, low=1)
        if self.sampler is not None and self.method == "pfi":
            raise ValueError(
                '`sampler` is used by method="cpi" only: method="pfi" permutes each covariate '
                "marginally"
            )
        if self.sampler is not None and not (
            hasattr(self.sampler, "fit") and hasattr(self.sampler, "sample")
        ):
            raise TypeError(
                "`sampler` must have fit(X, groups) and sample(X, group, n_samples, rng)"
            )

    def _fit_model(self, learner, X, T, Y, units, seed, extra):
        sampler: MarginalSampler | ConditionalSampler
        if self.method == "pfi":
            sampler = MarginalSampler()
        elif self.sampler is None:
            sampler = ConditionalSampler(feature_types=self.feature_types_)
        else:
            sampler = copy.deepcopy(self.sampler)
        extra["sampler"] = sampler.fit(X, units)
        return learner.fit(X, T, Y)

    def _check_units(self, X, names, unit_names, units):
        if self.sampler is not None or self.method == "pfi":
            if not (isinstance(self.feature_types, str) and self.feature_types == "auto"):
                instead = (
                    "set the types on your `sampler` instead"
                    if self.sampler is not None
                    else 'method="pfi" does not use them'
                )
                raise ValueError(f"`feature_types` configures the default sampler only; {instead}")
            self.feature_types_ = None
            return
        types = self.feature_types
        if isinstance(types, dict):  # {column name: type}; the other columns are inferred
            unknown = sorted(set(types) - set(names))
            if unknown:
                raise ValueError(f"`feature_types` names unknown columns {unknown}")
            inferred = resolve_feature_types("auto", X)
            types = [types.get(name, auto) for name, auto in zip(names, inferred, strict=True)]
        self.feature_types_ = resolve_feature_types(types, X)
        types = self.feature_types_
        # The default sampler draws a group by residual permutation or from predict_proba,
        # never both: name the offending columns before any fold is fitted.
        for unit_name, group in zip(unit_names, units, strict=True):
            if len({types[j] for j in group}) > 1:
                columns = ", ".join(f"{names[j]} ({types[j]})" for j in group)
                raise ValueError(
                    f"`groups`: group {unit_name!r} mixes continuous and categorical columns "
                    f"({columns}); split it, or declare its columns with one type in "
                    "`feature_types`"
                )

    def _store_fold_extras(self, states):
        self.samplers_ = [s.extra["sampler"] for s in states]

    def _perturbed_effects(self, state, g, group, rng):
        """``τ̂`` at ``P`` perturbed copies of the test part: (P, n_test, C)."""
        X_te = state.X_test
        n, d = X_te.shape
        draws = np.asarray(state.extra["sampler"].sample(X_te, g, self.n_permutations, rng))
        if draws.shape != (self.n_permutations, n, group.size):
            raise ValueError(
                f"`sampler.sample` returned shape {draws.shape}, expected "
                f"(n_permutations, n_test, group size) = {(self.n_permutations, n, group.size)}"
            )
        if not np.isfinite(draws).all():
            raise ValueError("`sampler.sample` returned NaN or infinite values")
        per_call = max(1, MAX_BATCH_ELEMENTS // (n * d))
        effects = []
        for start in range(0, self.n_permutations, per_call):
            chunk = draws[start : start + per_call]
            X_perm = np.repeat(X_te[None], len(chunk), axis=0)
            X_perm[:, :, group] = chunk
            effect = _columns(state.model.effect(X_perm.reshape(-1, d)))
            effects.append(effect.reshape(len(chunk), n, -1))
        return np.concatenate(effects)

    def _plot_title(self):
        name = "PermuCATE" if self.method == "cpi" else "PFI (marginal permutation)"
        return f"{name} ({self.risk} risk)"


class LOCO(_CrossFitImportance):
    """Leave-one-covariate-out importance of each covariate for the CATE (the paper's baseline).

    Parameters
    ----------
    learner : CATE learner, default=None
        As in :class:`PermuCATE`; ``None`` is :func:`~permucate.dr_learner`.
    mode : {"full", "final"}, default="full"
        ``"full"`` refits the whole learner on ``X_−j`` in each fold (the paper, CateNet /
        CausalForest). ``"final"`` (Hines et al. 2022) regresses the train part's cross-fitted DR
        pseudo-outcomes on ``X`` (reference) and on ``X_−j`` (reduced) with clones of the final
        model; the official code uses in-sample pseudo-outcomes there, which biases null
        features negative.
    final_model : sklearn regressor, default=None
        Final model of ``mode="final"``; ``None`` takes the learner's ``model_final``.
        With several arms, one clone per arm (``MultiOutputRegressor``).
    risk, cv, n_repeats, outcome_model, propensity_model, groups, features, alpha, n_jobs, \
random_state
        As in :class:`PermuCATE`.

    Attributes
    ----------
    Same as :class:`PermuCATE` (without ``samplers_``); no ``½`` factor is applied.

    Notes
    -----
    Source: Paillard et al. (2025) Sec. 2 (LOCO baseline); official
    ``importance.joblib_compute_loco_one``; Hines et al. (2022) for ``mode="final"``. LOCO carries
    the noise of a second fit; PermuCATE reuses ``τ̂`` — hence its lower variance.
    """

    def __init__(
        self,
        learner=None,
        *,
        mode="full",
        final_model=None,
        risk="dr",
        cv=5,
        n_repeats=1,
        outcome_model=None,
        propensity_model=None,
        groups=None,
        features=None,
        alpha=0.05,
        n_jobs=1,
        random_state=None,
    ):
        super().__init__(
            learner,
            risk=risk,
            cv=cv,
            n_repeats=n_repeats,
            outcome_model=outcome_model,
            propensity_model=propensity_model,
            groups=groups,
            features=features,
            alpha=alpha,
            n_jobs=n_jobs,
            random_state=random_state,
        )
        self.mode = mode
        self.final_model = final_model

    def _check_params(self):
        super()._check_params()
        check_choice(self.mode, "mode", ("full", "final"))
        if self.mode == "full" and self.final_model is not None:
            raise ValueError('`final_model` is used by mode="final" only')

    def _plot_title(self):
        return f"LOCO, mode={self.mode} ({self.risk} risk)"

    def _check_learner(self, learner, n_arms):
        super()._check_learner(learner, n_arms)
        if self.mode == "full" and learner.kind == "fixed":
            raise ValueError(
                'LOCO(mode="full") refits the learner without each feature: `learner` must be '
                "a fittable estimator, not a fixed callable"
            )
        if self.mode == "final":
            final = self.final_model if self.final_model is not None else learner.final_model
            if final is None:
                raise ValueError(
                    'LOCO(mode="final") needs `final_model` or a learner with a `model_final`'
                )
            if not is_regressor(final):
                raise ValueError(
                    'LOCO(mode="final") refits the final model on pseudo-outcomes: it must be '
                    f"an sklearn regressor, got {type(final).__name__}; pass "
                    'final_model=RidgeCV() or use mode="full"'
                )

    def _resolve_units(self, names):
        unit_names, units = super()._resolve_units(names)
        if any(g.size == len(names) for g in units):
            raise ValueError("LOCO needs at least one feature left after removing a group")
        return unit_names, units

    def _fit_model(self, learner, X, T, Y, units, seed, extra):
        if self.mode == "full":
            extra["train"] = (X, T, Y)
            extra["template"] = learner.clone()
            return learner.fit(X, T, Y)
        final = self.final_model if self.final_model is not None else learner.final_model
        phi = self._cross_fitted_pseudo_outcomes(X, T, Y, seed)
        # Several arms: one final model per arm's pseudo-outcome (as econml's DRLearner).
        template = final if phi.ndim == 1 else MultiOutputRegressor(final)
        extra["train"] = (X, phi)
        extra["template"] = template
        return CateModel(clone(template).fit(X, phi), "regressor")

    def _cross_fitted_pseudo_outcomes(self, X, T, Y, seed):
        """DR pseudo-outcomes on the train part, each from nuisances fitted without it:
        (n,) with two arms, (n, A − 1) with more."""
        n_arms = np.unique(T).size
        phi = np.empty((len(Y),) if n_arms == 2 else (len(Y), n_arms - 1))
        inner = StratifiedKFold(
            n_splits=self.cv, shuffle=True, random_state=int(seed.generate_state(1)[0])
        )
        for train, test in inner.split(X, T):
            nuisances = self._nuisances().fit(X[train], T[train], Y[train])
            phi[test] = nuisances.pseudo_outcome(X[test], T[test], Y[test])
        return phi

    def _perturbed_effects(self, state, g, group, rng):
        keep = np.setdiff1d(np.arange(state.X_test.shape[1]), group)
        if self.mode == "full":
            X, T, Y = state.extra["train"]
            reduced = state.extra["template"].clone().fit(X[:, keep], T, Y)
        else:
            X, phi = state.extra["train"]
            reduced = CateModel(clone(state.extra["template"]).fit(X[:, keep], phi), "regressor")
        return _columns(reduced.effect(state.X_test[:, keep]))[None]
