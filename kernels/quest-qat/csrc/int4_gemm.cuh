// int4 GEMM of quest-qat in the official gemm-quest layout (IST-DASLab/QuEST, gemm-quest/):
//   A: int8 activation codes (M, K), row-major; W: packed int4 weight codes (N, K/2), row-major,
//   low nibble = even column, two's complement; C = A · Wᵀ in int32 (M, N).
// Epilogue (official linear_combination_dequant):
//   y[m, n] = (2 C + rowsum_a[m] + w_add[n]) · ½ · Δ_a[m] · Δ_w[n] + bias[n], in fp32.
// Contract of launch_int4_gemm: K % 64 == 0, `a` and `w` 16-byte aligned (checked by the
// bindings); C is exact (int32 accumulation, |C| <= 64 K).
#pragma once
#include <cstdint>
#include <cuda_runtime.h>

// M <= this: split-K GEMV (one m16 tile, K split over blocks, int32 atomicAdd into C);
// above: 64 x 64 output tiles through shared memory. Both use int8 mma.sync m16n8k32 (sm_80+).
constexpr int kGemvMaxM = 16;

cudaError_t launch_int4_gemm(const int8_t* a, const uint8_t* w, int32_t* c, int m, int n, int k,
                             cudaStream_t stream);
cudaError_t launch_epilogue(const int32_t* c, const int32_t* rowsum_a, const float* step_a,
                            const int32_t* w_add, const float* step_w, const float* bias, float* y,
                            int m, int n, cudaStream_t stream);
