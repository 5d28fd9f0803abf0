// kwsvd::batched_svd through the W-cycle scheduler (block rotations at one to three levels
// with the tailored GEMMs and the Gram EVD) against LAPACKE, with seed 002's
// spectra and accuracy metrics e1..e4 (< 30 u), and the API's edge cases.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/gpu_threshold.hpp"
#include "common/kokkos_events.hpp"
#include "common/oracle.hpp"
#include "common/svd_batch.hpp"
#include "kwsvd/kernels/pair_ordering.hpp"
#include "kwsvd/kwsvd.hpp"

namespace {

using kwsvd::test::error_of;

using kwsvd::test::random_matrix;
using kwsvd::test::svd_errors;
using Exec = Kokkos::DefaultExecutionSpace;

using kwsvd::test::Case;

template <class T>
using BatchResult = kwsvd::test::BatchResult<T>;

// Kernels of the caller's own work around a call (raw pointers, not Views:
// see perf_tests/notes/wcycle.md, "The RangePolicy/View trap").
struct DelayChain {  // one thread's long dependent chain, so later work waits
  double* sink;
  KOKKOS_INLINE_FUNCTION void operator()(const int) const {
    double x = *sink;
    for (int i = 0; i < 20000000; ++i)
      x = x * 0.9999999 + 1e-9;
    *sink = x;
  }
};
template <class T>
struct CopyEntries {
  const T* src;
  T* dst;
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const { dst[i] = src[i]; }
};

template <class C>
class Wcycle : public ::testing::Test {
 public:
  using TestScalar = typename C::Scalar;
  using TestLayout = typename C::Layout;
  static double unit_roundoff() { return std::numeric_limits<TestScalar>::epsilon() / 2; }

  // One batched_svd call, every matrix through the block rotations (level0 =
  // false) unless `options` says otherwise.
  BatchResult<TestScalar> run(const std::vector<std::vector<TestScalar>>& mats, int m, int n,
                              kwsvd::SvdOptions options = block_rotations()) {
    return kwsvd::test::run_svd_batch<TestScalar, TestLayout>(
        mats, m, n,
        [&](const auto& A, const auto& S, const auto& U, const auto& V, const auto& info) {
          kwsvd::batched_svd(Exec(), A, S, U, V, info, options);
        });
  }

  static kwsvd::SvdOptions block_rotations() {
    kwsvd::SvdOptions o;
    o.level0 = false;
    return o;
  }

  void expect_accurate(const std::vector<std::vector<TestScalar>>& mats, int m, int n,
                       const BatchResult<TestScalar>& r, const std::string& what) {
    kwsvd::test::expect_accurate(mats, m, n, r, what);
  }

  void check_random(int batch, int m, int n) {
    std::vector<std::vector<TestScalar>> mats;
    for (int b = 0; b < batch; ++b)
      mats.push_back(random_matrix<TestScalar>(m, n, 57u * b + m + 3u * n));
    expect_accurate(mats, m, n, run(mats, m, n), "random");
  }
};

using Cases = kwsvd::test::ScalarLayoutCases;
TYPED_TEST_SUITE(Wcycle, Cases);

TYPED_TEST(Wcycle, RandomSquareTallAndWide) {
  for (auto [m, n] :
       {std::pair{40, 40}, std::pair{64, 64}, std::pair{100, 100}, std::pair{200, 48},
        std::pair{48, 150}, std::pair{33, 17}, std::pair{5, 1}, std::pair{1, 5}, std::pair{3, 3}})
    this->check_random(2, m, n);
}

// Seed 002, Table 1: six spectra, kappa = 1e10 (double) or 1e5 (float).
TYPED_TEST(Wcycle, SixSpectraMeetSeed002Thresholds) {
  using T = typename TestFixture::TestScalar;
  const double kappa = sizeof(T) == 8 ? 1e10 : 1e5;
  for (auto [m, n] : {std::pair{96, 96}, std::pair{160, 72}}) {
    for (const std::string name : {"random", "arith", "cluster0", "cluster1", "logrand", "geo"}) {
      const auto mats = kwsvd::test::spectrum_batch<T>(name, m, n, kappa, 2);
      this->expect_accurate(mats, m, n, this->run(mats, m, n), name);
    }
  }
}

// Algorithm 2's recursion, planned for 32 KB of scratch (a GPU's order, and
// at most what the host backends offer): the pairs of wide blocks fit neither
// the pair SVD nor the Gram EVD and are swept with narrower blocks one or two
// levels down (there the Gram EVD fits up to w = 16 in double, 24 in float).
// Graded spectra (geo, logrand; kappa = 1e10) take about 25 sweeps, and at
// three levels each sweep applies several times more rotations to V than at
// one: V's orthogonality ends at 33-35 u in double, just past the bound, so
// they run at two levels only (a known limit, see perf_tests/notes).
TYPED_TEST(Wcycle, TwoAndThreeLevelsMeetSeed002Thresholds) {
  using T = typename TestFixture::TestScalar;
  const bool dbl = sizeof(T) == 8;
  const double kappa = dbl ? 1e10 : 1e5;
  struct LevelCase {
    std::vector<int> widths;
    int m, n, levels;
    std::vector<std::string> spectra;
  };
  const std::vector<LevelCase> cases =
      dbl ? std::vector<LevelCase>{{{32, 16}, 180, 96, 2, {"random", "geo", "cluster1"}},
                                   {{64, 32, 16}, 200, 160, 3, {"random", "arith", "cluster1"}}}
          : std::vector<LevelCase>{{{48, 24}, 180, 150, 2, {"random", "geo", "cluster1"}},
                                   {{96, 48, 24}, 200, 200, 3, {"random", "arith", "cluster1"}}};
  for (const auto& c : cases) {
    kwsvd::SvdOptions options = TestFixture::block_rotations();
    options.block_scratch_bytes = 32768;
    options.level_widths = c.widths;
    kwsvd::BatchedSvd<Exec, T> svd(Exec(), 2, c.m, c.n, options);
    const auto summary = svd.plan_summary();
    EXPECT_EQ(summary.levels, c.levels) << c.m << " x " << c.n;
    EXPECT_EQ(summary.pair_svds, 0);
    EXPECT_GT(summary.gram_evds, 0);
    EXPECT_EQ(svd.block_width(), c.widths.front());
    for (const std::string& name : c.spectra) {
      const auto mats = kwsvd::test::spectrum_batch<T>(name, c.m, c.n, kappa, 2);
      const auto r = this->run(mats, c.m, c.n, options);
      this->expect_accurate(mats, c.m, c.n, r, name + " " + std::to_string(c.levels) + " levels");
    }
  }
}

// The first two groups of a level (§III-C, Step 2), planned for 32 KB of
// scratch with w = 16 (double) or 24 (float): pairs whose rows and rotation
// fit are solved there, taller ones by the Gram GEMM and EVD; both meet the
// thresholds, and so does the Gram path alone (pair_svd = false).
TYPED_TEST(Wcycle, PairSvdAndGramEvdGroupsMeetSeed002Thresholds) {
  using T = typename TestFixture::TestScalar;
  const double kappa = sizeof(T) == 8 ? 1e10 : 1e5;
  for (const bool pair_svd : {true, false}) {
    for (auto [m, n] : {std::pair{80, 80}, std::pair{260, 72}}) {
      kwsvd::SvdOptions options = TestFixture::block_rotations();
      options.block_scratch_bytes = 32768;
      options.level_widths.push_back(sizeof(T) == 8 ? 16 : 24);
      options.pair_svd = pair_svd;
      kwsvd::BatchedSvd<Exec, T> svd(Exec(), 2, m, n, options);
      const auto summary = svd.plan_summary();
      EXPECT_EQ(summary.levels, 1);
      const bool in_scratch = pair_svd && m < 100;
      EXPECT_EQ(summary.pair_svds > 0, in_scratch) << m;
      EXPECT_EQ(summary.gram_evds > 0, !in_scratch) << m;
      for (const std::string name : {"arith", "cluster0", "logrand"}) {
        const auto mats = kwsvd::test::spectrum_batch<T>(name, m, n, kappa, 2);
        this->expect_accurate(mats, m, n, this->run(mats, m, n, options),
                              name + (pair_svd ? " pair svd" : " gram evd"));
      }
    }
  }
}

// Graded spectra take many sweeps (geo, kappa = 1e10: 17 at 160^2 in double,
// 24 at 80^2 through pair SVDs), and each step rotates A's and V's blocks by
// the pair's J, a product of rotations whose columns drift in norm where the
// backend's arithmetic lets them (unit_norm_correction). Uncorrected, A's and
// V's columns inherited the drift step after step: on the host, in double,
// this case ended with e1 = 5.7 u, e4 = 2.8 u (Gram EVD) and e1 = 7.2 u, e4 =
// 3.7 u (pair SVD).
TYPED_TEST(Wcycle, GradedSpectrumKeepsResidualAndValuesAtRoundingLevel) {
  using T = typename TestFixture::TestScalar;
  const double kappa = sizeof(T) == 8 ? 1e10 : 1e5;
  const double u = TestFixture::unit_roundoff();
  for (const bool pair_svd : {true, false}) {
    const int m = pair_svd ? 80 : 160, n = pair_svd ? 80 : 160;
    kwsvd::SvdOptions options = TestFixture::block_rotations();
    options.block_scratch_bytes = 32768;
    options.level_widths.push_back(sizeof(T) == 8 ? 16 : 24);
    options.pair_svd = pair_svd;
    const auto mats = kwsvd::test::spectrum_batch<T>("geo", m, n, kappa, 2);
    const auto r = this->run(mats, m, n, options);
    const std::string what = pair_svd ? "geo pair svd" : "geo gram evd";
    this->expect_accurate(mats, m, n, r, what);
    for (std::size_t b = 0; b < mats.size(); ++b) {
      const auto e = kwsvd::test::svd_errors(mats[b], m, n, r.s[b], r.u[b], r.v[b]);
      EXPECT_LT(e.e1, 2 * u) << what << " matrix " << b;
      EXPECT_LT(e.e4, 1 * u) << what << " matrix " << b;
    }
  }
}

// Values only (SvdOptions::job = Job::values): the W-cycle neither keeps nor
// rotates V, and A's rotations are the same, so the singular values and the
// sweeps are those of the call with vectors, to the bit (planned for 32 KB,
// one level and two, tall and wide).
TYPED_TEST(Wcycle, ValuesOnlyGivesTheValuesOfTheFullSvd) {
  using T = typename TestFixture::TestScalar;
  using L = typename TestFixture::TestLayout;
  const bool dbl = sizeof(T) == 8;
  struct ValuesCase {
    std::vector<int> widths;
    int m, n;
  };
  const std::vector<ValuesCase> cases = {
      {{}, 90, 70},
      {{}, 40, 110},
      {dbl ? std::vector<int>{32, 16} : std::vector<int>{48, 24}, 150, 120}};
  for (const auto& c : cases) {
    kwsvd::SvdOptions options = TestFixture::block_rotations();
    options.block_scratch_bytes = 32768;
    options.level_widths = std::vector<int>(c.widths);  // GCC 12 -O3 mistakes a copy's memmove
    std::vector<std::vector<T>> mats;
    for (int b = 0; b < 3; ++b)
      mats.push_back(random_matrix<T>(c.m, c.n, 40u + b));
    const auto full = this->run(mats, c.m, c.n, options);
    const int k = std::min(c.m, c.n);
    auto A = kwsvd::test::to_device<T, L>(mats, c.m, c.n);
    Kokkos::View<T**, L> S("S", 3, k);
    Kokkos::View<kwsvd::SvdInfo*> info("info", 3);
    kwsvd::batched_svd(Exec(), A, S, info, options);
    auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), S);
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
    for (int b = 0; b < 3; ++b) {
      EXPECT_EQ(hi(b).sweeps, full.info[std::size_t(b)].sweeps) << c.m << " x " << c.n;
      EXPECT_EQ(hi(b).converged, 1);
      for (int l = 0; l < k; ++l)
        EXPECT_EQ(hs(b, l), full.s[std::size_t(b)][std::size_t(l)]) << c.m << " x " << c.n;
    }
  }
  // Values only, a matrix that fits level-0 scratch without V is solved
  // there when the W-cycle would sweep it whole (at most 64 columns), and
  // through the blocks when wider (float 100 x 70: 28 KB).
  kwsvd::SvdOptions values;
  values.job = kwsvd::Job::values;
  EXPECT_TRUE((kwsvd::BatchedSvd<Exec, T>(Exec(), 2, 60, 60, values).level0()));
  if (!dbl) {
    EXPECT_FALSE((kwsvd::BatchedSvd<Exec, T>(Exec(), 2, 100, 70, values).level0()));
  }
  values.level0 = false;
  kwsvd::BatchedSvd<Exec, T> svd(Exec(), 2, 80, 60, values);
  Kokkos::View<T***, L> A("A", 2, 80, 60), U("U", 2, 80, 60), V("V", 2, 60, 60);
  Kokkos::View<T**, L> S("S", 2, 60);
  Kokkos::View<kwsvd::SvdInfo*> info("info", 2);
  const std::string w = error_of([&] { svd.compute(A, S, U, V, info); });
  EXPECT_NE(w.find("options.job"), std::string::npos) << w;
}

TYPED_TEST(Wcycle, RankDeficientZeroColumnsAndBadScaling) {
  using T = typename TestFixture::TestScalar;
  const int m = 70, n = 50;
  auto a = random_matrix<T>(m, n, 5);
  for (int i = 0; i < m; ++i) {
    a[i + std::size_t(m) * 7] = T(0);                        // a zero column
    a[i + std::size_t(m) * 20] = a[i + std::size_t(m) * 3];  // a repeated one
  }
  auto scaled = random_matrix<T>(m, n, 6);
  const double big = sizeof(T) == 8 ? 1e150 : 1e18, small = sizeof(T) == 8 ? 1e-150 : 1e-18;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i)
      scaled[i + std::size_t(m) * j] *= T(j % 2 ? big : small);
  const auto r = this->run({a, scaled}, m, n);
  for (std::size_t b = 0; b < 2; ++b) {
    const auto e = svd_errors(b == 0 ? a : scaled, m, n, r.s[b], r.u[b], r.v[b]);
    EXPECT_LT(e.e1, 30 * this->unit_roundoff()) << b;
    EXPECT_LT(e.e2, 30 * this->unit_roundoff()) << b;
    EXPECT_LT(e.e3, 30 * this->unit_roundoff()) << b;
    EXPECT_EQ(r.info[b].converged, 1) << b;
    for (std::size_t l = 0; l < r.s[b].size(); ++l) {
      ASSERT_TRUE(std::isfinite(double(r.s[b][l])));
      for (int i = 0; i < m; ++i)
        ASSERT_TRUE(std::isfinite(double(r.u[b][i + std::size_t(m) * l]))) << "U has NaN";
    }
  }
  // Two exact zero singular values of the rank-deficient matrix (zero and
  // repeated columns): at rounding level, and their U columns finite.
  EXPECT_LT(r.s[0][n - 1], 100 * this->unit_roundoff() * r.s[0][0]);
  // The badly scaled matrix's large singular values to high relative accuracy.
  EXPECT_GT(r.s[1][0], T(big));
}

// Rank-deficient matrices: U diag(sigma) V^T of rank n / 4, and a geometric
// spectrum down to 1e-30 (half of it below u ||A||). Their null space comes
// out of the sweeps as columns near u ||A||, which the Gram EVD and the pair
// SVD rotate like any other (relative to their own length): the sweeps
// converge and U is orthonormal, null space included. (A threshold that left
// such columns alone as numerically zero made the 128 x 128 case of rank 32
// run out of sweeps with U far from orthonormal, e2 ~ 5e14 u.)
TYPED_TEST(Wcycle, RankDeficientMatricesConvergeWithOrthonormalVectors) {
  using T = typename TestFixture::TestScalar;
  const double kappa = sizeof(T) == 8 ? 1e30 : 1e15;
  for (const bool pair_svd : {false, true}) {
    const int n = pair_svd ? 80 : 128;
    kwsvd::SvdOptions options = TestFixture::block_rotations();
    options.block_scratch_bytes = 32768;
    options.pair_svd = pair_svd;
    kwsvd::BatchedSvd<Exec, T> svd(Exec(), 2, n, n, options);
    if (pair_svd) {
      EXPECT_GT(svd.plan_summary().pair_svds, 0);
    } else {
      EXPECT_EQ(svd.plan_summary().pair_svds, 0);
    }
    std::vector<double> low_rank(std::size_t(n), 0.0);
    for (int k = 0; k < n / 4; ++k)
      low_rank[std::size_t(k)] = std::pow(100.0, -double(k) / (n / 4));
    const std::vector<std::vector<T>> mats = {
        kwsvd::test::matrix_with_spectrum<T>(n, n, low_rank, 3),
        kwsvd::test::matrix_with_spectrum<T>(n, n, kwsvd::test::spectrum("geo", n, kappa, 4), 4)};
    this->expect_accurate(mats, n, n, this->run(mats, n, n, options),
                          pair_svd ? "rank-deficient, pair svd" : "rank-deficient, gram evd");
  }
}

// Exactly zero singular values: a zero matrix, a single nonzero entry, and
// rank 1 (a column times 1 .. 7, so repeated columns leave exact zeros and,
// in float, columns whose squared norms underflow), tall and wide (U is
// then the working matrix's right side). U stays orthonormal, as LAPACK
// keeps it: the finish completes the left vectors of zero values
// (wcycle_complete_null_columns) instead of leaving them zero.
TYPED_TEST(Wcycle, ExactlyZeroValuesGetAnOrthonormalCompletionOfU) {
  using T = typename TestFixture::TestScalar;
  struct Shape {
    int m, n;
  };
  for (const Shape s : {Shape{60, 40}, Shape{40, 90}, Shape{128, 128}}) {
    const auto [m, n] = s;
    std::vector<T> zero(std::size_t(m) * n, T(0)), one_entry = zero, rank_one = zero;
    one_entry[std::size_t(m) * (n / 2) + 7] = T(3);
    const auto c = random_matrix<T>(m, 1, 17);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i)
        rank_one[i + std::size_t(m) * j] = c[std::size_t(i)] * T(1 + j % 7);
    const std::vector<std::vector<T>> mats = {zero, one_entry, rank_one};
    const auto r = this->run(mats, m, n);
    this->expect_accurate(mats, m, n, r, "exactly rank-deficient");
    EXPECT_EQ(r.s[0][0], T(0));
    EXPECT_EQ(r.s[1][0], T(3));
    EXPECT_EQ(r.s[1][1], T(0));
  }
}

// The bad entry sits in the last chunk of the working matrix's columns
// (the load and finish work on chunks of wcycle_chunk_cols columns): every
// chunk of that matrix must see it and write NaN, tall (NaN in column 35)
// and wide (Inf in row 35, a column of the transposed working matrix).
TYPED_TEST(Wcycle, NonFiniteMatrixLeavesOthersExact) {
  using T = typename TestFixture::TestScalar;
  for (const auto& [m, n] : {std::pair<int, int>{60, 40}, std::pair<int, int>{40, 60}}) {
    const std::string shape = std::to_string(m) + " x " + std::to_string(n);
    std::vector<std::vector<T>> mats = {random_matrix<T>(m, n, 1), random_matrix<T>(m, n, 2),
                                        random_matrix<T>(m, n, 3)};
    mats[1][m > n ? 5 + std::size_t(m) * 35 : 35 + std::size_t(m) * 5] =
        m > n ? std::numeric_limits<T>::quiet_NaN() : std::numeric_limits<T>::infinity();
    const auto r = this->run(mats, m, n);
    EXPECT_EQ(r.info[1].nonfinite_input, 1) << shape;
    EXPECT_EQ(r.info[1].converged, 0) << shape;
    for (const auto& out : {r.s[1], r.u[1], r.v[1]})
      for (const T x : out)
        ASSERT_TRUE(std::isnan(double(x))) << shape;
    this->expect_accurate({mats[0]}, m, n, {{r.s[0]}, {r.u[0]}, {r.v[0]}, {r.info[0]}},
                          "before, " + shape);
    this->expect_accurate({mats[2]}, m, n, {{r.s[2]}, {r.u[2]}, {r.v[2]}, {r.info[2]}},
                          "after, " + shape);
  }
}

// Matrices whose working matrix fits level-0 scratch, but not beside V
// (planned here for 32 KB, at most what any backend offers), are not split
// into blocks: the level-0 sweeps run on the whole matrix in scratch with V in
// memory (SvdOptions::level0, the default), up to 64 columns. Square, tall
// and wide (through the transpose) meet seed 002's thresholds, also with 8
// lanes a pair, whose compiled row loop covers exactly V's rows (V takes W's
// row offsets), and with V's columns padded to whole sectors (62 x 61 double,
// 80 x 60 float: WorkGeometry::ldv > N); shapes that fit the level-0 kernel on
// this backend (a GPU's 40 KB) are left out. A matrix with Inf is reported
// alone.
TYPED_TEST(Wcycle, WholeMatricesInScratchMeetSeed002Thresholds) {
  using T = typename TestFixture::TestScalar;
  const bool dbl = sizeof(T) == 8;
  const double kappa = dbl ? 1e10 : 1e5;
  kwsvd::SvdOptions options;
  options.block_scratch_bytes = 32768;
  const std::vector<std::tuple<int, int, int>> shapes =
      dbl ? std::vector<std::tuple<int, int, int>>{{60, 60, 0},
                                                   {62, 61, 0},
                                                   {100, 40, 0},
                                                   {40, 100, 0},
                                                   {48, 48, 8}}
          : std::vector<std::tuple<int, int, int>>{
                {120, 64, 0}, {64, 120, 0}, {80, 60, 0}, {64, 64, 8}};
  for (auto [m, n, lanes] : shapes) {
    if (kwsvd::small_svd_fits<T, Exec>(m, n))
      continue;
    options.lanes_per_pair = lanes;
    kwsvd::BatchedSvd<Exec, T> svd(Exec(), 2, m, n, options);
    EXPECT_FALSE(svd.level0()) << m << " x " << n;
    EXPECT_EQ(svd.plan_summary().whole_matrices, 2) << m << " x " << n;
    EXPECT_EQ(svd.plan_summary().launch_steps, 0) << m << " x " << n;
    for (const std::string name : {"random", "arith", "cluster0", "cluster1", "logrand", "geo"}) {
      const auto mats = kwsvd::test::spectrum_batch<T>(name, m, n, kappa, 2);
      const auto r = this->run(mats, m, n, options);
      this->expect_accurate(mats, m, n, r, name + " whole");
      for (const auto& info : r.info)
        EXPECT_GT(info.sweeps, 1) << name;
    }
  }
  options.lanes_per_pair = 0;
  const int m = std::get<0>(shapes.front()), n = std::get<1>(shapes.front());
  std::vector<std::vector<T>> mats = {random_matrix<T>(m, n, 4), random_matrix<T>(m, n, 5),
                                      random_matrix<T>(m, n, 6)};
  mats[1][23] = std::numeric_limits<T>::infinity();
  const auto r = this->run(mats, m, n, options);
  EXPECT_EQ(r.info[1].nonfinite_input, 1);
  EXPECT_EQ(r.info[1].converged, 0);
  EXPECT_TRUE(std::isnan(double(r.s[1][0])));
  this->expect_accurate({mats[0]}, m, n, {{r.s[0]}, {r.u[0]}, {r.v[0]}, {r.info[0]}}, "before");
  this->expect_accurate({mats[2]}, m, n, {{r.s[2]}, {r.u[2]}, {r.v[2]}, {r.info[2]}}, "after");
  // Out of sweeps: reported per matrix, not converged.
  options.max_sweeps = 2;
  const auto cut = this->run({mats[0]}, m, n, options);
  EXPECT_EQ(cut.info[0].sweeps, 2);
  EXPECT_EQ(cut.info[0].converged, 0);
  EXPECT_EQ(cut.info[0].nonfinite_input, 0);
}

TYPED_TEST(Wcycle, LevelZeroAndBlockRotationsAgree) {
  using T = typename TestFixture::TestScalar;
  const int m = 24, n = 20;
  std::vector<std::vector<T>> mats = {random_matrix<T>(m, n, 8), random_matrix<T>(m, n, 9)};
  const auto blocks = this->run(mats, m, n);
  const auto level0 = this->run(mats, m, n, kwsvd::SvdOptions{});
  for (std::size_t b = 0; b < mats.size(); ++b)
    for (int l = 0; l < n; ++l)
      EXPECT_NEAR(double(blocks.s[b][l]), double(level0.s[b][l]),
                  60 * this->unit_roundoff() * double(level0.s[b][0]));
}

// SvdOptions::sort = false (issue 6's sort option, as cuSOLVER gesvdj's
// sort_svd = 0) places each value and its vectors where the iteration left
// them: the same values and vectors as a sorted call to the bit, only placed
// differently, by the level-0 kernel, the whole-matrix sweeps and the blocks.
// Columns that are already orthogonal keep their places (zero values last,
// their left vectors completed there).
TYPED_TEST(Wcycle, UnsortedOutputsKeepTheColumnsOrder) {
  using T = typename TestFixture::TestScalar;
  using kwsvd::test::sorted_by_value;
  kwsvd::SvdOptions unsorted;
  unsorted.sort = false;
  for (bool level0 : {true, false}) {
    kwsvd::SvdOptions sorted;
    sorted.level0 = unsorted.level0 = level0;
    for (auto [m, n] : {std::pair{40, 24}, std::pair{24, 40}, std::pair{64, 64},
                        std::pair{200, 150}, std::pair{150, 200}}) {
      const std::vector<std::vector<T>> mats = {random_matrix<T>(m, n, 11u + m),
                                                random_matrix<T>(m, n, 12u + n)};
      const auto a = this->run(mats, m, n, sorted);
      const auto b = sorted_by_value(this->run(mats, m, n, unsorted), m, n);
      const std::string at =
          std::to_string(m) + " x " + std::to_string(n) + " level0 " + std::to_string(level0);
      EXPECT_EQ(a.s, b.s) << at;
      EXPECT_EQ(a.u, b.u) << at;
      EXPECT_EQ(a.v, b.v) << at;
      this->expect_accurate(mats, m, n, b, "unsorted, " + at);
    }
    // A = Q diag(d): orthogonal columns of norms d, two of them zero.
    for (auto [m, n] : {std::pair{9, 6}, std::pair{90, 60}}) {
      const auto q = kwsvd::test::random_orthogonal(m, 5u + m);
      std::vector<double> d(n, 0.0);
      for (int c = 0; c < n; ++c)
        d[std::size_t(c)] = c == 1 || c == n - 3 ? 0.0 : 1.0 + double((7 * c) % n);
      std::vector<T> a(std::size_t(m) * n), at(std::size_t(n) * m);
      for (int c = 0; c < n; ++c)
        for (int i = 0; i < m; ++i) {
          a[i + std::size_t(m) * c] = T(q[i + std::size_t(m) * c] * d[std::size_t(c)]);
          at[c + std::size_t(n) * i] = a[i + std::size_t(m) * c];
        }
      std::vector<double> expected;  // the nonzero values in column order, then the zeros
      for (double x : d)
        if (x > 0)
          expected.push_back(x);
      expected.resize(std::size_t(n), 0.0);
      const std::string where = std::to_string(m) + " x " + std::to_string(n);
      for (bool wide : {false, true}) {
        const int rows = wide ? n : m, cols = wide ? m : n;
        const std::vector<std::vector<T>> mats = {wide ? at : a};
        const auto r = this->run(mats, rows, cols, unsorted);
        for (int l = 0; l < n; ++l)
          EXPECT_NEAR(double(r.s[0][std::size_t(l)]), expected[std::size_t(l)],
                      30 * this->unit_roundoff() * n)
              << where << " wide " << wide << " level0 " << level0 << " value " << l;
        this->expect_accurate(mats, rows, cols, sorted_by_value(r, rows, cols),
                              "orthogonal columns, unsorted, " + where);
      }
    }
  }
}

TYPED_TEST(Wcycle, EmptyBatchesAndEmptyMatrices) {
  using T = typename TestFixture::TestScalar;
  using L = typename TestFixture::TestLayout;
  for (auto [batch, m, n] : {std::tuple{0, 50, 40}, std::tuple{3, 0, 40}, std::tuple{3, 50, 0}}) {
    const int k = std::min(m, n);
    Kokkos::View<T***, L> A("A", batch, m, n), U("U", batch, m, k), V("V", batch, n, k);
    Kokkos::View<T**, L> S("S", batch, k);
    Kokkos::View<kwsvd::SvdInfo*> info("info", batch);
    kwsvd::batched_svd(Exec(), A, S, U, V, info, TestFixture::block_rotations());
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
    for (int b = 0; b < batch; ++b)
      EXPECT_EQ(hi(b).converged, 1);
  }
}

TYPED_TEST(Wcycle, ReusedHandleGivesTheSameResultAndChecksShapes) {
  using T = typename TestFixture::TestScalar;
  using L = typename TestFixture::TestLayout;
  const int batch = 2, m = 80, n = 36;
  std::vector<std::vector<T>> mats = {random_matrix<T>(m, n, 4), random_matrix<T>(m, n, 5)};
  auto A = kwsvd::test::to_device<T, L>(mats, m, n);
  Kokkos::View<T**, L> S1("S1", batch, n), S2("S2", batch, n);
  Kokkos::View<kwsvd::SvdInfo*> info("info", batch);
  kwsvd::BatchedSvd<Exec, T> svd(Exec(), batch, m, n, TestFixture::block_rotations());
  EXPECT_FALSE(svd.level0());
  EXPECT_GT(svd.block_width(), 0);
  svd.compute(A, S1, info);
  svd.compute(A, S2, info);
  auto h1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), S1);
  auto h2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), S2);
  for (int b = 0; b < batch; ++b)
    for (int l = 0; l < n; ++l)
      EXPECT_EQ(h1(b, l), h2(b, l));
  Kokkos::View<T**, L> Sbad("S", batch, n + 1);
  std::string w = error_of([&] { svd.compute(A, Sbad, info); });
  EXPECT_NE(w.find("'S'"), std::string::npos) << w;
  EXPECT_NE(w.find("(batch, min(m, n))"), std::string::npos) << w;
  Kokkos::View<T***, L> Abad("A", batch, m + 1, n);
  w = error_of([&] { svd.compute(Abad, S1, info); });
  EXPECT_NE(w.find("'A'"), std::string::npos) << w;
  kwsvd::SvdOptions bad;
  bad.max_sweeps = 0;
  w = error_of([&] { kwsvd::BatchedSvd<Exec, T>(Exec(), batch, m, n, bad); });
  EXPECT_NE(w.find("options.max_sweeps"), std::string::npos) << w;
  w = error_of([&] { kwsvd::BatchedSvd<Exec, T>(Exec(), -1, m, n); });
  EXPECT_NE(w.find("batch, m, n"), std::string::npos) << w;
  // Every option is checked when the handle is made, whichever path it
  // plans (lanes_per_pair was not checked at all for block rotations, and
  // instances, block_scratch_bytes and level_widths not for level 0).
  for (bool level0 : {true, false}) {
    const std::pair<const char*, void (*)(kwsvd::SvdOptions&)> bad_options[] = {
        {"lanes_per_pair", [](kwsvd::SvdOptions& o) { o.lanes_per_pair = 3; }},
        {"lanes_rule", [](kwsvd::SvdOptions& o) { o.lanes_rule = kwsvd::LanesRule(9); }},
        {"job", [](kwsvd::SvdOptions& o) { o.job = kwsvd::Job(7); }},
        {"instances", [](kwsvd::SvdOptions& o) { o.instances = 5; }},
        {"block_scratch_bytes", [](kwsvd::SvdOptions& o) { o.block_scratch_bytes = -1; }},
        {"level_widths", [](kwsvd::SvdOptions& o) {
           o.level_widths = {16, 32};
         }}};
    for (const auto& [field, spoil] : bad_options) {
      kwsvd::SvdOptions options;
      options.level0 = level0;
      spoil(options);
      w = error_of([&] { kwsvd::BatchedSvd<Exec, T>(Exec(), batch, m, n, options); });
      EXPECT_NE(w.find(std::string("kwsvd::BatchedSvd: argument 'options.") + field + "'"),
                std::string::npos)
          << w;
      w = error_of([&] { kwsvd::VariableBatchedSvd<Exec, T>(Exec(), {{m, n}}, options); });
      EXPECT_NE(w.find(std::string("argument 'options.") + field + "'"), std::string::npos) << w;
    }
  }
  kwsvd::SvdOptions widths = TestFixture::block_rotations();
  widths.level_widths = {16, 32};
  w = error_of([&] { kwsvd::BatchedSvd<Exec, T>(Exec(), batch, m, n, widths); });
  EXPECT_NE(w.find("kwsvd::BatchedSvd"), std::string::npos) << w;
  EXPECT_NE(w.find("options.level_widths"), std::string::npos) << w;
  EXPECT_NE(w.find("strictly decreasing; got {16, 32}"), std::string::npos) << w;
  widths.level_widths = {64};
  widths.block_scratch_bytes = 32768;
  w = error_of([&] { kwsvd::BatchedSvd<Exec, T>(Exec(), batch, m, n, widths); });
  EXPECT_NE(w.find("Gram EVD fits the 32768 bytes"), std::string::npos) << w;
  EXPECT_NE(w.find("got {64}"), std::string::npos) << w;
  widths.block_scratch_bytes = -1;
  w = error_of([&] { kwsvd::BatchedSvd<Exec, T>(Exec(), batch, m, n, widths); });
  EXPECT_NE(w.find("options.block_scratch_bytes"), std::string::npos) << w;
}

// The recorder the next test relies on sees an allocation, a copy back and
// (Kokkos 4) a fence.
TEST(KokkosEvents, RecorderSeesAnAllocationACopyIntoHostMemoryAndAFence) {
  kwsvd::test::KokkosEvents events;
  {
    kwsvd::test::KokkosEventRecorder recorder(events);
    Kokkos::View<double*> x("kwsvd_test_x", 8);
    auto h = Kokkos::create_mirror(Kokkos::HostSpace(), x);
    Kokkos::deep_copy(h, x);
    Exec().fence();
  }
  ASSERT_EQ(events.allocations.size(), 2u) << events.allocation_list();
  EXPECT_NE(events.allocations[0].label.find("kwsvd_test_x"), std::string::npos)
      << events.allocation_list();
  EXPECT_EQ(events.copies_into_host(), 1);
  EXPECT_EQ(events.largest_copy_into_host(), 64u);
#if KOKKOS_VERSION >= 40000  // Kokkos 3.4 reports no fences
  EXPECT_FALSE(events.fences.empty());
#endif
}

// A matrix that fits level-0 scratch beside V only on the level-0 kernel's
// general row loop (V leaves no room to pad W's rows) is swept whole instead
// where the whole sweeps' compiled loop runs on the same lanes
// (Impl::sweeps_whole_instead_of_level0): forced lanes here, which give the
// same plans on the host's 32 KB and a GPU's 40 KB. Square-ish, tall and
// wide meet seed 002's thresholds on whichever path the backend's limit
// gives.
TYPED_TEST(Wcycle, GeneralRowLoopsAtLevelZeroAreSweptWhole) {
  using T = typename TestFixture::TestScalar;
  const bool dbl = sizeof(T) == 8;
  const double kappa = dbl ? 1e10 : 1e5;
  const std::size_t limit = std::size_t(kwsvd::Impl::team_scratch_bytes_max<Exec>());
  const std::vector<std::tuple<int, int, int>> shapes =
      dbl ? std::vector<std::tuple<int, int, int>>{{49, 40, 8}, {40, 49, 8}, {100, 20, 16}}
          : std::vector<std::tuple<int, int, int>>{{100, 40, 16}, {40, 100, 16}};
  for (auto [m, n, lanes] : shapes) {
    const std::string shape = std::to_string(m) + " x " + std::to_string(n);
    kwsvd::SvdOptions options;
    options.lanes_per_pair = lanes;
    options.qr = kwsvd::QrPreprocessing::never;  // the rule for the matrix itself (100 x 20)
    const bool whole = kwsvd::Impl::sweeps_whole_instead_of_level0<Exec, T>(
        m, n, 3, options, kwsvd::Impl::level0_plan<Exec, T>(m, n, 3, options, limit), limit,
        long(Exec().concurrency()));
    if (limit >= 32768 && limit <= 40936) {
      EXPECT_TRUE(whole) << shape;
    }
    kwsvd::BatchedSvd<Exec, T> svd(Exec(), 3, m, n, options);
    EXPECT_EQ(svd.level0(), (kwsvd::small_svd_fits<T, Exec>(m, n) && !whole)) << shape;
    if (whole) {
      EXPECT_EQ(svd.plan_summary().whole_matrices, 3) << shape;
      EXPECT_EQ(svd.plan_summary().launch_steps, 0) << shape;
    }
    for (const std::string name : {"random", "arith", "cluster0", "cluster1", "logrand", "geo"}) {
      const auto mats = kwsvd::test::spectrum_batch<T>(name, m, n, kappa, 3);
      this->expect_accurate(mats, m, n, this->run(mats, m, n, options), name + ", " + shape);
    }
  }
}

// Float matrices of more than 68 columns on level 0's nine-block loop go to
// the column blocks at batches above 400 (Impl::blocks_instead_of_level0)
// where the backend's level-0 limit is a GPU's 40 KB or more, and meet seed
// 002's thresholds there; 400 of them stay at level 0.
TYPED_TEST(Wcycle, WideNineBlockMatricesOfLargeBatchesGoToTheBlocks) {
  using T = typename TestFixture::TestScalar;
  if (sizeof(T) != 4)
    GTEST_SKIP() << "double matrices this wide do not fit level 0";
  const bool gpu_limit = kwsvd::Impl::team_scratch_bytes_max<Exec>() >= 40936;
  for (auto [m, n, spectrum] : {std::tuple{70, 70, "random"}, std::tuple{71, 69, "geo"}}) {
    const std::string shape = std::to_string(m) + " x " + std::to_string(n);
    const kwsvd::SvdOptions options;
    kwsvd::BatchedSvd<Exec, T> large(Exec(), 401, m, n, options), small(Exec(), 400, m, n, options);
    if (gpu_limit) {
      EXPECT_FALSE(large.level0()) << shape;
      EXPECT_EQ(large.plan_summary().whole_matrices, 0) << shape;
      EXPECT_TRUE(small.level0()) << shape;
    }
    // Elsewhere (the host's 32 KB) these are blocked at any batch: two do.
    const auto mats = kwsvd::test::spectrum_batch<T>(spectrum, m, n, 1e5, gpu_limit ? 401 : 2);
    this->expect_accurate(mats, m, n, this->run(mats, m, n, options), spectrum + (", " + shape));
  }
}

// A reused handle allocates nothing after its first call, and a call reads
// back at most one small value per sweep (issue 6, items 3 and 4) and waits
// for the device only for those reads: for the blocked W-cycle, the matrices
// swept whole, and the level-0 kernel.
TYPED_TEST(Wcycle, ReusedHandleAllocatesNothingAndReadsBackOnceASweep) {
  using T = typename TestFixture::TestScalar;
  using L = typename TestFixture::TestLayout;
  const bool dbl = sizeof(T) == 8;
  enum class Path { blocked, whole, level0 };
  struct Shape {
    int m, n;
    Path path;
    const char* what;
  };
  // 60 x 60 (double) and 120 x 64 (float) fit level-0 scratch without V only.
  for (const Shape& c : {Shape{90, 80, Path::blocked, "blocked"},
                         Shape{dbl ? 60 : 120, dbl ? 60 : 64, Path::whole, "whole"},
                         Shape{12, 10, Path::level0, "level 0"}}) {
    SCOPED_TRACE(c.what);
    const bool fits = kwsvd::small_svd_fits<T, Exec>(c.m, c.n);
    if (c.path == Path::whole && fits)  // level-0 scratch holds V too: no "whole" case
      continue;
    const int batch = 3, k = std::min(c.m, c.n);
    std::vector<std::vector<T>> mats;
    for (int b = 0; b < batch; ++b)
      mats.push_back(random_matrix<T>(c.m, c.n, 31u + b));
    auto A = kwsvd::test::to_device<T, L>(mats, c.m, c.n);
    Kokkos::View<T***, L> U("U", batch, c.m, k), V("V", batch, c.n, k);
    Kokkos::View<T**, L> S("S", batch, k);
    Kokkos::View<kwsvd::SvdInfo*> info("info", batch);
    kwsvd::SvdOptions options;
    options.level0 = c.path != Path::blocked;
    options.block_scratch_bytes = 32768;
    kwsvd::BatchedSvd<Exec, T> svd(Exec(), batch, c.m, c.n, options);
    const auto plan = svd.plan_summary();
    ASSERT_EQ(svd.level0(), c.path == Path::level0);
    if (!svd.level0()) {
      EXPECT_EQ(plan.whole_matrices, c.path == Path::whole ? batch : 0);
    }
    svd.compute(A, S, U, V, info);  // the first call may set up Kokkos's own buffers
    kwsvd::test::expect_reused_calls_allocate_nothing(
        svd, A, S, U, V, info, [&](const kwsvd::test::KokkosEvents& events, const auto& hi, bool) {
          const int sweeps = kwsvd::test::most_sweeps(hi);  // hi is on the host: no second copy
          EXPECT_GT(sweeps, 0);
          // Level 0 and the whole-matrix sweeps decide convergence on the device.
          const int reads = plan.launch_steps > 0 ? sweeps : 0;
          EXPECT_LE(events.device_to_host_copies(), reads);
          EXPECT_LE(events.copies_into_host(), reads);
          EXPECT_LE(events.largest_copy_into_host(), 64u);
          EXPECT_LE(int(events.copies.size()), reads);
          // Waits: one before the parts' streams start (where there are several),
          // then one per part and sweep for the read; none for level 0 and
          // matrices swept whole, whose calls are asynchronous.
          const int waits = plan.launch_steps > 0 ? 1 + plan.instances * sweeps : 0;
          EXPECT_LE(int(events.fences.size()), waits) << events.fence_list();
        });
  }
}

// workspace_bytes() is what the handle's constructor allocated in the
// execution space's memory, to the byte, and planned_workspace_bytes() gives
// the same number beforehand without allocating or copying anything: for the
// blocked W-cycle (with and without V, two parts, two levels, pair SVDs),
// matrices swept whole, level 0 and empty batches. The W-cycle's working
// copies of A (and V) are part of it.
TYPED_TEST(Wcycle, WorkspaceBytesAreWhatTheHandleAllocates) {
  using T = typename TestFixture::TestScalar;
  const bool dbl = sizeof(T) == 8;
  struct Shape {
    int batch, m, n;
    const char* what;
    kwsvd::SvdOptions options;
  };
  kwsvd::SvdOptions blocked, values, parts, levels, pairs, whole, level0;
  for (auto* o : {&blocked, &values, &parts, &levels, &pairs, &whole})
    o->block_scratch_bytes = 32768;
  blocked.level0 = values.level0 = parts.level0 = levels.level0 = pairs.level0 = false;
  values.job = kwsvd::Job::values;
  parts.instances = 2;
  levels.level_widths = dbl ? std::vector<int>{32, 16} : std::vector<int>{48, 24};
  pairs.pair_svd = true;
  const std::string memory = Exec::memory_space::name();
  for (const Shape& c :
       {Shape{3, 90, 80, "blocked", blocked}, Shape{3, 90, 80, "values only", values},
        Shape{4, 40, 130, "wide, two parts", parts},
        Shape{2, 180, dbl ? 96 : 150, "two levels", levels}, Shape{3, 60, 64, "pair SVDs", pairs},
        Shape{3, dbl ? 60 : 120, dbl ? 60 : 64, "whole", whole},
        Shape{5, 12, 10, "level 0", level0}, Shape{0, 90, 80, "empty batch", blocked},
        Shape{3, 0, 80, "empty matrices", blocked}}) {
    SCOPED_TRACE(c.what);
    kwsvd::test::KokkosEvents planning, construction;
    std::size_t planned = 0;
    {
      kwsvd::test::KokkosEventRecorder recorder(planning);
      planned =
          kwsvd::BatchedSvd<Exec, T>::planned_workspace_bytes(Exec(), c.batch, c.m, c.n, c.options);
    }
    EXPECT_TRUE(planning.allocations.empty()) << planning.allocation_list();
    EXPECT_TRUE(planning.copies.empty());
    std::size_t held = 0;
    {
      kwsvd::test::KokkosEventRecorder recorder(construction);
      kwsvd::BatchedSvd<Exec, T> svd(Exec(), c.batch, c.m, c.n, c.options);
      held = svd.workspace_bytes();
      const auto plan = svd.plan_summary();
      if (c.options.instances == 2) {
        EXPECT_EQ(plan.instances, 2);
      }
      if (!c.options.level_widths.empty()) {
        EXPECT_EQ(plan.levels, 2);
      }
      if (c.options.pair_svd) {
        EXPECT_GT(plan.pair_svds, 0);
      }
      if (c.options.level0 && std::string(c.what) == "whole") {
        EXPECT_EQ(plan.whole_matrices, c.batch);
      }
    }
    EXPECT_EQ(planned, held);
    EXPECT_EQ(construction.bytes_allocated(memory, "kwsvd::"), held)
        << construction.allocation_list();
    const std::size_t big = std::size_t(std::max(c.m, c.n)),
                      small = std::size_t(std::min(c.m, c.n));
    const std::size_t working = std::size_t(c.batch) * big * small * sizeof(T);
    const std::size_t v = std::size_t(c.batch) * small * small * sizeof(T);
    if (std::string(c.what) == "level 0" || c.batch == 0 || small == 0) {
      EXPECT_EQ(held, 0u);
    } else {
      EXPECT_GE(held, working + (c.options.job == kwsvd::Job::values ? 0 : v));
    }
  }
  // Values only holds no V, so less than the call with vectors by V's bytes.
  const std::size_t with_v =
      kwsvd::BatchedSvd<Exec, T>::planned_workspace_bytes(Exec(), 3, 90, 80, blocked);
  const std::size_t without_v =
      kwsvd::BatchedSvd<Exec, T>::planned_workspace_bytes(Exec(), 3, 90, 80, values);
  EXPECT_GE(with_v, without_v + 3 * 80 * 80 * sizeof(T));
  // The query checks its arguments as the constructor does, under its own name.
  const std::string e =
      error_of([] { kwsvd::BatchedSvd<Exec, T>::planned_workspace_bytes(Exec(), -1, 4, 4); });
  EXPECT_NE(e.find("kwsvd::BatchedSvd::planned_workspace_bytes"), std::string::npos) << e;
  EXPECT_NE(e.find("batch, m, n"), std::string::npos) << e;
}

// Under SvdOptions::max_workspace_bytes a batch is swept in rounds whose
// workspace fits the limit, each solved as a batch of its size alone would
// be, to the bit: 7 matrices with a limit of 3 matrices' workspace, so that
// the last round overlaps the one before; also values only and the
// raw-pointer form. A limit below one matrix's workspace is refused, naming
// the option and that workspace (VariableBatch's
// WorkspaceLimitSweepsRoundsThatShareOneWorkspace: a variable batch's rounds).
TYPED_TEST(Wcycle, WorkspaceLimitSweepsTheBatchInRoundsOfTheirOwn) {
  using T = typename TestFixture::TestScalar;
  using L = typename TestFixture::TestLayout;
  const int batch = 7, m = 90, n = 80;
  std::vector<std::vector<T>> mats;
  for (int b = 0; b < batch; ++b)
    mats.push_back(b % 2 ? random_matrix<T>(m, n, 300u + b)
                         : kwsvd::test::matrix_with_spectrum<T>(
                               m, n, kwsvd::test::spectrum("geo", n, 1e5, 310 + b), 320u + b));
  const kwsvd::SvdOptions unlimited = TestFixture::block_rotations();
  kwsvd::SvdOptions limited = unlimited;
  limited.max_workspace_bytes =
      kwsvd::BatchedSvd<Exec, T>::planned_workspace_bytes(Exec(), 3, m, n, unlimited);
  kwsvd::BatchedSvd<Exec, T> svd(Exec(), batch, m, n, limited);
  EXPECT_LE(svd.workspace_bytes(), limited.max_workspace_bytes);
  using Svd = kwsvd::BatchedSvd<Exec, T>;
  EXPECT_EQ(svd.workspace_bytes(), Svd::planned_workspace_bytes(Exec(), batch, m, n, limited));
  const int round = int(svd.matrices_per_round());
  ASSERT_GE(round, 1);
  EXPECT_LE(round, 3);
  EXPECT_NE(batch % round, 0);  // the last round overlaps
  EXPECT_EQ(Svd(Exec(), batch, m, n, unlimited).matrices_per_round(), batch);
  const auto rounds = this->run(mats, m, n, limited);
  this->expect_accurate(mats, m, n, rounds, "rounds");
  const auto values = kwsvd::test::run_svd_batch<T, L>(
      mats, m, n, [&](const auto& A, const auto& S, const auto&, const auto&, const auto& info) {
        kwsvd::batched_svd(Exec(), A, S, info, limited);
      });
  // Each round is a call on its matrices alone; where the last round
  // overlaps the one before, its results are the ones left.
  std::vector<kwsvd::test::BatchResult<T>> alone(batch);
  std::vector<int> first(batch);
  for (int b0 = 0; b0 < batch; b0 += round) {
    const int start = std::min(b0, batch - round);
    const auto r = this->run({mats.begin() + start, mats.begin() + start + round}, m, n, unlimited);
    for (int k = 0; k < round; ++k) {
      alone[start + k] = r;
      first[start + k] = start;
    }
  }
  for (int b = 0; b < batch; ++b) {
    const auto& one = alone[b];
    const int k = b - first[b];
    EXPECT_EQ(one.info[k].sweeps, rounds.info[b].sweeps) << b;
    EXPECT_EQ(rounds.info[b].converged, 1) << b;
    EXPECT_EQ(one.s[k], rounds.s[b]) << b;
    EXPECT_EQ(one.u[k], rounds.u[b]) << b;
    EXPECT_EQ(one.v[k], rounds.v[b]) << b;
    EXPECT_EQ(rounds.s[b], values.s[b]) << b;
  }
  // The raw-pointer form goes through the same handle.
  Kokkos::View<T*> A("A", std::size_t(batch) * m * n), S("S", std::size_t(batch) * n),
      U("U", std::size_t(batch) * m * n), V("V", std::size_t(batch) * n * n);
  Kokkos::View<kwsvd::SvdInfo*> info("info", batch);
  {
    auto h = Kokkos::create_mirror_view(A);
    for (int b = 0; b < batch; ++b)
      std::copy(mats[b].begin(), mats[b].end(), h.data() + std::size_t(b) * m * n);
    Kokkos::deep_copy(A, h);
  }
  kwsvd::batched_svd(Exec(), batch, m, n, A.data(), m, (long long)m * n, S.data(), n, U.data(), m,
                     (long long)m * n, V.data(), n, (long long)n * n, info.data(), limited);
  auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), S);
  for (int b = 0; b < batch; ++b)
    EXPECT_EQ(std::vector<T>(hs.data() + std::size_t(b) * n, hs.data() + std::size_t(b + 1) * n),
              rounds.s[b])
        << b;
  // Refusals.
  kwsvd::SvdOptions tiny = unlimited;
  tiny.max_workspace_bytes = 1000;
  const std::string e = error_of([&] { kwsvd::BatchedSvd<Exec, T>(Exec(), batch, m, n, tiny); });
  EXPECT_NE(e.find("options.max_workspace_bytes"), std::string::npos) << e;
  EXPECT_NE(e.find("the workspace of one 90 x 80 matrix"), std::string::npos) << e;
  EXPECT_NE(e.find("got 1 kB (1000 bytes)"), std::string::npos) << e;
}

// A workspace the memory cannot hold is reported as kwsvd::out_of_memory, a
// std::bad_alloc whose message names the handle, the buffer, its size and the
// way out (planned_workspace_bytes, a split batch): 2^20 matrices of 4096 x
// 4096 want 141 TB for the working copy alone, more than any host or device
// has (the handle allocates it before it plans the steps).
TEST(WcycleWorkspace, TooLargeIsReportedAsOutOfMemoryNamingTheBuffer) {
  std::string message;
  try {
    kwsvd::BatchedSvd<Exec, double> svd(Exec(), 1L << 20, 4096, 4096);
    ADD_FAILURE() << "a 141 TB workspace was allocated";
  } catch (const std::bad_alloc& e) {
    EXPECT_NE(dynamic_cast<const kwsvd::out_of_memory*>(&e), nullptr);
    message = e.what();
  }
  EXPECT_NE(message.find("kwsvd::BatchedSvd:"), std::string::npos) << message;
  EXPECT_NE(message.find("'kwsvd::W'"), std::string::npos) << message;
  EXPECT_NE(message.find("141 TB (140737488355328 bytes)"), std::string::npos) << message;
  EXPECT_NE(message.find(Exec::memory_space::name()), std::string::npos) << message;
  EXPECT_NE(message.find("planned_workspace_bytes"), std::string::npos) << message;
  // The process goes on: a handle of a size that fits still works.
  const auto mats = std::vector<std::vector<double>>{random_matrix<double>(90, 80, 5u)};
  const auto A = kwsvd::test::to_device<double, Kokkos::LayoutLeft>(mats, 90, 80);
  Kokkos::View<double**, Kokkos::LayoutLeft> S("S", 1, 80);
  Kokkos::View<kwsvd::SvdInfo*> info("info", 1);
  kwsvd::SvdOptions options;
  options.level0 = false;
  kwsvd::batched_svd(Exec(), A, S, info, options);
  auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
  EXPECT_EQ(hi(0).converged, 1);
}

// A call on the caller's instance (on a GPU a stream of its own, here with
// the batch's two parts on two more streams) follows the work queued on it
// before, unfenced, and is complete once that instance alone is fenced: A is
// written by the caller's kernels on the instance just before the call, and
// the results are copied out by a kernel on another stream right after
// fencing the instance. Both give the results of a call on the default
// instance, to the bit.
TYPED_TEST(Wcycle, RunsInOrderOnTheCallersInstance) {
  using T = typename TestFixture::TestScalar;
  using L = typename TestFixture::TestLayout;
  const int batch = 4, m = 100, n = 96, k = 96;
  std::vector<std::vector<T>> mats;
  for (int b = 0; b < batch; ++b)
    mats.push_back(random_matrix<T>(m, n, 300u + b));
  kwsvd::SvdOptions options = TestFixture::block_rotations();
  options.instances = 2;
  const auto ref = this->run(mats, m, n, options);

  std::vector<Exec> streams = {Exec(), Exec()};
  if constexpr (kwsvd::Impl::splits_into_streams<Exec>())
    streams = kwsvd::Impl::stream_instances(Exec(), 2);
  const Exec caller = streams[0], reader = streams[1];
  const auto source = kwsvd::test::to_device<T, L>(mats, m, n);
  Kokkos::View<T***, L> A("A", batch, m, n), U("U", batch, m, k), V("V", batch, n, k);
  Kokkos::View<T**, L> S("S", batch, k);
  Kokkos::View<kwsvd::SvdInfo*> info("info", batch);
  Kokkos::View<T**, L> S_read("S_read", batch, k);
  Kokkos::View<T***, L> U_read("U_read", batch, m, k);
  Kokkos::View<double*> sink("sink", 1);
  kwsvd::BatchedSvd<Exec, T> svd(caller, batch, m, n, options);
  Kokkos::fence();

  Kokkos::parallel_for("delay", Kokkos::RangePolicy<Exec>(caller, 0, 1), DelayChain{sink.data()});
  Kokkos::parallel_for("fill A", Kokkos::RangePolicy<Exec>(caller, 0, int(A.span())),
                       CopyEntries<T>{source.data(), A.data()});
  svd.compute(A, S, U, V, info);
  caller.fence();
  Kokkos::parallel_for("delay", Kokkos::RangePolicy<Exec>(reader, 0, 1), DelayChain{sink.data()});
  Kokkos::parallel_for("read S", Kokkos::RangePolicy<Exec>(reader, 0, int(S.span())),
                       CopyEntries<T>{S.data(), S_read.data()});
  Kokkos::parallel_for("read U", Kokkos::RangePolicy<Exec>(reader, 0, int(U.span())),
                       CopyEntries<T>{U.data(), U_read.data()});
  Kokkos::fence();
  auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), S_read);
  auto hu = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), U_read);
  for (int b = 0; b < batch; ++b)
    for (int l = 0; l < k; ++l) {
      ASSERT_EQ(hs(b, l), ref.s[std::size_t(b)][std::size_t(l)]) << b << " " << l;
      for (int i = 0; i < m; ++i)
        ASSERT_EQ(hu(b, i, l), ref.u[std::size_t(b)][i + std::size_t(m) * l]) << b << " " << i;
    }
}

// Singular values are final column norms; one lane's part of a column of
// 10^6 rows was summed plainly (125000 rows a lane on a GPU, all of them in
// a host lane): float sigma 190 u (GPU) and 640 u (host) off LAPACK's. Each
// lane's sum is now compensated. The reference is ||A v_l|| in long double
// (V is orthonormal to about u, so that is sigma_l to about u): in double,
// LAPACK's own dgesvd is up to 145 u off it here, so e4 cannot judge double.
TYPED_TEST(Wcycle, TallColumnsGiveSingularValuesToTheUnitRoundoff) {
  using T = typename TestFixture::TestScalar;
  const double u = TestFixture::unit_roundoff();
  const int m = 1000000, n = 4;
  const std::vector<std::vector<T>> mats = {random_matrix<T>(m, n, 77)};
  for (bool level0 : {true, false}) {
    kwsvd::SvdOptions options;
    options.level0 = level0;
    const auto r = this->run(mats, m, n, options);
    if (sizeof(T) == sizeof(float))
      this->expect_accurate(mats, m, n, r, level0 ? "tall, level 0" : "tall, blocks");
    for (int l = 0; l < n; ++l) {
      long double ss = 0;
      for (int i = 0; i < m; ++i) {
        long double y = 0;
        for (int j = 0; j < n; ++j)
          y += (long double)mats[0][i + std::size_t(m) * j] *
               (long double)r.v[0][j + std::size_t(n) * l];
        ss += y * y;
      }
      const double sigma = double(std::sqrt(ss));
      EXPECT_LT(std::abs(double(r.s[0][std::size_t(l)]) - sigma), 8 * u * sigma)
          << "sigma " << l << " level0 " << level0;
    }
  }
}

// The smallest tolerance a call takes is machine epsilon, 2 u (LAPACK
// dgesvj's floor): there the sweeps still converge to an accurate SVD, also
// for clusters of equal singular values, whose columns rotate by large
// angles on cosines near u (at u itself seed 002's cluster spectra at 64^2
// ran 60 sweeps unconverged, by level 0). Below it the tolerance is
// refused, and far below (1e-200 in double) its square underflowed, which
// made the W-cycle's test of small rotations pass the first sweep, reporting
// convergence with a largest singular value 4% off.
TYPED_TEST(Wcycle, ToleranceDownToMachineEpsilon) {
  using T = typename TestFixture::TestScalar;
  const double u = TestFixture::unit_roundoff();
  for (const char* spectrum : {"random", "cluster0", "cluster1"}) {
    const int m = 64, n = 64;
    const double kappa = std::is_same<T, float>::value ? 1e4 : 1e8;
    const auto mats = kwsvd::test::spectrum_batch<T>(spectrum, m, n, kappa, 6);
    for (bool level0 : {true, false}) {
      kwsvd::SvdOptions options;
      options.level0 = level0;
      options.tolerance = 2 * u;
      this->expect_accurate(mats, m, n, this->run(mats, m, n, options),
                            std::string("tolerance eps, ") + spectrum);
      for (double below : {1.5 * u, u, 1e-200, 1e-300}) {
        options.tolerance = below;
        const std::string w = error_of([&] { this->run(mats, m, n, options); });
        EXPECT_NE(w.find("argument 'options.tolerance' must be 0 (selects 30 u) or in [eps, 1)"),
                  std::string::npos)
            << w;
      }
    }
  }
}

// info may be any rank-1 View: a column of a 2-D one gets each matrix's
// info and nothing else, by the level-0 kernel, the W-cycle, an empty shape
// and batched_small_svd (its entries used to be written as if contiguous,
// over the other column, and matrices past the middle lost theirs).
TYPED_TEST(Wcycle, InfoMayBeAColumnOfATwoDimensionalView) {
  using T = typename TestFixture::TestScalar;
  using L = typename TestFixture::TestLayout;
  const int batch = 4;
  for (const auto& [m, n] : std::vector<std::pair<int, int>>{{12, 9}, {0, 5}}) {
    const auto mats = kwsvd::test::spectrum_batch<T>("random", m, n, 1, batch);
    const int k = std::min(m, n);
    auto A = kwsvd::test::to_device<T, L>(mats, m, n);
    Kokkos::View<T**, L> S("S", batch, k);
    Kokkos::View<T***, L> U("U", batch, m, k), V("V", batch, n, k);
    Kokkos::View<kwsvd::SvdInfo**, Kokkos::LayoutRight> info2("info2", batch, 3);
    const auto info = Kokkos::subview(info2, Kokkos::ALL, 1);
    ASSERT_EQ(info.stride(0), 3u);
    const auto expect_column_one = [&](const std::string& what) {
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info2);
      for (int b = 0; b < batch; ++b) {
        EXPECT_EQ(h(b, 0).sweeps, -1) << what << ": column 0 written at " << b;
        EXPECT_EQ(h(b, 2).sweeps, -1) << what << ": column 2 written at " << b;
        EXPECT_EQ(h(b, 1).converged, 1) << what << ", matrix " << b;
        EXPECT_EQ(h(b, 1).sweeps > 0, k > 0) << what << ", matrix " << b;
      }
    };
    const std::string shape = std::to_string(m) + " x " + std::to_string(n);
    for (bool level0 : {true, false}) {
      kwsvd::SvdOptions options;
      options.level0 = level0;
      kwsvd::test::fill(info2, kwsvd::SvdInfo{-1, -1, -1});
      kwsvd::batched_svd(Exec(), A, S, U, V, info, options);
      expect_column_one(shape + (level0 ? ", level 0" : ", block rotations"));
    }
    kwsvd::test::fill(info2, kwsvd::SvdInfo{-1, -1, -1});
    kwsvd::batched_small_svd(Exec(), A, S, U, V, info);
    expect_column_one(shape + ", batched_small_svd");
  }
}

// Outputs that share storage with A or with each other would be written
// while other teams still read them: refused, naming both arguments. The
// check is exact for records of one spacing, so one buffer holding each
// matrix's A, U, V and S side by side (a record per matrix) is accepted, and
// the call then writes exactly the entries it was given, at level 0 and by
// block rotations.
TYPED_TEST(Wcycle, SharedStorageIsRefusedAndSideBySideRecordsAccepted) {
  using T = typename TestFixture::TestScalar;
  using L = typename TestFixture::TestLayout;
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  const int batch = 3, m = 50, n = 36, k = 36;
  Kokkos::View<T***, L> A("A", batch, m, n), U("U", batch, m, k), V("V", batch, n, k);
  Kokkos::View<T**, L> S("S", batch, k);
  Kokkos::View<kwsvd::SvdInfo*> info("info", batch);
  const auto expect_refused = [](const std::string& what, const char* output, const char* other) {
    EXPECT_NE(what.find(std::string("'") + output + "' shares storage with '" + other + "'"),
              std::string::npos)
        << what;
  };
  expect_refused(error_of([&] { kwsvd::batched_svd(Exec(), A, S, A, V, info); }), "U", "A");
  const auto U_top = Kokkos::subview(U, Kokkos::ALL, std::pair<int, int>(0, n), Kokkos::ALL);
  expect_refused(error_of([&] { kwsvd::batched_svd(Exec(), A, S, U, U_top, info); }), "V", "U");
  Kokkos::View<T**, L, Unmanaged> S_in_U(U.data(), batch, k);
  expect_refused(error_of([&] { kwsvd::batched_svd(Exec(), A, S_in_U, U, V, info); }), "U", "S");
  Kokkos::View<T**, L, Unmanaged> S_in_A(A.data(), batch, k);
  expect_refused(error_of([&] { kwsvd::batched_svd(Exec(), A, S_in_A, info); }), "S", "A");

  // Records [A(b) | U(b) | V(b) | S(b) | 3 spare entries] in one column-major
  // buffer through the raw-pointer form; every entry outside A, S, U, V
  // keeps its sentinel and A is left unchanged.
  const int lda = m + 1, ldu = m, ldv = n + 2;
  const long long a_size = (long long)lda * n, u_size = (long long)ldu * k,
                  v_size = (long long)ldv * k, record = a_size + u_size + v_size + k + 3;
  std::vector<std::vector<T>> mats;
  for (int b = 0; b < batch; ++b)
    mats.push_back(random_matrix<T>(m, n, 31u + b));
  const T sentinel = T(7.25);
  Kokkos::View<T*> buffer("records", std::size_t(batch * record));
  auto initial = Kokkos::create_mirror_view(buffer);
  for (long long x = 0; x < batch * record; ++x)
    initial(x) = sentinel;
  for (int b = 0; b < batch; ++b)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i)
        initial(b * record + i + (long long)lda * j) = mats[std::size_t(b)][i + std::size_t(m) * j];
  for (bool level0 : {true, false}) {
    kwsvd::SvdOptions options;
    options.level0 = level0;
    const auto ref = this->run(mats, m, n, options);
    Kokkos::deep_copy(buffer, initial);
    T* base = buffer.data();
    kwsvd::batched_svd(Exec(), batch, m, n, base, lda, record, base + a_size + u_size + v_size,
                       record, base + a_size, ldu, record, base + a_size + u_size, ldv, record,
                       info.data(), options);
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), buffer);
    std::vector<char> written(std::size_t(batch * record), 0);
    for (int b = 0; b < batch; ++b) {
      const long long r = b * record;
      for (int l = 0; l < k; ++l) {
        const long long s_at = r + a_size + u_size + v_size + l;
        EXPECT_EQ(h(s_at), ref.s[std::size_t(b)][std::size_t(l)]) << b << " " << l;
        written[std::size_t(s_at)] = 1;
        for (int i = 0; i < m; ++i) {
          const long long u_at = r + a_size + i + (long long)ldu * l;
          ASSERT_EQ(h(u_at), ref.u[std::size_t(b)][i + std::size_t(m) * l]) << b << " " << i;
          written[std::size_t(u_at)] = 1;
        }
        for (int i = 0; i < n; ++i) {
          const long long v_at = r + a_size + u_size + i + (long long)ldv * l;
          ASSERT_EQ(h(v_at), ref.v[std::size_t(b)][i + std::size_t(n) * l]) << b << " " << i;
          written[std::size_t(v_at)] = 1;
        }
      }
    }
    long long changed = 0;
    for (long long x = 0; x < batch * record; ++x)
      changed += !written[std::size_t(x)] && !(h(x) == initial(x));
    EXPECT_EQ(changed, 0) << "entries outside S, U, V changed (level0 " << level0 << ")";
  }
}

TYPED_TEST(Wcycle, RawPointerFormMatchesTheViewForm) {
  using T = typename TestFixture::TestScalar;
  const int batch = 2, m = 45, n = 30, k = 30, lda = m + 3, ldu = m + 1, ldv = n + 2;
  const long long sa = (long long)lda * n + 5, ss = k + 1, su = (long long)ldu * k,
                  sv = (long long)ldv * k + 7;
  std::vector<std::vector<T>> mats = {random_matrix<T>(m, n, 12), random_matrix<T>(m, n, 13)};
  const auto ref = this->run(mats, m, n);
  const auto A = kwsvd::test::to_device_strided(mats, m, n, lda, sa);
  Kokkos::View<T*> S("S", batch * ss), U("U", batch * su), V("V", batch * sv);
  Kokkos::View<kwsvd::SvdInfo*> info("info", batch);
  kwsvd::batched_svd(Exec(), batch, m, n, A.data(), lda, sa, S.data(), ss, U.data(), ldu, su,
                     V.data(), ldv, sv, info.data(), TestFixture::block_rotations());
  auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), S);
  auto hu = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), U);
  for (int b = 0; b < batch; ++b)
    for (int l = 0; l < k; ++l) {
      EXPECT_EQ(hs(b * ss + l), ref.s[std::size_t(b)][std::size_t(l)]) << b << " " << l;
      EXPECT_EQ(hu(b * su + 4 + (long long)ldu * l), ref.u[std::size_t(b)][4 + std::size_t(m) * l]);
    }
  std::string w = error_of([&] {
    kwsvd::batched_svd(Exec(), batch, m, n, A.data(), m - 1, sa, S.data(), ss, U.data(), ldu, su,
                       V.data(), ldv, sv, info.data());
  });
  EXPECT_NE(w.find("'lda'"), std::string::npos) << w;
  kwsvd::SvdOptions right;
  right.job = kwsvd::Job::values_and_right_vectors;
  w = error_of([&] {
    kwsvd::batched_svd(Exec(), batch, m, n, A.data(), lda, sa, S.data(), ss, U.data(), ldu, su,
                       static_cast<T*>(nullptr), ldv, sv, info.data(), right);
  });
  EXPECT_NE(w.find("argument 'U' must be null"), std::string::npos) << w;
  w = error_of([&] {
    kwsvd::batched_svd(Exec(), batch, m, n, A.data(), lda, 10, S.data(), ss, U.data(), ldu, su,
                       V.data(), ldv, sv, info.data());
  });
  EXPECT_NE(w.find("'strideA'"), std::string::npos) << w;
}

// The W-cycle keeps each V in columns that start whole 32-byte sectors (the
// unit of a global load), padded by fewer rows than a sector holds, so that
// rotating a run of rows in memory reads no extra sector (double 63^2 swept
// whole read 30% more sectors with columns 63 apart).
TEST(WcyclePlan, RightVectorsStartWholeSectors) {
  for (int n = 1; n <= 130; ++n) {
    kwsvd::Impl::WorkGeometry g;
    g.cols = n;
    const std::size_t d = g.ldv<double>(), f = g.ldv<float>();
    EXPECT_EQ(d * sizeof(double) % 32, 0u) << n;
    EXPECT_EQ(f * sizeof(float) % 32, 0u) << n;
    EXPECT_TRUE(d >= std::size_t(n) && d < std::size_t(n) + 4) << n << ": " << d;
    EXPECT_TRUE(f >= std::size_t(n) && f < std::size_t(n) + 8) << n << ": " << f;
  }
}

// Which matrices that fit level-0 scratch beside V the W-cycle sweeps whole
// instead (Impl::sweeps_whole_instead_of_level0), planned for the H200's
// 40936 bytes: those whose level-0 plan is the general row loop and whose
// whole plan a compiled one, on the same lanes (8 for 33 to 256 rows at
// batches above 400 or of many pairs; forced lanes) or with 16 lanes or more
// at level 0 (batches of 400 or fewer, of few pairs); not where the whole
// sweeps need more lanes on 8 at level 0, run the general loop too, or where
// level 0 has a compiled loop; nor, for whole teams of more than 10 pairs,
// at batches of more matrices than SMs (the H200's 132 SMs of 2048 threads).
TEST(WcyclePlan, GeneralRowLoopsAtLevelZeroAreSweptWhole) {
  using Host = Kokkos::DefaultHostExecutionSpace;
  namespace I = kwsvd::Impl;
  const std::size_t h200 = 40936;
  long threads = 132 * 2048;
  kwsvd::SvdOptions options;
  const auto whole = [&](auto scalar, int m, int n, long batch) {
    using T = decltype(scalar);
    return I::sweeps_whole_instead_of_level0<Host, T>(
        m, n, batch, options, I::level0_plan<Host, T>(m, n, batch, options, h200), h200, threads);
  };
  // 7 or 8 row blocks of 8 lanes, no room for the padding beside V.
  EXPECT_TRUE(whole(0.0, 49, 49, 1000));
  EXPECT_TRUE(whole(0.0, 50, 50, 500));
  EXPECT_TRUE(whole(0.0, 60, 44, 1000));
  EXPECT_TRUE(whole(0.0, 46, 56, 1000));    // wide, through the transpose
  EXPECT_FALSE(whole(0.0, 48, 48, 1000));   // six blocks, padded
  EXPECT_FALSE(whole(0.0f, 49, 49, 1000));  // float pads to 64 rows beside V
  // 13 blocks of 8 lanes at level 0; whole would take 16 lanes.
  EXPECT_FALSE(whole(0.0, 100, 30, 1000));
  // Batches of up to 400 with many pairs take 8 lanes at level 0 too
  // (lanes_per_pair_measured): 49^2 x 200 is then 7 blocks, whole on the
  // same lanes; 100 x 30 x 400 13 blocks, and whole would take 16.
  EXPECT_TRUE(whole(0.0, 49, 49, 200));
  EXPECT_FALSE(whole(0.0, 100, 30, 400));
  // 16 lanes at level 0 (batch 100): 7 blocks, or 16 against 8 blocks of 32.
  EXPECT_TRUE(whole(0.0, 120, 30, 100));
  EXPECT_TRUE(whole(0.0, 256, 16, 100));
  EXPECT_TRUE(whole(0.0f, 200, 16, 100));
  EXPECT_FALSE(whole(0.0f, 100, 30, 100));  // 7 blocks padded beside V
  EXPECT_FALSE(whole(0.0f, 200, 40, 100));  // whole: 7 blocks of 32, no room to pad either
  // 16 lanes at level 0 for batches of more than 2500 pairs: level 0 keeps
  // them, the whole sweeps' 32 lanes lose there.
  EXPECT_TRUE(whole(0.0, 128, 24, 200));    // 2400 pairs, same lanes
  EXPECT_FALSE(whole(0.0f, 256, 32, 200));  // 3200
  EXPECT_FALSE(whole(0.0f, 160, 20, 400));  // 4000 (16 lanes above 72 rows)
  EXPECT_FALSE(whole(0.0f, 200, 20, 400));
  // Whole teams of more than 10 pairs (32 lanes) only while every SM holds
  // one; teams of 10 pairs or fewer gain past that.
  EXPECT_TRUE(whole(0.0f, 256, 32, 132));
  EXPECT_FALSE(whole(0.0f, 256, 32, 133));
  EXPECT_TRUE(whole(0.0f, 256, 24, 132));
  EXPECT_FALSE(whole(0.0f, 256, 24, 136));
  EXPECT_FALSE(whole(0.0f, 192, 32, 136));
  EXPECT_TRUE(whole(0.0f, 200, 20, 150));
  EXPECT_TRUE(whole(0.0f, 256, 16, 150));
  threads = 2;  // a host's threads: no SM to fill, teams of many pairs stay
  EXPECT_FALSE(whole(0.0f, 256, 32, 100));
  EXPECT_TRUE(whole(0.0f, 200, 16, 100));
  EXPECT_TRUE(whole(0.0, 120, 30, 100));  // same lanes either way
  threads = 132 * 2048;
  EXPECT_FALSE(whole(0.0, 70, 70, 1000));  // more than 64 columns: not swept whole
  options.job = kwsvd::Job::values;        // no V in scratch: 64 padded rows fit
  EXPECT_FALSE(whole(0.0, 49, 49, 1000));
  options.job = kwsvd::Job::values_and_vectors;
  options.lanes_per_pair = 16;  // forced: whole keeps them
  EXPECT_TRUE(whole(0.0, 100, 30, 1000));
  EXPECT_FALSE(whole(0.0, 256, 16, 100));  // 16 blocks of 16 lanes either way
}

// Which matrices that fit level-0 scratch beside V the W-cycle solves in
// column blocks instead (Impl::blocks_instead_of_level0), planned for the
// H200's 40936 bytes: more than 68 columns on level 0's bounded nine-block
// loop (float 69^2 to 71^2) at batches above 400, with V. The typed test
// above checks the route itself on a backend with the GPU's limit.
TEST(WcyclePlan, WideNineBlockLevelZeroMatricesGoToTheBlocks) {
  using Host = Kokkos::DefaultHostExecutionSpace;
  namespace I = kwsvd::Impl;
  const std::size_t h200 = 40936;
  kwsvd::SvdOptions options;
  const auto blocks = [&](int m, int n, long batch) {
    return I::blocks_instead_of_level0(batch,
                                       I::level0_plan<Host, float>(m, n, batch, options, h200));
  };
  EXPECT_TRUE(blocks(69, 69, 1000));
  EXPECT_TRUE(blocks(70, 70, 500));
  EXPECT_TRUE(blocks(71, 71, 401));
  EXPECT_TRUE(blocks(72, 69, 1000));   // tall: still nine blocks of 8 rows
  EXPECT_FALSE(blocks(71, 71, 400));   // small batches stay at level 0
  EXPECT_FALSE(blocks(68, 68, 1000));  // 68 columns or fewer stay
  EXPECT_FALSE(blocks(65, 65, 1000));
  options.job = kwsvd::Job::values;  // no V in scratch: not measured, level 0
  EXPECT_FALSE(blocks(70, 70, 1000));
  options.job = kwsvd::Job::values_and_vectors;
  options.lanes_per_pair = 16;  // five blocks of 16 lanes: not the nine-block loop
  EXPECT_FALSE(blocks(70, 70, 1000));
}

// The recursive block ordering: every pair (i, j), i < j, once per sweep,
// disjoint pairs in each step, and no more steps than the circle method.
TEST(WcyclePlan, BlockOrderingTakesEveryPairOnce) {
  for (int count = 0; count <= 70; ++count) {
    const auto steps = kwsvd::Impl::block_pair_ordering(count);
    std::set<std::pair<int, int>> seen;
    for (const auto& step : steps) {
      std::set<int> used;
      for (const auto& [i, j] : step) {
        EXPECT_TRUE(0 <= i && i < j && j < count) << count << ": (" << i << ", " << j << ")";
        EXPECT_TRUE(used.insert(i).second && used.insert(j).second) << count << ": collision";
        EXPECT_TRUE(seen.insert({i, j}).second) << count << ": (" << i << ", " << j << ") twice";
      }
    }
    EXPECT_EQ(int(seen.size()), count * (count - 1) / 2) << count;
    EXPECT_EQ(int(steps.size()), count < 2 ? 0 : count - 1 + (count & 1)) << count;
  }
  // Cross pairs of the halves first, the neighbours last (paper 001 §3).
  const auto eight = kwsvd::Impl::block_pair_ordering(8);
  EXPECT_EQ(eight.front(), (kwsvd::Impl::BlockPairStep{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(eight.back(), (kwsvd::Impl::BlockPairStep{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  // Odd halves (10 = 2 x 5) are swept recursively too, through 6 with a
  // phantom: the last step pairs neighbours and the two halves' idle blocks.
  const auto ten = kwsvd::Impl::block_pair_ordering(10);
  EXPECT_EQ(ten.back(), (kwsvd::Impl::BlockPairStep{{2, 7}, {0, 1}, {3, 4}, {5, 6}, {8, 9}}));
}

// A level whose width is not in Table II (at most 12 columns, or forced)
// gets the table's plate heights at its width, with T the update team's
// threads at that width (64 at w = 4), and the engine picks among them: at
// the H200's threshold 1000 matrices of 1000 x 6 take plates of 500 rows,
// 100 of 8192 x 8 the most parallel (1024 rows: none reaches it).
TEST(WcyclePlan, WidthsOffTheTableKeepTheTablesPlateHeights) {
  const auto c = kwsvd::Impl::width_off_table_candidates(8192, 4, 4);
  const std::vector<int> heights = {8192, 4096, 2048, 1024};
  ASSERT_EQ(c.size(), heights.size());
  for (std::size_t k = 0; k < c.size(); ++k) {
    EXPECT_EQ(c[k].w, 4) << k;
    EXPECT_EQ(c[k].delta, heights[k]) << k;
    EXPECT_EQ(c[k].team_threads, 64) << k;
  }
  const std::vector<kwsvd::MatrixShape> tall(100, {8192, 8});
  const auto pick = kwsvd::choose_tailoring_plan(c, tall, 92682);
  EXPECT_EQ(pick.w, 4);
  EXPECT_EQ(pick.delta, 1024);
  EXPECT_EQ(kwsvd::choose_tailoring_plan(c, tall, 1).delta, 8192);  // host: the first
  const std::vector<kwsvd::MatrixShape> many(1000, {1000, 6});
  EXPECT_EQ(
      kwsvd::choose_tailoring_plan(kwsvd::Impl::width_off_table_candidates(1000, 4, 1), many, 92682)
          .delta,
      500);
  // A wider forced width keeps the table's T (256, 128 for w = 8's plans),
  // its update team being as large (320 threads at w = 20).
  const auto table = kwsvd::tailoring_candidates(1000, 48);
  const auto forced = kwsvd::Impl::width_off_table_candidates(1000, 20, 1);
  ASSERT_EQ(forced.size(), 6u);
  for (const auto& p : forced) {
    EXPECT_EQ(p.w, 20);
    EXPECT_TRUE(std::any_of(table.begin(), table.end(),
                            [&](const kwsvd::TailoringPlan& q) {
                              return q.delta == p.delta && q.team_threads == p.team_threads;
                            }))
        << p.delta << ", " << p.team_threads;
  }
  // A short matrix: heights floor at 8 rows, duplicates dropped.
  const auto short_rows = kwsvd::Impl::width_off_table_candidates(12, 6, 1);
  ASSERT_FALSE(short_rows.empty());
  for (const auto& p : short_rows) {
    EXPECT_EQ(p.w, 6);
    EXPECT_GE(p.delta, 8);
  }
  // Through the solver (host: threshold 1, one plate of all rows, as before).
  kwsvd::SvdOptions options;
  options.level0 = false;
  kwsvd::BatchedSvd<Exec, double> svd(Exec(), 2, 3000, 8, options);
  EXPECT_EQ(svd.block_width(), 4);
}

// A level's width is widened where the widest matrix's last block is a
// sliver (less than half a block past a multiple of w) among few blocks, to
// one block fewer, within the cap (the widest EVD, half the columns); an
// even count only where balancing its blocks would leave the sliver.
TEST(WcyclePlan, LevelWidthDropsASliverBlock) {
  using kwsvd::Impl::wcycle_block_count;
  using kwsvd::Impl::widened_wcycle_width;
  EXPECT_EQ(widened_wcycle_width(8, {{1000, 17}}, 10), 10);   // 8, 8, 1 -> 10, 7
  EXPECT_EQ(widened_wcycle_width(16, {{1000, 33}}, 18), 18);  // 16, 16, 1 -> 18, 15
  EXPECT_EQ(widened_wcycle_width(16, {{1000, 65}}, 24), 18);  // 5 blocks -> 4
  EXPECT_EQ(widened_wcycle_width(16, {{1000, 65}, {900, 40}}, 24), 18);
  EXPECT_EQ(widened_wcycle_width(16, {{1000, 65}}, 16), 16);   // over the cap
  EXPECT_EQ(widened_wcycle_width(8, {{1000, 20}}, 10), 8);     // 8, 8, 4: no sliver
  EXPECT_EQ(widened_wcycle_width(16, {{1000, 161}}, 48), 16);  // 11 blocks: many
  EXPECT_EQ(widened_wcycle_width(16, {{1000, 17}}, 48), 16);   // two blocks already
  EXPECT_EQ(widened_wcycle_width(16, {{0, 0}}, 48), 16);
  EXPECT_EQ(widened_wcycle_width(8, {{1000, 26}}, 10), 10);   // 8, 8, 8, 2: balanced the same
  EXPECT_EQ(widened_wcycle_width(16, {{1000, 52}}, 24), 16);  // 4 blocks, balanced 14
  EXPECT_EQ(widened_wcycle_width(16, {{84, 84}}, 48), 16);    // 6 blocks, balanced 14
  for (const int w : {4, 8, 16, 24, 32})
    for (int N = 2; N <= 300; ++N) {
      const int v = widened_wcycle_width(w, {{N, N}}, 48);
      EXPECT_TRUE(v % 2 == 0 && w <= v && v <= 48) << w << ", " << N << ": " << v;
      if (v != w) {
        EXPECT_EQ(wcycle_block_count(v, N), wcycle_block_count(w, N) - 1) << w << ", " << N;
        if (wcycle_block_count(w, N) % 2 == 0) {
          const int balanced =
              kwsvd::Impl::wcycle_block_width(kwsvd::Impl::balanced_wcycle_width(w, {{N, N}}), N);
          EXPECT_LT(2 * (N - (wcycle_block_count(w, N) - 1) * balanced), balanced)
              << w << ", " << N;
        }
      }
    }
  // Through the engine (host scratch of 32 KB, threshold 1: the widest
  // candidate of at most half the columns, w = 8 at 17 and 16 at 33).
  kwsvd::SvdOptions options;
  options.level0 = false;
  options.block_scratch_bytes = 32768;
  for (auto [n, w] : {std::pair{17, 10}, std::pair{33, 18}, std::pair{16, 8}}) {
    kwsvd::BatchedSvd<Exec, float> svd(Exec(), 4, 200, n, options);
    EXPECT_EQ(svd.block_width(), w) << n;
  }
}

// A caller's width (SvdOptions::level_widths) stands where the batch is
// below the engine's TLP threshold: choose_wcycle_plan's few blocks narrow
// the widest candidate (80 columns at w = 24 to 4 blocks of 20), while the
// scheduler cuts its blocks by the caller's width, with GEMM work the plan
// sizes. The host's threshold is 1; the GPU's comes here from a tuning file
// (KWSVD_TUNING_FILE), so that the host runs the GPU's small-batch plan.
TEST(WcyclePlan, CallersWidthStandsBelowTheThreshold) {
  const kwsvd::test::GpuThresholdScope gpu_threshold("callers_width");
  const std::vector<kwsvd::MatrixShape> two(2, {80, 80});
  using kwsvd::Impl::plan_wcycle_level;
  EXPECT_EQ((plan_wcycle_level<Exec, float>(two, 32768, 24).w), 24);
  EXPECT_EQ((plan_wcycle_level<Exec, float>(two, 32768, 32).w), 32);
  EXPECT_EQ((plan_wcycle_level<Exec, double>(two, 32768, 16).w), 16);
  // The engine's own width: 4 blocks of 20 where 32 and 24 make 3 and 4.
  EXPECT_EQ((plan_wcycle_level<Exec, float>(two, 32768).w), 20);
  kwsvd::SvdOptions options;
  options.level0 = false;
  options.block_scratch_bytes = 32768;
  options.level_widths = {24};
  kwsvd::BatchedSvd<Exec, float> svd(Exec(), 2, 80, 80, options);
  EXPECT_EQ(svd.block_width(), 24);
}

// A small batch of nearly square matrices of 97 to 192 columns takes six or
// eight blocks (at most 20 columns in double, 24 in float) where the
// engine's narrow plan makes more, planned as that width forced
// (wcycle_few_blocks_width); larger batches, tall matrices and more columns
// keep the engine's plan. The GPU's threshold and scratch, on any backend.
TEST(WcyclePlan, SmallBatchesTakeSixOrEightBlocks) {
  const kwsvd::test::GpuThresholdScope gpu_threshold("few_blocks");
  using kwsvd::MatrixShape;
  using kwsvd::Impl::plan_wcycle_level;
  using kwsvd::Impl::wcycle_block_count;
  constexpr std::size_t gpu_scratch = 40936;
  const auto square = [](int batch, int n) { return std::vector<MatrixShape>(batch, {n, n}); };
  // double: 6 of 20 at 120, 8 of 18 at 140, 8 of 20 at 160; 128 stays at
  // 8 of 16; 100 keeps the engine's 6 of 18; 176 would need 22.
  for (auto [n, w] : {std::pair{120, 20}, std::pair{140, 18}, std::pair{160, 20},
                      std::pair{128, 16}, std::pair{100, 18}, std::pair{176, 16}}) {
    for (const int batch : {1, 10}) {
      const auto plan = plan_wcycle_level<Exec, double>(square(batch, n), gpu_scratch);
      EXPECT_EQ(plan.w, w) << n << " x " << batch;
      // The forced width's plan, plates and threads included.
      if (w != 16 && n != 100) {
        EXPECT_EQ(plan, (plan_wcycle_level<Exec, double>(square(batch, n), gpu_scratch, w)))
            << n << " x " << batch;
      }
    }
  }
  // float: 6 of 24 at 140 (also at batch 10, whose narrow plan passes the
  // threshold by float's row alignment), 8 of 24 at 192; 128 keeps 4 of 32.
  for (auto [n, w] :
       {std::pair{132, 22}, std::pair{140, 24}, std::pair{192, 24}, std::pair{128, 32}}) {
    for (const int batch : {1, 10}) {
      EXPECT_EQ((plan_wcycle_level<Exec, float>(square(batch, n), gpu_scratch).w), w)
          << n << " x " << batch;
    }
  }
  for (int n = 97; n <= 192; ++n) {
    const int w = plan_wcycle_level<Exec, float>(square(1, n), gpu_scratch).w;
    const int blocks = wcycle_block_count(w, n);
    EXPECT_TRUE(w % 2 == 0 && w <= 32 && blocks % 2 == 0 && blocks <= 8) << n << ": " << w;
  }
  // Not where four blocks of the widest candidate would serve (float 128
  // columns at batch 20, above the threshold: the engine's w = 16).
  EXPECT_EQ((plan_wcycle_level<Exec, float>(square(20, 128), gpu_scratch).w), 16);
  EXPECT_EQ((plan_wcycle_level<Exec, float>(square(20, 112), gpu_scratch).w), 16);
  // Not past eight blocks, not for tall matrices, not for large batches.
  EXPECT_EQ((plan_wcycle_level<Exec, float>(square(1, 230), gpu_scratch).w), 16);
  EXPECT_EQ(
      (plan_wcycle_level<Exec, float>(std::vector<MatrixShape>(1, {400, 140}), gpu_scratch).w), 16);
  EXPECT_NE((plan_wcycle_level<Exec, double>(square(200, 140), gpu_scratch).w), 18);
  // The rule alone: below twice the threshold only.
  const auto candidates = kwsvd::tailoring_candidates(140, 24);
  EXPECT_EQ(kwsvd::wcycle_few_blocks_width(candidates, square(10, 140), 92682, 24, 8), 18);
  EXPECT_EQ(kwsvd::wcycle_few_blocks_width(candidates, square(10, 140), 92682, 24, 4), 24);
  EXPECT_EQ(kwsvd::wcycle_few_blocks_width(candidates, square(100, 140), 92682, 24, 8), 0);
  EXPECT_EQ(kwsvd::wcycle_few_blocks_width(candidates, square(10, 140), 92682, 16, 8), 0);
  EXPECT_EQ(kwsvd::wcycle_few_blocks_width({}, square(10, 140), 92682, 24, 8), 0);
}

// The default parts (SvdOptions::instances = 0) of tuning/sweep_instances.hpp:
// one on backends without concurrent instances and for small batches, two
// for larger ones (in double from less work at 20 matrices or more), four in
// double and three in float for batches of 20 or more large matrices, never
// more than the option's range.
TEST(WcyclePlan, SweepInstancesFollowTheMeasuredRule) {
  using kwsvd::Impl::sweep_instances;
  const auto work = [](double n, int batch) { return n * n * n * batch; };  // sum of M N^2
  EXPECT_EQ(sweep_instances(false, work(1024, 200), 200, false), 1);
  EXPECT_EQ(sweep_instances(false, work(1024, 200), 200, true), 1);
  for (const bool single : {false, true}) {
    EXPECT_EQ(sweep_instances(true, work(256, 10), 10, single), 1);
    EXPECT_EQ(sweep_instances(true, work(512, 10), 10, single), 2);
  }
  EXPECT_EQ(sweep_instances(true, work(128, 100), 100, false), 2);
  EXPECT_EQ(sweep_instances(true, work(128, 100), 100, true), 1);
  EXPECT_EQ(sweep_instances(true, work(256, 20), 20, false), 2);
  EXPECT_EQ(sweep_instances(true, 300.0 * 100 * 100 * 30, 30, false), 1);
  EXPECT_EQ(sweep_instances(true, work(128, 200), 200, false), 4);
  EXPECT_EQ(sweep_instances(true, work(128, 200), 200, true), 2);
  EXPECT_EQ(sweep_instances(true, work(200, 200), 200, false), 4);
  EXPECT_EQ(sweep_instances(true, work(200, 200), 200, true), 3);
  EXPECT_EQ(sweep_instances(true, work(1000, 20), 20, true), 3);
  EXPECT_EQ(sweep_instances(true, work(1024, 10), 10, false), 4);
  EXPECT_EQ(sweep_instances(true, work(1024, 10), 10, true), 2);
  for (int batch = 1; batch <= 4096; batch *= 2) {
    for (const double n : {32.0, 100.0, 333.0, 1024.0, 4096.0}) {
      for (const bool single : {false, true}) {
        const int parts = sweep_instances(true, work(n, batch), batch, single);
        EXPECT_GE(parts, 1);
        EXPECT_LE(parts, kwsvd::Impl::sweep_instances_max);
      }
    }
  }
}

// A level's width is narrowed as far as no matrix gets more blocks, so that
// no pair pays the full width for a narrow last block; the engine's choice
// reaches the plan (planned for 32 KB of scratch, as on the host backends).
TEST(WcyclePlan, LevelWidthLeavesNoNarrowLastBlock) {
  using kwsvd::MatrixShape;
  using kwsvd::Impl::balanced_wcycle_width;
  using kwsvd::Impl::wcycle_block_count;
  EXPECT_EQ(balanced_wcycle_width(24, {{100, 100}}), 20);  // 5 blocks of 20, not 4 x 24 + 4
  EXPECT_EQ(balanced_wcycle_width(24, {{128, 128}}), 22);  // 6 blocks: 5 x 22 + 18
  EXPECT_EQ(balanced_wcycle_width(24, {{256, 256}}), 24);  // 11 blocks: 22 would make 12
  EXPECT_EQ(balanced_wcycle_width(16, {{512, 512}}), 16);
  // A mixed batch: 60 columns keep 3 blocks at 20 (20 x 3) as at 24
  // (24, 24, 12); 48 columns are 2 blocks at 24 but 3 at 22.
  EXPECT_EQ(balanced_wcycle_width(24, {{100, 100}, {90, 60}}), 20);
  EXPECT_EQ(balanced_wcycle_width(24, {{100, 100}, {90, 48}}), 24);
  EXPECT_EQ(balanced_wcycle_width(24, {{5, 1}, {0, 0}}), 24);  // nothing to split
  for (const int w : {8, 16, 24, 32, 48})
    for (int N = 2; N <= 400; ++N) {
      const int v = balanced_wcycle_width(w, {{N, N}});
      EXPECT_TRUE(v % 2 == 0 && 2 <= v && v <= w) << w << ", " << N << ": " << v;
      EXPECT_EQ(wcycle_block_count(v, N), wcycle_block_count(w, N)) << w << ", " << N;
      if (v > 2) {
        EXPECT_NE(wcycle_block_count(v - 2, N), wcycle_block_count(w, N)) << w << ", " << N;
      }
    }
  // 200 matrices: enough parallelism for the GPU engine's threshold to
  // take the widest plan at 32 KB, w = 24 in float (double: 16), as the
  // host's does; a small GPU batch falls back to w = 16.
  using T = float;
  kwsvd::SvdOptions options;
  options.level0 = false;
  options.block_scratch_bytes = 32768;
  for (auto [n, w] : {std::pair{100, 20}, std::pair{128, 22}, std::pair{256, 24}}) {
    kwsvd::BatchedSvd<Exec, T> svd(Exec(), 200, n, n, options);
    EXPECT_EQ(svd.block_width(), w) << n;
    EXPECT_EQ(svd.plan_summary().widths, std::vector<int>{w}) << n;
    EXPECT_EQ(balanced_wcycle_width(svd.block_width(), {{n, n}}), svd.block_width()) << n;
  }
}

// Where the recursion meets no odd half above 3 (counts 2^k and 3 x 2^k,
// the Gram EVDs' 2w among them), the host's block ordering is the device's
// pair ordering, step for step and pair for pair.
TEST(WcyclePlan, BlockOrderingIsTheDevicePairOrdering) {
  for (const int count : {2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128}) {
    const auto steps = kwsvd::Impl::block_pair_ordering(count);
    ASSERT_EQ(int(steps.size()), count - 1);
    for (int s = 0; s < count - 1; ++s)
      for (int P = 0; P < count / 2; ++P) {
        int i = -1, j = -1;
        kwsvd::Impl::recursive_pair(count, s, P, i, j);
        EXPECT_EQ(steps[std::size_t(s)][std::size_t(P)], std::make_pair(i, j))
            << count << " step " << s << " pair " << P;
      }
  }
}

// Batches whose arrays hold more than 2^31 entries, so that every offset past
// entry 2^31 needs 64-bit arithmetic in the slots, the workspace and the
// kernels: 2,100,000 float 32 x 32 matrices (level 0, LayoutRight: matrix b at
// b * 1024) and 32,800 float 256 x 256 ones (W-cycle, LayoutLeft: entry (i, j)
// of matrix b at b + 32800 (i + 256 j)). About 45 GB of device
// memory at the most, so it runs only where KWSVD_TEST_LARGE is set (GPU runs).
// Every matrix must converge; the first, middle and last are checked against
// LAPACK.

// Entry (i, j) of matrix b: uniform in [-1, 1) from a hash of (b, i, j), so
// that the host can rebuild any matrix for the oracle.
KOKKOS_INLINE_FUNCTION float large_batch_entry(long b, int i, int j) {
  std::uint64_t x = (std::uint64_t(b) << 24) ^ (std::uint64_t(i) << 12) ^ std::uint64_t(j);
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return float(double(x >> 40) * (2.0 / 16777216.0) - 1.0);
}

template <class View>
struct FillLargeBatch {
  View A;
  int m, n;
  KOKKOS_INLINE_FUNCTION void operator()(
      const typename Kokkos::TeamPolicy<Exec>::member_type& member) const {
    const long b = member.league_rank();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, m * n), [&](const int e) {
      A(b, e % m, e / m) = large_batch_entry(b, e % m, e / m);
    });
  }
};

// Matrix b's S, U and V into contiguous column-major arrays, one team.
// (Written through raw pointers from a team launch: in this project's first
// CUDA 13 build of Kokkos 4.6.99, a RangePolicy kernel of this file that
// wrote through a View it held wrote nothing and reported no error, a layout
// mismatch that kwsvd/impl/kokkos_compat.hpp now refuses; see
// perf_tests/notes/wcycle.md. The library's kernels take raw pointers.)
template <class SView, class MView>
struct GatherOneMatrix {
  SView S;
  MView U, V;
  float *s, *u, *v;
  long b;
  int m, n, k;
  KOKKOS_INLINE_FUNCTION void operator()(
      const typename Kokkos::TeamPolicy<Exec>::member_type& member) const {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, (m > n ? m : n) * k), [&](const int e) {
      if (e < k)
        s[e] = S(b, e);
      if (e < m * k)
        u[e] = U(b, e % m, e / m);
      if (e < n * k)
        v[e] = V(b, e % n, e / n);
    });
  }
};

template <class Layout>
void check_large_batch(int batch, int m, int n, bool level0) {
  SCOPED_TRACE(std::to_string(batch) + " x " + std::to_string(m) + " x " + std::to_string(n));
  const int k = std::min(m, n);
  ASSERT_GT(double(batch) * m * n, 2147483648.0);
  Kokkos::View<float***, Layout> A("A", batch, m, n), U("U", batch, m, k), V("V", batch, n, k);
  Kokkos::View<float**, Layout> S("S", batch, k);
  Kokkos::View<kwsvd::SvdInfo*> info("info", batch);
  Kokkos::parallel_for("kwsvd_test::fill_large_batch",
                       Kokkos::TeamPolicy<Exec>(batch, Kokkos::AUTO),
                       FillLargeBatch<decltype(A)>{A, m, n});
  kwsvd::BatchedSvd<Exec, float> svd(Exec(), batch, m, n);
  ASSERT_EQ(svd.level0(), level0);
  svd.compute(A, S, U, V, info);
  auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
  int unconverged = 0;
  for (int b = 0; b < batch; ++b)
    unconverged += hi(b).converged == 1 && hi(b).nonfinite_input == 0 ? 0 : 1;
  EXPECT_EQ(unconverged, 0);
  for (const long b : {0L, long(batch / 2), long(batch - 1)}) {
    Kokkos::View<float*> s("s", k), u("u", std::size_t(m) * k), v("v", std::size_t(n) * k);
    Kokkos::parallel_for("kwsvd_test::gather_one_matrix", Kokkos::TeamPolicy<Exec>(1, Kokkos::AUTO),
                         GatherOneMatrix<decltype(S), decltype(U)>{S, U, V, s.data(), u.data(),
                                                                   v.data(), b, m, n, k});
    auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s);
    auto hu = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), u);
    auto hv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
    std::vector<float> a(std::size_t(m) * n);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i)
        a[i + std::size_t(m) * j] = large_batch_entry(b, i, j);
    kwsvd::test::expect_accurate<float>({a}, m, n,
                                        {{std::vector<float>(hs.data(), hs.data() + hs.size())},
                                         {std::vector<float>(hu.data(), hu.data() + hu.size())},
                                         {std::vector<float>(hv.data(), hv.data() + hv.size())},
                                         {hi(b)}},
                                        "matrix " + std::to_string(b));
  }
}

TEST(WcycleLarge, BatchesPastTwoToTheThirtyOneEntries) {
  if (std::getenv("KWSVD_TEST_LARGE") == nullptr)
    GTEST_SKIP() << "needs about 45 GB of device memory; set KWSVD_TEST_LARGE=1 to run it";
  check_large_batch<Kokkos::LayoutRight>(2100000, 32, 32, true);
  check_large_batch<Kokkos::LayoutLeft>(32800, 256, 256, false);
}

// Graded spectra down to 1e-15 at 1024^2 take more sweeps than any other
// case measured (about 35 in the blocks, where LAPACK's dgesvj, sequential
// and pivoted, takes 25 to 29): they must converge within the default
// SvdOptions::max_sweeps. Their sweeps are printed for the notes.
TEST(WcycleLarge, GradedSpectraConvergeWithinTheDefaultSweeps) {
  if (std::getenv("KWSVD_TEST_LARGE") == nullptr)
    GTEST_SKIP() << "minutes on a host backend; set KWSVD_TEST_LARGE=1 to run it";
  const int n = 1024;
  std::vector<std::vector<double>> mats;
  for (const std::string name : {"geo", "logrand"})
    mats.push_back(kwsvd::test::matrix_with_spectrum<double>(
        n, n, kwsvd::test::spectrum(name, n, 1e15, 11), 11));
  const auto r = kwsvd::test::run_svd_batch<double, Kokkos::LayoutLeft>(
      mats, n, n,
      [&](const auto& A, const auto& S, const auto& U, const auto& V, const auto& info) {
        kwsvd::batched_svd(Exec(), A, S, U, V, info);
      });
  for (const auto& info : r.info)
    std::printf("graded 1024^2, kappa 1e15: %d sweeps\n", info.sweeps);
  kwsvd::test::expect_accurate(mats, n, n, r, "graded 1024^2");
}

}  // namespace
