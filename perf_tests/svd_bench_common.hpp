#pragma once
// Shared by the SVD benchmarks: batch storage, accuracy counters and the
// nominal flop count, so every SVD binary reports the same quantities.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "bench_common.hpp"
#include "kwsvd/tuning/tailoring_plan.hpp"

namespace kwsvd::bench {

template <class T>
using Batch = Kokkos::View<T***, Kokkos::LayoutRight>;  // (batch, n, m): column-major m x n each
template <class T>
using Strided = Kokkos::View<T***, Kokkos::LayoutStride>;

// (batch, m, n) view of column-major matrices stored batch-contiguously.
template <class T>
Strided<T> as_matrices(T* data, int batch, int rows, int cols, int ld) {
  return Strided<T>(data, Kokkos::LayoutStride(batch, std::size_t(ld) * cols, rows, 1, cols, ld));
}

// Accuracy of the first few matrices on the host.
template <class T>
void record_accuracy(benchmark::State& state, const Strided<T>& A, const Strided<T>& U,
                     const Kokkos::View<T**, Kokkos::LayoutRight>& S, const Strided<T>& V) {
  const int m = int(A.extent(1)), n = int(A.extent(2)), k = std::min(m, n);
  // The first four matrices (one when a check would cost over ~1e9 flops).
  const double cost = double(m) * n * k;
  const int count = std::min<int>(cost > 1.2e8 ? 1 : 4, int(A.extent(0)));
  auto a = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A);
  auto u = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), U);
  auto v = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), V);
  auto s = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), S);
  double residual = 0, orth = 0;
  for (int b = 0; b < count; ++b) {
    double r2 = 0, a2 = 0, o2 = 0;
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double usv = 0;
        for (int l = 0; l < k; ++l)
          usv += double(u(b, i, l)) * s(b, l) * v(b, j, l);
        r2 += (a(b, i, j) - usv) * (a(b, i, j) - usv);
        a2 += double(a(b, i, j)) * a(b, i, j);
      }
    for (int p = 0; p < k; ++p)
      for (int q = 0; q < k; ++q) {
        double dot = 0;
        for (int i = 0; i < m; ++i)
          dot += double(u(b, i, p)) * u(b, i, q);
        o2 += (dot - (p == q)) * (dot - (p == q));
      }
    residual = worse_of(residual, std::sqrt(r2 / a2));
    orth = worse_of(orth, std::sqrt(o2));
  }
  state.counters["residual"] = residual;
  state.counters["orthU"] = orth;
}

/// The fixed nominal flop count of one m x n SVD with thin U and V, used by
/// every SVD benchmark for GFLOP/s (a speed ratio, not a measured rate): the
/// R-SVD count of Golub and Van Loan (Matrix Computations, 4th ed., Fig.
/// 8.6.1), 6 M N^2 + 20 N^3 with M = max(m, n), N = min(m, n).
inline double nominal_svd_flops(int m, int n) {
  const double M = std::max(m, n), N = std::min(m, n);
  return 6 * M * N * N + 20 * N * N * N;
}
inline const char* nominal_flops_formula() {
  return "6 M N^2 + 20 N^3 per matrix, M = max(m, n), N = min(m, n) (Golub-Van Loan R-SVD)";
}

template <class T>
void set_svd_rates(benchmark::State& state, int m, int n, int batch) {
  const double k = std::min(m, n);
  kwsvd::bench::set_rates(state, nominal_svd_flops(m, n) * batch,
                          double(batch) * (double(m) * n + m * k + n * k + k) * sizeof(T));
}

/// Entries uniform in [-1, 1) from a counter-based hash (splitmix64) of the
/// index and the seed, made on the host and copied over: the same numbers on
/// every backend. (A device-side fill of these rank-1 Views once left them
/// zero: Kokkos 4.6.99's View under nvcc 13 in C++20, which
/// kwsvd/impl/kokkos_compat.hpp now refuses.)
template <class T>
void fill_uniform(const Kokkos::View<T*>& x, std::uint64_t seed) {
  auto h = Kokkos::create_mirror_view(x);
  for (std::size_t i = 0; i < h.extent(0); ++i) {
    std::uint64_t z = seed + 0x9E3779B97F4A7C15ull * (std::uint64_t(i) + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    h(i) = T(double(z >> 11) * (2.0 / 9007199254740992.0) - 1.0);
  }
  Kokkos::deep_copy(x, h);
}

/// A batch of any mix of shapes stored the way cuSOLVER and LAPACK want it:
/// each matrix column-major with leading dimension = its rows, one after the
/// other in one device View (A: m x n, U: m x k, V: n x k, S: k values),
/// with host arrays of per-matrix pointers and leading dimensions for the
/// pointer-array APIs. A is filled with entries uniform in [-1, 1) (seed 42,
/// the same data for every implementation).
template <class T>
struct ContiguousBatch {
  std::vector<MatrixShape> shapes;
  std::vector<std::size_t> a_offset, u_offset, v_offset, s_offset;
  Kokkos::View<T*> a, u, v, s;
  std::vector<const T*> a_ptr;
  std::vector<T*> u_ptr, v_ptr, s_ptr;
  std::vector<int> lda, ldv;

  explicit ContiguousBatch(const std::vector<MatrixShape>& shapes_) : shapes(shapes_) {
    std::size_t na = 0, nu = 0, nv = 0, ns = 0;
    for (const auto& sh : shapes) {
      const std::size_t m = std::size_t(sh.rows), n = std::size_t(sh.cols), k = std::min(m, n);
      a_offset.push_back(na);
      u_offset.push_back(nu);
      v_offset.push_back(nv);
      s_offset.push_back(ns);
      na += m * n;
      nu += m * k;
      nv += n * k;
      ns += k;
      lda.push_back(std::max(1, sh.rows));
      ldv.push_back(std::max(1, sh.cols));
    }
    a = Kokkos::View<T*>("A", std::max<std::size_t>(na, 1));
    u = Kokkos::View<T*>("U", std::max<std::size_t>(nu, 1));
    v = Kokkos::View<T*>("V", std::max<std::size_t>(nv, 1));
    s = Kokkos::View<T*>("S", std::max<std::size_t>(ns, 1));
    fill_uniform(a, 42);
    for (std::size_t b = 0; b < shapes.size(); ++b) {
      a_ptr.push_back(a.data() + a_offset[b]);
      u_ptr.push_back(u.data() + u_offset[b]);
      v_ptr.push_back(v.data() + v_offset[b]);
      s_ptr.push_back(s.data() + s_offset[b]);
    }
  }

  double bytes() const {
    return double(a.extent(0) + u.extent(0) + v.extent(0) + s.extent(0)) * sizeof(T);
  }

  // Rank-3 (batch, rows, cols) Views of a uniform batch.
  int batch() const { return int(shapes.size()); }
  int m() const { return shapes[0].rows; }
  int n() const { return shapes[0].cols; }
  int k() const { return std::min(m(), n()); }
  Strided<T> uniform_a() const { return as_matrices(a.data(), batch(), m(), n(), m()); }
  Strided<T> uniform_u() const { return as_matrices(u.data(), batch(), m(), k(), m()); }
  Strided<T> uniform_v() const { return as_matrices(v.data(), batch(), n(), k(), n()); }
  using Values = Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  Values uniform_s() const { return Values(s.data(), std::size_t(batch()), std::size_t(k())); }

  // U and V from full m x m and n x n factors (uniform batch): their leading
  // k columns are their first m k and n k entries.
  void take_leading_columns(const Kokkos::View<T*>& full_u, const Kokkos::View<T*>& full_v) {
    using Rows = Kokkos::View<T**, Kokkos::LayoutStride>;
    const std::size_t B = std::size_t(batch()), M = std::size_t(m()), N = std::size_t(n()),
                      K = std::size_t(k());
    Kokkos::deep_copy(Rows(u.data(), Kokkos::LayoutStride(B, M * K, M * K, 1)),
                      Rows(full_u.data(), Kokkos::LayoutStride(B, M * M, M * K, 1)));
    Kokkos::deep_copy(Rows(v.data(), Kokkos::LayoutStride(B, N * K, N * K, 1)),
                      Rows(full_v.data(), Kokkos::LayoutStride(B, N * N, N * K, 1)));
  }

  // V from V^T (k x n per matrix, leading dimension k), as LAPACK returns it.
  void transpose_v_from(const Kokkos::View<T*>& vt) {
    auto hvt = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), vt);
    auto hv = Kokkos::create_mirror_view(v);
    for (std::size_t b = 0; b < shapes.size(); ++b) {
      const int n = shapes[b].cols, k = std::min(shapes[b].rows, n);
      for (int l = 0; l < k; ++l)
        for (int j = 0; j < n; ++j)
          hv(v_offset[b] + j + std::size_t(n) * l) = hvt(v_offset[b] + l + std::size_t(k) * j);
    }
    Kokkos::deep_copy(v, hv);
  }
};

/// A host copy of x(offset .. offset + count).
template <class T>
auto host_part(const Kokkos::View<T*>& x, std::size_t offset, std::size_t count) {
  return Kokkos::create_mirror_view_and_copy(
      Kokkos::HostSpace(), Kokkos::subview(x, std::make_pair(offset, offset + count)));
}

/// ||X^T X - I||_F of a rows x k column-major host copy X.
template <class X>
double orthogonality_of(const X& x, int rows, int k) {
  double o2 = 0;
  for (int p = 0; p < k; ++p)
    for (int q = 0; q < k; ++q) {
      double dot = 0;
      for (int i = 0; i < rows; ++i)
        dot += double(x(i + std::size_t(rows) * p)) * x(i + std::size_t(rows) * q);
      o2 += (dot - (p == q)) * (dot - (p == q));
    }
  return std::sqrt(o2);
}

/// The accuracy counters every SVD entry records: residual, orthU, orthV.
inline void record_residual_and_orthogonality(benchmark::State& state, double residual,
                                              double orth_u, double orth_v) {
  state.counters["residual"] = residual;
  state.counters["orthU"] = orth_u;
  state.counters["orthV"] = orth_v;
}

/// Counters residual = max ||A - U S V^T||_F / ||A||_F, orthU = max ||U^T U
/// - I||_F and orthV likewise, over the first four matrices (one when a check
/// costs over ~1e9 flops), computed on the host in double.
template <class T>
void record_accuracy(benchmark::State& state, const ContiguousBatch<T>& data) {
  double residual = 0, orth_u = 0, orth_v = 0;
  int checked = 0;
  for (std::size_t b = 0; b < data.shapes.size() && checked < 4; ++b) {
    const int m = data.shapes[b].rows, n = data.shapes[b].cols, k = std::min(m, n);
    if (k == 0)
      continue;
    if (checked > 0 && double(m) * n * k > 1.2e8)
      break;
    ++checked;
    const auto a = host_part(data.a, data.a_offset[b], std::size_t(m) * n);
    const auto u = host_part(data.u, data.u_offset[b], std::size_t(m) * k);
    const auto v = host_part(data.v, data.v_offset[b], std::size_t(n) * k);
    const auto s = host_part(data.s, data.s_offset[b], std::size_t(k));
    if (std::getenv("KWSVD_BENCH_DEBUG") != nullptr)
      std::fprintf(stderr, "debug b=%zu a0=%g a1=%g s0=%g u0=%g v0=%g\n", b, double(a(0)),
                   double(a(a.extent(0) - 1)), double(s(0)), double(u(0)), double(v(0)));
    double r2 = 0, a2 = 0;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        double usv = 0;
        for (int l = 0; l < k; ++l)
          usv += double(u(i + std::size_t(m) * l)) * s(l) * v(j + std::size_t(n) * l);
        const double aij = a(i + std::size_t(m) * j);
        r2 += (aij - usv) * (aij - usv);
        a2 += aij * aij;
      }
    residual = worse_of(residual, a2 > 0 ? std::sqrt(r2 / a2) : std::sqrt(r2));
    orth_u = worse_of(orth_u, orthogonality_of(u, m, k));
    orth_v = worse_of(orth_v, orthogonality_of(v, n, k));
  }
  record_residual_and_orthogonality(state, residual, orth_u, orth_v);
}

/// The r leading triplets of a uniform batch whose U and V hold r columns a
/// matrix, one matrix's after the other's (SvdOptions::rank,
/// gesvdaStridedBatched's rank), S all k values or the leading r at a
/// stride of k: counters residual = max sqrt(sum_l ||A v_l - sigma_l
/// u_l||^2) / ||A||_F over the r triplets, orthU and orthV over the r
/// columns, for the first four matrices, on the host in double.
template <class T>
void record_leading_accuracy(benchmark::State& state, const ContiguousBatch<T>& data, int r) {
  double residual = 0, orth_u = 0, orth_v = 0;
  const int m = data.m(), n = data.n();
  for (int b = 0; b < data.batch() && b < 4; ++b) {
    const auto a = host_part(data.a, data.a_offset[std::size_t(b)], std::size_t(m) * n);
    const auto u = host_part(data.u, std::size_t(b) * m * r, std::size_t(m) * r);
    const auto v = host_part(data.v, std::size_t(b) * n * r, std::size_t(n) * r);
    const auto s = host_part(data.s, data.s_offset[std::size_t(b)], std::size_t(r));
    double r2 = 0, a2 = 0;
    for (std::size_t e = 0; e < a.extent(0); ++e)
      a2 += double(a(e)) * double(a(e));
    for (int l = 0; l < r; ++l)
      for (int i = 0; i < m; ++i) {
        double av = 0;
        for (int j = 0; j < n; ++j)
          av += double(a(i + std::size_t(m) * j)) * v(j + std::size_t(n) * l);
        const double d = av - double(s(l)) * u(i + std::size_t(m) * l);
        r2 += d * d;
      }
    residual = worse_of(residual, a2 > 0 ? std::sqrt(r2 / a2) : std::sqrt(r2));
    orth_u = worse_of(orth_u, orthogonality_of(u, m, r));
    orth_v = worse_of(orth_v, orthogonality_of(v, n, r));
  }
  record_residual_and_orthogonality(state, residual, orth_u, orth_v);
  state.counters["rank"] = r;
}

/// Counter orthU (`left`) or orthV of a call that computed that side only,
/// over the first four matrices, computed on the host in double.
template <class T>
void record_side_orthogonality(benchmark::State& state, const ContiguousBatch<T>& data, bool left) {
  double orth = 0;
  for (std::size_t b = 0; b < data.shapes.size() && b < 4; ++b) {
    const int m = data.shapes[b].rows, n = data.shapes[b].cols, k = std::min(m, n);
    const int rows = left ? m : n;
    const auto x = left ? host_part(data.u, data.u_offset[b], std::size_t(m) * k)
                        : host_part(data.v, data.v_offset[b], std::size_t(n) * k);
    orth = worse_of(orth, orthogonality_of(x, rows, k));
  }
  state.counters[left ? "orthU" : "orthV"] = orth;
}

/// Counter values_gap of a values-only call: max |sum sigma^2 - ||A||_F^2| /
/// ||A||_F^2 over the first four matrices, computed on the host in double.
template <class T>
void record_values_gap(benchmark::State& state, const ContiguousBatch<T>& data) {
  double gap = 0;
  for (std::size_t b = 0; b < data.shapes.size() && b < 4; ++b) {
    const std::size_t mn = std::size_t(data.shapes[b].rows) * std::size_t(data.shapes[b].cols);
    const std::size_t k = std::size_t(std::min(data.shapes[b].rows, data.shapes[b].cols));
    const auto a = host_part(data.a, data.a_offset[b], mn);
    const auto s = host_part(data.s, data.s_offset[b], k);
    double a2 = 0, s2 = 0;
    for (std::size_t e = 0; e < mn; ++e)
      a2 += double(a(e)) * double(a(e));
    for (std::size_t l = 0; l < k; ++l)
      s2 += double(s(l)) * double(s(l));
    gap = std::max(gap, a2 > 0 ? std::abs(s2 - a2) / a2 : s2);
  }
  state.counters["values_gap"] = gap;
}

}  // namespace kwsvd::bench
