#pragma once
// Shared by the SVD benchmarks: batch storage, accuracy counters and the
// nominal flop count, so every SVD binary reports the same quantities.

#include <algorithm>
#include <cmath>

#include "bench_common.hpp"

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
    residual = std::max(residual, std::sqrt(r2 / a2));
    orth = std::max(orth, std::sqrt(o2));
  }
  state.counters["residual"] = residual;
  state.counters["orthU"] = orth;
}

template <class T>
void set_svd_rates(benchmark::State& state, int m, int n, int batch) {
  const double k = std::min(m, n);
  kwsvd::bench::set_rates(state, 22.0 * k * k * k * batch,
                          double(batch) * (double(m) * n + m * k + n * k + k) * sizeof(T));
}

}  // namespace kwsvd::bench
