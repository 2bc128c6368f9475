"""phonepure: De-AntiFake's two-stage purification (PhonePuRe) against protective perturbations
for voice cloning (Fan et al., ICML 2025, arXiv 2507.02606).

Stage 1 is DiffWave DDPM purification (:class:`DiffWavePurifier`), stage 2 the phoneme-guided
SGMSE+ refinement (:class:`PhonemeGuidedRefiner`) with templates from forced alignments; the
threat model is AttackVC's embedding attack (:func:`attackvc_emb`) against Resemblyzer's GE2E
speaker encoder (:class:`GE2E`). An evaluation tool: no purifier weights ship.
"""

from typing import TYPE_CHECKING, Any

from ._version import __version__
from .alignment import PhoneAlignment, align_pocketsphinx, from_textgrid, uniform_alignment
from .audio import compress, decompress, istft, load, resample, stft
from .baselines import (
    BASELINES,
    audiopure,
    average_smoothing,
    bandpass,
    downsample,
    gaussian_noise,
    lowpass,
    median_smoothing,
    quantize,
)
from .diffwave import DDPMSchedule, DiffWave, DiffWavePurifier
from .gate import gated_activation, gated_activation_reference
from .metrics import cosine, pesq, snr_db, stoi, sv_accuracy
from .pipeline import PhonePuRe, load_bundle, save_bundle
from .protect import attackvc_emb
from .refiner import PhonemeGuidedRefiner, ScoreUNet
from .sampling import ald_step_size, pc_sample
from .sde import OUVESDE
from .sv import GE2E, compute_partial_slices, eer
from .templates import PhonemeTemplates

if TYPE_CHECKING:
    from .train import train_diffwave, train_refiner


def __getattr__(name: str) -> Any:
    # `train` is imported lazily so that `python -m phonepure.train` (torchrun) does not warn
    # that the module was already imported by the package
    if name in ("train_diffwave", "train_refiner"):
        from . import train

        return getattr(train, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "__version__",
    "BASELINES",
    "DDPMSchedule",
    "DiffWave",
    "DiffWavePurifier",
    "GE2E",
    "OUVESDE",
    "PhoneAlignment",
    "PhonePuRe",
    "PhonemeGuidedRefiner",
    "PhonemeTemplates",
    "ScoreUNet",
    "ald_step_size",
    "align_pocketsphinx",
    "attackvc_emb",
    "audiopure",
    "average_smoothing",
    "bandpass",
    "compress",
    "compute_partial_slices",
    "cosine",
    "decompress",
    "downsample",
    "eer",
    "from_textgrid",
    "gated_activation",
    "gated_activation_reference",
    "gaussian_noise",
    "istft",
    "load",
    "load_bundle",
    "lowpass",
    "median_smoothing",
    "pc_sample",
    "pesq",
    "quantize",
    "resample",
    "save_bundle",
    "snr_db",
    "stft",
    "stoi",
    "sv_accuracy",
    "train_diffwave",
    "train_refiner",
    "uniform_alignment",
]
