// Links kwsvd::kwsvd from an install and checks one batched SVD: exits
// non-zero unless the singular values of diag(3, 2, 1) (permuted, negated)
// come back sorted and exact.
#include <cmath>
#include <cstdio>

#include <kwsvd/kwsvd.hpp>

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  Kokkos::View<double***> A("A", 2, 3, 3), U("U", 2, 3, 3), V("V", 2, 3, 3);
  Kokkos::View<double**> S("S", 2, 3);
  Kokkos::View<kwsvd::SvdInfo*> info("info", 2);
  auto a = Kokkos::create_mirror_view(A);
  for (int b = 0; b < 2; ++b) {
    a(b, 0, 1) = 1;
    a(b, 1, 2) = -3;
    a(b, 2, 0) = 2;
  }
  Kokkos::deep_copy(A, a);
  kwsvd::batched_small_svd(Kokkos::DefaultExecutionSpace(), A, S, U, V, info);
  auto s = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), S);
  int bad = 0;
  for (int b = 0; b < 2; ++b)
    for (int l = 0; l < 3; ++l)
      bad += std::abs(s(b, l) - (3.0 - l)) > 1e-14;
  std::printf("kwsvd %s from the installed package: sigma = %g %g %g -> %s\n", kwsvd::version(),
              s(0, 0), s(0, 1), s(0, 2), bad ? "WRONG" : "ok");
  return bad ? 1 : 0;
}
