// int4 GEMM of quest-qat in the official gemm-quest layout (IST-DASLab/QuEST, gemm-quest/):
//   A: int8 activation codes (M, K), row-major; W: packed int4 weight codes (N, K/2), row-major,
//   low nibble = even column, two's complement; C = A · Wᵀ in int32 (M, N).
// Epilogue (official linear_combination_dequant):
//   y[m, n] = (2 C + rowsum_a[m] + w_add[n]) · ½ · Δ_a[m] · Δ_w[n] + bias[n], in fp32.
#pragma once
#include <cstdint>
#include <cuda_runtime.h>

cudaError_t launch_int4_gemm(const int8_t* a, const uint8_t* w, int32_t* c, int m, int n, int k,
                             cudaStream_t stream);
cudaError_t launch_epilogue(const int32_t* c, const int32_t* rowsum_a, const float* step_a,
                            const int32_t* w_add, const float* step_w, const float* bias, float* y,
                            int m, int n, cudaStream_t stream);
