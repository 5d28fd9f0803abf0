// The public calls on other spaces than the default ones.
// - HostExecutionSpace: the host execution space with host Views. In a device
//   build (CUDA, HIP) this is a second backend in the same program: a caller
//   with a few matrices already on the host can solve them there, and the
//   kernels, plans and scratch sizes must follow that execution space, not
//   the device's. On host builds it is the default execution space again.
// - SharedMemorySpaces: the default execution space on Views in Kokkos's
//   SharedSpace and SharedHostPinnedSpace (CUDA: managed and pinned host
//   memory; Kokkos 4.0 and later), which applications use for data both
//   sides touch. The device reads and writes them in place.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/oracle.hpp"
#include "common/svd_batch.hpp"
#include "kwsvd/kwsvd.hpp"

namespace {

using Host = Kokkos::DefaultHostExecutionSpace;
using kwsvd::test::BatchResult;
using kwsvd::test::expect_accurate;
using kwsvd::test::random_matrix;

template <class T>
class HostExecutionSpace : public ::testing::Test {};
using Scalars = ::testing::Types<double, float>;
TYPED_TEST_SUITE(HostExecutionSpace, Scalars);

// run_svd_batch's Views (NaN-filled outputs) mirrored to the host, the call
// made there, and the results copied back for its checks.
template <class T, class Layout>
BatchResult<T> run_on_host(const std::vector<std::vector<T>>& mats, int m, int n) {
  return kwsvd::test::run_svd_batch<T, Layout>(
      mats, m, n,
      [&](const auto& A, const auto& S, const auto& U, const auto& V, const auto& info) {
        auto hA = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A);
        auto hS = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), S);
        auto hU = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), U);
        auto hV = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), V);
        auto hinfo = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
        kwsvd::batched_svd(Host(), hA, hS, hU, hV, hinfo);
        Host().fence();
        Kokkos::deep_copy(S, hS);
        Kokkos::deep_copy(U, hU);
        Kokkos::deep_copy(V, hV);
        Kokkos::deep_copy(info, hinfo);
      });
}

// Level 0 (32 x 32, 40 x 24), the blocks (200 x 150, and 130 x 300 through
// the transpose) and a tall matrix, both layouts.
TYPED_TEST(HostExecutionSpace, UniformBatchesAtLevelZeroAndByBlocks) {
  using T = TypeParam;
  for (auto [m, n] : {std::pair{32, 32}, std::pair{40, 24}, std::pair{200, 150},
                      std::pair{130, 300}, std::pair{3000, 5}}) {
    std::vector<std::vector<T>> mats;
    for (int b = 0; b < 2; ++b)
      mats.push_back(random_matrix<T>(m, n, 40u + b + m));
    expect_accurate(mats, m, n, run_on_host<T, Kokkos::LayoutLeft>(mats, m, n), "host, left");
    expect_accurate(mats, m, n, run_on_host<T, Kokkos::LayoutRight>(mats, m, n), "host, right");
  }
}

// A variable batch of host Views: level-0 classes and blocked matrices in one
// call, and a poisoned matrix that leaves the others accurate.
TYPED_TEST(HostExecutionSpace, VariableBatchOfHostViews) {
  using T = TypeParam;
  using Matrix = Kokkos::View<T**, Kokkos::LayoutLeft, Kokkos::HostSpace>;
  using Values = Kokkos::View<T*, Kokkos::HostSpace>;
  const std::vector<std::pair<int, int>> shapes = {{1, 1}, {9, 30}, {64, 64}, {150, 90}, {33, 7}};
  std::vector<std::vector<T>> mats;
  std::vector<Matrix> A, U, V;
  std::vector<Values> S;
  for (std::size_t b = 0; b < shapes.size(); ++b) {
    const auto [m, n] = shapes[b];
    const int k = std::min(m, n);
    mats.push_back(random_matrix<T>(m, n, 70u + b));
    A.emplace_back("A", m, n);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i)
        A.back()(i, j) = mats.back()[i + std::size_t(m) * j];
    U.emplace_back("U", m, k);
    V.emplace_back("V", n, k);
    S.emplace_back("S", k);
  }
  A[3](5, 7) = std::numeric_limits<T>::quiet_NaN();
  Kokkos::View<kwsvd::SvdInfo*, Kokkos::HostSpace> info("info", shapes.size());
  kwsvd::batched_svd(Host(), A, S, U, V, info);
  Host().fence();
  for (std::size_t b = 0; b < shapes.size(); ++b) {
    const auto [m, n] = shapes[b];
    const int k = std::min(m, n);
    if (b == 3) {
      EXPECT_EQ(info(b).nonfinite_input, 1);
      EXPECT_TRUE(std::isnan(S[b](0)));
      continue;
    }
    BatchResult<T> r;
    r.s.emplace_back(S[b].data(), S[b].data() + k);
    r.u.emplace_back(U[b].data(), U[b].data() + std::size_t(m) * k);
    r.v.emplace_back(V[b].data(), V[b].data() + std::size_t(n) * k);
    r.info.push_back(info(b));
    expect_accurate({mats[b]}, m, n, r, "host, variable batch");
  }
}

// batched_gram_evd and batched_gram on the host: eigenvalues of A^T A against
// LAPACK's, B J = J Lambda.
TYPED_TEST(HostExecutionSpace, GramAndGramEvd) {
  using T = TypeParam;
  const int batch = 3, m = 40, n = 16;
  Kokkos::View<T***, Kokkos::LayoutRight, Kokkos::HostSpace> A("A", batch, m, n),
      B("B", batch, n, n), J("J", batch, n, n);
  Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::HostSpace> lambda("lambda", batch, n);
  Kokkos::View<kwsvd::SvdInfo*, Kokkos::HostSpace> info("info", batch);
  std::vector<std::vector<T>> mats;
  for (int b = 0; b < batch; ++b) {
    mats.push_back(random_matrix<T>(m, n, 90u + b));
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i)
        A(b, i, j) = mats.back()[i + std::size_t(m) * j];
  }
  kwsvd::batched_gram(Host(), A, B);
  kwsvd::batched_gram_evd(Host(), B, lambda, J, info);
  Host().fence();
  const double u = std::numeric_limits<T>::epsilon() / 2;
  for (int b = 0; b < batch; ++b) {
    const auto s = kwsvd::test::lapack_singular_values(mats[std::size_t(b)], m, n);
    EXPECT_EQ(info(b).converged, 1);
    const double norm = double(s[0]) * double(s[0]);  // ||B||_2
    double residual = 0;
    for (int l = 0; l < n; ++l) {
      EXPECT_NEAR(double(lambda(b, l)), double(s[l]) * double(s[l]), 30 * u * norm)
          << b << " " << l;
      for (int i = 0; i < n; ++i) {
        double bj = 0;
        for (int j = 0; j < n; ++j)
          bj += double(B(b, i, j)) * double(J(b, j, l));
        residual = kwsvd::test::worse_of(residual,
                                         std::abs(bj - double(J(b, i, l)) * double(lambda(b, l))));
      }
    }
    EXPECT_LT(residual, 30 * u * n * norm) << "matrix " << b;
  }
}

// Fills shared Views on the host, calls on the default execution space, and
// reads the results on the host after a fence.
template <class T, class Space>
void expect_accurate_in_space(int batch, int m, int n, const std::string& what) {
  const int k = std::min(m, n);
  Kokkos::View<T***, Kokkos::LayoutLeft, Space> A("A", batch, m, n), U("U", batch, m, k),
      V("V", batch, n, k);
  Kokkos::View<T**, Kokkos::LayoutLeft, Space> S("S", batch, k);
  Kokkos::View<kwsvd::SvdInfo*, Space> info("info", batch);
  Kokkos::fence();
  // Outputs NaN, so that an entry never written fails the checks.
  const T nan = std::numeric_limits<T>::quiet_NaN();
  std::vector<std::vector<T>> mats;
  for (int b = 0; b < batch; ++b) {
    mats.push_back(random_matrix<T>(m, n, 60u + b + m));
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i)
        A(b, i, j) = mats.back()[i + std::size_t(m) * j];
    for (int l = 0; l < k; ++l) {
      S(b, l) = nan;
      for (int i = 0; i < m; ++i)
        U(b, i, l) = nan;
      for (int j = 0; j < n; ++j)
        V(b, j, l) = nan;
    }
  }
  kwsvd::batched_svd(Kokkos::DefaultExecutionSpace(), A, S, U, V, info);
  Kokkos::fence();
  expect_accurate(mats, m, n, kwsvd::test::batch_results<T>(S, U, V, info, m, n), what);
}

template <class T>
class SharedMemorySpaces : public ::testing::Test {};
TYPED_TEST_SUITE(SharedMemorySpaces, Scalars);

// Level 0 (32 x 32) and the blocks (200 x 150).
TYPED_TEST(SharedMemorySpaces, DefaultExecutionSpaceReadsAndWritesThemInPlace) {
#ifdef KOKKOS_HAS_SHARED_SPACE
  for (auto [m, n] : {std::pair{32, 32}, std::pair{200, 150}})
    expect_accurate_in_space<TypeParam, Kokkos::SharedSpace>(3, m, n, "SharedSpace");
#endif
#ifdef KOKKOS_HAS_SHARED_HOST_PINNED_SPACE
  for (auto [m, n] : {std::pair{32, 32}, std::pair{200, 150}})
    expect_accurate_in_space<TypeParam, Kokkos::SharedHostPinnedSpace>(3, m, n,
                                                                       "SharedHostPinnedSpace");
#endif
#if !defined(KOKKOS_HAS_SHARED_SPACE) && !defined(KOKKOS_HAS_SHARED_HOST_PINNED_SPACE)
  GTEST_SKIP() << "this Kokkos has no shared memory spaces (before 4.0)";
#endif
}

}  // namespace
