// Example 03: one SVD call for a batch whose matrices all have different
// shapes (tiny, square, tall, wide, one beyond level-0 scratch), as a
// size-oblivious application would hand them over: a list of Views. The
// library sorts them into its level-0 group and its block-rotation group and
// runs each group in one set of launches; the residual of every matrix is
// checked on the host.
//
//   example_03_variable_batch

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <Kokkos_Core.hpp>

#include "kwsvd/kwsvd.hpp"

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  using Exec = Kokkos::DefaultExecutionSpace;
  using Matrix = Kokkos::View<double**, Kokkos::LayoutLeft>;
  using Values = Kokkos::View<double*>;
  const std::vector<kwsvd::MatrixShape> shapes = {{3, 3},    {12, 5},  {5, 12}, {32, 32},
                                                  {150, 40}, {40, 90}, {1, 7},  {200, 16}};
  std::vector<Matrix> A, U, V;
  std::vector<Values> S;
  for (std::size_t b = 0; b < shapes.size(); ++b) {
    const int m = shapes[b].rows, n = shapes[b].cols, k = std::min(m, n);
    A.emplace_back("A", m, n);
    U.emplace_back("U", m, k);
    V.emplace_back("V", n, k);
    S.emplace_back("S", k);
    const Matrix a = A.back();
    const double shift = double(b);
    Kokkos::parallel_for(
        "example::fill", Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2>>({0, 0}, {m, n}),
        KOKKOS_LAMBDA(const int i, const int j) {
          a(i, j) = 1.0 / (1.0 + i + 0.7 * j + shift) + (i == j ? 2.0 : 0.0);
        });
  }
  Kokkos::View<kwsvd::SvdInfo*> info("info", shapes.size());

  kwsvd::VariableBatchedSvd<Exec, double> svd(Exec(), shapes);  // plan once, reuse
  std::printf("%zu matrices: %d at level 0, %d by block rotations (w = %d)\n", svd.size(),
              svd.level0_count(), svd.block_count(), svd.block_width());
  svd.compute(A, S, U, V, info);

  auto hinfo = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
  int failures = 0;
  for (std::size_t b = 0; b < shapes.size(); ++b) {
    const int m = shapes[b].rows, n = shapes[b].cols, k = std::min(m, n);
    auto a = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A[b]);
    auto u = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), U[b]);
    auto v = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), V[b]);
    auto s = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), S[b]);
    double r2 = 0, a2 = 0;
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double usv = 0;
        for (int l = 0; l < k; ++l)
          usv += u(i, l) * s(l) * v(j, l);
        r2 += (a(i, j) - usv) * (a(i, j) - usv);
        a2 += a(i, j) * a(i, j);
      }
    const double residual = std::sqrt(r2 / a2);
    failures += residual < 1e-13 && hinfo(b).converged ? 0 : 1;
    std::printf(
        "  %3d x %-3d sigma_max %8.4f sigma_min %.3e  sweeps %2d  ||A - U S V^T|| / ||A|| "
        "%.1e\n",
        m, n, s(0), s(k - 1), hinfo(b).sweeps, residual);
  }
  std::printf(failures == 0 ? "all matrices decomposed\n" : "%d matrices failed\n", failures);
  return failures == 0 ? 0 : 1;
}
