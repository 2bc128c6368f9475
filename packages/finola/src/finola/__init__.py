"""finola: images decoded from one vector by a shared norm+linear recurrence, and the learned
coefficient matrices read as one-way wave equations (Chen et al., ICML 2025)."""

from ._version import __version__
from .analysis import WaveAnalysis, compare_runs, pde_residual, wave_analysis
from .baselines import Broadcast, PosEmb, ReshapeAE
from .functional import finola_scan, normalize
from .layers import FINOLA
from .metrics import psnr
from .models import Conv3Decoder, FinolaAutoencoder, SmallConvEncoder, UpConvDecoder
from .train import fit

__all__ = [
    "FINOLA",
    "Broadcast",
    "Conv3Decoder",
    "FinolaAutoencoder",
    "PosEmb",
    "ReshapeAE",
    "SmallConvEncoder",
    "UpConvDecoder",
    "WaveAnalysis",
    "__version__",
    "compare_runs",
    "finola_scan",
    "fit",
    "normalize",
    "pde_residual",
    "psnr",
    "wave_analysis",
]
