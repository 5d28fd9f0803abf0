// kwsvd::batched_small_svd (the level-0 one-sided Jacobi team kernel) against
// LAPACKE, with seed 002's spectra and accuracy metrics e1..e4 (< 30 u).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/oracle.hpp"
#include "common/svd_batch.hpp"
#include "kwsvd/kwsvd.hpp"

namespace {

using kwsvd::test::error_of;
using kwsvd::test::matrix_with_spectrum;
using kwsvd::test::random_matrix;
using kwsvd::test::svd_errors;
using Exec = Kokkos::DefaultExecutionSpace;

using kwsvd::test::Case;

template <class T>
using BatchResult = kwsvd::test::BatchResult<T>;

template <class C>
class SmallSvd : public ::testing::Test {
 public:
  using TestScalar = typename C::Scalar;
  using TestLayout = typename C::Layout;
  // Inputs and outputs of one call for a batch of m x n matrices.
  struct Views {
    Kokkos::View<TestScalar***, TestLayout> A, U, V;
    Kokkos::View<TestScalar**, TestLayout> S;
    Kokkos::View<kwsvd::SvdInfo*> info;
  };
  static Views views(int batch, int m, int n) {
    const int k = std::min(m, n);
    return {Kokkos::View<TestScalar***, TestLayout>("A", batch, m, n),
            Kokkos::View<TestScalar***, TestLayout>("U", batch, m, k),
            Kokkos::View<TestScalar***, TestLayout>("V", batch, n, k),
            Kokkos::View<TestScalar**, TestLayout>("S", batch, k),
            Kokkos::View<kwsvd::SvdInfo*>("info", batch)};
  }

  static double unit_roundoff() { return std::numeric_limits<TestScalar>::epsilon() / 2; }

  // Runs one batched call on mats (all m x n); outputs pre-filled with NaN so
  // an entry the kernel never writes fails the checks.
  BatchResult<TestScalar> run(const std::vector<std::vector<TestScalar>>& mats, int m, int n,
                              kwsvd::SvdOptions options = {}) {
    return kwsvd::test::run_svd_batch<TestScalar, TestLayout>(
        mats, m, n,
        [&](const auto& A, const auto& S, const auto& U, const auto& V, const auto& info) {
          kwsvd::batched_small_svd(Exec(), A, S, U, V, info, options);
        });
  }

  // One level-0 launch on mats (all m x n) with a given plan and lanes
  // (halved to what the backend has, as the call does).
  BatchResult<TestScalar> run_planned(const std::vector<std::vector<TestScalar>>& mats, int m,
                                      int n, const kwsvd::Impl::OneSidedJacobiShape& shape,
                                      int lanes) {
    while (lanes > kwsvd::Impl::vector_length_max<Exec>())
      lanes /= 2;
    return kwsvd::test::run_svd_batch<TestScalar, TestLayout>(
        mats, m, n,
        [&](const auto& A, const auto& S, const auto& U, const auto& V, const auto& info) {
          kwsvd::Impl::launch_uniform_small_svd(Exec(), A, S, U, V, info, kwsvd::SvdOptions{},
                                                kwsvd::Job::values_and_vectors, shape, lanes);
        });
  }

  void expect_accurate(const std::vector<std::vector<TestScalar>>& mats, int m, int n,
                       const BatchResult<TestScalar>& r, const std::string& what) {
    kwsvd::test::expect_accurate(mats, m, n, r, what);
  }

  void check_random(int batch, int m, int n) {
    std::vector<std::vector<TestScalar>> mats;
    for (int b = 0; b < batch; ++b)
      mats.push_back(random_matrix<TestScalar>(m, n, 31u * b + m));
    expect_accurate(mats, m, n, run(mats, m, n), "random");
  }
};

using Cases = kwsvd::test::ScalarLayoutCases;
TYPED_TEST_SUITE(SmallSvd, Cases);

TYPED_TEST(SmallSvd, MatchesLapackOnRandomMatrices) {
  for (int mn : {1, 2, 3, 8, 16, 24, 32})
    this->check_random(3, mn, mn);
}

TYPED_TEST(SmallSvd, TallWideAndOddShapes) {
  this->check_random(3, 32, 7);
  this->check_random(3, 7, 32);  // m < n runs on the transpose
  this->check_random(2, 17, 17);
  this->check_random(2, 1, 9);
  this->check_random(2, 9, 1);
  this->check_random(2, 31, 15);
}

// Seed 002, Table 1: six spectra, kappa = 1e10 (double) or 1e5 (float).
TYPED_TEST(SmallSvd, SixSpectraMeetSeed002Thresholds) {
  using T = typename TestFixture::TestScalar;
  const double kappa = sizeof(T) == 8 ? 1e10 : 1e5;
  for (auto [m, n] : {std::pair{32, 32}, std::pair{16, 16}, std::pair{32, 20}, std::pair{13, 24}}) {
    for (const std::string name : {"random", "arith", "cluster0", "cluster1", "logrand", "geo"}) {
      const auto mats = kwsvd::test::spectrum_batch<T>(name, m, n, kappa, 3);
      this->expect_accurate(mats, m, n, this->run(mats, m, n), name);
    }
  }
}

// V is the product of a column's hundreds of rotations and is never
// renormalized, so its orthogonality shows whether each rotation has
// c^2 + s^2 = 1 without a bias (jacobi_rotation). Seed 002's e3 bound (30 u
// after dividing by n) would pass a bias of 1 u a rotation; this bound is
// on ||I - V^T V||_1 itself, random 32 x 32.
TYPED_TEST(SmallSvd, RotationsKeepVOrthogonalToRounding) {
  using T = typename TestFixture::TestScalar;
  const int n = 32;
  std::vector<std::vector<T>> mats;
  for (int b = 0; b < 4; ++b)
    mats.push_back(random_matrix<T>(n, n, 101u + b));
  const auto r = this->run(mats, n, n);
  for (int b = 0; b < 4; ++b) {
    const auto e = svd_errors(mats[b], n, n, r.s[b], r.u[b], r.v[b]);
    // Measured: 64 to 79 u on the H100, 70 to 91 u on the host; with
    // jacobi_tangent and rotation_cosine 130 to 155 u on the host in double.
    EXPECT_LE(e.e3 * n, 100 * this->unit_roundoff()) << "matrix " << b;
  }
}

TYPED_TEST(SmallSvd, ZeroMatrixGivesZeroValuesAndOrthonormalVectors) {
  using T = typename TestFixture::TestScalar;
  const int m = 5, n = 3;
  std::vector<std::vector<T>> mats(2, std::vector<T>(m * n, T(0)));
  const auto r = this->run(mats, m, n);
  for (int b = 0; b < 2; ++b) {
    for (T s : r.s[b])
      EXPECT_EQ(s, T(0));
    const auto e = svd_errors(mats[b], m, n, r.s[b], r.u[b], r.v[b]);
    EXPECT_EQ(e.e1, 0.0);
    EXPECT_LT(e.e2, 30 * this->unit_roundoff());
    EXPECT_LT(e.e3, 30 * this->unit_roundoff());
  }
}

TYPED_TEST(SmallSvd, ExactZeroColumnsAndRankDeficiency) {
  using T = typename TestFixture::TestScalar;
  const int m = 12, n = 8;
  // Rank 3 by construction (tiny rounding leftovers in the other values) ...
  std::vector<double> sigma = {3, 2, 1, 0, 0, 0, 0, 0};
  std::vector<std::vector<T>> mats = {matrix_with_spectrum<T>(m, n, sigma, 5)};
  // ... and exactly rank 2: columns 1, 4, 5, 6, 7 zero, column 3 = 2 * column 0.
  auto a = random_matrix<T>(m, n, 9);
  for (int j : {1, 4, 5, 6, 7})
    for (int i = 0; i < m; ++i)
      a[i + m * j] = 0;
  for (int i = 0; i < m; ++i)
    a[i + m * 3] = 2 * a[i + m * 0];
  mats.push_back(a);
  this->expect_accurate(mats, m, n, this->run(mats, m, n), "rank-deficient");
}

TYPED_TEST(SmallSvd, RepeatedSingularValues) {
  using T = typename TestFixture::TestScalar;
  const int m = 10, n = 10;
  std::vector<std::vector<T>> mats = {
      matrix_with_spectrum<T>(m, n, std::vector<double>(10, 1.0), 3),
      matrix_with_spectrum<T>(m, n, {2, 2, 2, 1, 1, 1, 1, 0.5, 0.5, 0.5}, 4)};
  std::vector<T> identity(m * n, T(0));
  for (int i = 0; i < n; ++i)
    identity[i + m * i] = 1;
  mats.push_back(identity);
  this->expect_accurate(mats, m, n, this->run(mats, m, n), "repeated");
}

TYPED_TEST(SmallSvd, OneByOneTakesTheAbsoluteValue) {
  using T = typename TestFixture::TestScalar;
  const auto r = this->run({{T(-2.5)}, {T(0)}, {T(4)}}, 1, 1);
  EXPECT_EQ(r.s[0][0], T(2.5));
  EXPECT_EQ(r.u[0][0] * r.v[0][0], T(-1));
  EXPECT_EQ(r.s[1][0], T(0));
  EXPECT_EQ(std::abs(r.u[1][0]), T(1));
  EXPECT_EQ(r.s[2][0], T(4));
}

TYPED_TEST(SmallSvd, BadlyScaledMatricesKeepRelativeAccuracy) {
  using T = typename TestFixture::TestScalar;
  const int m = 9, n = 6;
  const T big = sizeof(T) == 8 ? T(1e150) : T(1e18), small = sizeof(T) == 8 ? T(1e-150) : T(1e-18);
  std::vector<std::vector<T>> mats;
  for (T scale : {big, small}) {
    auto a = random_matrix<T>(m, n, 21);
    for (auto& x : a)
      x *= scale;
    mats.push_back(a);
  }
  const auto r = this->run(mats, m, n);
  const auto ref = random_matrix<T>(m, n, 21);
  const auto s_ref =
      kwsvd::test::lapack_singular_values(std::vector<double>(ref.begin(), ref.end()), m, n);
  for (int b = 0; b < 2; ++b) {
    const double scale = b == 0 ? double(big) : double(small);
    for (int l = 0; l < n; ++l)
      EXPECT_NEAR(double(r.s[b][l]) / scale, s_ref[l], 30 * this->unit_roundoff() * s_ref[0]);
  }
}

// Singular values are the final column norms. Summed plainly, one lane adds
// its whole share of a column's rows, and a host backend's one lane adds all
// of them: float 6000 x 1 came out up to 23 u off ||A v|| and double 3500 x 1
// up to 22 u (OpenMP). The final norms are now summed with compensation
// (CompensatedSum): at most 2 u there. The reference is ||A v_l|| in long
// double with the kernel's own V (orthonormal to about u).
TYPED_TEST(SmallSvd, TallColumnsGiveSingularValuesToTheUnitRoundoff) {
  using T = typename TestFixture::TestScalar;
  const double u = this->unit_roundoff();
  for (int n : {1, 2}) {
    int m = (sizeof(T) == sizeof(float) ? 6000 : 3000) / n;
    while (!kwsvd::small_svd_fits<T>(m, n))
      m -= m / 8;  // the largest that fits this device's team scratch
    std::vector<std::vector<T>> mats;
    for (int b = 0; b < 8; ++b)
      mats.push_back(random_matrix<T>(m, n, 700u + b));
    const auto r = this->run(mats, m, n);
    for (int b = 0; b < 8; ++b) {
      for (int l = 0; l < n; ++l) {
        long double ss = 0;
        for (int i = 0; i < m; ++i) {
          long double y = 0;
          for (int j = 0; j < n; ++j)
            y += (long double)mats[b][i + std::size_t(m) * j] *
                 (long double)r.v[b][j + std::size_t(n) * l];
          ss += y * y;
        }
        const double sigma = double(std::sqrt(ss));
        EXPECT_LT(std::abs(double(r.s[b][std::size_t(l)]) - sigma), 4 * u * sigma)
            << m << " x " << n << ", matrix " << b << ", sigma " << l;
      }
    }
  }
}

TYPED_TEST(SmallSvd, NanOrInfInOneMatrixLeavesOthersExact) {
  using T = typename TestFixture::TestScalar;
  const int m = 16, n = 11, batch = 5, bad = 3;
  std::vector<std::vector<T>> clean;
  for (int b = 0; b < batch; ++b)
    clean.push_back(random_matrix<T>(m, n, 40 + b));
  auto dirty = clean;
  dirty[bad][7] = std::numeric_limits<T>::quiet_NaN();
  dirty[1][m * n - 1] = std::numeric_limits<T>::infinity();
  const auto r_clean = this->run(clean, m, n);
  const auto r = this->run(dirty, m, n);
  for (int b = 0; b < batch; ++b) {
    if (b == bad || b == 1) {
      EXPECT_EQ(r.info[b].nonfinite_input, 1);
      EXPECT_EQ(r.info[b].converged, 0);
      for (T s : r.s[b])
        EXPECT_TRUE(std::isnan(s));
      for (T u : r.u[b])
        EXPECT_TRUE(std::isnan(u));
      continue;
    }
    EXPECT_EQ(r.info[b].nonfinite_input, 0);
    EXPECT_EQ(r.s[b], r_clean.s[b]) << "matrix " << b << " changed by its neighbour's NaN";
    EXPECT_EQ(r.u[b], r_clean.u[b]);
    EXPECT_EQ(r.v[b], r_clean.v[b]);
  }
}

TYPED_TEST(SmallSvd, ValuesOnlyJobGivesTheSameValues) {
  using T = typename TestFixture::TestScalar;
  using Layout = typename TestFixture::TestLayout;
  const int m = 20, n = 14, batch = 4;
  std::vector<std::vector<T>> mats;
  for (int b = 0; b < batch; ++b)
    mats.push_back(random_matrix<T>(m, n, 60 + b));
  const auto full = this->run(mats, m, n);
  auto A = kwsvd::test::to_device<T, Layout>(mats, m, n);
  Kokkos::View<T**, Layout> S("S", batch, n);
  Kokkos::View<kwsvd::SvdInfo*> info("info", batch);
  kwsvd::batched_small_svd(Exec(), A, S, info);
  auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), S);
  for (int b = 0; b < batch; ++b)
    for (int l = 0; l < n; ++l)
      EXPECT_EQ(hs(b, l), full.s[b][l]);
}

TYPED_TEST(SmallSvd, EveryLanesPerPairChoiceIsAccurate) {
  using T = typename TestFixture::TestScalar;
  // 24 rows: general loops (1, 2 lanes) and compiled ones for 6, 3 -> 4, 2
  // and 1 blocks per lane; 32 x 20 adds 8 blocks (4 lanes) and padded V.
  for (const auto& [m, n] : {std::pair{24, 24}, std::pair{32, 20}}) {
    std::vector<std::vector<T>> mats = {random_matrix<T>(m, n, 1), random_matrix<T>(m, n, 2)};
    for (int lanes : {1, 2, 4, 8, 16, 32}) {
      kwsvd::SvdOptions opt;
      opt.lanes_per_pair = lanes;
      this->expect_accurate(
          mats, m, n, this->run(mats, m, n, opt),
          std::to_string(m) + "x" + std::to_string(n) + " lanes " + std::to_string(lanes));
    }
    kwsvd::SvdOptions gcd;
    gcd.lanes_rule = kwsvd::LanesRule::gcd;
    this->expect_accurate(mats, m, n, this->run(mats, m, n, gcd), "gcd rule");
  }
}

TYPED_TEST(SmallSvd, BoundedRowLoopMatchesThePaddedLoopToTheBit) {
  using T = typename TestFixture::TestScalar;
  namespace I = kwsvd::Impl;
  // Shapes whose padded layout fits every backend's scratch, run padded (as
  // planned with room) and bounded (planned with the unpadded minimum): the
  // same rows in the same order, zeros left out, so the same bits. Wide
  // 20 x 30 bounds V by fewer rows than W; 40 x 24 and 33 x 33 take six
  // blocks; 70 x 24 and 20 x 70, nine blocks, have only the bounded loop.
  // (The unpadded minimum leaves no room for the lanes' partial inner
  // products, so the padded run takes the bounded run's reduction: the row
  // loops are what is compared.)
  for (const auto& [m, n, lanes] : std::vector<std::tuple<int, int, int>>{
           {30, 20, 8}, {20, 30, 8}, {40, 24, 8}, {33, 33, 8}, {70, 24, 8}, {20, 70, 8}}) {
    const std::string what = std::to_string(m) + " x " + std::to_string(n);
    auto padded = I::plan_one_sided_jacobi<Exec, T>(m, n, true, lanes, 1 << 20);
    const auto bounded = I::plan_one_sided_jacobi<Exec, T>(
        m, n, true, lanes, I::one_sided_jacobi_scratch_bytes<Exec, T>(m, n, true));
    ASSERT_LT(bounded.rows_per_lane, 0) << what;
    ASSERT_TRUE(padded.lane_partials) << what;
    ASSERT_FALSE(bounded.lane_partials) << what;
    padded.lane_partials = false;
    std::vector<std::vector<T>> mats;
    for (int b = 0; b < 3; ++b)
      mats.push_back(random_matrix<T>(m, n, 7u * b + m));
    const auto r = this->run_planned(mats, m, n, bounded, lanes);
    this->expect_accurate(mats, m, n, r, what + " bounded");
    if (padded.rows_per_lane < 0)
      continue;  // nine blocks
    ASSERT_EQ(bounded.rows_per_lane, -padded.rows_per_lane) << what;
    const auto p = this->run_planned(mats, m, n, padded, lanes);
    for (int b = 0; b < 3; ++b) {
      EXPECT_EQ(r.info[b].sweeps, p.info[b].sweeps) << what;
      EXPECT_EQ(r.s[b], p.s[b]) << what;
      EXPECT_EQ(r.u[b], p.u[b]) << what;
      EXPECT_EQ(r.v[b], p.v[b]) << what;
    }
  }
}

TYPED_TEST(SmallSvd, LanePartialsMatchTheVectorReduction) {
  using T = typename TestFixture::TestScalar;
  namespace I = kwsvd::Impl;
  // The same plans run with the lanes' inner products summed through scratch
  // (as planned where they fit) and by Kokkos's vector reduction: both
  // accurate, the same singular values to rounding and sweeps within one.
  // 32 x 32 on 16 lanes and 4 lanes (the small- and large-batch rules), wide
  // 24 x 40 and odd 33 x 33 on 8, 13 x 7 on 2.
  for (const auto& [m, n, lanes] : std::vector<std::tuple<int, int, int>>{
           {32, 32, 16}, {32, 32, 4}, {24, 40, 8}, {33, 33, 8}, {13, 7, 2}}) {
    const std::string what =
        std::to_string(m) + " x " + std::to_string(n) + " on " + std::to_string(lanes) + " lanes";
    const auto with = I::plan_one_sided_jacobi<Exec, T>(m, n, true, lanes, 1 << 20);
    ASSERT_TRUE(with.lane_partials) << what;
    auto without = with;
    without.lane_partials = false;
    std::vector<std::vector<T>> mats;
    for (int b = 0; b < 3; ++b)
      mats.push_back(random_matrix<T>(m, n, 11u * b + n));
    const auto a = this->run_planned(mats, m, n, with, lanes);
    const auto b = this->run_planned(mats, m, n, without, lanes);
    this->expect_accurate(mats, m, n, a, what + " partials");
    this->expect_accurate(mats, m, n, b, what + " vector reduction");
    const double tol = 16.0 * std::max(m, n) * TestFixture::unit_roundoff();
    for (int k = 0; k < 3; ++k) {
      EXPECT_LE(std::abs(a.info[k].sweeps - b.info[k].sweeps), 1) << what;
      for (std::size_t l = 0; l < a.s[k].size(); ++l)
        EXPECT_LE(std::abs(double(a.s[k][l]) - double(b.s[k][l])), tol * double(a.s[k][0]))
            << what << ", matrix " << k << ", value " << l;
    }
  }
}

TYPED_TEST(SmallSvd, ReportsSweepsAndNonConvergence) {
  using T = typename TestFixture::TestScalar;
  const int m = 32, n = 32;
  std::vector<std::vector<T>> mats = {random_matrix<T>(m, n, 77)};
  const auto ok = this->run(mats, m, n);
  EXPECT_EQ(ok.info[0].converged, 1);
  EXPECT_GE(ok.info[0].sweeps, 3);
  EXPECT_LE(ok.info[0].sweeps, 15);
  kwsvd::SvdOptions opt;
  opt.max_sweeps = 1;
  const auto cut = this->run(mats, m, n, opt);
  EXPECT_EQ(cut.info[0].converged, 0);
  EXPECT_EQ(cut.info[0].sweeps, 1);
}

TYPED_TEST(SmallSvd, EmptyBatchAndEmptyMatrices) {
  for (auto [batch, m, n] : {std::tuple{0, 4, 4}, std::tuple{2, 5, 0}}) {
    const auto v = TestFixture::views(batch, m, n);
    EXPECT_NO_THROW(kwsvd::batched_small_svd(Exec(), v.A, v.S, v.U, v.V, v.info));
  }
}

TYPED_TEST(SmallSvd, RejectsBadArgumentsNamingThem) {
  using T = typename TestFixture::TestScalar;
  using Layout = typename TestFixture::TestLayout;
  const auto v = TestFixture::views(3, 6, 4);
  Kokkos::View<T***, Layout> Ubad("U", 3, 4, 4);
  Kokkos::View<T**, Layout> Sbad("S", 3, 6);
  Kokkos::View<kwsvd::SvdInfo*> info_bad("info", 2);
  auto has = [](const std::string& what, const std::string& part) {
    return what.find(part) != std::string::npos;
  };
  std::string w = error_of([&] { kwsvd::batched_small_svd(Exec(), v.A, v.S, Ubad, v.V, v.info); });
  EXPECT_TRUE(has(w, "argument 'U'") && has(w, "(3, 6, 4)") && has(w, "got (3, 4, 4)")) << w;
  w = error_of([&] { kwsvd::batched_small_svd(Exec(), v.A, Sbad, v.U, v.V, v.info); });
  EXPECT_TRUE(has(w, "argument 'S'") && has(w, "(batch, min(m, n))")) << w;
  w = error_of([&] { kwsvd::batched_small_svd(Exec(), v.A, v.S, v.U, v.V, info_bad); });
  EXPECT_TRUE(has(w, "argument 'info'")) << w;
  kwsvd::SvdOptions opt;
  opt.tolerance = -1;
  w = error_of([&] { kwsvd::batched_small_svd(Exec(), v.A, v.S, v.U, v.V, v.info, opt); });
  EXPECT_TRUE(has(w, "options.tolerance")) << w;
  opt.tolerance = 1e-300;  // below eps: never met
  w = error_of([&] { kwsvd::batched_small_svd(Exec(), v.A, v.S, v.U, v.V, v.info, opt); });
  EXPECT_TRUE(has(w, "options.tolerance") && has(w, "machine epsilon") && has(w, "1e-300")) << w;
  opt = {};
  opt.max_sweeps = 0;
  w = error_of([&] { kwsvd::batched_small_svd(Exec(), v.A, v.S, v.U, v.V, v.info, opt); });
  EXPECT_TRUE(has(w, "options.max_sweeps")) << w;
  opt = {};
  opt.lanes_per_pair = 3;
  w = error_of([&] { kwsvd::batched_small_svd(Exec(), v.A, v.S, v.U, v.V, v.info, opt); });
  EXPECT_TRUE(has(w, "options.lanes_per_pair")) << w;
  opt = {};
  opt.job = kwsvd::Job::values;
  w = error_of([&] { kwsvd::batched_small_svd(Exec(), v.A, v.S, v.U, v.V, v.info, opt); });
  EXPECT_TRUE(has(w, "options.job")) << w;
  // Outputs on the input's storage (6 x 4: U has A's extents).
  w = error_of([&] { kwsvd::batched_small_svd(Exec(), v.A, v.S, v.A, v.V, v.info); });
  EXPECT_TRUE(has(w, "argument 'U' shares storage with 'A'")) << w;
  Kokkos::View<T**, Layout, Kokkos::MemoryTraits<Kokkos::Unmanaged>> S_in_V(v.V.data(), 3, 4);
  w = error_of([&] { kwsvd::batched_small_svd(Exec(), v.A, S_in_V, v.U, v.V, v.info); });
  EXPECT_TRUE(has(w, "argument 'V' shares storage with 'S'")) << w;
}

TYPED_TEST(SmallSvd, FitsQueryMatchesWhatTheCallAccepts) {
  using T = typename TestFixture::TestScalar;
  EXPECT_TRUE(kwsvd::small_svd_fits<T>(32, 32));
  EXPECT_FALSE(kwsvd::small_svd_fits<T>(-1, 3));
  int n = 32;
  while (kwsvd::small_svd_fits<T>(n + 1, n + 1))
    ++n;  // largest square that fits
  EXPECT_TRUE(kwsvd::small_svd_fits<T>(n, n, kwsvd::Job::values));
  const auto v = TestFixture::views(1, n + 1, n + 1);
  const std::string w =
      error_of([&] { kwsvd::batched_small_svd(Exec(), v.A, v.S, v.U, v.V, v.info); });
  EXPECT_NE(w.find("small_svd_fits"), std::string::npos) << w;
}

TEST(SmallSvdPlan, LanesPerPairFollowsThePaperRule) {
  // alpha = max(4, gcd(m*, 32)) / 32 (W-cycle paper §IV-B-1).
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_rule(32), 32);
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_rule(48), 16);
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_rule(24), 8);
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_rule(17), 4);
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_rule(8), 8);
}

TEST(SmallSvdPlan, MeasuredLanesRuleStaysInTheAlphaSet) {
  // alpha in {1, 1/2, 1/4, 1/8} of a warp (§IV-B-1): 4, 8, 16 or 32 lanes.
  for (int rows : {1, 8, 16, 24, 32, 48, 100, 300, 2000})
    for (long batch : {1L, 100L, 1000L, 10000L, 1000000L}) {
      const int lanes = kwsvd::Impl::lanes_per_pair_measured(rows, batch);
      EXPECT_TRUE(lanes == 4 || lanes == 8 || lanes == 16 || lanes == 32) << rows << " " << batch;
    }
}

TEST(SmallSvdPlan, MeasuredLanesRuleFollowsTheSweeps) {
  // The H200 sweeps behind lanes_per_pair_measured: 16 lanes while the batch
  // leaves SMs idle, then 4 up to 32 rows, 8 up to 256, 16 beyond.
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(64, 100), 16);
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(8, 100), 4);
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(32, 1000), 4);
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(64, 1000), 8);
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(200, 1000), 8);
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(256, 10000), 8);
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(500, 1000), 16);
  // Above 32 rows, 16 lanes at small batches only for few pairs (batch x
  // pairs <= 3200): 48^2 x 200 has 24 pairs (4800), 64 x 32 x 200 16 (3200).
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(48, 200, 24), 8);
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(64, 200, 16), 16);
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(64, 400, 16), 8);
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(100, 400, 8), 16);
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(300, 400, 15), 16);  // 16 beyond 256 rows
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(32, 400, 16), 16);   // up to 32 rows: as fitted
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(48, 200, 0), 16);    // pairs not known
  // Above 72 rows (more than nine row blocks of 8 lanes) 16 up to 4800.
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(96, 400, 12), 16);   // 4800
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(200, 400, 10), 16);  // 4000
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(144, 200, 18), 16);  // 3600
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(72, 400, 12), 8);    // nine blocks of 8 lanes
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(80, 400, 15), 8);    // 6000
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(100, 300, 20), 8);   // 6000
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(128, 1000, 12), 8);  // large batches as before
  // Up to 32 rows at large batches, four pairs or fewer take the lanes that
  // fill a warp, as far as the rows reach: 1 pair 32, 2 pairs 16, 3 or 4
  // pairs 8; 5 pairs or more keep 4.
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(32, 10000, 1), 32);
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(32, 1000, 2), 16);
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(16, 10000, 2), 16);
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(8, 10000, 2), 8);
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(20, 10000, 3), 8);
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(32, 10000, 4), 8);
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(6, 10000, 3), 8);
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(4, 10000, 2), 4);  // no rows for more
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(2, 10000, 1), 4);
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(32, 10000, 5), 4);  // 5 pairs: 20 threads
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(32, 10000, 16), 4);
  EXPECT_EQ(kwsvd::Impl::lanes_per_pair_measured(32, 1000, 0), 4);  // pairs not known
}

// A row visitor for PairRows::for_rows, callable where for_rows is (host and
// device): a host lambda there made nvcc warn (#20013, #20015).
struct CountVisits {
  int* visited;
  KOKKOS_INLINE_FUNCTION void operator()(const int r) const { ++visited[r]; }
};

TEST(SmallSvdPlan, StaggeredRowsVisitEveryRowOnce) {
  for (int log2 : {0, 1, 2, 3, 5})
    for (int rows : {1, 7, 8, 24, 33}) {
      const int blocks = (rows + (1 << log2) - 1) >> log2;
      for (int first = 0; first < blocks; ++first) {
        std::vector<int> seen(blocks << log2, 0);
        for (int q = 0; q < (blocks << log2); ++q)
          ++seen[kwsvd::Impl::staggered_row(q, first, blocks, log2)];
        for (int r = 0; r < (blocks << log2); ++r)
          ASSERT_EQ(seen[r], 1) << "log2 " << log2 << " rows " << rows << " first " << first;
        // The general row loop visits exactly the rows < rows, once each.
        std::vector<int> visited(blocks << log2, 0);
        const kwsvd::Impl::PairRows<0> general(first, blocks, log2, rows);
        for (int lane = 0; lane < (1 << log2); ++lane)
          general.for_rows(lane, CountVisits{visited.data()});
        for (int r = 0; r < (blocks << log2); ++r)
          ASSERT_EQ(visited[r], r < rows ? 1 : 0) << "log2 " << log2 << " rows " << rows;
      }
    }
}

TEST(SmallSvdPlan, CompiledRowLoopVisitsEveryPaddedRowOnce) {
  // Six blocks of four lanes (24 rows) for every starting block.
  for (int first = 0; first < 6; ++first) {
    std::vector<int> visited(24, 0);
    const kwsvd::Impl::PairRows<6> rows(first, 6, 2, 21);
    for (int lane = 0; lane < 4; ++lane)
      rows.for_rows(lane, CountVisits{visited.data()});
    for (int r = 0; r < 24; ++r)
      ASSERT_EQ(visited[r], 1) << "first " << first;
  }
}

TEST(SmallSvdPlan, PaddingFollowsTheScratchLimit) {
  using Host = Kokkos::DefaultHostExecutionSpace;
  namespace I = kwsvd::Impl;
  // 20 x 12 with 8 lanes: 3 row blocks, compiled as 4 (32 zero-padded rows),
  // leading dimensions rounded to 128 bytes = 16 doubles.
  const auto roomy = I::plan_one_sided_jacobi<Host, double>(20, 12, true, 8, 1 << 20);
  EXPECT_EQ(roomy.row_block_log2, 3);
  EXPECT_EQ(roomy.rows_per_lane, 4);
  EXPECT_EQ(roomy.ld_w, 32);
  EXPECT_EQ(roomy.ld_v, 32);
  // 40 x 40 with 16 lanes: 3 row blocks, compiled as 4 (64 rows). Without
  // room for that padding: the bounded loop of as many blocks, 128-byte
  // padded (48 rows).
  I::OneSidedJacobiShape rounded(40, 40, true);
  rounded.ld_w = 48;
  rounded.ld_v = 48;
  const std::size_t rounded_bytes = I::one_sided_jacobi_scratch_bytes<Host, double>(rounded);
  EXPECT_EQ((I::plan_one_sided_jacobi<Host, double>(40, 40, true, 16, 1 << 20).ld_w), 64);
  const auto mid = I::plan_one_sided_jacobi<Host, double>(40, 40, true, 16, rounded_bytes);
  EXPECT_EQ(mid.rows_per_lane, -4);
  EXPECT_EQ(mid.ld_w, 48);
  EXPECT_EQ(mid.ld_v, 48);
  // Without room for any padding: the minimum small_svd_fits checks, still
  // bounded.
  const std::size_t tight = I::one_sided_jacobi_scratch_bytes<Host, double>(40, 40, true);
  const auto packed = I::plan_one_sided_jacobi<Host, double>(40, 40, true, 16, tight);
  EXPECT_EQ(packed.rows_per_lane, -4);
  EXPECT_EQ(packed.ld_w, 40);
  EXPECT_EQ(packed.ld_v, 40);
  // The H200's 40936 bytes: float 65^2 with 8 lanes is 9 blocks, padded to 72
  // rows (ld 96) 50 KB, bounded and unpadded 33.8 KB; double 49^2 is 7
  // blocks, padded to 64 rows 50 KB: general, unpadded (38.8 KB).
  const std::size_t h200 = 40936;
  const auto f65 = I::plan_one_sided_jacobi<Host, float>(65, 65, true, 8, h200);
  EXPECT_EQ(f65.rows_per_lane, -9);
  EXPECT_EQ(f65.ld_w, 65);
  const auto d49 = I::plan_one_sided_jacobi<Host, double>(49, 49, true, 8, h200);
  EXPECT_EQ(d49.rows_per_lane, 0);
  EXPECT_EQ(d49.ld_w, 49);
  EXPECT_EQ(d49.ld_v, 49);
  // 72 x 30 float: nine blocks, bounded though their padding would fit.
  const auto f72 = I::plan_one_sided_jacobi<Host, float>(72, 30, true, 8, h200);
  EXPECT_EQ(f72.rows_per_lane, -9);
  EXPECT_EQ(f72.ld_v, 32);
  // 40 rows in 4-lane blocks is 10 blocks: past the compiled counts.
  const auto wide = I::plan_one_sided_jacobi<Host, float>(5, 40, false, 4, 1 << 20);
  EXPECT_TRUE(wide.transposed);
  EXPECT_EQ(wide.rows_per_lane, 0);
  EXPECT_EQ(wide.ld_w, 64);  // 32 floats per 128 bytes
}

TEST(SmallSvdPlan, LanePartialsTakeScratchOnlyWhereTheyFit) {
  using Host = Kokkos::DefaultHostExecutionSpace;
  namespace I = kwsvd::Impl;
  // 32 x 32 double on 16 lanes: 16 pairs x 16 lanes of partials beside the
  // padded layout.
  const auto roomy = I::plan_one_sided_jacobi<Host, double>(32, 32, true, 16, 1 << 20);
  EXPECT_TRUE(roomy.lane_partials);
  EXPECT_EQ(I::one_sided_lane_partial_count(roomy), std::size_t(256));
  auto layout = roomy;
  layout.lane_partials = false;
  const std::size_t layout_bytes = I::one_sided_jacobi_scratch_bytes<Host, double>(layout);
  const std::size_t roomy_bytes = I::one_sided_jacobi_scratch_bytes<Host, double>(roomy);
  EXPECT_GE(roomy_bytes, layout_bytes + 256 * sizeof(double));
  // Scratch for the layout alone: the same layout, without partials (they
  // never cost a shape its row loop or its padding).
  const auto tight = I::plan_one_sided_jacobi<Host, double>(32, 32, true, 16, layout_bytes);
  EXPECT_FALSE(tight.lane_partials);
  EXPECT_EQ(tight.rows_per_lane, roomy.rows_per_lane);
  EXPECT_EQ(tight.ld_w, roomy.ld_w);
  EXPECT_EQ(tight.ld_v, roomy.ld_v);
  // One column has no pair.
  const auto column = I::plan_one_sided_jacobi<Host, double>(9, 1, true, 16, 1 << 20);
  EXPECT_FALSE(column.lane_partials);
  // A group (plan_group_rows_per_lane): partials for all its shapes of two
  // or more columns where all fit beside the group's row loop, else none;
  // the loop is the same either way.
  std::vector<I::OneSidedJacobiShape> group{roomy, tight, column};
  EXPECT_EQ((I::plan_group_rows_per_lane<Host, double>(group, 1 << 20)), roomy.rows_per_lane);
  EXPECT_TRUE(group[0].lane_partials);
  EXPECT_TRUE(group[1].lane_partials);
  EXPECT_FALSE(group[2].lane_partials);
  std::vector<I::OneSidedJacobiShape> full{roomy, tight};
  EXPECT_EQ((I::plan_group_rows_per_lane<Host, double>(full, layout_bytes)), roomy.rows_per_lane);
  EXPECT_FALSE(full[0].lane_partials);
  EXPECT_FALSE(full[1].lane_partials);
  EXPECT_EQ(full[0].ld_w, roomy.ld_w);
  // The row loop alone (the W-cycle's whole-matrix sweeps): no partials.
  std::vector<I::OneSidedJacobiShape> loop_only{roomy, tight};
  EXPECT_EQ((I::plan_group_row_loop<Host, double>(loop_only, 1 << 20)), roomy.rows_per_lane);
  EXPECT_FALSE(loop_only[0].lane_partials);
  EXPECT_FALSE(loop_only[1].lane_partials);
  // The choice does not depend on the job: 60 x 60 float on 16 lanes within
  // 32768 bytes has room for the partials without V but not beside it, and
  // takes them in neither (a values-only call gets the full call's bits).
  for (const std::size_t limit : {std::size_t(32768), std::size_t(40936), std::size_t(1) << 20}) {
    const auto values = I::plan_one_sided_jacobi<Host, float>(60, 60, false, 16, limit);
    const auto vectors = I::plan_one_sided_jacobi<Host, float>(60, 60, true, 16, limit);
    EXPECT_EQ(values.lane_partials, vectors.lane_partials) << limit;
    std::vector<I::OneSidedJacobiShape> values_group{values, values};
    std::vector<I::OneSidedJacobiShape> vectors_group{vectors, vectors};
    I::plan_group_rows_per_lane<Host, float>(values_group, limit);
    I::plan_group_rows_per_lane<Host, float>(vectors_group, limit);
    EXPECT_EQ(values_group[0].lane_partials, vectors_group[0].lane_partials) << limit;
  }
  EXPECT_FALSE((I::plan_one_sided_jacobi<Host, float>(60, 60, false, 16, 32768).lane_partials));
  EXPECT_TRUE((I::plan_one_sided_jacobi<Host, float>(60, 60, false, 16, 40936).lane_partials));
  // sum_lane_partials: one fixed order for every count.
  const double p[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(I::sum_lane_partials(p, 1), 1.0);
  EXPECT_EQ(I::sum_lane_partials(p, 2), 3.0);
  EXPECT_EQ(I::sum_lane_partials(p, 4), 10.0);
  EXPECT_EQ(I::sum_lane_partials(p, 8), 36.0);
}

TEST(SmallSvdPlan, BoundedRowLoopVisitsEveryRowOnceAndNoneBeyond) {
  // 21 rows in blocks of four lanes: six blocks, the last with one row,
  // visited in the padded loop's order.
  for (int first = 0; first < 6; ++first) {
    std::vector<int> visited(24, 0);
    const kwsvd::Impl::PairRows<-6> rows(first, 6, 2, 21);
    for (int lane = 0; lane < 4; ++lane)
      rows.for_rows(lane, CountVisits{visited.data()});
    for (int r = 0; r < 24; ++r)
      ASSERT_EQ(visited[r], r < 21 ? 1 : 0) << "first " << first << ", row " << r;
  }
}

TEST(SmallSvdPlan, GroupRowLoopPadsWhereAllFitElseBounds) {
  using Host = Kokkos::DefaultHostExecutionSpace;
  namespace I = kwsvd::Impl;
  auto planned = [](auto scalar, std::vector<std::pair<int, int>> sizes) {
    using T = decltype(scalar);
    std::vector<I::OneSidedJacobiShape> shapes;
    for (auto [m, n] : sizes)
      shapes.push_back(I::plan_one_sided_jacobi<Host, T>(m, n, true, 8, 40936));
    return shapes;
  };
  // 30 x 20 (4 blocks) and 48 x 48 (6): both padded to 48 rows.
  auto fit = planned(0.0, {{30, 20}, {48, 48}});
  EXPECT_EQ((I::plan_group_rows_per_lane<Host, double>(fit, 40936)), 6);
  EXPECT_EQ(fit[0].ld_w, 48);
  EXPECT_EQ(fit[0].rows_per_lane, 6);
  // Float 65 x 65 (9 blocks), whose padding does not fit: bounded for all,
  // each as planned.
  auto tight = planned(0.0f, {{30, 20}, {65, 65}});
  EXPECT_EQ((I::plan_group_rows_per_lane<Host, float>(tight, 40936)), -9);
  EXPECT_EQ(tight[0].ld_w, 32);
  EXPECT_EQ(tight[1].ld_w, 65);
  for (const auto& shape : tight)
    EXPECT_EQ(shape.rows_per_lane, -9);
  // Double 49 x 49 (7 blocks) has no bounded loop: general.
  auto seven = planned(0.0, {{30, 20}, {49, 49}});
  EXPECT_EQ((I::plan_group_rows_per_lane<Host, double>(seven, 40936)), 0);
  // 100 rows are 13 blocks: the general loop.
  auto tall = planned(0.0, {{100, 10}, {20, 20}});
  EXPECT_EQ((I::plan_group_rows_per_lane<Host, double>(tall, 40936)), 0);
}

TEST(SmallSvdPlan, RoundRobinPairsEveryColumnOncePerStep) {
  for (int n_even : {2, 4, 8, 12, 32}) {
    std::vector<int> met(n_even * n_even, 0);
    for (int step = 0; step < n_even - 1; ++step) {
      std::vector<int> used(n_even, 0);
      for (int k = 0; k < n_even / 2; ++k) {
        int i, j;
        kwsvd::Impl::round_robin_pair(n_even, step, k, i, j);
        ASSERT_LT(i, j);
        ++used[i];
        ++used[j];
        ++met[i * n_even + j];
      }
      for (int c = 0; c < n_even; ++c)
        ASSERT_EQ(used[c], 1) << "step " << step;
    }
    for (int i = 0; i < n_even; ++i)
      for (int j = i + 1; j < n_even; ++j)
        ASSERT_EQ(met[i * n_even + j], 1);
  }
}

TEST(SmallSvdPlan, JacobiTangentIsBoundedAndSafe) {
  using kwsvd::Impl::jacobi_tangent;
  EXPECT_LE(std::abs(jacobi_tangent(1.0, 1.0, 0.5)), 1.0);
  // zeta ~ 1e300 must neither overflow nor lose the rotation's direction.
  const double t = jacobi_tangent(1e-300, 1.0, 1e-300 * 0.5);
  EXPECT_TRUE(std::isfinite(t));
  EXPECT_GT(std::abs(t), 0.0);
  EXPECT_LE(std::abs(jacobi_tangent(3.0f, 1e-30f, 1e-20f)), 1.0f);
}

// The division-free rotation against its definition: an orthogonal rotation
// (c^2 + s^2 = 1 to 3 u) that makes the two columns orthogonal, t = s / c,
// |t| <= 1 to rounding,
// the same rotation as jacobi_tangent and rotation_cosine to a few units of
// rounding, over squared norms and inner products across the scaled range
// and the fallback below it.
template <class Scalar>
void check_jacobi_rotation() {
  using kwsvd::Impl::jacobi_rotation;
  const double u = std::numeric_limits<Scalar>::epsilon() / 2;
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  double worst_norm = 0, worst_orth = 0, worst_tan = 0, worst_old = 0;
  for (int k = 0; k < 20000; ++k) {
    // Columns of lengths up to 2^±20 apart, at angles from nearly parallel
    // to nearly orthogonal; k >= 19000: tiny inputs (the fallback in double).
    const double lo = k < 19000 ? -20 : (sizeof(Scalar) > 4 ? -520 : -70);
    const double di = std::exp2(lo + 40 * unit(gen) * (k < 19000 ? 1 : 0.1));
    const double dj = std::exp2(lo + 40 * unit(gen) * (k < 19000 ? 1 : 0.1));
    const double cosine = (2 * unit(gen) - 1) * (k % 3 == 0 ? 1e-6 : 1.0);
    const Scalar Di = Scalar(di), Dj = Scalar(dj);
    const Scalar G = Scalar(cosine * std::sqrt(double(Di)) * std::sqrt(double(Dj)));
    if (G == Scalar(0))
      continue;
    const auto rot = jacobi_rotation(Di, Dj, G);
    const double c = rot.c, s = rot.s, t = rot.t;
    worst_norm = kwsvd::test::worse_of(worst_norm, std::abs(c * c + s * s - 1) / u);
    // New inner product cs (d_i - d_j) + (c^2 - s^2) g, relative to
    // sqrt(d_i d_j), in double from the rounded c and s.
    const double gnew = c * s * (double(Di) - double(Dj)) + (c * c - s * s) * double(G);
    worst_orth =
        kwsvd::test::worse_of(worst_orth, std::abs(gnew) / std::sqrt(double(Di) * double(Dj)) / u);
    worst_tan = kwsvd::test::worse_of(worst_tan, std::abs(t - s / c) / std::abs(s / c) / u);
    EXPECT_LE(std::abs(t), 1 + 8 * u);
    const Scalar t_old = kwsvd::Impl::jacobi_tangent(Di, Dj, G);
    const double c_old = kwsvd::Impl::rotation_cosine(t_old);
    worst_old = kwsvd::test::worse_of(worst_old, std::abs(c - c_old) / u);
    worst_old =
        kwsvd::test::worse_of(worst_old, std::abs(t - double(t_old)) / std::abs(double(t_old)) / u);
  }
  EXPECT_LE(worst_norm, 3.0);  // 4 u with jacobi_tangent and rotation_cosine
  EXPECT_LE(worst_orth, 16.0);
  EXPECT_LE(worst_tan, 8.0);
  EXPECT_LE(worst_old, 12.0);
}

TEST(SmallSvdPlan, JacobiRotationIsOrthogonalAndMatchesTheTangent) {
  check_jacobi_rotation<double>();
  check_jacobi_rotation<float>();
}

}  // namespace
