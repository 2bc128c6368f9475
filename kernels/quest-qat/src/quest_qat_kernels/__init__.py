"""Native CUDA kernels of quest-qat: the int4 GEMM in the gemm-quest layout and its epilogue.

Functions take raw device pointers (ints) and a CUDA stream handle, so this extension does not
link against libtorch. quest-qat calls them when this package is installed and the tensors are on
a GPU, and falls back to its PyTorch reference otherwise.
"""

from ._C import (
    device_count,
    epilogue,
    epilogue_selftest,
    gemm_path,
    gemm_selftest,
    int4_gemm,
)

__version__ = "0.0.1"
__all__ = [
    "int4_gemm",
    "gemm_path",
    "epilogue",
    "device_count",
    "gemm_selftest",
    "epilogue_selftest",
]
