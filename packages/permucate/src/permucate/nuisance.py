"""Nuisance models of the CATE risks: per-arm outcome regressions and the propensity score."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
from sklearn.base import BaseEstimator, clone, is_classifier
from sklearn.linear_model import LogisticRegressionCV, RidgeCV
from sklearn.utils.validation import check_is_fitted

from ._validation import check_binary_treatment, check_design

__all__ = ["RiskNuisances", "default_outcome_model", "default_propensity_model"]

#: Share of propensities at a clipping bound above which a warning is raised (EconML#404).
CLIP_WARN_FRACTION = 0.05


def check_regressor(model, name):
    """``model`` if it is ``None`` or an sklearn-style regressor, else a TypeError naming it."""
    if model is not None and (
        inspect.isclass(model)
        or not (hasattr(model, "fit") and hasattr(model, "predict"))
        or is_classifier(model)
    ):
        raise TypeError(f"`{name}` must be an sklearn regressor (fit + predict), got {model!r}")
    return model


def check_classifier(model, name):
    """``model`` if it is ``None`` or a classifier with ``predict_proba``, else a TypeError."""
    if model is not None and (
        inspect.isclass(model) or not (hasattr(model, "fit") and hasattr(model, "predict_proba"))
    ):
        raise TypeError(f"`{name}` must be an sklearn classifier with predict_proba, got {model!r}")
    return model


def default_outcome_model():
    """``RidgeCV(alphas=logspace(-3, 3, 10))`` — official ``scripts/config.yaml`` nuisances."""
    return RidgeCV(alphas=np.logspace(-3, 3, 10))


def default_propensity_model():
    """``LogisticRegressionCV(Cs=logspace(-3, 3, 10))`` — official ``get_learner('linear')``.

    L2 penalty and accuracy scoring as in the official code; on scikit-learn >= 1.9 these are
    passed explicitly (``l1_ratios=(0,)``, ``scoring=None``) to keep that behaviour without
    warnings, with the legacy fitted attributes econml's model selection reads (``C_`` array).
    """
    explicit = {}
    if "use_legacy_attributes" in inspect.signature(LogisticRegressionCV).parameters:
        explicit = {"l1_ratios": (0.0,), "scoring": None, "use_legacy_attributes": True}
    return LogisticRegressionCV(Cs=np.logspace(-3, 3, 10), **explicit)


class RiskNuisances(BaseEstimator):
    """Per-arm outcome models ``μ̂0, μ̂1`` and a clipped propensity model ``π̂``.

    Fitted once per cross-fitting fold on the whole train part (official ``tot_fit_nuisance=True``)
    and only ever evaluated at the *original* covariates: conditional permutations perturb the CATE
    model's input, never the risk's nuisances.

    Parameters
    ----------
    outcome_model : sklearn regressor, default=None
        Cloned once per arm. ``None`` means ``RidgeCV(alphas=logspace(-3, 3, 10))``.
    propensity_model : sklearn classifier with ``predict_proba``, default=None
        ``None`` means ``LogisticRegressionCV(Cs=logspace(-3, 3, 10))``.
    clip : tuple of float, default=(0.01, 0.99)
        Bounds applied to ``π̂`` (official ``DRLearner(clip=(0.01, 0.99))``).

    Attributes
    ----------
    mu0_, mu1_ : fitted regressors
    propensity_ : fitted classifier
    clipped_fraction_ : float
        Share of training units whose ``π̂`` hit a clipping bound.

    Notes
    -----
    Source: Paillard et al. (2025) Sec. 3 and the official ``importance.cross_val_vim``:
    ``m̂ = π̂ μ̂1 + (1 − π̂) μ̂0`` and ``φ = (Y − μ̂_T)(T − π̂) / (π̂(1 − π̂)) + μ̂1 − μ̂0``
    (Kennedy 2023, Eq. 2).
    """

    def __init__(self, outcome_model=None, propensity_model=None, clip=(0.01, 0.99)):
        self.outcome_model = outcome_model
        self.propensity_model = propensity_model
        self.clip = clip

    def fit(self, X, T, Y):
        """Fit ``μ̂0`` on the controls, ``μ̂1`` on the treated and ``π̂`` on everyone.

        Parameters
        ----------
        X : ndarray of shape (n, d), float
        T : ndarray of shape (n,), {0, 1}
        Y : ndarray of shape (n,), float

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Non-binary ``T``, mismatched lengths, NaN/inf, an empty arm, or invalid ``clip``.
        TypeError
            A classifier as ``outcome_model`` or a model without ``predict_proba`` as
            ``propensity_model``.
        """
        low, high = self._check_clip()
        X = check_design(X, "X")
        T = check_binary_treatment(T, n=len(X))
        Y = check_design(Y, "Y", ndim=1, n=len(X))
        outcome = check_regressor(self.outcome_model, "outcome_model")
        propensity = check_classifier(self.propensity_model, "propensity_model")
        outcome = default_outcome_model() if outcome is None else outcome
        propensity = default_propensity_model() if propensity is None else propensity
        self.mu0_ = clone(outcome).fit(X[T == 0], Y[T == 0])
        self.mu1_ = clone(outcome).fit(X[T == 1], Y[T == 1])
        self.propensity_ = clone(propensity).fit(X, T)
        self._treated_column = int(np.flatnonzero(self.propensity_.classes_ == 1)[0])
        proba = _checked(self.propensity_.predict_proba(X), "propensity_model", (len(X), 2))
        raw = proba[:, self._treated_column]
        self.clipped_fraction_ = float(np.mean((raw <= low) | (raw >= high)))
        if self.clipped_fraction_ > CLIP_WARN_FRACTION:
            warnings.warn(
                f"{self.clipped_fraction_:.0%} of the propensities sit at a clipping bound "
                f"{self.clip}: DR pseudo-outcomes will be heavy-tailed (limited overlap).",
                RuntimeWarning,
                stacklevel=2,
            )
        return self

    def predict(self, X):
        """Nuisance predictions at ``X``.

        Parameters
        ----------
        X : ndarray of shape (n, d), float

        Returns
        -------
        dict of ndarray of shape (n,), float64
            ``mu0``, ``mu1``, ``pi`` (clipped) and ``m = π̂ μ̂1 + (1 − π̂) μ̂0``.

        Raises
        ------
        ValueError
            If a nuisance model returns the wrong shape, NaN or infinity.
        """
        check_is_fitted(self, "propensity_")
        X = check_design(X, "X")
        low, high = self.clip
        proba = _checked(self.propensity_.predict_proba(X), "propensity_model", (len(X), 2))
        pi = np.clip(proba[:, self._treated_column], low, high)
        mu0 = _checked(self.mu0_.predict(X), "outcome_model", (len(X),))
        mu1 = _checked(self.mu1_.predict(X), "outcome_model", (len(X),))
        return {"mu0": mu0, "mu1": mu1, "pi": pi, "m": pi * mu1 + (1 - pi) * mu0}

    def pseudo_outcome(self, X, T, Y):
        """Doubly robust pseudo-outcomes ``φ = (Y − μ̂_T)(T − π̂)/(π̂(1 − π̂)) + μ̂1 − μ̂0``.

        Parameters
        ----------
        X : ndarray of shape (n, d), float
        T : ndarray of shape (n,), {0, 1}
        Y : ndarray of shape (n,), float

        Returns
        -------
        ndarray of shape (n,), float64

        Notes
        -----
        Source: Kennedy (2023) Eq. (2); official ``DRLearner.compute_pseudo_outcomes``.
        """
        X = check_design(X, "X")
        T = check_binary_treatment(T, n=len(X), min_per_arm=0)
        Y = check_design(Y, "Y", ndim=1, n=len(X))
        return dr_pseudo_outcome(self.predict(X), T, Y)

    def _check_clip(self):
        clip = self.clip
        if not isinstance(clip, tuple | list) or len(clip) != 2 or not 0 < clip[0] < clip[1] < 1:
            raise ValueError(
                f"`clip` must be a pair (low, high) with 0 < low < high < 1, got {clip!r}"
            )
        return clip


def _checked(predictions, name, shape):
    """Model output as float64 of ``shape`` (a trailing singleton axis is dropped), finite."""
    out = np.asarray(predictions, dtype=np.float64)
    if out.ndim == len(shape) + 1 and out.shape[-1] == 1:
        out = out[..., 0]
    if out.shape != shape:
        raise ValueError(f"`{name}` returned predictions of shape {out.shape}, expected {shape}")
    if not np.isfinite(out).all():
        raise ValueError(f"`{name}` returned NaN or infinite predictions")
    return out


def dr_pseudo_outcome(nuisances, T, Y):
    """DR pseudo-outcome from precomputed nuisances (dict of ``mu0``, ``mu1``, ``pi``)."""
    mu0, mu1, pi = nuisances["mu0"], nuisances["mu1"], nuisances["pi"]
    mu_t = np.where(T == 1, mu1, mu0)
    return (Y - mu_t) * (T - pi) / (pi * (1 - pi)) + mu1 - mu0
