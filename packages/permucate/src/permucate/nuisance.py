"""Nuisance models of the CATE risks: per-arm outcome regressions and the propensity score."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
from sklearn.base import BaseEstimator, clone, is_classifier
from sklearn.linear_model import LogisticRegressionCV, RidgeCV
from sklearn.utils.validation import check_is_fitted

from ._validation import check_design, check_treatment, integer_labels

__all__ = [
    "RiskNuisances",
    "default_outcome_model",
    "default_propensity_model",
    "dr_pseudo_outcome",
]

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
    """Per-arm outcome models ``μ̂_a`` and a clipped propensity model ``π̂_a = P(T = a | x)``.

    Fitted once per cross-fitting fold on the whole train part (official ``tot_fit_nuisance=True``)
    and only ever evaluated at the *original* covariates: conditional permutations perturb the CATE
    model's input, never the risk's nuisances. With two arms this is ``μ̂0, μ̂1, π̂``; with ``A``
    arms (a multi-valued discrete treatment) one outcome model per arm and a multiclass
    propensity model.

    Parameters
    ----------
    outcome_model : sklearn regressor, default=None
        Cloned once per arm. ``None`` means ``RidgeCV(alphas=logspace(-3, 3, 10))``.
    propensity_model : sklearn classifier with ``predict_proba``, default=None
        ``None`` means ``LogisticRegressionCV(Cs=logspace(-3, 3, 10))`` (multinomial for more
        than two arms).
    clip : tuple of float, default=(0.01, 0.99)
        Bounds applied to the treated unit's ``π̂`` with two arms (control: ``1 − π̂``), to each
        arm's ``π̂_a`` with more (official ``DRLearner(clip=(0.01, 0.99))``).

    Attributes
    ----------
    arms_ : ndarray of shape (A,), int64
        Treatment labels seen in :meth:`fit`, sorted; ``arms_[0]`` is the base arm.
    outcome_models_ : list of A fitted regressors, ``μ̂_a`` in the order of ``arms_``
    propensity_ : fitted classifier
    clipped_fraction_ : float
        Share of training units with a propensity at a clipping bound.

    Notes
    -----
    Source: Paillard et al. (2025) Sec. 3 and the official ``importance.cross_val_vim``:
    ``m̂ = Σ_a π̂_a μ̂_a`` (two arms: ``π̂ μ̂1 + (1 − π̂) μ̂0``) and the DR pseudo-outcome of
    :func:`dr_pseudo_outcome` (Kennedy 2023, Eq. 2; econml ``DRLearner`` for several arms).
    """

    def __init__(self, outcome_model=None, propensity_model=None, clip=(0.01, 0.99)):
        self.outcome_model = outcome_model
        self.propensity_model = propensity_model
        self.clip = clip

    def fit(self, X, T, Y):
        """Fit one ``μ̂_a`` on the units of each arm ``a`` and ``π̂`` on everyone.

        Parameters
        ----------
        X : ndarray of shape (n, d), float
        T : ndarray of shape (n,), integer codes of a discrete treatment (two or more arms)
        Y : ndarray of shape (n,), float

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Non-integer (continuous) or single-arm ``T``, mismatched lengths, NaN/inf, or
            invalid ``clip``.
        TypeError
            A classifier as ``outcome_model`` or a model without ``predict_proba`` as
            ``propensity_model``.
        """
        self._check_clip()
        X = check_design(X, "X")
        T, self.arms_ = check_treatment(T, n=len(X))
        Y = check_design(Y, "Y", ndim=1, n=len(X))
        outcome = check_regressor(self.outcome_model, "outcome_model")
        propensity = check_classifier(self.propensity_model, "propensity_model")
        outcome = default_outcome_model() if outcome is None else outcome
        propensity = default_propensity_model() if propensity is None else propensity
        self.outcome_models_ = [
            clone(outcome).fit(X[rows], Y[rows]) for rows in np.equal.outer(self.arms_, T)
        ]
        self.propensity_ = clone(propensity).fit(X, T)
        classes = np.asarray(self.propensity_.classes_)
        if not np.isin(self.arms_, classes).all():
            raise ValueError(
                f"`propensity_model` has classes_ {classes.tolist()}, not the arms "
                f"{self.arms_.tolist()} of `T`"
            )
        raw = self._raw_propensity(X)
        low, high = self.clip
        at_bound = (raw <= low) | (raw >= high)
        # Two arms: the treated propensity (the control one mirrors it); more: any arm's.
        unit_at_bound = at_bound[:, 1] if raw.shape[1] == 2 else at_bound.any(axis=1)
        self.clipped_fraction_ = float(np.mean(unit_at_bound))
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
        dict
            ``mu`` (n, A) float64, ``μ̂_a`` per arm; ``propensity`` (n, A) float64, clipped
            ``π̂_a`` per arm (two arms: ``[1 − π̂, π̂]`` with ``π̂`` clipped); ``m`` (n,) float64,
            ``Σ_a π̂_a μ̂_a``.

        Raises
        ------
        ValueError
            If a nuisance model returns the wrong shape, NaN or infinity.
        """
        check_is_fitted(self, "propensity_")
        X = check_design(X, "X")
        proba = self._raw_propensity(X)
        low, high = self.clip
        if proba.shape[1] == 2:
            treated = np.clip(proba[:, 1], low, high)
            propensity = np.column_stack([1 - treated, treated])
        else:
            propensity = np.clip(proba, low, high)
        mu = np.column_stack(
            [
                _checked(model.predict(X), "outcome_model", (len(X),))
                for model in self.outcome_models_
            ]
        )
        return {"mu": mu, "propensity": propensity, "m": (propensity * mu).sum(axis=1)}

    def pseudo_outcome(self, X, T, Y):
        """Doubly robust pseudo-outcome of each arm against the base arm ``arms_[0]``.

        Parameters
        ----------
        X : ndarray of shape (n, d), float
        T : ndarray of shape (n,), labels among ``arms_``
        Y : ndarray of shape (n,), float

        Returns
        -------
        ndarray of shape (n,) with two arms, (n, A − 1) with more; float64

        Raises
        ------
        ValueError
            ``T`` with a label not seen in :meth:`fit`, mismatched lengths, NaN/inf.

        Notes
        -----
        Source: Kennedy (2023) Eq. (2); official ``DRLearner.compute_pseudo_outcomes``; econml
        ``DRLearner`` (several arms). Formula in :func:`dr_pseudo_outcome`.
        """
        check_is_fitted(self, "propensity_")
        X = check_design(X, "X")
        codes = self.arm_index(T, n=len(X))
        Y = check_design(Y, "Y", ndim=1, n=len(X))
        predicted = self.predict(X)
        phi = dr_pseudo_outcome(predicted["mu"], predicted["propensity"], codes, Y)
        return phi[:, 0] if phi.shape[1] == 1 else phi

    def arm_index(self, T, *, n):
        """Position of each label of ``T`` (n,) in ``arms_``: int64 (n,).

        Raises ValueError for a non-integer label or one not seen in :meth:`fit`.
        """
        T = integer_labels(T, n=n)
        unseen = ~np.isin(T, self.arms_)
        if unseen.any():
            raise ValueError(
                f"`T` has labels {np.unique(T[unseen])[:5].tolist()} not seen in fit "
                f"(arms {self.arms_.tolist()})"
            )
        return np.searchsorted(self.arms_, T).astype(np.int64)

    def _raw_propensity(self, X):
        """Unclipped ``π̂_a(X)``, shape (n, A), columns in the order of ``arms_``."""
        classes = np.asarray(self.propensity_.classes_)
        proba = _checked(
            self.propensity_.predict_proba(X), "propensity_model", (len(X), classes.size)
        )
        return proba[:, np.searchsorted(classes, self.arms_)]

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


def dr_pseudo_outcome(mu, propensity, arm, Y):
    """DR pseudo-outcome of every arm against arm 0, from precomputed nuisances.

    ``φ_a = Ŷ_a − Ŷ_0`` with ``Ŷ_a = μ̂_a + 1{T = a} (Y − μ̂_a) / π̂_a``; with two arms this is
    ``(Y − μ̂_T)(T − π̂)/(π̂(1 − π̂)) + μ̂1 − μ̂0``.

    Parameters
    ----------
    mu, propensity : ndarray of shape (n, A), float
        Outcome model and (clipped) propensity of each arm.
    arm : ndarray of shape (n,), int
        Index in ``0..A−1`` of each unit's arm.
    Y : ndarray of shape (n,), float

    Returns
    -------
    ndarray of shape (n, A − 1), float64

    Notes
    -----
    Source: Kennedy (2023), "Towards optimal doubly robust estimation of heterogeneous causal
    effects", Eq. (2); several arms as in econml's ``DRLearner`` (``_ModelNuisance.predict``).
    """
    received = arm[:, None] == np.arange(mu.shape[1])
    corrected = mu + received * (Y[:, None] - mu) / propensity
    return corrected[:, 1:] - corrected[:, :1]
