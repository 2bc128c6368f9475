// pybind11 bindings: raw device pointers (integers) and a CUDA stream handle, so the module links
// against no libtorch and survives torch upgrades. Also self-tests that allocate, run and check
// on the device with a host reference, for machines where only this package is installed.
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "int4_gemm.cuh"

namespace py = pybind11;

namespace {

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

template <typename T>
T* ptr(std::uintptr_t p) { return reinterpret_cast<T*>(p); }

// Which kernel launch_int4_gemm runs for m rows.
std::string gemm_path(int m) { return m <= kGemvMaxM ? "splitk_gemv_mma" : "tiled_mma"; }

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

void int4_gemm(std::uintptr_t a, std::uintptr_t w, std::uintptr_t c, int m, int n, int k,
               std::uintptr_t stream) {
  if (m < 0 || n < 0 || k < 0) throw std::invalid_argument("m, n, k must be >= 0");
  if (k % 64 != 0) throw std::invalid_argument("k must be a multiple of 64, got " + std::to_string(k));
  if (a % 16 != 0 || w % 16 != 0) throw std::invalid_argument("a and w must be 16-byte aligned");
  check(launch_int4_gemm(ptr<const int8_t>(a), ptr<const uint8_t>(w), ptr<int32_t>(c), m, n, k,
                         reinterpret_cast<cudaStream_t>(stream)),
        "int4_gemm");
}

void epilogue(std::uintptr_t c, std::uintptr_t rowsum_a, std::uintptr_t step_a, std::uintptr_t w_add,
              std::uintptr_t step_w, std::uintptr_t bias, std::uintptr_t y, int m, int n,
              std::uintptr_t stream) {
  check(launch_epilogue(ptr<const int32_t>(c), ptr<const int32_t>(rowsum_a), ptr<const float>(step_a),
                        ptr<const int32_t>(w_add), ptr<const float>(step_w),
                        bias ? ptr<const float>(bias) : nullptr, ptr<float>(y), m, n,
                        reinterpret_cast<cudaStream_t>(stream)),
        "epilogue");
}

template <typename T>
struct DeviceBuffer {
  T* p = nullptr;
  explicit DeviceBuffer(size_t count) { check(cudaMalloc(&p, count * sizeof(T) + 16), "cudaMalloc"); }
  ~DeviceBuffer() { cudaFree(p); }
  void put(const std::vector<T>& h) { check(cudaMemcpy(p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), "H2D"); }
  void get(std::vector<T>& h) const { check(cudaMemcpy(h.data(), p, h.size() * sizeof(T), cudaMemcpyDeviceToHost), "D2H"); }
};

// Random codes in [-8, 7]; runs the GEMM and returns the number of C entries that differ from an
// exact int64 host reference (0 means exact).
long long gemm_selftest(int m, int n, int k, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> code(-8, 7);
  std::vector<int8_t> a(static_cast<size_t>(m) * k), wc(static_cast<size_t>(n) * k);
  for (auto& v : a) v = static_cast<int8_t>(code(rng));
  for (auto& v : wc) v = static_cast<int8_t>(code(rng));
  std::vector<uint8_t> w(static_cast<size_t>(n) * k / 2);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<uint8_t>((wc[2 * i] & 0xF) | ((wc[2 * i + 1] & 0xF) << 4));
  DeviceBuffer<int8_t> da(a.size());
  DeviceBuffer<uint8_t> dw(w.size());
  DeviceBuffer<int32_t> dc(static_cast<size_t>(m) * n);
  da.put(a);
  dw.put(w);
  check(cudaMemset(dc.p, 0x7F, sizeof(int32_t) * m * n), "poison C");  // unwritten entries show
  check(launch_int4_gemm(da.p, dw.p, dc.p, m, n, k, nullptr), "int4_gemm");
  check(cudaDeviceSynchronize(), "sync");
  std::vector<int32_t> c(static_cast<size_t>(m) * n);
  dc.get(c);
  long long wrong = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      long long ref = 0;
      for (int t = 0; t < k; ++t) ref += static_cast<long long>(a[static_cast<size_t>(i) * k + t]) * wc[static_cast<size_t>(j) * k + t];
      wrong += ref != c[static_cast<size_t>(i) * n + j];
    }
  return wrong;
}

// Largest relative error of the device epilogue against a float64 host evaluation.
double epilogue_selftest(int m, int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> ci(-200000, 200000), ri(-4000, 4000);
  std::uniform_real_distribution<float> st(1e-4f, 1e-1f), bi(-1.f, 1.f);
  std::vector<int32_t> c(static_cast<size_t>(m) * n), ra(m), wa(n);
  std::vector<float> sa(m), sw(n), b(n), y(static_cast<size_t>(m) * n);
  for (auto& v : c) v = ci(rng);
  for (auto& v : ra) v = ri(rng);
  for (auto& v : wa) v = ri(rng);
  for (auto& v : sa) v = st(rng);
  for (auto& v : sw) v = st(rng);
  for (auto& v : b) v = bi(rng);
  DeviceBuffer<int32_t> dc(c.size()), dra(m), dwa(n);
  DeviceBuffer<float> dsa(m), dsw(n), db(n), dy(y.size());
  dc.put(c); dra.put(ra); dwa.put(wa); dsa.put(sa); dsw.put(sw); db.put(b);
  check(launch_epilogue(dc.p, dra.p, dsa.p, dwa.p, dsw.p, db.p, dy.p, m, n, nullptr), "epilogue");
  check(cudaDeviceSynchronize(), "sync");
  dy.get(y);
  double worst = 0.0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      const size_t idx = static_cast<size_t>(i) * n + j;
      const double ref = (2.0 * c[idx] + ra[i] + wa[j]) * 0.5 * sa[i] * sw[j] + b[j];
      worst = std::fmax(worst, std::fabs(y[idx] - ref) / std::fmax(1.0, std::fabs(ref)));
    }
  return worst;
}

}  // namespace

PYBIND11_MODULE(_C, mod) {
  mod.doc() = "quest-qat native kernels: int4 GEMM (gemm-quest layout) and the dequant epilogue";
  mod.def("device_count", &device_count, "Number of CUDA devices visible (0 without a driver).");
  mod.def("int4_gemm", &int4_gemm, py::arg("a"), py::arg("w"), py::arg("c"), py::arg("m"),
          py::arg("n"), py::arg("k"), py::arg("stream") = 0,
          "C(int32, M x N) = A(int8, M x K) · unpack(W(uint8, N x K/2))ᵀ on device pointers.");
  mod.def("epilogue", &epilogue, py::arg("c"), py::arg("rowsum_a"), py::arg("step_a"),
          py::arg("w_add"), py::arg("step_w"), py::arg("bias"), py::arg("y"), py::arg("m"),
          py::arg("n"), py::arg("stream") = 0,
          "y = (2C + rowsum_a + w_add)·½·Δ_aΔ_w + bias (fp32); bias may be 0 (none).");
  mod.def("gemm_path", &gemm_path, py::arg("m"),
          "Kernel run for m rows: 'splitk_gemv_mma' (m <= 16) or 'tiled_mma'.");
  mod.def("gemm_selftest", &gemm_selftest, py::arg("m"), py::arg("n"), py::arg("k"),
          py::arg("seed") = 0, "Entries of C that differ from an exact host reference.");
  mod.def("epilogue_selftest", &epilogue_selftest, py::arg("m"), py::arg("n"), py::arg("seed") = 0,
          "Largest relative error of the epilogue against float64.");
}
