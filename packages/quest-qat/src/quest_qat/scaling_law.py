"""The QuEST scaling law with precision efficiency (QuEST §4.1; official ``notebooks/plots.ipynb``).

``L(N, D, P) = A / (N·eff(P))**α + B / D**β + E`` with ``eff(16) = 1``: a model of N parameters
at precision P trains like a full-precision model of ``N·eff(P)`` parameters. Fitted by least
squares on natural-log residuals ``log L - log L̂`` from a grid of starts (the notebook scales
the residuals by 1e-3 under a Huber loss of scale 1, which is plain least squares at these
residuals; it also keeps the last start instead of the best, which we do not).
"""

import json
import numbers
from itertools import product

import numpy as np
from scipy.optimize import least_squares

from icml25_core import data_path

#: The official fit (notebook ``best_result.x``): log A, α, log B, β, log E and the efficiencies.
_PAPER_X = (2.09605662, 0.0627265220, 4.45912547, 0.241288351, -6.55478434)
_PAPER_EFF = {
    "1": 0.0205046859, "2": 0.151870911, "3": 0.433126203, "4": 0.691831718, "8": 1.01619263,
    "fp4": 0.629639028, "2.5": 0.381222089,
    "1NOH": 0.0155770373, "2NOH": 0.0784119072, "3NOH": 0.322107861, "4NOH": 0.603270679,
    "8NOH": 0.937628722,
    "1WO": 0.138419575, "2WO": 0.413717453, "3WO": 0.653058816, "4WO": 0.840434222,
}  # fmt: skip

#: Bits per parameter of each label, for ``efficiency_per_bit`` (eff·16/P).
_LABEL_BITS = {"fp4": 4.0, "2.5": 2.5}


def label_of(precision) -> str:
    """Normalise a precision: an int (or 2.5) of bits, or a label such as "fp4", "4NOH", "2WO"."""
    if isinstance(precision, bool):
        raise ValueError(f"`P` must be bits or a precision label, got {precision!r}")
    if isinstance(precision, numbers.Real):
        value = float(precision)
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(precision, str) and precision:
        return precision
    raise ValueError(f"`P` must be bits or a precision label, got {precision!r}")


def _label_bits(label: str) -> float:
    if label in _LABEL_BITS:
        return _LABEL_BITS[label]
    return float(label.removesuffix("NOH").removesuffix("WO"))


def load_paper_runs() -> list[dict]:
    """The 104 official runs behind the paper's fit (bundled ``runs_for_scaling.json``, MIT).

    Returns
    -------
    list of dict
        ``{"N": non-embedding parameters, "D": tokens, "P": label, "L": C4 val loss (nats)}``,
        labelled as in the notebook: Hadamard W=A runs by bits, 4:8 as "2.5", FP4 as "fp4",
        no-Hadamard as "<b>NOH", weight-only Hadamard as "<b>WO", bf16 as "16".
    """
    runs = json.loads(data_path("quest_qat", "data", "runs_for_scaling.json").read_text())
    out = []
    for run in runs:
        w, a = run["w_quant"], run["a_quant"]
        if "FourEight" in w:
            label = "2.5"
        elif "FP4" in w:
            label = "fp4"
        elif w == a == "NoQuantizer":
            label = "16"
        elif "Hadamard" in w and a == "NoQuantizer":
            label = f"{run['w_bits']}WO"
        elif w == a and "Hadamard" not in w:
            label = f"{run['w_bits']}NOH"
        else:
            label = str(run["w_bits"])
        out.append({"N": run["non_embedding_parameters"], "D": run["tokens"], "P": label,
                    "L": run["loss"]})  # fmt: skip
    return out


def _starts(starts) -> np.ndarray:
    if isinstance(starts, str):
        if starts == "paper":  # the notebook's 1125-point grid
            grid = product([5, 10, 15, 20, 25], [0, 0.5, 1], [5, 10, 15, 20, 25], [0, 0.5, 1],
                           [-1, -0.5, 0, 0.5, 1])  # fmt: skip
            return np.array(list(grid), dtype=float)
        if starts == "quick":  # the paper grid's corner that reaches the optimum, 4 starts
            return np.array(list(product([5], [0.5], [5, 10], [0.5], [-1, 0])), dtype=float)
        raise ValueError(f"`starts` must be 'paper', 'quick' or an (n, 5) array, got {starts!r}")
    arr = np.asarray(starts, dtype=float)
    if arr.ndim != 2 or arr.shape[1] != 5 or arr.shape[0] == 0 or not np.isfinite(arr).all():
        raise ValueError(f"`starts` must be a finite (n, 5) array, got shape {arr.shape}")
    return arr


class ScalingLaw:
    """Fit and evaluate ``L = A/(N·eff(P))**α + B/D**β + E`` (QuEST Eq. 2, §4.1).

    Parameters
    ----------
    starts : {"paper", "quick"} or array of shape (n, 5), default="quick"
        Multi-start grid over (log A, α, log B, β, log E); every eff starts at 0.5. "paper" is
        the notebook's 1125 starts; "quick" 4 of them.

    Attributes
    ----------
    A_, alpha_, B_, beta_, E_ : float
    eff_ : dict of str to float
        Efficiency of each label that has runs ("16" is fixed to 1).
    sse_ : float
        Sum of squared natural-log residuals at the optimum.
    """

    def __init__(self, starts="quick"):
        self.starts = starts

    def fit(self, runs) -> "ScalingLaw":
        """Fit to `runs`, a list of dicts with keys N, D, P, L (positive N, D, L).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Missing keys, non-positive or non-finite values, or no runs.
        """
        starts = _starts(self.starts)
        if not isinstance(runs, list | tuple) or not runs:
            raise ValueError("`runs` must be a non-empty list of dicts with keys N, D, P, L")
        try:
            n = np.array([r["N"] for r in runs], dtype=float)
            d = np.array([r["D"] for r in runs], dtype=float)
            loss = np.array([r["L"] for r in runs], dtype=float)
            labels = [label_of(r["P"]) for r in runs]
        except (KeyError, TypeError) as err:
            raise ValueError(f"`runs` must be dicts with keys N, D, P, L ({err})") from None
        for name, v in (("N", n), ("D", d), ("L", loss)):
            if not (np.isfinite(v).all() and (v > 0).all()):
                raise ValueError(f"`runs` values of {name} must be finite and positive")
        free = sorted({lab for lab in labels if lab != "16"}, key=lambda s: (_label_bits(s), s))
        index = np.array([free.index(lab) if lab != "16" else -1 for lab in labels])
        log_n, log_d, log_l = np.log(n), np.log(d), np.log(loss)

        def residuals(x):
            eff = np.append(x[5:], 1.0)[index]
            with np.errstate(all="ignore"):
                pred = (np.exp(x[0] - x[1] * (log_n + np.log(eff))) + np.exp(x[2] - x[3] * log_d)
                        + np.exp(x[4]))  # fmt: skip
                r = log_l - np.log(pred)
            return np.where(np.isfinite(r), r, 1e3)

        lower = np.r_[[-np.inf] * 5, [1e-9] * len(free)]
        best = None
        for start in starts:
            x0 = np.r_[start, [0.5] * len(free)]
            res = least_squares(residuals, x0, bounds=(lower, np.inf), x_scale="jac")
            if best is None or res.cost < best.cost:
                best = res
        assert best is not None  # starts is not empty
        x = best.x
        self.A_, self.alpha_, self.B_ = float(np.exp(x[0])), float(x[1]), float(np.exp(x[2]))
        self.beta_, self.E_ = float(x[3]), float(np.exp(x[4]))
        self.eff_ = {"16": 1.0, **{lab: float(v) for lab, v in zip(free, x[5:], strict=True)}}
        self.sse_ = float(2.0 * best.cost)
        return self

    def _check_fitted(self):
        if not hasattr(self, "eff_"):
            raise RuntimeError("this ScalingLaw is not fitted yet: call fit(runs) first")

    def predict(self, N, D, P) -> float:
        """Predicted loss of a model of `N` parameters trained on `D` tokens at precision `P`.

        Raises
        ------
        ValueError
            Non-positive N or D, or a label without a fitted efficiency.
        """
        self._check_fitted()
        for name, v in (("N", N), ("D", D)):
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0 < float(v) < np.inf:
                raise ValueError(f"`{name}` must be a positive finite number, got {v!r}")
        label = label_of(P)
        if label not in self.eff_:
            raise ValueError(f"no efficiency fitted for P={P!r}; known: {sorted(self.eff_)}")
        return float(
            self.A_ / (N * self.eff_[label]) ** self.alpha_ + self.B_ / D**self.beta_ + self.E_
        )

    def efficiency_per_bit(self) -> dict[str, float]:
        """``eff(P)·16/P`` for the W=A labels (QuEST Fig. 1: 4 bits is the optimum)."""
        self._check_fitted()
        return {
            lab: e * 16.0 / _label_bits(lab)
            for lab, e in self.eff_.items()
            if not lab.endswith(("NOH", "WO"))
        }


def _paper_law() -> ScalingLaw:
    law = ScalingLaw(starts="paper")
    a, alpha, b, beta, e = _PAPER_X
    law.A_, law.alpha_, law.B_, law.beta_, law.E_ = np.exp(a), alpha, np.exp(b), beta, np.exp(e)
    law.eff_ = {"16": 1.0, **_PAPER_EFF}
    law.sse_ = float("nan")
    return law


#: The official fitted law (A 8.13403, α 0.0627265, B 86.4119, β 0.241288, E 0.00142).
PAPER_SCALING_LAW = _paper_law()
