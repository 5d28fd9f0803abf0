// batched_gram against BLAS ?syrk, on whatever backend the tests were built for.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/oracle.hpp"
#include "kwsvd/kwsvd.hpp"

namespace {

using kwsvd::test::abs_gram;
using kwsvd::test::blas_gram;
using kwsvd::test::random_matrix;

using kwsvd::test::Case;

template <class C>
class BatchedGram : public ::testing::Test {
 public:
  using TestScalar = typename C::Scalar;
  using TestLayout = typename C::Layout;

  std::vector<std::vector<TestScalar>> make_batch(int batch, int m, int n, std::uint64_t seed) {
    std::vector<std::vector<TestScalar>> mats;
    for (int b = 0; b < batch; ++b)
      mats.push_back(random_matrix<TestScalar>(m, n, seed + b));
    return mats;
  }

  // B pre-filled with NaN, so an entry the kernel never writes fails the test.
  Kokkos::View<TestScalar***, TestLayout> poisoned_output(int batch, int n) {
    Kokkos::View<TestScalar***, TestLayout> B("B", batch, n, n);
    kwsvd::test::fill(B, std::numeric_limits<TestScalar>::quiet_NaN());
    return B;
  }

  // Every entry of B(b) within 2 gamma_m |A|^TestScalar|A| of BLAS (both carry at most
  // gamma_m |A|^TestScalar|A| rounding error).
  void expect_matches_blas(const std::vector<std::vector<TestScalar>>& mats, int m, int n,
                           const Kokkos::View<TestScalar***, TestLayout>& B, int skip = -1) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), B);
    const double tol = 2 * kwsvd::test::gamma<TestScalar>(m > 0 ? m : 1);
    for (std::size_t b = 0; b < mats.size(); ++b) {
      if (int(b) == skip)
        continue;
      const auto ref = blas_gram(mats[b], m, n);
      const auto scale = abs_gram(mats[b], m, n);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) {
          const std::size_t ij = i + std::size_t(n) * j;
          ASSERT_LE(std::abs(double(h(b, i, j)) - double(ref[ij])), tol * scale[ij])
              << "matrix " << b << " entry (" << i << ", " << j << ") of " << m << " x " << n;
        }
    }
  }

  void check_shape(int batch, int m, int n) {
    const auto mats = make_batch(batch, m, n, 1000u * m + n);
    auto A = kwsvd::test::to_device<TestScalar, TestLayout>(mats, m, n);
    auto B = poisoned_output(batch, n);
    kwsvd::batched_gram(A, B);
    expect_matches_blas(mats, m, n, B);
  }
};

using Cases = kwsvd::test::ScalarLayoutCases;
TYPED_TEST_SUITE(BatchedGram, Cases);

TYPED_TEST(BatchedGram, MatchesBlasOnTallMatrices) {
  this->check_shape(9, 37, 5);
}

TYPED_TEST(BatchedGram, MatchesBlasOnWideMatrices) {
  this->check_shape(5, 3, 12);
}

TYPED_TEST(BatchedGram, MatchesBlasOnSquareAndTiny) {
  this->check_shape(4, 32, 32);
  this->check_shape(3, 1, 1);
  this->check_shape(3, 2, 1);
}

TYPED_TEST(BatchedGram, ZeroRowsGiveZeroGram) {
  this->check_shape(3, 0, 4);
}

TYPED_TEST(BatchedGram, EmptyBatchAndZeroColumnsAreNoOps) {
  using T = typename TestFixture::TestScalar;
  using Layout = typename TestFixture::TestLayout;
  Kokkos::View<T***, Layout> A("A", 0, 5, 3), B("B", 0, 3, 3);
  EXPECT_NO_THROW(kwsvd::batched_gram(A, B));
  Kokkos::View<T***, Layout> A0("A", 2, 5, 0), B0("B", 2, 0, 0);
  EXPECT_NO_THROW(kwsvd::batched_gram(A0, B0));
}

// Many rows: the plan streams A through scratch in several chunks.
TYPED_TEST(BatchedGram, MatchesBlasWhenRowsExceedOneScratchChunk) {
  using T = typename TestFixture::TestScalar;
  const int m = 3001, n = 24;
  const auto limit = kwsvd::Impl::team_scratch_bytes_max<Kokkos::DefaultExecutionSpace>();
  ASSERT_GT(std::size_t(m) * n * sizeof(T), std::size_t(limit)) << "test no longer chunks";
  this->check_shape(3, m, n);
}

// A small forced chunk height exercises the ragged last chunk too.
TYPED_TEST(BatchedGram, RaggedChunksMatchBlas) {
  using T = typename TestFixture::TestScalar;
  using Layout = typename TestFixture::TestLayout;
  const int batch = 4, m = 45, n = 7;
  const auto mats = this->make_batch(batch, m, n, 77);
  auto A = kwsvd::test::to_device<T, Layout>(mats, m, n);
  auto B = this->poisoned_output(batch, n);
  auto plan = kwsvd::Impl::plan_gram_team<Kokkos::DefaultExecutionSpace, T>(m, n, 1 << 20);
  plan.chunk_rows = 8;  // 45 = 5 * 8 + 5
  plan.scratch_bytes = kwsvd::Impl::scratch_bytes_for<Kokkos::DefaultExecutionSpace, T>(8 * n) +
                       kwsvd::Impl::scratch_bytes_for<Kokkos::DefaultExecutionSpace, T>(
                           kwsvd::Impl::triangle_size(n));
  kwsvd::Impl::launch_batched_gram(Kokkos::DefaultExecutionSpace(), A, B, plan);
  this->expect_matches_blas(mats, m, n, B);
}

TYPED_TEST(BatchedGram, IsSymmetricAndDeterministic) {
  using T = typename TestFixture::TestScalar;
  using Layout = typename TestFixture::TestLayout;
  const int batch = 6, m = 200, n = 9;
  auto A = kwsvd::test::to_device<T, Layout>(this->make_batch(batch, m, n, 5), m, n);
  auto B1 = this->poisoned_output(batch, n), B2 = this->poisoned_output(batch, n);
  kwsvd::batched_gram(A, B1);
  kwsvd::batched_gram(A, B2);
  auto h1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), B1);
  auto h2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), B2);
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        ASSERT_EQ(h1(b, i, j), h1(b, j, i));
        ASSERT_EQ(h1(b, i, j), h2(b, i, j)) << "run-to-run difference";
      }
}

TYPED_TEST(BatchedGram, NanInOneMatrixLeavesOthersExact) {
  using T = typename TestFixture::TestScalar;
  using Layout = typename TestFixture::TestLayout;
  const int batch = 5, m = 20, n = 6, bad = 2;
  auto mats = this->make_batch(batch, m, n, 11);
  mats[bad][3 + m * 1] = std::numeric_limits<T>::quiet_NaN();
  mats[bad][4 + m * 2] = std::numeric_limits<T>::infinity();
  auto A = kwsvd::test::to_device<T, Layout>(mats, m, n);
  auto B = this->poisoned_output(batch, n);
  kwsvd::batched_gram(A, B);
  this->expect_matches_blas(mats, m, n, B, bad);
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), B);
  EXPECT_TRUE(std::isnan(h(bad, 1, 1)));
  EXPECT_TRUE(std::isnan(h(bad, 1, 2)));  // NaN * x + Inf * y
  EXPECT_TRUE(std::isinf(h(bad, 2, 2)));
}

TYPED_TEST(BatchedGram, RejectsMismatchedOutputWithShapesInMessage) {
  using T = typename TestFixture::TestScalar;
  using Layout = typename TestFixture::TestLayout;
  Kokkos::View<T***, Layout> A("A", 3, 10, 4), B("B", 3, 4, 5);
  try {
    kwsvd::batched_gram(A, B);
    FAIL() << "expected kwsvd::invalid_argument";
  } catch (const kwsvd::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("kwsvd::batched_gram"), std::string::npos) << what;
    EXPECT_NE(what.find("argument 'B'"), std::string::npos) << what;
    EXPECT_NE(what.find("(3, 4, 4)"), std::string::npos) << what;
    EXPECT_NE(what.find("got (3, 4, 5)"), std::string::npos) << what;
  }
  Kokkos::View<T***, Layout> B2("B", 2, 4, 4);
  EXPECT_THROW(kwsvd::batched_gram(A, B2), kwsvd::invalid_argument);
}

TYPED_TEST(BatchedGram, RejectsTooManyColumnsNamingTheLimit) {
  using T = typename TestFixture::TestScalar;
  using Layout = typename TestFixture::TestLayout;
  const int max_n = kwsvd::batched_gram_max_cols<T>();
  ASSERT_GT(max_n, 32);
  Kokkos::View<T***, Layout> A("A", 1, 4, max_n + 1), B("B", 1, max_n + 1, max_n + 1);
  try {
    kwsvd::batched_gram(A, B);
    FAIL() << "expected kwsvd::invalid_argument";
  } catch (const kwsvd::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("at most " + std::to_string(max_n)), std::string::npos)
        << e.what();
  }
  Kokkos::View<T***, Layout> A1("A", 1, 4, max_n), B1("B", 1, max_n, max_n);
  EXPECT_NO_THROW(kwsvd::batched_gram(A1, B1));
}

}  // namespace
