// The one-sided jobs of kwsvd::batched_svd (Job::values_and_left_vectors,
// Job::values_and_right_vectors): U or V alone, the other side not computed.
// One-sided Jacobi's rotations of A do not depend on whether V is kept, so
// where the plan is the same as the full job's (the W-cycle's blocks, small
// level-0 shapes) the computed side, the values and the sweeps are the full
// call's to the bit; everywhere the side is orthonormal and holds singular
// vectors: X^T B X = S^2 with B = A A^T for U and A^T A for V
// (kwsvd::test::side_errors).

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

using kwsvd::Job;
using kwsvd::test::error_of;
using kwsvd::test::random_matrix;
using Exec = Kokkos::DefaultExecutionSpace;

template <class C>
class OneSidedJobs : public kwsvd::test::ScalarLayoutTest<C> {
 public:
  using typename kwsvd::test::ScalarLayoutTest<C>::Scalar;
  using typename kwsvd::test::ScalarLayoutTest<C>::Layout;

  // One side's results of a call: S, the side's vectors (column-major, m x k
  // for U, n x k for V) and info, per matrix.
  struct SideResult {
    std::vector<std::vector<Scalar>> s, x;
    std::vector<kwsvd::SvdInfo> info;
  };

  // A call of `job` through a BatchedSvd; the side it does not compute is
  // passed as an empty View, the other pre-filled with NaN.
  static SideResult run_side(const std::vector<std::vector<Scalar>>& mats, int m, int n,
                             kwsvd::SvdOptions options, Job job) {
    options.job = job;
    const auto r = kwsvd::test::run_batched_svd<Scalar, Layout>(mats, m, n, options);
    return {r.s, job == Job::values_and_left_vectors ? r.u : r.v, r.info};
  }
};

using Cases = kwsvd::test::ScalarLayoutCases;
TYPED_TEST_SUITE(OneSidedJobs, Cases);

// Tall and wide, in the level-0 kernel (20 x 12, 12 x 20), where a left-only
// double 60 x 60 fits level-0 scratch without V only (the full job sweeps it
// whole, V in memory), through the W-cycle's blocks at one level and at two.
TYPED_TEST(OneSidedJobs, EachSideIsTheFullSvdsAndHoldsSingularVectors) {
  using T = typename TestFixture::Scalar;
  const bool dbl = sizeof(T) == 8;
  const std::vector<kwsvd::test::ShapeCase> cases = {
      {20, 12, true, {}},
      {12, 20, true, {}},
      {60, 60, true, {}},
      {90, 70, false, {}},
      {40, 110, false, {}},
      {150, 120, false, {}},
      {120, 150, false, kwsvd::test::two_level_widths<T>()}};
  const double bound = TestFixture::bound();
  for (const auto& c : cases) {
    kwsvd::SvdOptions options;
    options.level0 = c.level0;
    options.block_scratch_bytes = 32768;
    options.level_widths = std::vector<int>(c.widths);  // GCC 12 -O3 mistakes a copy's memmove
    const auto mats = kwsvd::test::rank_deficient_batch<T>(c.m, c.n);
    const auto full = kwsvd::test::run_svd_batch<T, typename TestFixture::Layout>(
        mats, c.m, c.n,
        [&](const auto& A, const auto& S, const auto& U, const auto& V, const auto& info) {
          kwsvd::batched_svd(Exec(), A, S, U, V, info, options);
        });
    for (const Job job : {Job::values_and_left_vectors, Job::values_and_right_vectors}) {
      const bool left = job == Job::values_and_left_vectors;
      const std::string at = std::to_string(c.m) + " x " + std::to_string(c.n) +
                             (left ? " left" : " right") + (c.level0 ? "" : " blocks");
      kwsvd::SvdOptions one = options;
      one.job = job;
      // The same plan as the full job's, unless the side needs no V in
      // scratch where the full job does not fit (60 x 60 in double).
      const bool same_plan = kwsvd::BatchedSvd<Exec, T>(Exec(), 3, c.m, c.n, one).level0() ==
                             kwsvd::BatchedSvd<Exec, T>(Exec(), 3, c.m, c.n, options).level0();
      if (c.m == 60 && dbl) {
        EXPECT_EQ(same_plan, (c.m >= c.n) != left) << at;
      }
      const auto r = TestFixture::run_side(mats, c.m, c.n, options, job);
      for (std::size_t b = 0; b < mats.size(); ++b) {
        const std::string mat = at + " matrix " + std::to_string(b);
        EXPECT_EQ(r.info[b].converged, 1) << mat;
        EXPECT_EQ(r.info[b].nonfinite_input, 0) << mat;
        const auto e = kwsvd::test::side_errors(mats[b], c.m, c.n, r.s[b], r.x[b], left);
        EXPECT_LT(e.orthogonality, bound) << mat << ": orthogonality";
        EXPECT_LT(e.eigen, bound) << mat << ": X^T B X - S^2";
        const auto& ref = left ? full.u[b] : full.v[b];
        for (std::size_t l = 0; l < r.s[b].size(); ++l) {
          if (l > 0) {
            ASSERT_GE(r.s[b][l - 1], r.s[b][l]) << mat << ": values not descending";
          }
          if (same_plan)
            ASSERT_EQ(r.s[b][l], full.s[b][l]) << mat << " value " << l;
          else
            ASSERT_NEAR(double(r.s[b][l]), double(full.s[b][l]), 4 * bound * double(full.s[b][0]))
                << mat << " value " << l;
        }
        if (same_plan) {
          EXPECT_EQ(r.info[b].sweeps, full.info[b].sweeps) << mat;
          for (std::size_t i = 0; i < ref.size(); ++i)
            ASSERT_EQ(r.x[b][i], ref[i]) << mat << " entry " << i;
        }
      }
    }
  }
}

// A matrix with NaN gets NaN values and vectors on the side computed, and
// the others of its batch are unaffected (level 0 and blocks).
TYPED_TEST(OneSidedJobs, NonFiniteMatrixPoisonsOnlyItsOwnSide) {
  using T = typename TestFixture::Scalar;
  for (const bool level0 : {true, false}) {
    const int m = 30, n = 20;
    const auto clean_mats = kwsvd::test::rank_deficient_batch<T>(m, n);
    auto mats = clean_mats;
    mats[1][7] = std::numeric_limits<T>::quiet_NaN();
    kwsvd::SvdOptions options;
    options.level0 = level0;
    const auto clean =
        TestFixture::run_side(clean_mats, m, n, options, Job::values_and_left_vectors);
    const auto r = TestFixture::run_side(mats, m, n, options, Job::values_and_left_vectors);
    EXPECT_EQ(r.info[1].nonfinite_input, 1);
    EXPECT_EQ(r.info[1].converged, 0);
    for (const T x : r.x[1])
      ASSERT_TRUE(std::isnan(double(x)));
    for (const T s : r.s[1])
      ASSERT_TRUE(std::isnan(double(s)));
    for (std::size_t b : {std::size_t(0), std::size_t(2)}) {
      EXPECT_EQ(r.s[b], clean.s[b]) << level0 << " " << b;
      EXPECT_EQ(r.x[b], clean.x[b]) << level0 << " " << b;
    }
  }
}

// The side a job does not compute must be an empty View; the side it
// computes has the full call's shape; Job::values takes no vectors; an
// unknown job is refused; the level-0 entry point takes the jobs too.
TYPED_TEST(OneSidedJobs, ArgumentsNameTheSideAndTheJob) {
  using T = typename TestFixture::Scalar;
  const int m = 20, n = 12;
  typename TestFixture::Matrices A("A", 2, m, n), U("U", 2, m, n), V("V", 2, n, n),
      Ushort("U", 2, m - 1, n);
  Kokkos::View<T**, typename TestFixture::Layout> S("S", 2, n);
  Kokkos::View<kwsvd::SvdInfo*> info("info", 2);
  kwsvd::SvdOptions left, right, values, unknown;
  left.job = Job::values_and_left_vectors;
  right.job = Job::values_and_right_vectors;
  values.job = Job::values;
  unknown.job = Job(7);
  kwsvd::BatchedSvd<Exec, T> left_svd(Exec(), 2, m, n, left), right_svd(Exec(), 2, m, n, right),
      values_svd(Exec(), 2, m, n, values);
  std::string w = error_of([&] { left_svd.compute(A, S, U, V, info); });
  EXPECT_NE(w.find("argument 'V' must be empty: options.job = Job::values_and_left_vectors"),
            std::string::npos)
      << w;
  w = error_of([&] { right_svd.compute(A, S, U, V, info); });
  EXPECT_NE(w.find("argument 'U' must be empty"), std::string::npos) << w;
  w = error_of([&] { left_svd.compute(A, S, Ushort, typename TestFixture::Matrices(), info); });
  EXPECT_NE(w.find("'U'"), std::string::npos) << w;
  EXPECT_NE(w.find("(batch, m, min(m, n))"), std::string::npos) << w;
  w = error_of([&] { values_svd.compute(A, S, U, V, info); });
  EXPECT_NE(w.find("'options.job' is Job::values"), std::string::npos) << w;
  w = error_of([&] { kwsvd::BatchedSvd<Exec, T>(Exec(), 2, m, n, unknown); });
  EXPECT_NE(w.find("Job::values_and_right_vectors, got 7"), std::string::npos) << w;
  // Values only is allowed on a one-sided handle.
  EXPECT_EQ(error_of([&] { left_svd.compute(A, S, info); }), error_of([] {}));
  // The level-0 entry point: the same rules, the same results as the handle.
  w = error_of([&] { kwsvd::batched_small_svd(Exec(), A, S, U, V, info, right); });
  EXPECT_NE(w.find("argument 'U' must be empty"), std::string::npos) << w;
  const auto mats = kwsvd::test::rank_deficient_batch<T>(m, n);
  const auto ref = TestFixture::run_side(mats, m, n, {}, Job::values_and_right_vectors);
  auto Ad = kwsvd::test::to_device<T, typename TestFixture::Layout>(mats, m, n);
  typename TestFixture::Matrices V3("V", 3, n, n);
  Kokkos::View<T**, typename TestFixture::Layout> S3("S", 3, n);
  Kokkos::View<kwsvd::SvdInfo*> info3("info", 3);
  kwsvd::batched_small_svd(Exec(), Ad, S3, typename TestFixture::Matrices(), V3, info3, right);
  auto hv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), V3);
  for (int b = 0; b < 3; ++b)
    for (int l = 0; l < n; ++l)
      for (int j = 0; j < n; ++j)
        ASSERT_EQ(hv(b, j, l), ref.x[std::size_t(b)][j + std::size_t(n) * l]) << b;
}

// The raw-pointer form: a null U or V leaves that side out, the job taken
// from the pointers, or checked against options.job where it names one.
TYPED_TEST(OneSidedJobs, RawPointerFormTakesTheSideFromTheNullPointer) {
  using T = typename TestFixture::Scalar;
  const int batch = 3, m = 45, n = 30, k = 30, lda = m + 3, ldv = n + 2;
  const long long sa = (long long)lda * n, ss = k, sv = (long long)ldv * k;
  const auto mats = kwsvd::test::rank_deficient_batch<T>(m, n);
  kwsvd::SvdOptions blocks;
  blocks.level0 = false;
  const auto ref = TestFixture::run_side(mats, m, n, blocks, Job::values_and_right_vectors);
  const auto A = kwsvd::test::to_device_strided(mats, m, n, lda, sa);
  Kokkos::View<T*> S("S", batch * ss), V("V", batch * sv);
  Kokkos::View<kwsvd::SvdInfo*> info("info", batch);
  T* no = nullptr;
  kwsvd::batched_svd(Exec(), batch, m, n, A.data(), lda, sa, S.data(), ss, no, 0, 0, V.data(), ldv,
                     sv, info.data(), blocks);
  auto hv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), V);
  for (int b = 0; b < batch; ++b)
    for (int l = 0; l < k; ++l)
      for (int j = 0; j < n; ++j)
        ASSERT_EQ(hv(b * sv + j + (long long)ldv * l),
                  ref.x[std::size_t(b)][j + std::size_t(n) * l]);
  kwsvd::SvdOptions left = blocks;
  left.job = Job::values_and_left_vectors;
  std::string w = error_of([&] {
    kwsvd::batched_svd(Exec(), batch, m, n, A.data(), lda, sa, S.data(), ss, no, 0, 0, V.data(),
                       ldv, sv, info.data(), left);
  });
  EXPECT_NE(w.find("argument 'V' must be null: options.job = Job::values_and_left_vectors"),
            std::string::npos)
      << w;
}

}  // namespace
