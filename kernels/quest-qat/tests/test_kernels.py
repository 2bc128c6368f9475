"""The native int4 GEMM (spec test 10): built here; run on a GPU wherever one is visible.

Both kernels are covered: the split-K GEMV (M <= 16) and the tiled GEMM (M > 16), each on
int8 ``mma.sync`` m16n8k32; C must equal an exact int64 host reference entry for entry.
"""

import pytest
import quest_qat_kernels as qk

needs_gpu = pytest.mark.skipif(qk.device_count() == 0, reason="no CUDA device visible")

GEMV, TILED = "splitk_gemv_mma", "tiled_mma"
# (m, n, k): M in {1, 7, 16, 17, 4096}, odd N, K from 128 to 8192, plus K % 128 == 64 (a chunk
# half past K) and N not a multiple of the 64-wide tile.
GEMM_CASES = [
    (1, 129, 128), (1, 4097, 4096), (1, 33, 192), (7, 33, 1024), (7, 1, 8192),
    (16, 257, 8192), (16, 65, 320), (17, 9, 128), (4096, 17, 8192), (4096, 65, 128),
    (130, 127, 192),
]  # fmt: skip


def test_module_imports_and_lists_its_functions():
    assert callable(qk.int4_gemm)
    assert callable(qk.epilogue)
    assert qk.device_count() >= 0


def test_gemm_rejects_k_not_multiple_of_64():
    with pytest.raises(ValueError, match="multiple of 64"):
        qk.int4_gemm(0, 0, 0, 1, 1, 100)


def test_gemm_rejects_unaligned_pointers():
    with pytest.raises(ValueError, match="16-byte aligned"):
        qk.int4_gemm(8, 0, 0, 1, 1, 64)


@pytest.mark.parametrize(("m", "path"), [(1, GEMV), (16, GEMV), (17, TILED), (4096, TILED)])
def test_dispatch_by_m(m, path):
    assert qk.gemm_path(m) == path


def test_cases_cover_both_kernels():
    assert {qk.gemm_path(m) for m, _, _ in GEMM_CASES} == {GEMV, TILED}


@needs_gpu
@pytest.mark.parametrize(("m", "n", "k"), GEMM_CASES, ids=lambda v: str(v))
def test_gemm_is_exact(m, n, k):
    assert qk.gemm_selftest(m, n, k, seed=m + n + k) == 0


@needs_gpu
@pytest.mark.parametrize(("m", "n"), [(1, 129), (7, 33), (4096, 17)])
def test_epilogue_within_1e6(m, n):
    assert qk.epilogue_selftest(m, n, seed=m * n) <= 1e-6
