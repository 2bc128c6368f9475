"""Importance stage only (learner and nuisances already fitted), one process, one fold.

Compares PermuCATE's batched conditional-permutation stage with
- the official pattern (``importance.joblib_compute_conditional_one``): per permutation, copy the
  frame, re-insert the column and call ``effect`` on ``n_test`` rows;
- hidimstat's ``CFI`` on the same fitted ``τ̂`` and the same ``ν̂_j`` model.
Spec targets: official/ours >= 10 (linear final model), >= 3 (HGB final model); CFI/ours >= 1;
Fig. 1 setting <= 1 s per seed (5 folds) excluding learner fits.

Run: ``python benchmarks/bench_importance.py [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import functools
import platform
import time

import numpy as np
import pandas as pd
from hidimstat import CFI
from permucate import ConditionalSampler, PermuCATE, RiskNuisances, datasets, dr_learner, dr_risk
from permucate.estimator import _Fold
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.linear_model import LogisticRegression, RidgeCV
from sklearn.metrics import mean_squared_error
from sklearn.model_selection import StratifiedKFold

N, P = 800, 50
ALPHAS = np.logspace(-3, 3, 10)


class FittedCate(RegressorMixin, BaseEstimator):
    """A fitted econml learner seen by hidimstat as a fitted sklearn regressor."""

    def __init__(self, model=None, n_features=6):
        self.model = model
        self.n_features = n_features

    def fit(self, X, y=None):
        return self

    def __sklearn_is_fitted__(self):
        return True

    @property
    def n_features_in_(self):
        return self.n_features

    def predict(self, X):
        return np.asarray(self.model.effect(np.asarray(X))).reshape(-1)


def fold_setup(final_model, seed=0):
    data = datasets.hines(N, random_state=seed)
    X = data.X.to_numpy()
    train, test = next(StratifiedKFold(5, shuffle=True, random_state=seed).split(X, data.T))
    learner = dr_learner(RidgeCV(alphas=ALPHAS), LogisticRegression(), final_model, random_state=0)
    learner.fit(data.Y[train], data.T[train], X=X[train])
    nuis = RiskNuisances(RidgeCV(alphas=ALPHAS), LogisticRegression())
    nuis.fit(X[train], data.T[train], data.Y[train])
    phi = nuis.pseudo_outcome(X[test], data.T[test], data.Y[test])
    return learner, X[train], X[test], phi, data.X.columns


def ours(learner, X_train, X_test, phi):
    """PermuCATE's own stage: fit the samplers, then one batched effect call per feature."""
    from permucate.learners import as_cate

    est = PermuCATE(n_permutations=P)
    groups = [np.array([j]) for j in range(X_train.shape[1])]
    sampler = ConditionalSampler(RidgeCV(alphas=ALPHAS), feature_types="continuous")
    model = as_cate(learner)
    base = dr_risk(model.effect(X_test), phi)[None]  # (contrasts, n_test), one contrast
    state = _Fold(None, X_test, {"pseudo": phi[:, None]}, model, None, base, vte=np.full(1, np.nan))
    state.extra["sampler"] = sampler.fit(X_train, groups)
    seeds = np.random.SeedSequence(0).spawn(len(groups))
    return [est._unit_importance(state, g, groups[g], seeds[g]).mean() for g in range(len(groups))]


def official_pattern(learner, X_train, X_test, phi, columns):
    """The official loop: per feature fit ν̂_j, per permutation copy the frame and call effect."""
    rng = np.random.RandomState(0)
    df_test = pd.DataFrame(X_test, columns=columns)
    ref = dr_risk(learner.effect(df_test.values), phi)
    out = []
    for j in range(X_train.shape[1]):
        nu = RidgeCV(alphas=ALPHAS).fit(np.delete(X_train, j, axis=1), X_train[:, j])
        rest = np.delete(X_test, j, axis=1)
        fitted = nu.predict(rest)
        resid = X_test[:, j] - fitted
        risks = []
        for _ in range(P):
            X_perm = np.insert(rest, j, fitted + rng.permutation(resid), axis=1)
            df_perm = df_test.copy()
            df_perm[list(columns)] = X_perm
            risks.append(dr_risk(learner.effect(df_perm.values), phi) - ref)
        out.append(0.5 * np.mean(risks))
    return out


def hidimstat_cfi(learner, X_train, X_test, phi):
    cfi = CFI(
        estimator=FittedCate(learner, X_train.shape[1]),
        loss=mean_squared_error,
        n_permutations=P,
        imputation_model_continuous=RidgeCV(alphas=ALPHAS),
        feature_types="continuous",
        random_state=0,
    )
    return list(np.asarray(cfi.fit(X_train).importance(X_test, phi)) / 2)


def best_of(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    finals = {
        "linear (RidgeCV)": RidgeCV(alphas=ALPHAS),
        "HGB": HistGradientBoostingRegressor(random_state=0),
    }
    print(f"# bench_importance — n={N}, d=6, P={P}, one fold (n_test={N // 5}); "
          f"{platform.machine()}, Python {platform.python_version()}")  # fmt: skip
    print("| final model | ours (s) | official pattern (s) | hidimstat CFI (s) "
          "| official/ours | CFI/ours | max |Δψ̂| vs official (Monte Carlo) |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, final in finals.items():
        learner, X_train, X_test, phi, columns = fold_setup(final)
        fold = (learner, X_train, X_test, phi)
        t_ours, v_ours = best_of(functools.partial(ours, *fold), args.repeats)
        t_off, v_off = best_of(functools.partial(official_pattern, *fold, columns), args.repeats)
        t_cfi, _ = best_of(functools.partial(hidimstat_cfi, *fold), args.repeats)
        gap = np.max(np.abs(np.array(v_ours) - np.array(v_off)))
        print(f"| {name} | {t_ours:.3f} | {t_off:.3f} | {t_cfi:.3f} | {t_off / t_ours:.1f}x "
              f"| {t_cfi / t_ours:.1f}x | {gap:.3f} |")  # fmt: skip
    # Fig. 1 setting: 5 folds of the importance stage for one seed (learner fits excluded).
    learner, X_train, X_test, phi, _ = fold_setup(RidgeCV(alphas=ALPHAS))
    t_fold, _ = best_of(lambda: ours(learner, X_train, X_test, phi), args.repeats)
    print(
        f"\nFig. 1 setting, importance stage per seed (5 folds): {5 * t_fold:.2f} s (target <= 1 s)"
    )


if __name__ == "__main__":
    main()
