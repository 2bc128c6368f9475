"""QuEST: Stable Training of LLMs with 1-Bit Weights and Activations.

Panferov et al., "QuEST: Stable Training of LLMs with 1-Bit Weights and Activations", ICML 2025,
arXiv:2502.05003 (https://arxiv.org/abs/2502.05003). Official code: IST-DASLab/QuEST (MIT).

One call turns the linear layers of a PyTorch model into QuEST layers::

    from quest_qat import QuESTConfig, prepare_
    prepare_(model, QuESTConfig(w_bits=4, a_bits=4))
"""

from ._version import __version__
from .api import QuESTConfig, convert_, mask_stats, prepare_
from .estimator import TrustSTE
from .grid import OPTIMAL_GAUSSIAN_SCALES, gaussian_mse, grid_levels, optimal_gaussian_scale
from .hadamard import block_hadamard, hadamard_matrix
from .nn import QuESTInt4Linear, QuESTInt8Linear, QuESTLinear
from .packing import int4_matmul, pack_int4, unpack_int4
from .quantizer import (
    AbsMaxSTEQuantizer,
    LSQQuantizer,
    PACTQuantizer,
    QuESTQuantizer,
    STEQuantizer,
    TrustQuantizer,
    quantize_codes,
    quest_quantize,
)
from .scaling_law import PAPER_SCALING_LAW, ScalingLaw, load_paper_runs
from .serialization import load_quantized, save_quantized

__all__ = [
    "__version__",
    # model surgery (torchao style)
    "prepare_",
    "convert_",
    "QuESTConfig",
    "mask_stats",
    "save_quantized",
    "load_quantized",
    # layers and quantizers
    "QuESTLinear",
    "QuESTInt4Linear",
    "QuESTInt8Linear",
    "quest_quantize",
    "quantize_codes",
    "QuESTQuantizer",
    "TrustQuantizer",
    "STEQuantizer",
    "AbsMaxSTEQuantizer",
    "LSQQuantizer",
    "PACTQuantizer",
    "TrustSTE",
    # maths
    "optimal_gaussian_scale",
    "gaussian_mse",
    "grid_levels",
    "OPTIMAL_GAUSSIAN_SCALES",
    "hadamard_matrix",
    "block_hadamard",
    "pack_int4",
    "unpack_int4",
    "int4_matmul",
    # scaling law
    "ScalingLaw",
    "PAPER_SCALING_LAW",
    "load_paper_runs",
]
