// QR preprocessing of non-square matrices (SvdOptions::qr; seed 002 §9.2):
// the Householder QR of the working matrix, one-sided Jacobi on R^T, then
// U = Q [V_R; 0]. Seed 002's thresholds on its six spectra, tall and wide,
// with the factors' SVD at level 0 and in the W-cycle; the jobs, the rank,
// values only, NaN in one matrix, zero and badly scaled columns, a reused
// handle, the raw-pointer form, the QR tree of many rows, the rule of
// QrPreprocessing::automatic and the options it refuses.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "common/kokkos_events.hpp"
#include "common/oracle.hpp"
#include "common/svd_batch.hpp"
#include "kwsvd/kwsvd.hpp"

namespace {

using kwsvd::Job;
using kwsvd::QrPreprocessing;
using kwsvd::test::error_of;
using kwsvd::test::random_matrix;
using Exec = Kokkos::DefaultExecutionSpace;

template <class C>
class QrPreprocessed : public kwsvd::test::ScalarLayoutTest<C> {
 public:
  using typename kwsvd::test::ScalarLayoutTest<C>::Scalar;
  using typename kwsvd::test::ScalarLayoutTest<C>::Layout;

  static kwsvd::SvdOptions with_qr(QrPreprocessing qr = QrPreprocessing::always) {
    kwsvd::SvdOptions o;
    o.qr = qr;
    return o;
  }
  static kwsvd::test::BatchResult<Scalar> run(const std::vector<std::vector<Scalar>>& mats, int m,
                                              int n, const kwsvd::SvdOptions& options) {
    return kwsvd::test::run_batched_svd<Scalar, Layout>(mats, m, n, options);
  }
};

// Matrix `bad` of a call (NaN or Inf in its input) reported, not
// converged and NaN in every output; every other one accurate.
template <class T>
void expect_one_nonfinite(const std::vector<std::vector<T>>& mats, int m, int n,
                          const kwsvd::test::BatchResult<T>& r, std::size_t bad,
                          const std::string& label) {
  EXPECT_EQ(r.info[bad].nonfinite_input, 1) << label;
  EXPECT_EQ(r.info[bad].converged, 0) << label;
  for (const auto& out : {r.s[bad], r.u[bad], r.v[bad]})
    for (const T x : out)
      ASSERT_TRUE(std::isnan(double(x))) << label;
  std::vector<std::vector<T>> good;
  kwsvd::test::BatchResult<T> clean;
  for (std::size_t b = 0; b < mats.size(); ++b) {
    if (b == bad)
      continue;
    good.push_back(mats[b]);
    clean.s.push_back(r.s[b]);
    clean.u.push_back(r.u[b]);
    clean.v.push_back(r.v[b]);
    clean.info.push_back(r.info[b]);
  }
  kwsvd::test::expect_accurate(good, m, n, clean, label);
}

using Cases = kwsvd::test::ScalarLayoutCases;
TYPED_TEST_SUITE(QrPreprocessed, Cases);

// Tall and wide; the factors solved at level 0 (40 columns) and, planned
// for 16 KB of scratch, in the W-cycle's blocks (72 columns). Past
// qr_panel_cols columns (40 and 72 here) the QR is blocked.
TYPED_TEST(QrPreprocessed, SixSpectraMeetSeed002Thresholds) {
  using T = typename TestFixture::Scalar;
  const double kappa = sizeof(T) == 8 ? 1e10 : 1e5;
  struct Shape {
    int m, n;
  };
  for (const Shape s : {Shape{160, 40}, Shape{40, 130}, Shape{250, 72}}) {
    auto options = TestFixture::with_qr();
    options.block_scratch_bytes = s.n == 72 ? 16384 : 0;
    kwsvd::BatchedSvd<Exec, T> svd(Exec(), 2, s.m, s.n, options);
    ASSERT_TRUE(svd.qr_preprocessed());
    if (s.n == 72) {
      EXPECT_FALSE(svd.level0());
      EXPECT_GT(svd.plan_summary().gram_evds, 0);
    }
    for (const std::string name : {"random", "arith", "cluster0", "cluster1", "logrand", "geo"}) {
      const auto mats = kwsvd::test::spectrum_batch<T>(name, s.m, s.n, kappa, 2);
      const auto r = TestFixture::run(mats, s.m, s.n, options);
      kwsvd::test::expect_accurate(mats, s.m, s.n, r, "qr " + name);
      for (const auto& info : r.info)
        EXPECT_EQ(info.converged, 1) << name;
    }
  }
}

// Graded spectra are what the preprocessing's R^T converges on in fewer
// sweeps than the matrix itself (R R^T is nearer diagonal than A^T A).
TYPED_TEST(QrPreprocessed, GradedSpectraTakeFewerSweepsThanTheMatrixItself) {
  using T = typename TestFixture::Scalar;
  const double kappa = sizeof(T) == 8 ? 1e10 : 1e5;
  const int m = 240, n = 60;
  const auto mats = kwsvd::test::spectrum_batch<T>("geo", m, n, kappa, 2);
  const auto with = TestFixture::run(mats, m, n, TestFixture::with_qr());
  const auto without = TestFixture::run(mats, m, n, TestFixture::with_qr(QrPreprocessing::never));
  for (std::size_t b = 0; b < mats.size(); ++b)
    EXPECT_LT(with.info[b].sweeps, without.info[b].sweeps) << b;
}

// The jobs: each side computed alone, values only, and the leading r
// triplets: the same values as the full job's and singular vectors; the
// QR in one panel (30 columns) and blocked (40).
TYPED_TEST(QrPreprocessed, JobsRankAndValuesOnly) {
  using T = typename TestFixture::Scalar;
  const double bound = TestFixture::bound();
  for (const auto& [m, n] : {std::pair{120, 30}, std::pair{30, 120}, std::pair{100, 40}}) {
    const auto mats = kwsvd::test::rank_deficient_batch<T>(m, n);
    const auto full = TestFixture::run(mats, m, n, TestFixture::with_qr());
    kwsvd::test::expect_accurate(mats, m, n, full, "full");
    for (const Job job : {Job::values_and_left_vectors, Job::values_and_right_vectors}) {
      const bool left = job == Job::values_and_left_vectors;
      const std::string at = std::to_string(m) + " x " + std::to_string(n) + (left ? " U" : " V");
      auto options = TestFixture::with_qr();
      options.job = job;
      const auto r = TestFixture::run(mats, m, n, options);
      for (std::size_t b = 0; b < mats.size(); ++b) {
        const auto e =
            kwsvd::test::side_errors(mats[b], m, n, r.s[b], left ? r.u[b] : r.v[b], left);
        EXPECT_LT(e.orthogonality, bound) << at;
        EXPECT_LT(e.eigen, bound) << at;
        for (std::size_t l = 0; l < r.s[b].size(); ++l)
          ASSERT_NEAR(double(r.s[b][l]), double(full.s[b][l]), bound * double(full.s[b][0])) << at;
      }
    }
    // Values only, through the handle's values-only call.
    {
      kwsvd::BatchedSvd<Exec, T> svd(Exec(), long(mats.size()), m, n, TestFixture::with_qr());
      const auto A = kwsvd::test::to_device<T, typename TestFixture::Layout>(mats, m, n);
      Kokkos::View<T**, typename TestFixture::Layout> S("S", mats.size(), std::min(m, n));
      Kokkos::View<kwsvd::SvdInfo*> info("info", mats.size());
      svd.compute(A, S, info);
      const auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), S);
      for (std::size_t b = 0; b < mats.size(); ++b)
        for (int l = 0; l < std::min(m, n); ++l)
          ASSERT_NEAR(double(hs(b, l)), double(full.s[b][std::size_t(l)]),
                      bound * double(full.s[b][0]))
              << "values only";
    }
    // The 7 leading triplets: the full call's values, and vectors that
    // reconstruct A's best rank-7 approximation (checked through U^T A = S V^T).
    auto ranked = TestFixture::with_qr();
    ranked.rank = 7;
    const auto r = TestFixture::run(mats, m, n, ranked);
    for (std::size_t b = 0; b < mats.size(); ++b) {
      ASSERT_EQ(r.s[b].size(), 7u);
      ASSERT_EQ(r.u[b].size(), std::size_t(m) * 7);
      for (int l = 0; l < 7; ++l) {
        ASSERT_NEAR(double(r.s[b][l]), double(full.s[b][l]), bound * double(full.s[b][0]));
        double dot_u = 0, dot_v = 0;  // the ranked columns are the full call's up to sign
        for (int i = 0; i < m; ++i)
          dot_u +=
              double(r.u[b][i + std::size_t(m) * l]) * double(full.u[b][i + std::size_t(m) * l]);
        for (int j = 0; j < n; ++j)
          dot_v +=
              double(r.v[b][j + std::size_t(n) * l]) * double(full.v[b][j + std::size_t(n) * l]);
        EXPECT_NEAR(std::fabs(dot_u), 1.0, 1e3 * bound) << "rank column " << l;
        EXPECT_NEAR(std::fabs(dot_v), 1.0, 1e3 * bound) << "rank column " << l;
      }
    }
  }
}

// Full U (tall) or V (wide): the thin call's values and first k columns to
// the bit, the columns past k Q e_j, the whole side orthonormal; one panel
// (24 columns) and blocked (40).
TYPED_TEST(QrPreprocessed, FullLongSideIsOrthonormalAndKeepsTheThinColumns) {
  using T = typename TestFixture::Scalar;
  for (const auto& [m, n] :
       {std::pair{100, 24}, std::pair{24, 100}, std::pair{110, 40}, std::pair{40, 110}}) {
    const auto mats = kwsvd::test::rank_deficient_batch<T>(m, n);
    auto options = TestFixture::with_qr();
    const auto thin = TestFixture::run(mats, m, n, options);
    options.full_matrices = true;
    const auto full = TestFixture::run(mats, m, n, options);
    const int rows = std::max(m, n), k = std::min(m, n);
    for (std::size_t b = 0; b < mats.size(); ++b) {
      const std::string at =
          std::to_string(m) + " x " + std::to_string(n) + " matrix " + std::to_string(b);
      EXPECT_EQ(full.s[b], thin.s[b]) << at;
      const auto& side = m > n ? full.u[b] : full.v[b];
      const auto& thin_side = m > n ? thin.u[b] : thin.v[b];
      ASSERT_EQ(side.size(), std::size_t(rows) * rows) << at;
      for (std::size_t i = 0; i < std::size_t(rows) * k; ++i)
        ASSERT_EQ(side[i], thin_side[i]) << at << " entry " << i;
      EXPECT_LT(kwsvd::test::orthogonality_error(side, rows, rows), TestFixture::bound()) << at;
    }
  }
}

// NaN in one matrix (Inf in a wide one) is reported for it alone; zero,
// repeated and badly scaled columns keep the thresholds and finite vectors.
TYPED_TEST(QrPreprocessed, NonFiniteZeroAndBadlyScaledColumns) {
  using T = typename TestFixture::Scalar;
  for (const auto& [m, n] : {std::pair{150, 40}, std::pair{40, 150}}) {
    const std::string shape = std::to_string(m) + " x " + std::to_string(n);
    auto zero = random_matrix<T>(m, n, 5);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j)
        if ((m > n ? j : i) == 7)
          zero[i + std::size_t(m) * j] = T(0);
    auto scaled = random_matrix<T>(m, n, 6);
    const double big = sizeof(T) == 8 ? 1e150 : 1e18, small = sizeof(T) == 8 ? 1e-150 : 1e-18;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i)
        scaled[i + std::size_t(m) * j] *= T((m > n ? j : i) % 2 ? big : small);
    auto bad = random_matrix<T>(m, n, 7);
    bad[5 + std::size_t(m) * 9] =
        m > n ? std::numeric_limits<T>::quiet_NaN() : std::numeric_limits<T>::infinity();
    const std::vector<std::vector<T>> mats = {zero, bad, scaled};
    const auto r = TestFixture::run(mats, m, n, TestFixture::with_qr());
    expect_one_nonfinite(mats, m, n, r, 1, "zero and scaled, " + shape);
    EXPECT_EQ(r.s[0].back(), r.s[0].back());  // finite: a zero value, not NaN
    EXPECT_LT(double(r.s[0].back()), 100 * TestFixture::unit_roundoff() * double(r.s[0][0]));
    EXPECT_GT(double(r.s[2][0]), big);
  }
}

// A reused handle gives the same bits again and holds what it planned; the
// raw-pointer form gives the View form's bits; one panel and blocked.
TYPED_TEST(QrPreprocessed, ReusedHandleAndRawPointers) {
  using T = typename TestFixture::Scalar;
  for (const auto& [m, n] : {std::pair{90, 20}, std::pair{120, 40}}) {
    SCOPED_TRACE(std::to_string(m) + " x " + std::to_string(n));
    const int batch = 3;
    std::vector<std::vector<T>> mats;
    for (int b = 0; b < batch; ++b)
      mats.push_back(random_matrix<T>(m, n, 40u + b));
    const auto options = TestFixture::with_qr();
    using Svd = kwsvd::BatchedSvd<Exec, T>;
    EXPECT_EQ(Svd::planned_workspace_bytes(Exec(), batch, m, n, options),
              Svd(Exec(), batch, m, n, options).workspace_bytes());
    EXPECT_GT(Svd(Exec(), batch, m, n, options).workspace_bytes(),
              std::size_t(batch) * m * n * sizeof(T));
    kwsvd::BatchedSvd<Exec, T> svd(Exec(), batch, m, n, options);
    const auto call = [&](const auto& A, const auto& S, const auto& U, const auto& V,
                          const auto& info) { svd.compute(A, S, U, V, info); };
    const auto first =
        kwsvd::test::run_svd_batch<T, typename TestFixture::Layout>(mats, m, n, call, options);
    const auto again =
        kwsvd::test::run_svd_batch<T, typename TestFixture::Layout>(mats, m, n, call, options);
    EXPECT_EQ(first.s, again.s);
    EXPECT_EQ(first.u, again.u);
    EXPECT_EQ(first.v, again.v);
    kwsvd::test::expect_accurate(mats, m, n, first, "reused");

    const int lda = m + 3;
    const long long stride = (long long)lda * n + 5;
    const auto A = kwsvd::test::to_device_strided(mats, m, n, lda, stride);
    Kokkos::View<T*> S("S", std::size_t(batch) * n), U("U", std::size_t(batch) * m * n),
        V("V", std::size_t(batch) * n * n);
    Kokkos::View<kwsvd::SvdInfo*> info("info", batch);
    kwsvd::batched_svd(Exec(), batch, m, n, A.data(), lda, stride, S.data(), n, U.data(), m,
                       (long long)m * n, V.data(), n, (long long)n * n, info.data(), options);
    const auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), S);
    const auto hu = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), U);
    for (int b = 0; b < batch; ++b) {
      for (int l = 0; l < n; ++l)
        ASSERT_EQ(hs(std::size_t(b) * n + l), first.s[b][l]);
      for (int i = 0; i < m * n; ++i)
        ASSERT_EQ(hu(std::size_t(b) * m * n + i), first.u[b][i]);
    }
  }
}

// A reused handle's calls allocate nothing: the factors' buffers and the
// inner handle are the plan's (factors at level 0, and in the W-cycle's
// blocks planned for 16 KB of scratch).
TYPED_TEST(QrPreprocessed, ReusedHandleAllocatesNothing) {
  using T = typename TestFixture::Scalar;
  using L = typename TestFixture::Layout;
  for (const auto& [m, n, scratch] : {std::tuple{90, 20, 0}, std::tuple{260, 60, 16384}}) {
    SCOPED_TRACE(std::to_string(m) + " x " + std::to_string(n));
    const int batch = 3;
    std::vector<std::vector<T>> mats;
    for (int b = 0; b < batch; ++b)
      mats.push_back(random_matrix<T>(m, n, 61u + b));
    auto A = kwsvd::test::to_device<T, L>(mats, m, n);
    Kokkos::View<T***, L> U("U", batch, m, n), V("V", batch, n, n);
    Kokkos::View<T**, L> S("S", batch, n);
    Kokkos::View<kwsvd::SvdInfo*> info("info", batch);
    auto options = TestFixture::with_qr();
    options.block_scratch_bytes = scratch;
    kwsvd::BatchedSvd<Exec, T> svd(Exec(), batch, m, n, options);
    ASSERT_TRUE(svd.qr_preprocessed());
    svd.compute(A, S, U, V, info);  // the first call may set up Kokkos's own buffers
    kwsvd::test::expect_reused_calls_allocate_nothing(svd, A, S, U, V, info,
                                                      [](const auto&, const auto&, bool) {});
  }
}

// A working matrix of one panel and qr_tree_min_leaves leaves of rows or
// more is factored as a tree of leaves (uses_qr_tree): two levels (2100 x
// 12, wide 20 x 2100) and three (16400 x 32), with NaN in one matrix; the
// jobs, a rank, a reused handle's bits and its allocations. Past one panel
// where the factor is solved at level 0: 4100 x 40, two levels.
TYPED_TEST(QrPreprocessed, TreeOfLeaves) {
  using T = typename TestFixture::Scalar;
  using L = typename TestFixture::Layout;
  using Svd = kwsvd::BatchedSvd<Exec, T>;
  const double bound = TestFixture::bound();
  for (const auto& [m, n, levels] : {std::tuple{2100, 12, 2}, std::tuple{20, 2100, 2},
                                     std::tuple{16400, 32, 3}, std::tuple{4100, 40, 2}}) {
    const std::string shape = std::to_string(m) + " x " + std::to_string(n);
    SCOPED_TRACE(shape);
    const int rows = std::max(m, n), cols = std::min(m, n);
    // Past one panel the tree needs the factor solved at level 0 (40 x 40
    // is on the H200 and the Serial backend); a backend that solves it
    // elsewhere runs the blocked QR through the same checks.
    const bool crosses = cols > kwsvd::Impl::qr_panel_cols && Svd(Exec(), 3, cols, cols).level0();
    ASSERT_EQ(kwsvd::Impl::uses_qr_tree<T>(3, rows, cols, false, crosses),
              cols <= kwsvd::Impl::qr_panel_cols || crosses);
    ASSERT_FALSE(kwsvd::Impl::uses_qr_tree<T>(3, rows, cols, true, crosses));  // full: one Q
    EXPECT_EQ(kwsvd::Impl::QrTree::plan(rows, cols, cols).levels, levels);
    // Random entries: a prescribed spectrum needs an m x m orthogonal factor.
    std::vector<std::vector<T>> mats = kwsvd::test::spectrum_batch<T>("random", m, n, 1, 2);
    auto bad = random_matrix<T>(m, n, 9);
    bad[3 + std::size_t(m) * 5] = std::numeric_limits<T>::quiet_NaN();
    mats.insert(mats.begin() + 1, bad);
    const auto r = TestFixture::run(mats, m, n, TestFixture::with_qr());
    expect_one_nonfinite(mats, m, n, r, 1, "tree " + shape);
    const std::vector<std::vector<T>> good = {mats[0], mats[2]};
    const std::vector<std::vector<T>> values = {r.s[0], r.s[2]};
    // The long side alone and 5 leading triplets: the full call's values
    // and an orthonormal long side.
    for (const int rank : {0, 5}) {
      auto options = TestFixture::with_qr();
      options.job = m > n ? Job::values_and_left_vectors : Job::values_and_right_vectors;
      options.rank = rank;
      const auto one = TestFixture::run(good, m, n, options);
      for (std::size_t b = 0; b < good.size(); ++b) {
        const auto& side = m > n ? one.u[b] : one.v[b];
        const int k = rank > 0 ? rank : cols;
        EXPECT_LT(kwsvd::test::orthogonality_error(side, rows, k), bound) << rank;
        for (int l = 0; l < k; ++l)
          ASSERT_NEAR(double(one.s[b][l]), double(values[b][l]), bound * double(values[b][0]));
      }
    }
    // A reused handle: the workspace it planned, the same bits again,
    // nothing allocated.
    Svd svd(Exec(), 2, m, n, TestFixture::with_qr());
    ASSERT_TRUE(svd.qr_preprocessed());
    EXPECT_EQ(Svd::planned_workspace_bytes(Exec(), 2, m, n, TestFixture::with_qr()),
              svd.workspace_bytes());
    auto A = kwsvd::test::to_device<T, L>(good, m, n);
    Kokkos::View<T***, L> U("U", 2, m, cols), V("V", 2, n, cols);
    Kokkos::View<T**, L> S("S", 2, cols);
    Kokkos::View<kwsvd::SvdInfo*> info("info", 2);
    svd.compute(A, S, U, V, info);
    const auto first = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m > n ? U : V);
    kwsvd::test::expect_reused_calls_allocate_nothing(svd, A, S, U, V, info,
                                                      [](const auto&, const auto&, bool) {});
    const auto again = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m > n ? U : V);
    for (int b = 0; b < 2; ++b)
      for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j)
          ASSERT_EQ(first(b, i, j), again(b, i, j));
  }
}

// The tree's leaves share a level's rows out evenly, each at least
// qr_tree_leaf_rows, and stack N rows a leaf for the level above.
TEST(QrPreprocessingPlan, TreeLevelsAndLeaves) {
  using kwsvd::Impl::QrTree;
  const int leaf = kwsvd::Impl::qr_tree_leaf_rows;
  const long fewest = kwsvd::Impl::qr_tree_min_leaves;
  using kwsvd::Impl::uses_qr_tree;
  EXPECT_FALSE(uses_qr_tree<double>(1, fewest * leaf - 1, 8, false, false));
  EXPECT_TRUE(uses_qr_tree<double>(1, fewest * leaf, 8, false, false));
  const long most = kwsvd::Impl::qr_tree_max_batch;
  EXPECT_TRUE(uses_qr_tree<double>(most, 4000, 32, false, false));
  EXPECT_FALSE(uses_qr_tree<double>(most + 1, 4000, 32, false, false));
  // Past one panel (else the blocked QR): to qr_tree_max_cols columns where
  // the factor is solved at level 0, in float to qr_tree_wide_float_max_batch
  // matrices.
  const int widest = kwsvd::Impl::qr_tree_max_cols;
  const long float_most = kwsvd::Impl::qr_tree_wide_float_max_batch;
  EXPECT_FALSE(uses_qr_tree<double>(1, 4000, 33, false, false));
  EXPECT_TRUE(uses_qr_tree<double>(1, 4000, 33, false, true));
  EXPECT_TRUE(uses_qr_tree<double>(most, 4000, widest, false, true));
  EXPECT_FALSE(uses_qr_tree<double>(1, 4000, widest + 1, false, true));
  const int float_widest = kwsvd::Impl::qr_tree_wide_float_max_cols;
  const long float_rows = kwsvd::Impl::qr_tree_wide_float_min_rows;
  EXPECT_TRUE(uses_qr_tree<float>(float_most, float_rows, float_widest, false, true));
  EXPECT_FALSE(uses_qr_tree<float>(float_most + 1, float_rows, float_widest, false, true));
  EXPECT_FALSE(uses_qr_tree<float>(1, float_rows - 1, float_widest, false, true));
  EXPECT_FALSE(uses_qr_tree<float>(1, float_rows, float_widest + 1, false, true));
  EXPECT_TRUE(uses_qr_tree<float>(most, 4000, 32, false, false));
  for (const auto& [M, N] : {std::pair{2 * leaf, 1}, std::pair{2200, 32}, std::pair{100000, 32},
                             std::pair{5000, 7}, std::pair{1 << 24, widest}}) {
    const QrTree tree = QrTree::plan(M, N, N);
    ASSERT_GE(tree.levels, 2);
    EXPECT_EQ(tree.level[0].rows, M);
    EXPECT_EQ(tree.level[tree.levels - 1].leaves, 1);
    for (int l = 0; l < tree.levels; ++l) {
      const auto& level = tree.level[l];
      if (l > 0) {
        EXPECT_EQ(level.rows, tree.level[l - 1].leaves * N);
      }
      int next = 0;
      for (int i = 0; i < level.leaves; ++i) {
        int start = 0, count = 0;
        QrTree::leaf(level.rows, level.leaves, i, start, count);
        EXPECT_EQ(start, next);
        EXPECT_GE(count, level.leaves > 1 ? leaf : N);
        EXPECT_LT(count, 2 * leaf);
        next = start + count;
      }
      EXPECT_EQ(next, level.rows);
    }
  }
}

// QrPreprocessing::automatic reduces shapes of at most
// qr_panel_cols columns and rows at least
// qr_preprocessing_min_aspect times them and, past them (the blocked QR),
// of at most qr_blocked_max_cols columns and rows at least
// qr_blocked_min_aspect times them, by scalar type; a panel past
// qr_light_panel_max_bytes or the blocked QR only from qr_heavy_min_batch
// matrices (in double, from qr_heavy_full_device_batch only up to
// qr_heavy_full_device_max_aspect rows a column), and float past
// qr_float_narrow_cols columns only up to qr_float_max_batch matrices; in
// double also a small matrix whose factor crosses the level-0 limit; not
// under a workspace limit or level0 = false. always takes every non-square
// shape of 2 columns or more.
TEST(QrPreprocessingPlan, AutomaticRuleAndRefusedOptions) {
  using kwsvd::Impl::uses_qr_preprocessing;
  const int aspect = kwsvd::Impl::qr_preprocessing_min_aspect;
  kwsvd::SvdOptions automatic, always, never;
  always.qr = QrPreprocessing::always;
  never.qr = QrPreprocessing::never;
  const int most = kwsvd::Impl::qr_panel_cols;
  const auto takes = [&](auto scalar, long batch, long rows, long cols, bool crosses = false) {
    return uses_qr_preprocessing<decltype(scalar)>(automatic, batch, rows, cols, crosses);
  };
  // One light panel: from a single matrix, in both orientations.
  EXPECT_TRUE(takes(0.0, 1, 16L * aspect, 16));
  EXPECT_TRUE(takes(0.0, 1000, most, long(most) * aspect));
  EXPECT_TRUE(takes(0.0f, 1, long(most) * aspect, most));
  EXPECT_FALSE(takes(0.0, 1, long(most) * aspect - 1, most));
  // A heavy panel (double 2001 x 32 is 500 KiB): from 100 matrices, and at
  // 300 or more only up to 32 rows a column.
  constexpr long heavy_batch = kwsvd::Impl::qr_heavy_min_batch;
  constexpr long full_batch = kwsvd::Impl::qr_heavy_full_device_batch;
  constexpr long tall = kwsvd::Impl::qr_heavy_full_device_max_aspect;
  static_assert(2001L * 32 * 8 > kwsvd::Impl::qr_light_panel_max_bytes);
  static_assert(1000L * 32 * 8 <= kwsvd::Impl::qr_light_panel_max_bytes);
  EXPECT_FALSE(takes(0.0, heavy_batch - 1, 2001, 32));
  EXPECT_TRUE(takes(0.0, heavy_batch, 2001, 32));
  EXPECT_FALSE(takes(0.0, full_batch, 2001, 32));
  EXPECT_TRUE(takes(0.0, full_batch, 64 * tall, 64));
  EXPECT_FALSE(takes(0.0, full_batch, 64 * tall + 1, 64));
  EXPECT_TRUE(takes(0.0, full_batch - 1, 64 * tall + 1, 64));
  // A heavy QR (not the tree) of more than qr_heavy_max_rows rows only in
  // double from qr_heavy_wide_min_cols columns.
  constexpr long most_rows = kwsvd::Impl::qr_heavy_max_rows;
  constexpr long wide = kwsvd::Impl::qr_heavy_wide_min_cols;
  EXPECT_TRUE(takes(0.0, 200, most_rows, 64));
  EXPECT_FALSE(takes(0.0, 200, most_rows + 1, 64));
  EXPECT_TRUE(takes(0.0, 200, 10000, wide));
  EXPECT_FALSE(takes(0.0, 200, 10000, wide - 1));
  EXPECT_TRUE(takes(0.0f, 200, most_rows, 64));
  EXPECT_FALSE(takes(0.0f, 200, most_rows + 1, 64));
  EXPECT_FALSE(takes(0.0f, 200, 10000, wide));
  EXPECT_FALSE(takes(0.0, 200, 10000, 32));  // not the tree past 100 matrices
  EXPECT_TRUE(takes(0.0, 100, 10000, 32));   // the tree
  // Past one panel: double from 5 rows a column to 300 columns, float from
  // 8 to 128, at batches the blocked QR pays for.
  constexpr int double_aspect = kwsvd::Impl::qr_blocked_min_aspect<double>();
  constexpr int float_aspect = kwsvd::Impl::qr_blocked_min_aspect<float>();
  constexpr int double_most = kwsvd::Impl::qr_blocked_max_cols<double>();
  constexpr int float_most = kwsvd::Impl::qr_blocked_max_cols<float>();
  EXPECT_TRUE(takes(0.0, heavy_batch, long(most + 1) * double_aspect, most + 1));
  EXPECT_FALSE(takes(0.0, heavy_batch - 1, long(most + 1) * double_aspect, most + 1));
  EXPECT_FALSE(takes(0.0, heavy_batch, long(most + 1) * double_aspect - 1, most + 1));
  EXPECT_TRUE(takes(0.0, 1000, long(double_most) * double_aspect, double_most));
  EXPECT_FALSE(takes(0.0, 1000, 100L * (double_most + 1), double_most + 1));
  // Float: light panels of up to 24 columns at any batch; past them only
  // up to qr_float_max_batch matrices, and a heavy QR from qr_heavy_min_batch.
  constexpr long float_batch = kwsvd::Impl::qr_float_max_batch;
  constexpr int narrow = kwsvd::Impl::qr_float_narrow_cols;
  EXPECT_TRUE(takes(0.0f, 100000, long(narrow) * aspect, narrow));
  EXPECT_TRUE(takes(0.0f, float_batch, long(narrow + 1) * aspect, narrow + 1));
  EXPECT_FALSE(takes(0.0f, float_batch + 1, long(narrow + 1) * aspect, narrow + 1));
  EXPECT_TRUE(takes(0.0f, float_batch, long(float_most) * float_aspect, float_most));
  EXPECT_FALSE(takes(0.0f, float_batch + 1, long(float_most) * float_aspect, float_most));
  EXPECT_FALSE(takes(0.0f, heavy_batch - 1, long(float_most) * float_aspect, float_most));
  EXPECT_FALSE(takes(0.0f, heavy_batch, long(float_most) * float_aspect - 1, float_most));
  EXPECT_FALSE(takes(0.0f, heavy_batch, 100L * (float_most + 1), float_most + 1));
  // A panel factored as a tree (4 leaves of rows or more, up to
  // qr_tree_max_batch matrices): from a single matrix; not under
  // full_matrices, which the tree does not give.
  constexpr long tree_batch = kwsvd::Impl::qr_tree_max_batch;
  const long tree_rows = kwsvd::Impl::qr_tree_min_leaves * kwsvd::Impl::qr_tree_leaf_rows;
  EXPECT_TRUE(takes(0.0, 1, tree_rows, 32));
  EXPECT_TRUE(takes(0.0f, tree_batch, 32, 10000));
  EXPECT_FALSE(takes(0.0, 1, tree_rows - 1, 32));
  // Past one panel, where the factor is solved at level 0 (float only to
  // qr_tree_wide_float_max_batch matrices).
  const long float_tree_batch = kwsvd::Impl::qr_tree_wide_float_max_batch;
  EXPECT_TRUE(takes(0.0, 1, tree_rows, 48, true));
  EXPECT_FALSE(takes(0.0, 1, tree_rows, 48));
  const long float_tree_rows = kwsvd::Impl::qr_tree_wide_float_min_rows;
  EXPECT_TRUE(takes(0.0f, float_tree_batch, float_tree_rows, 48, true));
  EXPECT_FALSE(takes(0.0f, float_tree_batch + 1, float_tree_rows, 48, true));
  EXPECT_FALSE(takes(0.0f, 1, float_tree_rows, 64, true));
  EXPECT_FALSE(takes(0.0f, 1, tree_rows, 48, true));
  EXPECT_FALSE(takes(0.0, 1, tree_rows, kwsvd::Impl::qr_tree_max_cols + 1, true));
  // A double matrix whose factor crosses the level-0 limit (the W-cycle
  // would take it in blocks, its factor is solved at level 0): at any
  // aspect, up to qr_light_panel_max_bytes and below
  // qr_heavy_full_device_batch matrices; not in float.
  EXPECT_TRUE(takes(0.0, 1, 128, 40, true));
  EXPECT_TRUE(takes(0.0, full_batch - 1, 48, 200, true));
  EXPECT_FALSE(takes(0.0, 10, 128, 40));
  EXPECT_FALSE(takes(0.0, full_batch, 128, 40, true));
  EXPECT_FALSE(takes(0.0f, 10, 128, 40, true));
  static_assert(1000L * 48 * 8 > kwsvd::Impl::qr_light_panel_max_bytes);
  EXPECT_FALSE(takes(0.0, 10, 1000, 48, true));
  EXPECT_TRUE(uses_qr_preprocessing<double>(always, 1, 100L * (double_most + 1), double_most + 1));
  EXPECT_FALSE(uses_qr_preprocessing<double>(never, 1, 1000, 10));
  EXPECT_TRUE(uses_qr_preprocessing<float>(always, 1, 65, 64));
  EXPECT_FALSE(uses_qr_preprocessing<float>(always, 1, 64, 64));
  EXPECT_FALSE(uses_qr_preprocessing<double>(always, 1, 100, 1));
  auto full = automatic;
  full.full_matrices = true;
  EXPECT_TRUE(uses_qr_preprocessing<double>(full, 1, 1000, 10));
  EXPECT_FALSE(uses_qr_preprocessing<double>(full, 1, tree_rows, 32));  // no tree: heavy at 1
  auto blocks = automatic;
  blocks.level0 = false;
  EXPECT_FALSE(uses_qr_preprocessing<double>(blocks, 1, 1000, 10));
  auto limited = automatic;
  limited.max_workspace_bytes = std::size_t(1) << 30;
  EXPECT_FALSE(uses_qr_preprocessing<double>(limited, 1, 1000, 10));

  // A shape solved at level 0 stays there under automatic.
  using Svd = kwsvd::BatchedSvd<Exec, double>;
  EXPECT_FALSE(Svd(Exec(), 4, 40, 8).qr_preprocessed());
  EXPECT_TRUE(Svd(Exec(), 4, 40, 8, always).qr_preprocessed());
  // The handle hands its batch size to the rule: the blocked QR of 1100 x 40
  // (352 KiB) from qr_heavy_min_batch matrices, not for one. And whether
  // the factor crosses the level-0 limit: 400 x 40 goes to the W-cycle's
  // blocks, its 40 x 40 factor to level 0, so from one matrix.
  const Svd one(Exec(), 1, 1100, 40), many(Exec(), heavy_batch, 1100, 40);
  ASSERT_FALSE(one.level0());
  EXPECT_FALSE(one.qr_preprocessed());
  EXPECT_TRUE(many.qr_preprocessed());
  const Svd small(Exec(), 1, 400, 40);
  EXPECT_TRUE(small.qr_preprocessed());
  EXPECT_TRUE(small.level0());

  auto always_limited = always;
  always_limited.max_workspace_bytes = std::size_t(1) << 30;
  const auto limit_message =
      error_of([&] { kwsvd::BatchedSvd<Exec, double>(Exec(), 2, 90, 20, always_limited); });
  EXPECT_NE(limit_message.find("max_workspace_bytes"), std::string::npos) << limit_message;
  const auto variable_message = error_of([&] {
    kwsvd::VariableBatchedSvd<Exec, double>(Exec(), {kwsvd::MatrixShape{90, 20}}, always);
  });
  EXPECT_NE(variable_message.find("VariableBatchedSvd"), std::string::npos) << variable_message;
  auto bad = automatic;
  bad.qr = static_cast<QrPreprocessing>(7);
  const auto enum_message =
      error_of([&] { kwsvd::BatchedSvd<Exec, double>(Exec(), 2, 90, 20, bad); });
  EXPECT_NE(enum_message.find("options.qr"), std::string::npos) << enum_message;
}

}  // namespace
