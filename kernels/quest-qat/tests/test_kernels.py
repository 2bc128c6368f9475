"""The native int4 GEMM (spec test 10): built here; run on a GPU wherever one is visible."""

import pytest
import quest_qat_kernels as qk

needs_gpu = pytest.mark.skipif(qk.device_count() == 0, reason="no CUDA device visible")


def test_module_imports_and_lists_its_functions():
    assert callable(qk.int4_gemm)
    assert callable(qk.epilogue)
    assert qk.device_count() >= 0


def test_gemm_rejects_k_not_multiple_of_64():
    with pytest.raises(ValueError, match="multiple of 64"):
        qk.int4_gemm(0, 0, 0, 1, 1, 100)


@needs_gpu
@pytest.mark.parametrize(
    ("m", "n", "k"),
    [(1, 129, 128), (7, 33, 1024), (16, 257, 8192), (1, 4097, 4096), (4096, 17, 8192),
     (4096, 65, 128)],
)  # fmt: skip
def test_gemm_is_exact(m, n, k):
    assert qk.gemm_selftest(m, n, k, seed=m + n + k) == 0


@needs_gpu
@pytest.mark.parametrize(("m", "n"), [(1, 129), (7, 33), (4096, 17)])
def test_epilogue_within_1e6(m, n):
    assert qk.epilogue_selftest(m, n, seed=m * n) <= 1e-6
