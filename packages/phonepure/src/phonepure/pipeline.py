r"""PhonePuRe: stage 1 (DiffWave DDPM) then stage 2 (phoneme-guided refinement), De-AntiFake
section 4. The phone alignment runs on the protected input and needs its transcript; without
text (or when alignment fails) stage 2 runs with a zero template and a warning.

$$ \hat x = R_\phi\big(P_\theta(x_{\rm prot}),\
   \mathrm{render}(T, \mathrm{align}(x_{\rm prot}, \text{text}))\big). $$
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .alignment import PhoneAlignment, align_pocketsphinx
from .audio import N_FFT, check_wav, n_frames
from .diffwave import DiffWave, DiffWavePurifier
from .refiner import PhonemeGuidedRefiner, ScoreUNet
from .sde import OUVESDE
from .templates import PhonemeTemplates

__all__ = ["PhonePuRe", "save_bundle", "load_bundle"]


class PhonePuRe(nn.Module):
    """The two-stage purifier.

    Parameters
    ----------
    purifier : DiffWavePurifier
        Stage 1.
    refiner : PhonemeGuidedRefiner
        Stage 2.
    templates : PhonemeTemplates, optional
        Phone templates; None gives zero templates.
    aligner : callable, default=align_pocketsphinx
        ``aligner(wav (T,), text) -> PhoneAlignment | None``.
    """

    def __init__(
        self,
        purifier: DiffWavePurifier,
        refiner: PhonemeGuidedRefiner,
        templates: PhonemeTemplates | None = None,
        aligner: Callable[[torch.Tensor, str], PhoneAlignment | None] = align_pocketsphinx,
    ):
        super().__init__()
        self.purifier = purifier
        self.refiner = refiner
        self.templates = templates
        self.aligner = aligner

    def template_for(self, wav: torch.Tensor, text: str | None) -> torch.Tensor:
        """Render the template of `wav` (T,) from its alignment; zeros (warned) when unavailable."""
        n = n_frames(wav.shape[-1])
        zero = torch.zeros(N_FFT // 2 + 1, n)
        if text is None or self.templates is None:
            warnings.warn(
                "no transcript or templates: stage 2 runs with a zero template", stacklevel=3
            )
            return zero
        al = self.aligner(wav.reshape(-1), text)
        if al is None:
            warnings.warn("alignment failed: stage 2 runs with a zero template", stacklevel=3)
            return zero
        return self.templates.render(al, n)

    def forward(
        self,
        wav: torch.Tensor,
        text: str | None = None,
        generator: torch.Generator | None = None,
        stage1_only: bool = False,
    ) -> torch.Tensor:
        """Purify one utterance.

        Parameters
        ----------
        wav : torch.Tensor of shape (T,) or (1, T), float, in [-1, 1]
            Protected speech at 16 kHz.
        text : str, optional
            Its transcript (for the phone alignment).
        generator : torch.Generator, optional
            Randomness of both stages.
        stage1_only : bool, default=False
            Return the stage-1 output (AudioPure).

        Returns
        -------
        torch.Tensor, same shape as `wav`.

        Raises
        ------
        ValueError
            On bad audio.
        """
        wav = check_wav(wav, "wav", peak=True)
        if wav.ndim == 3 or (wav.ndim == 2 and wav.shape[0] != 1):
            raise ValueError(f"`wav` must have shape (T,) or (1, T), got {tuple(wav.shape)}")
        with torch.no_grad():
            y1 = self.purifier(wav, generator=generator)
            if stage1_only:
                return y1
            template = self.template_for(wav, text)
            return self.refiner(y1, template, generator=generator)


def _check_config(arg: str, name: str, model: nn.Module, cls: type, cfg: Any) -> None:
    """Raise ValueError naming `name` unless ``cls(**cfg)`` has `model`'s parameter shapes."""
    if not isinstance(model, cls):
        raise TypeError(f"`{arg}` must be a {cls.__name__}, got {type(model).__name__}")
    if not isinstance(cfg, dict):
        raise TypeError(
            f"`{name}` must be a dict of constructor arguments, got {type(cfg).__name__}"
        )
    try:
        ref = cls(**cfg).state_dict()
    except TypeError as err:
        raise ValueError(f"`{name}` is not a valid {cls.__name__} config: {err}") from None
    got = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    want = {k: tuple(v.shape) for k, v in ref.items()}
    if got != want:
        raise ValueError(f"`{name}` {cfg} does not match the {cls.__name__} being saved")


def save_bundle(
    path,
    diffwave: DiffWave,
    diffwave_config: dict[str, Any],
    score_model: ScoreUNet,
    score_config: dict[str, Any],
    templates: PhonemeTemplates | None,
    t_star: int = 3,
    N: int = 30,
) -> Path:
    """Save both stages and the templates in one ``torch.save`` file (read by :func:`load_bundle`
    and ``phonepure purify --model``).

    Parameters
    ----------
    path : str or pathlib.Path
        Output file.
    diffwave : DiffWave
        Stage-1 network.
    diffwave_config : dict
        The keyword arguments `diffwave` was built with, e.g.
        ``dict(res_channels=32, skip_channels=32, layers=6, cycle=6)``.
    score_model : ScoreUNet
        Stage-2 score network (``refiner.net`` of a :class:`PhonemeGuidedRefiner`).
    score_config : dict
        The keyword arguments `score_model` was built with, e.g. ``dict(base=8)``.
    templates : PhonemeTemplates or None
        Phone templates (None: stage 2 always uses a zero template).
    t_star : int, default=3
        Stage-1 diffusion depth, in [1, 200].
    N : int, default=30
        Stage-2 sampler steps (>= 1).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    TypeError
        If a model or config has the wrong type.
    ValueError
        If a config does not rebuild its model (names `diffwave_config` / `score_config`), or
        `t_star` / `N` is out of range.
    """
    path = Path(path)
    _check_config("diffwave", "diffwave_config", diffwave, DiffWave, diffwave_config)
    _check_config("score_model", "score_config", score_model, ScoreUNet, score_config)
    if isinstance(t_star, bool) or not isinstance(t_star, int) or not 1 <= t_star <= 200:
        raise ValueError(f"`t_star` must be an int in [1, 200], got {t_star!r}")
    if isinstance(N, bool) or not isinstance(N, int) or N < 1:
        raise ValueError(f"`N` must be an int >= 1, got {N!r}")
    torch.save(
        {
            "diffwave": diffwave.state_dict(),
            "diffwave_config": diffwave_config,
            "score": score_model.state_dict(),
            "score_config": score_config,
            "templates": {
                k: v.tolist() for k, v in (templates.table_ if templates else {}).items()
            },
            "templates_strip_stress": bool(templates.strip_stress) if templates else False,
            "t_star": t_star,
            "N": N,
        },
        path,
    )
    return path


def load_bundle(path, t_star: int | None = None, N: int | None = None) -> PhonePuRe:
    """Load a :func:`save_bundle` file as a :class:`PhonePuRe`.

    Raises
    ------
    FileNotFoundError
        If `path` does not exist.
    ValueError
        If `path` is not a :func:`save_bundle` file, or `t_star` / `N` is out of range.
    """
    import numpy as np

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"`path` does not exist: {path}")
    try:
        b = torch.load(path, map_location="cpu", weights_only=False)
        dw = DiffWave(**b["diffwave_config"])
        dw.load_state_dict(b["diffwave"])
        net = ScoreUNet(**b["score_config"])
        net.load_state_dict(b["score"])
    except Exception as err:  # unpickling errors, missing keys, shape mismatches
        msg = f"{type(err).__name__}: {err}".splitlines()[0]
        raise ValueError(f"`path` is not a save_bundle file ({msg}): {path}") from None
    dw.eval()
    net.eval()
    table = {k: np.asarray(v, dtype=np.float32) for k, v in b["templates"].items()}
    templates = PhonemeTemplates(table, strip_stress=b["templates_strip_stress"]) if table else None
    return PhonePuRe(
        DiffWavePurifier(dw, t_star=t_star or b["t_star"]),
        PhonemeGuidedRefiner(net, OUVESDE(), N=N or b["N"]),
        templates,
    )
