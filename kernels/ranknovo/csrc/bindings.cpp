// Batched PMD / RMD of ranknovo (RankNovo, Qiu et al., ICML 2025, Sec. 3: peptide and residue
// mass deviation), one pair per OpenMP iteration.
//
// PMD: D[i,0] = i, D[0,j] = j,
//      D[i,j] = min(D[i-1,j] + 1, D[i,j-1] + 1, D[i-1,j-1] + |a_i - b_j|),  PMD = D[|q|,|t|],
//      with a_i = m(q_i) / unit and b_j = m(t_j) / unit.
// RMD: RMD_i = P_q(i) - P_t(j*),  j* = argmin_{j in 1..|t|} |P_q(i) - P_t(j)| (ties: smallest j),
//      P the running prefix sums of a and b; an empty target gives RMD_i = P_q(i).
// The arithmetic follows the Python reference operation for operation (ranknovo.kernels.pmd_ref).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef RANKNOVO_OPENMP
#include <omp.h>
#endif

namespace py = pybind11;
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using F64 = py::array_t<double, py::array::c_style | py::array::forcecast>;

namespace {

struct Batch {
  const int64_t* q;
  const int64_t* ql;
  const int64_t* t;
  const int64_t* tl;
  const double* m;
  int64_t P, Lq, Lt, V;
};

Batch check(const I64& q_ids, const I64& q_len, const I64& t_ids, const I64& t_len,
            const F64& masses) {
  if (q_ids.ndim() != 2) throw std::invalid_argument("q_ids must be 2-D (P, Lq)");
  if (t_ids.ndim() != 2) throw std::invalid_argument("t_ids must be 2-D (P, Lt)");
  if (q_len.ndim() != 1 || t_len.ndim() != 1)
    throw std::invalid_argument("q_len and t_len must be 1-D (P,)");
  if (masses.ndim() != 1) throw std::invalid_argument("masses must be 1-D (V,)");
  Batch b{q_ids.data(), q_len.data(), t_ids.data(), t_len.data(), masses.data(),
          q_ids.shape(0),  q_ids.shape(1), t_ids.shape(1), masses.shape(0)};
  if (t_ids.shape(0) != b.P || q_len.shape(0) != b.P || t_len.shape(0) != b.P)
    throw std::invalid_argument("q_ids, q_len, t_ids and t_len must have the same number of pairs");
  for (int64_t p = 0; p < b.P; ++p) {
    if (b.ql[p] < 0 || b.ql[p] > b.Lq)
      throw std::invalid_argument("q_len[" + std::to_string(p) + "] out of range");
    if (b.tl[p] < 0 || b.tl[p] > b.Lt)
      throw std::invalid_argument("t_len[" + std::to_string(p) + "] out of range");
    for (int64_t i = 0; i < b.ql[p]; ++i) {
      int64_t v = b.q[p * b.Lq + i];
      if (v < 0 || v >= b.V) throw std::invalid_argument("q_ids holds an id outside the vocabulary");
    }
    for (int64_t j = 0; j < b.tl[p]; ++j) {
      int64_t v = b.t[p * b.Lt + j];
      if (v < 0 || v >= b.V) throw std::invalid_argument("t_ids holds an id outside the vocabulary");
    }
  }
  return b;
}

double pmd_one(const Batch& b, int64_t p, double unit, std::vector<double>& prev,
               std::vector<double>& cur, std::vector<double>& bt) {
  const int64_t n = b.ql[p], m = b.tl[p];
  const int64_t* q = b.q + p * b.Lq;
  const int64_t* t = b.t + p * b.Lt;
  prev.resize(m + 1);
  cur.resize(m + 1);
  bt.resize(m + 1);
  for (int64_t j = 0; j <= m; ++j) prev[j] = static_cast<double>(j);
  for (int64_t j = 1; j <= m; ++j) bt[j] = b.m[t[j - 1]] / unit;
  for (int64_t i = 1; i <= n; ++i) {
    const double ai = b.m[q[i - 1]] / unit;
    cur[0] = static_cast<double>(i);
    for (int64_t j = 1; j <= m; ++j) {
      double best = prev[j] + 1.0;
      const double left = cur[j - 1] + 1.0;
      if (left < best) best = left;
      const double diag = prev[j - 1] + std::fabs(ai - bt[j]);
      if (diag < best) best = diag;
      cur[j] = best;
    }
    prev.swap(cur);
  }
  return prev[m];
}

void rmd_one(const Batch& b, int64_t p, double unit, double* out, std::vector<double>& pt) {
  const int64_t n = b.ql[p], m = b.tl[p];
  const int64_t* q = b.q + p * b.Lq;
  const int64_t* t = b.t + p * b.Lt;
  pt.resize(m);
  double s = 0.0;
  for (int64_t j = 0; j < m; ++j) {
    s += b.m[t[j]] / unit;
    pt[j] = s;
  }
  double sq = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    sq += b.m[q[i]] / unit;
    if (m == 0) {
      out[i] = sq;
      continue;
    }
    double best = std::fabs(sq - pt[0]);
    int64_t arg = 0;
    for (int64_t j = 1; j < m; ++j) {
      const double d = std::fabs(sq - pt[j]);
      if (d < best) {
        best = d;
        arg = j;
      }
    }
    out[i] = sq - pt[arg];
  }
}

py::array_t<double> pmd_batch(const I64& q_ids, const I64& q_len, const I64& t_ids,
                              const I64& t_len, const F64& masses, double unit) {
  if (!(unit > 0.0) || !std::isfinite(unit)) throw std::invalid_argument("unit must be > 0");
  const Batch b = check(q_ids, q_len, t_ids, t_len, masses);
  py::array_t<double> out(b.P);
  double* o = out.mutable_data();
  {
    py::gil_scoped_release nogil;
#ifdef RANKNOVO_OPENMP
#pragma omp parallel
#endif
    {
      std::vector<double> prev, cur, bt;
#ifdef RANKNOVO_OPENMP
#pragma omp for schedule(dynamic, 256)
#endif
      for (int64_t p = 0; p < b.P; ++p) o[p] = pmd_one(b, p, unit, prev, cur, bt);
    }
  }
  return out;
}

py::array_t<double> rmd_batch(const I64& q_ids, const I64& q_len, const I64& t_ids,
                              const I64& t_len, const F64& masses, double unit) {
  if (!(unit > 0.0) || !std::isfinite(unit)) throw std::invalid_argument("unit must be > 0");
  const Batch b = check(q_ids, q_len, t_ids, t_len, masses);
  py::array_t<double> out({b.P, b.Lq});
  double* o = out.mutable_data();
  {
    py::gil_scoped_release nogil;
    for (int64_t k = 0; k < b.P * b.Lq; ++k) o[k] = 0.0;
#ifdef RANKNOVO_OPENMP
#pragma omp parallel
#endif
    {
      std::vector<double> pt;
#ifdef RANKNOVO_OPENMP
#pragma omp for schedule(dynamic, 256)
#endif
      for (int64_t p = 0; p < b.P; ++p) rmd_one(b, p, unit, o + p * b.Lq, pt);
    }
  }
  return out;
}

int num_threads() {
#ifdef RANKNOVO_OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

}  // namespace

PYBIND11_MODULE(_C, mod) {
  mod.doc() = "Batched PMD / RMD of ranknovo (C++, OpenMP over pairs)";
  mod.def("pmd_batch", &pmd_batch, py::arg("q_ids"), py::arg("q_len"), py::arg("t_ids"),
          py::arg("t_len"), py::arg("masses"), py::arg("unit") = 51.4238,
          "PMD of each pair, float64 (P,), in units of `unit`");
  mod.def("rmd_batch", &rmd_batch, py::arg("q_ids"), py::arg("q_len"), py::arg("t_ids"),
          py::arg("t_len"), py::arg("masses"), py::arg("unit") = 51.4238,
          "RMD of each pair, float64 (P, Lq), zero past q_len, in units of `unit`");
  mod.def("num_threads", &num_threads, "OpenMP threads the loops use (1 without OpenMP)");
}
