// Example 01: the SVD of a uniform batch of matrices of any size.
//
// Fills a batch of m x n matrices on the device, computes A = U S V^T for all
// of them in one call, and prints each matrix's singular values with its
// residual ||A - U S V^T||_F / ||A||_F and orthogonality ||U^T U - I||_F.
//
//   example_01_uniform_batch [--batch N] [--m M] [--n N]

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>

#include "kwsvd/kwsvd.hpp"

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  int batch = 4, m = 6, n = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--batch"))
      batch = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--m"))
      m = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--n"))
      n = std::atoi(argv[i + 1]);
  }
  const int k = m < n ? m : n;
  kwsvd::print_configuration(std::cout);

  // Views in the default memory space: (batch, rows, cols).
  Kokkos::View<double***> A("A", batch, m, n), U("U", batch, m, k), V("V", batch, n, k);
  Kokkos::View<double**> S("S", batch, k);
  Kokkos::View<kwsvd::SvdInfo*> info("info", batch);
  Kokkos::Random_XorShift64_Pool<> pool(2024);
  Kokkos::fill_random(A, pool, -1.0, 1.0);

  // Shapes that fit one team's scratch run in the level-0 kernel, larger
  // ones through the W-cycle's block rotations; the call picks.
  kwsvd::batched_svd(Kokkos::DefaultExecutionSpace(), A, S, U, V, info);

  auto a = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A);
  auto s = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), S);
  auto u = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), U);
  auto v = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), V);
  auto in = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
  std::printf("batch of %d matrices, %d x %d\n", batch, m, n);
  for (int b = 0; b < batch; ++b) {
    double res = 0, nrm = 0, orth = 0;
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double usv = 0;
        for (int l = 0; l < k; ++l)
          usv += u(b, i, l) * s(b, l) * v(b, j, l);
        res += (a(b, i, j) - usv) * (a(b, i, j) - usv);
        nrm += a(b, i, j) * a(b, i, j);
      }
    for (int p = 0; p < k; ++p)
      for (int q = 0; q < k; ++q) {
        double dot = 0;
        for (int i = 0; i < m; ++i)
          dot += u(b, i, p) * u(b, i, q);
        orth += (dot - (p == q)) * (dot - (p == q));
      }
    std::printf("matrix %d: sigma =", b);
    for (int l = 0; l < k; ++l)
      std::printf(" %.6f", s(b, l));
    std::printf("\n  residual %.2e  orthogonality(U) %.2e  sweeps %d%s\n", std::sqrt(res / nrm),
                std::sqrt(orth), in(b).sweeps, in(b).converged ? "" : "  (not converged)");
  }
  return 0;
}
