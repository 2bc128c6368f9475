// int4 x int8 GEMM on int8 tensor cores: mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32.
//
// Fragment layout (PTX ISA, "Matrix Fragments for mma.m16n8k32", .s8): lane = 4 g + t;
//   A (16 x 32): a0 = row g, k 4t..4t+3; a1 = row g+8, same k; a2 = row g, k 16+4t..; a3 = row g+8.
//   B (32 x 8):  b0 = col g, k 4t..4t+3; b1 = col g, k 16+4t..16+4t+3.
//   C (16 x 8):  c0, c1 = row g, cols 2t, 2t+1; c2, c3 = row g+8, cols 2t, 2t+1.
// K is walked in chunks of 128. C = Σ_k a_k w_k does not depend on the order of k, so inside a
// chunk the mma's k index is permuted (the same way for A and W) so that each lane reads
// contiguous memory: for mma step s (0..3) of a chunk, lane t's "k 4t..4t+3" are the physical
// columns 32t+8s..32t+8s+3 and its "k 16+4t.." are 32t+8s+4..32t+8s+7. One 16-byte load of a
// packed weight row then feeds lane t for all 4 steps (its 32 nibbles, 8 per step), unpacked to
// int8 in registers; A rows are read as two 16-byte loads per row and chunk.
// A chunk that runs past K (K % 128 == 64) is zero-filled in both A and W.
#include "int4_gemm.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "quest-qat-kernels needs sm_80 or newer (int8 mma.sync m16n8k32)"
#endif

namespace {

constexpr int kChunk = 128;  // k columns per chunk: 64 packed weight bytes, 128 activation bytes
constexpr int kWarps = 4;

// 4 nibbles (bits 0-15, low nibble first) -> 4 sign-extended int8 lanes of one 32-bit word.
__device__ __forceinline__ uint32_t unpack_nibbles(uint32_t v) {
  const uint32_t x = (v & 0xFu) | ((v & 0xF0u) << 4) | ((v & 0xF00u) << 8) | ((v & 0xF000u) << 12);
  // Each byte holds 0..15; set its top nibble where bit 3 is set (0x08 * 0x1E = 0xF0: no carry).
  return x | ((x & 0x08080808u) * 0x1Eu);
}

__device__ __forceinline__ void mma_s8(int32_t (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                       uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The 4 mma steps of one chunk for one m16 x n8 tile. a_lo / a_hi: the 32 bytes (8 words) of
// rows g and g+8 at physical columns 32t..32t+31; w: the 16 packed bytes of column g there.
__device__ __forceinline__ void mma_chunk(int32_t (&c)[4], const uint4 (&a_lo)[2],
                                          const uint4 (&a_hi)[2], const uint4 w) {
  const uint32_t lo[8] = {a_lo[0].x, a_lo[0].y, a_lo[0].z, a_lo[0].w,
                          a_lo[1].x, a_lo[1].y, a_lo[1].z, a_lo[1].w};
  const uint32_t hi[8] = {a_hi[0].x, a_hi[0].y, a_hi[0].z, a_hi[0].w,
                          a_hi[1].x, a_hi[1].y, a_hi[1].z, a_hi[1].w};
  const uint32_t wq[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    const uint32_t a[4] = {lo[2 * s], hi[2 * s], lo[2 * s + 1], hi[2 * s + 1]};
    mma_s8(c, a, unpack_nibbles(wq[s] & 0xFFFFu), unpack_nibbles(wq[s] >> 16));
  }
}

__device__ __forceinline__ uint4 load16(const void* p, bool valid) {
  return valid ? *reinterpret_cast<const uint4*>(p) : make_uint4(0, 0, 0, 0);
}

// Split-K GEMV (M <= 16): block (n8 tile blockIdx.x, K split blockIdx.y); its 4 warps take
// chunks blockIdx.y*4 + warp, stepping by gridDim.y*4, straight from global memory, and add
// their 16 x 8 partial sums into C (zeroed by the launcher) with int32 atomicAdd: exact, and
// independent of the order in which blocks arrive.
__global__ void __launch_bounds__(32 * kWarps)
    int4_gemv_splitk_kernel(const int8_t* __restrict__ a, const uint8_t* __restrict__ w,
                            int32_t* __restrict__ c, int m, int n, int k) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int warp = threadIdx.x >> 5;
  const int col = blockIdx.x * 8 + g;
  const int chunks = (k + kChunk - 1) / kChunk;
  int32_t acc[4] = {0, 0, 0, 0};
  for (int ch = blockIdx.y * kWarps + warp; ch < chunks; ch += gridDim.y * kWarps) {
    const int k0 = ch * kChunk + 32 * t;  // this lane's first physical column
    const bool kv = k0 < k;
    const uint4 wv = load16(w + static_cast<size_t>(col) * (k / 2) + k0 / 2, kv && col < n);
    uint4 a_lo[2], a_hi[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      a_lo[h] = load16(a + static_cast<size_t>(g) * k + k0 + 16 * h, kv && g < m);
      a_hi[h] = load16(a + static_cast<size_t>(g + 8) * k + k0 + 16 * h, kv && g + 8 < m);
    }
    mma_chunk(acc, a_lo, a_hi, wv);
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = g + 8 * (i >> 1), cc = blockIdx.x * 8 + 2 * t + (i & 1);
    if (row < m && cc < n) atomicAdd(c + static_cast<size_t>(row) * n + cc, acc[i]);
  }
}

// Tiled GEMM (M > 16): a block of 4 warps (2 x 2) computes a 64 x 64 tile of C, each warp
// 32 x 32 (2 m16 x 4 n8 mma tiles). Per chunk the block stages 64 x 128 activation bytes and
// 64 x 64 packed weight bytes in shared memory with 16-byte loads; weights stay packed there
// and are unpacked in registers. Row strides 144 / 64 bytes keep the fragment reads free of
// bank conflicts.
constexpr int kTile = 64;
constexpr int kAStride = kChunk + 16;
constexpr int kWStride = kChunk / 2;

__global__ void __launch_bounds__(32 * kWarps)
    int4_gemm_mma_kernel(const int8_t* __restrict__ a, const uint8_t* __restrict__ w,
                         int32_t* __restrict__ c, int m, int n, int k) {
  __shared__ __align__(16) uint8_t a_s[kTile * kAStride];
  __shared__ __align__(16) uint8_t w_s[kTile * kWStride];
  const int tid = threadIdx.x, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int wm = (tid >> 5) >> 1, wn = (tid >> 5) & 1;
  const int m0 = blockIdx.y * kTile, n0 = blockIdx.x * kTile;
  int32_t acc[2][4][4] = {};
  for (int k0 = 0; k0 < k; k0 += kChunk) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {  // A: 64 rows x 8 pieces of 16 bytes
      const int idx = tid + 32 * kWarps * j, row = idx >> 3, piece = idx & 7;
      const int kk = k0 + 16 * piece;
      *reinterpret_cast<uint4*>(a_s + row * kAStride + 16 * piece) =
          load16(a + static_cast<size_t>(m0 + row) * k + kk, m0 + row < m && kk < k);
    }
#pragma unroll
    for (int j = 0; j < 2; ++j) {  // W: 64 rows x 4 pieces of 16 packed bytes (32 columns)
      const int idx = tid + 32 * kWarps * j, row = idx >> 2, piece = idx & 3;
      const int kk = k0 + 32 * piece;
      *reinterpret_cast<uint4*>(w_s + row * kWStride + 16 * piece) =
          load16(w + static_cast<size_t>(n0 + row) * (k / 2) + kk / 2, n0 + row < n && kk < k);
    }
    __syncthreads();
    uint4 a_lo[2][2], a_hi[2][2];
#pragma unroll
    for (int mi = 0; mi < 2; ++mi) {
      const uint8_t* r = a_s + (wm * 32 + mi * 16 + g) * kAStride + 32 * t;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        a_lo[mi][h] = *reinterpret_cast<const uint4*>(r + 16 * h);
        a_hi[mi][h] = *reinterpret_cast<const uint4*>(r + 8 * kAStride + 16 * h);
      }
    }
#pragma unroll
    for (int ni = 0; ni < 4; ++ni) {
      const uint4 wv =
          *reinterpret_cast<const uint4*>(w_s + (wn * 32 + ni * 8 + g) * kWStride + 16 * t);
#pragma unroll
      for (int mi = 0; mi < 2; ++mi) mma_chunk(acc[mi][ni], a_lo[mi], a_hi[mi], wv);
    }
    __syncthreads();
  }
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int row = m0 + wm * 32 + mi * 16 + g + 8 * (i >> 1);
        const int col = n0 + wn * 32 + ni * 8 + 2 * t + (i & 1);
        if (row < m && col < n) c[static_cast<size_t>(row) * n + col] = acc[mi][ni][i];
      }
}

__global__ void epilogue_kernel(const int32_t* __restrict__ c, const int32_t* __restrict__ rowsum_a,
                                const float* __restrict__ step_a, const int32_t* __restrict__ w_add,
                                const float* __restrict__ step_w, const float* __restrict__ bias,
                                float* __restrict__ y, int m, int n) {
  const size_t idx = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= static_cast<size_t>(m) * n) return;
  const int row = static_cast<int>(idx / n);
  const int col = static_cast<int>(idx % n);
  // 2C + rowsum_a + w_add is an exact integer; convert once, scale in fp32
  const long long acc = 2LL * c[idx] + rowsum_a[row] + w_add[col];
  float out = static_cast<float>(acc) * (0.5f * step_a[row] * step_w[col]);
  if (bias != nullptr) out += bias[col];
  y[idx] = out;
}

}  // namespace

cudaError_t launch_int4_gemm(const int8_t* a, const uint8_t* w, int32_t* c, int m, int n, int k,
                             cudaStream_t stream) {
  if (m <= 0 || n <= 0) return cudaSuccess;
  if (k % 64 != 0) return cudaErrorInvalidValue;
  if (m <= kGemvMaxM) {
    const cudaError_t err = cudaMemsetAsync(c, 0, sizeof(int32_t) * m * n, stream);
    if (err != cudaSuccess) return err;
    if (k == 0) return cudaSuccess;
    const int tiles = (n + 7) / 8, chunks = (k + kChunk - 1) / kChunk;
    // Enough blocks to fill the GPU (~1024 in flight) without splitting below one chunk a warp.
    int split = (1024 + tiles - 1) / tiles;
    const int max_split = (chunks + kWarps - 1) / kWarps;
    split = split < max_split ? split : max_split;
    int4_gemv_splitk_kernel<<<dim3(tiles, split), 32 * kWarps, 0, stream>>>(a, w, c, m, n, k);
  } else {
    const dim3 grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile);
    int4_gemm_mma_kernel<<<grid, 32 * kWarps, 0, stream>>>(a, w, c, m, n, k);
  }
  return cudaGetLastError();
}

cudaError_t launch_epilogue(const int32_t* c, const int32_t* rowsum_a, const float* step_a,
                            const int32_t* w_add, const float* step_w, const float* bias, float* y,
                            int m, int n, cudaStream_t stream) {
  const size_t total = static_cast<size_t>(m) * n;
  if (total == 0) return cudaSuccess;
  const int threads = 256;
  const unsigned blocks = static_cast<unsigned>((total + threads - 1) / threads);
  epilogue_kernel<<<blocks, threads, 0, stream>>>(c, rowsum_a, step_a, w_add, step_w, bias, y, m, n);
  return cudaGetLastError();
}
