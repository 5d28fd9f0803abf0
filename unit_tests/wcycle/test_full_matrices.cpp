// SvdOptions::full_matrices: U m x m and V n x n (LAPACK's jobu = 'A',
// cuSOLVER gesvdjBatched's shapes). The completion runs after the thin SVD,
// so the values, the first k = min(m, n) columns, the other side and info
// must be the thin call's to the bit; the full side must be orthonormal as a
// whole (||I - X^T X||_1 / rows below 30 u, e2's measure), so its columns
// past k span the orthogonal complement of A's range (tall) or row space
// (wide). Every entry point: BatchedSvd (level 0, W-cycle, rounds), the
// raw-pointer form, batched_small_svd, VariableBatchedSvd's Views and
// pointer arrays.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
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
class FullMatrices : public kwsvd::test::ScalarLayoutTest<C> {
 public:
  using typename kwsvd::test::ScalarLayoutTest<C>::Scalar;
  using typename kwsvd::test::ScalarLayoutTest<C>::Result;
  using kwsvd::test::ScalarLayoutTest<C>::bound;

  // full against thin (the same options but full_matrices): the same
  // values, info, short side and first k columns of the long side, to the
  // bit; the long side orthonormal over all its columns.
  static void expect_completes(const Result& thin, const Result& full, int m, int n,
                               const kwsvd::SvdOptions& options, const std::string& at) {
    const int k = std::min(m, n);
    for (std::size_t b = 0; b < thin.s.size(); ++b) {
      const std::string mat = at + " matrix " + std::to_string(b);
      EXPECT_EQ(full.s[b], thin.s[b]) << mat;
      EXPECT_EQ(full.info[b].sweeps, thin.info[b].sweeps) << mat;
      EXPECT_EQ(full.info[b].converged, 1) << mat;
      const bool tall = m >= n;
      const auto& long_thin = tall ? thin.u[b] : thin.v[b];
      const auto& long_full = tall ? full.u[b] : full.v[b];
      const auto& short_thin = tall ? thin.v[b] : thin.u[b];
      const auto& short_full = tall ? full.v[b] : full.u[b];
      EXPECT_EQ(short_full, short_thin) << mat << ": the short side";
      const bool computed =
          tall ? kwsvd::job_writes_u(options.job) : kwsvd::job_writes_v(options.job);
      if (!computed) {
        EXPECT_TRUE(long_full.empty()) << mat;
        continue;
      }
      const int rows = tall ? m : n;
      ASSERT_EQ(long_full.size(), std::size_t(rows) * std::size_t(rows)) << mat;
      for (std::size_t i = 0; i < std::size_t(rows) * std::size_t(k); ++i)
        ASSERT_EQ(long_full[i], long_thin[i]) << mat << ": thin column entry " << i;
      EXPECT_LT(kwsvd::test::orthogonality_error(long_full, rows, rows), bound())
          << mat << ": the full side's orthogonality";
    }
  }
};

using Cases = kwsvd::test::ScalarLayoutCases;
TYPED_TEST_SUITE(FullMatrices, Cases);

// Tall and wide through the level-0 kernel (few and many missing columns;
// 160 x 8 has enough for the GEMM tiles of complete_columns_by_compact_wy),
// swept whole, and through the W-cycle's blocks at one level and at two,
// with at most 32 columns (completed by one block of reflectors through its
// Gram matrix) and more (40: two blocks, 70: three), with each job, sorted or not (unsorted: zero
// values still last, where their columns are completed before the full side's).
TYPED_TEST(FullMatrices, ThinColumnsStayAndTheRestCompleteAnOrthonormalBasis) {
  using T = typename TestFixture::Scalar;
  const std::vector<kwsvd::test::ShapeCase> cases = {
      {20, 12, true, {}},    {12, 20, true, {}},
      {33, 30, true, {}},    {40, 3, true, {}},
      {90, 40, false, {}},   {40, 90, false, {}},
      {130, 120, false, {}}, {100, 101, false, {}},
      {70, 40, true, {}},    {200, 24, false, {}},
      {24, 200, false, {}},  {150, 120, false, kwsvd::test::two_level_widths<T>()},
      {160, 70, false, {}},  {160, 8, true, {}},
      {8, 160, true, {}}};
  for (const auto& c : cases) {
    const auto mats = kwsvd::test::rank_deficient_batch<T>(c.m, c.n);
    for (const Job job :
         {Job::values_and_vectors, Job::values_and_left_vectors, Job::values_and_right_vectors}) {
      for (const bool sorted : {true, false}) {
        kwsvd::SvdOptions options;
        options.job = job;
        options.sort = sorted;
        options.level0 = c.level0;
        options.block_scratch_bytes = 32768;
        options.level_widths = std::vector<int>(c.widths);
        const auto thin =
            kwsvd::test::run_batched_svd<T, typename TestFixture::Layout>(mats, c.m, c.n, options);
        options.full_matrices = true;
        const auto full =
            kwsvd::test::run_batched_svd<T, typename TestFixture::Layout>(mats, c.m, c.n, options);
        TestFixture::expect_completes(thin, full, c.m, c.n, options,
                                      std::to_string(c.m) + " x " + std::to_string(c.n) + " job " +
                                          kwsvd::Impl::job_name(job) + (sorted ? "" : " unsorted") +
                                          (c.level0 ? "" : " blocks"));
      }
    }
  }
}

// Under a workspace limit the W-cycle sweeps rounds; the last one solves a
// few matrices again and must complete their full sides again too.
TYPED_TEST(FullMatrices, RoundsUnderAWorkspaceLimitCompleteEveryMatrix) {
  using T = typename TestFixture::Scalar;
  const int m = 70, n = 40;
  std::vector<std::vector<T>> mats;
  for (int b = 0; b < 7; ++b)
    mats.push_back(random_matrix<T>(m, n, 31u + std::uint64_t(b)));
  kwsvd::SvdOptions options;
  options.level0 = false;
  options.full_matrices = true;
  options.max_workspace_bytes =
      kwsvd::BatchedSvd<Exec, T>::planned_workspace_bytes(Exec(), 7, m, n, options) / 3;
  const long per_round = kwsvd::BatchedSvd<Exec, T>(Exec(), 7, m, n, options).matrices_per_round();
  ASSERT_GT(per_round, 0);
  ASSERT_LT(per_round, 7);
  const auto rounds =
      kwsvd::test::run_batched_svd<T, typename TestFixture::Layout>(mats, m, n, options);
  for (std::size_t b = 0; b < mats.size(); ++b) {
    EXPECT_LT(kwsvd::test::orthogonality_error(rounds.u[b], m, m), TestFixture::bound()) << b;
    const auto e = kwsvd::test::svd_errors(
        mats[b], m, n, rounds.s[b],
        std::vector<T>(rounds.u[b].begin(), rounds.u[b].begin() + m * n), rounds.v[b]);
    EXPECT_LT(e.e1, TestFixture::bound()) << b;
    EXPECT_EQ(rounds.info[b].converged, 1) << b;
  }
}

// batched_small_svd (the level-0 entry point) and the raw-pointer form
// (padded leading dimensions and batch strides) write what BatchedSvd does.
// 140 x 10 completes 130 columns, by the one-team tiles (128 or more), on
// level 0's bounded nine-block loop; with 145 rows or more the loop is the
// general one, and the handle sweeps such a matrix whole instead.
TYPED_TEST(FullMatrices, SmallSvdAndRawPointersMatchTheHandle) {
  using T = typename TestFixture::Scalar;
  using L = typename TestFixture::Layout;
  // Plain ints, not structured bindings: the lambdas below capture them
  // (capturing a binding is C++20; nvcc warns in C++17).
  for (const auto& shape :
       {std::pair<int, int>{24, 10}, std::pair<int, int>{10, 24}, std::pair<int, int>{140, 10}}) {
    const int m = shape.first, n = shape.second;
    const auto mats = kwsvd::test::rank_deficient_batch<T>(m, n);
    kwsvd::SvdOptions options;
    options.full_matrices = true;
    const auto handle =
        kwsvd::test::run_batched_svd<T, typename TestFixture::Layout>(mats, m, n, options);
    const auto small = kwsvd::test::run_svd_batch<T, L>(
        mats, m, n,
        [&](const auto& A, const auto& S, const auto& U, const auto& V, const auto& info) {
          kwsvd::batched_small_svd(Exec(), A, S, U, V, info, options);
        },
        options);
    const std::string at = std::to_string(m) + " x " + std::to_string(n);
    EXPECT_EQ(small.s, handle.s) << at;
    EXPECT_EQ(small.u, handle.u) << at;
    EXPECT_EQ(small.v, handle.v) << at;
    if (!std::is_same<L, Kokkos::LayoutLeft>::value)
      continue;
    // Raw pointers: U m x m with ldu = m + 3, V n x n with ldv = n + 1.
    const int batch = int(mats.size()), k = std::min(m, n), lda = m + 2, ldu = m + 3, ldv = n + 1;
    const long long strideA = (long long)lda * n + 5, strideU = (long long)ldu * m + 7,
                    strideV = (long long)ldv * n;
    auto A = kwsvd::test::to_device_strided(mats, m, n, lda, strideA);
    Kokkos::View<T*> S("S", std::size_t(batch) * k), U("U", std::size_t(batch * strideU)),
        V("V", std::size_t(batch * strideV));
    Kokkos::View<kwsvd::SvdInfo*> info("info", batch);
    kwsvd::batched_svd(Exec(), batch, m, n, A.data(), lda, strideA, S.data(), k, U.data(), ldu,
                       strideU, V.data(), ldv, strideV, info.data(), options);
    auto hu = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), U);
    auto hv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), V);
    for (int b = 0; b < batch; ++b) {
      for (int j = 0; j < m; ++j)
        for (int i = 0; i < m; ++i)
          ASSERT_EQ(hu(b * strideU + i + (long long)ldu * j), handle.u[b][i + std::size_t(m) * j])
              << at << " U(" << i << ", " << j << ")";
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i)
          ASSERT_EQ(hv(b * strideV + i + (long long)ldv * j), handle.v[b][i + std::size_t(n) * j])
              << at << " V(" << i << ", " << j << ")";
    }
    if (m < n)
      continue;  // a wide matrix's U is m x m either way
    // A batch stride for thin U is refused, naming the option.
    const auto msg = error_of([&] {
      kwsvd::batched_svd(Exec(), batch, m, n, A.data(), lda, strideA, S.data(), k, U.data(), ldu,
                         (long long)ldu * k, V.data(), ldv, strideV, info.data(), options);
    });
    EXPECT_NE(msg.find("strideU"), std::string::npos) << msg;
    EXPECT_NE(msg.find("full_matrices"), std::string::npos) << msg;
  }
}

// Thin outputs under full_matrices (and full ones without it) are refused,
// naming the argument, the shape and the option.
TYPED_TEST(FullMatrices, ThinOutputsAreRefusedNamingTheOption) {
  using T = typename TestFixture::Scalar;
  using Mats = typename TestFixture::Matrices;
  const int m = 30, n = 20, batch = 2;
  Mats A("A", batch, m, n), thinU("U", batch, m, n), fullU("U", batch, m, m), V("V", batch, n, n);
  Kokkos::View<T**> S("S", batch, n);
  Kokkos::View<kwsvd::SvdInfo*> info("info", batch);
  kwsvd::SvdOptions options;
  options.full_matrices = true;
  std::string msg = error_of([&] { kwsvd::batched_svd(Exec(), A, S, thinU, V, info, options); });
  EXPECT_NE(msg.find("U"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(batch, m, m)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("full_matrices"), std::string::npos) << msg;
  options.full_matrices = false;
  msg = error_of([&] { kwsvd::batched_svd(Exec(), A, S, fullU, V, info, options); });
  EXPECT_NE(msg.find("(batch, m, min(m, n))"), std::string::npos) << msg;
}

// A NaN matrix's full side is NaN throughout; its neighbours are
// unaffected. An empty matrix's full side is the identity.
TYPED_TEST(FullMatrices, NonFiniteAndEmptyMatrices) {
  using T = typename TestFixture::Scalar;
  for (const bool level0 : {true, false}) {
    const int m = 30, n = 12;
    const auto clean_mats = kwsvd::test::rank_deficient_batch<T>(m, n);
    auto mats = clean_mats;
    mats[1][5] = std::numeric_limits<T>::infinity();
    kwsvd::SvdOptions options;
    options.level0 = level0;
    options.full_matrices = true;
    const auto clean =
        kwsvd::test::run_batched_svd<T, typename TestFixture::Layout>(clean_mats, m, n, options);
    const auto r =
        kwsvd::test::run_batched_svd<T, typename TestFixture::Layout>(mats, m, n, options);
    EXPECT_EQ(r.info[1].nonfinite_input, 1);
    for (const T x : r.u[1])
      ASSERT_TRUE(std::isnan(double(x))) << level0;
    for (std::size_t b : {std::size_t(0), std::size_t(2)}) {
      EXPECT_EQ(r.u[b], clean.u[b]) << level0 << " " << b;
      EXPECT_EQ(r.v[b], clean.v[b]) << level0 << " " << b;
    }
  }
  for (const auto& [m, n] : {std::pair<int, int>{5, 0}, std::pair<int, int>{0, 4}}) {
    kwsvd::SvdOptions options;
    options.full_matrices = true;
    const auto r = kwsvd::test::run_batched_svd<T, typename TestFixture::Layout>(
        std::vector<std::vector<T>>(3), m, n, options);
    for (std::size_t b = 0; b < 3; ++b) {
      EXPECT_EQ(r.info[b].converged, 1);
      const auto& x = m > 0 ? r.u[b] : r.v[b];
      const int rows = std::max(m, n);
      ASSERT_EQ(x.size(), std::size_t(rows) * std::size_t(rows));
      for (int j = 0; j < rows; ++j)
        for (int i = 0; i < rows; ++i)
          ASSERT_EQ(x[i + std::size_t(rows) * j], i == j ? T(1) : T(0)) << m << " x " << n;
    }
  }
}

// The completion by reflectors spread over teams (the W-cycle's full sides:
// prepare_reflector_completion by one team, then
// complete_columns_from_reflectors on tiles of columns) and as GEMM tiles on
// one team (the level-0 full sides: complete_columns_by_compact_wy) against
// the one-team completion (complete_orthonormal_columns), in launches of one
// functor: Phase 0 the one-team completion, 1 the preparation, 2 the tiles,
// 3 the one-team GEMM tiles.
template <class Scalar, int Phase>
struct SpreadCompletion {
  using Member = Kokkos::TeamPolicy<Exec>::member_type;
  using Scratch = kwsvd::Impl::TeamScratch<Exec, Scalar>;
  static constexpr int tile_max = 32;  // the tiles' compiled width
  static constexpr std::size_t gram_scalars = std::size_t(kwsvd::Impl::completion_gram_max_columns *
                                                          kwsvd::Impl::completion_gram_max_columns);
  Kokkos::View<Scalar**, Kokkos::LayoutLeft> left;
  Kokkos::View<Scalar*> K, tau, wy;
  int r0 = 0, tile = 1, chunk = 1;

  KOKKOS_INLINE_FUNCTION std::size_t scratch_scalars() const {
    return Phase >= 2 ? std::size_t(chunk) * tile_max : gram_scalars;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const int M = int(left.extent(0)), N = int(left.extent(1));
    const kwsvd::Impl::StridedMatrix<Scalar> x{left.data(), M, N, 1,
                                               std::ptrdiff_t(left.stride(1))};
    Scratch scratch(member.team_scratch(0), scratch_scalars());
    if constexpr (Phase == 0) {
      kwsvd::Impl::complete_orthonormal_columns(member, x, M, N, r0, K.data(), tau.data(),
                                                scratch.data());
    } else if constexpr (Phase == 1) {
      kwsvd::Impl::prepare_reflector_completion(member, x, M, r0, K.data(), tau.data(), wy.data());
    } else if constexpr (Phase == 3) {
      kwsvd::Impl::complete_columns_by_compact_wy<tile_max>(
          member, x, M, N, r0, K.data(), tau.data(), wy.data(), scratch.data(), chunk);
    } else {
      const int j0 = r0 + member.league_rank() * tile;
      kwsvd::Impl::complete_columns_from_reflectors<tile_max>(
          member, x, M, j0, j0 + tile < N ? j0 + tile : N, r0, K.data(), wy.data(), scratch.data(),
          chunk);
    }
  }

  void launch(int teams) const {
    Kokkos::TeamPolicy<Exec> policy(teams, Kokkos::AUTO,
                                    std::min(8, kwsvd::Impl::vector_length_max<Exec>()));
    policy.set_scratch_size(0, Kokkos::PerTeam(int(Scratch::shmem_size(scratch_scalars()))));
    Kokkos::parallel_for("spread_completion", policy, *this);
    Kokkos::fence();
  }
};

// Spread over tiles of any width up to the compiled one, or on one team's
// tiles of the compiled width, in passes of any count of reflectors, every
// column is the one-team completion's Q e_j up to rounding (both apply the
// same reflectors: one team block by block, the tiles as I - V T V^T), with
// one block of reflectors, two and three (a partial one last) and none; the
// columns completed are orthonormal.
template <class T>
void expect_spread_completion_matches_one_team() {
  using Matrix = Kokkos::View<T**, Kokkos::LayoutLeft>;
  const T u = std::numeric_limits<T>::epsilon();
  for (const auto& shape : {std::pair<int, int>{40, 20}, std::pair<int, int>{90, 40},
                            std::pair<int, int>{160, 70}, std::pair<int, int>{9, 0}}) {
    const int M = shape.first, r0 = shape.second;  // captured below: not a binding
    const auto a = random_matrix<T>(M, M, 7u + unsigned(r0));
    const auto start = [&]() {
      Matrix x("left", M, M);
      auto h = Kokkos::create_mirror_view(x);
      for (int j = 0; j < r0; ++j)
        for (int i = 0; i < M; ++i)
          h(i, j) = a[i + std::size_t(M) * j];
      Kokkos::deep_copy(x, h);
      return x;
    };
    const Kokkos::View<T*> K("K", std::max(std::size_t(M) * r0, std::size_t(1))),
        tau("tau", std::max(r0, 1)),
        wy("wy", std::max(kwsvd::Impl::completion_wy_scalars(r0), std::size_t(1)));
    SpreadCompletion<T, 0> one_team{start(), K, tau, wy, r0};
    one_team.launch(1);
    const auto expected = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), one_team.left);
    // tile 0: the one-team GEMM tiles.
    for (const auto& [tile, chunk] :
         {std::pair<int, int>{1, 128}, std::pair<int, int>{7, 16}, std::pair<int, int>{32, 5},
          std::pair<int, int>{32, 128}, std::pair<int, int>{0, 5}, std::pair<int, int>{0, 16},
          std::pair<int, int>{0, 128}}) {
      const std::string at = std::to_string(M) + " x " + std::to_string(r0) +
                             (tile > 0 ? " tile " + std::to_string(tile) : " one team") +
                             " chunk " + std::to_string(chunk);
      const Matrix x = start();
      if (tile > 0) {
        SpreadCompletion<T, 1>{x, K, tau, wy, r0, tile, chunk}.launch(1);
        SpreadCompletion<T, 2>{x, K, tau, wy, r0, tile, chunk}.launch((M - r0 + tile - 1) / tile);
      } else {
        SpreadCompletion<T, 3>{x, K, tau, wy, r0, tile, chunk}.launch(1);
      }
      const auto got = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
      std::vector<T> completed;
      double apart = 0;
      for (int j = r0; j < M; ++j)
        for (int i = 0; i < M; ++i) {
          apart =
              kwsvd::test::worse_of(apart, std::abs(double(got(i, j)) - double(expected(i, j))));
          completed.push_back(got(i, j));
        }
      EXPECT_LT(apart, 30 * u) << at;
      EXPECT_LT(kwsvd::test::orthogonality_error(completed, M, M - r0), 30 * u) << at;
    }
  }
}

TEST(FullSideCompletion, TilesOverTeamsOrOnOneGiveTheOneTeamColumns) {
  expect_spread_completion_matches_one_team<float>();
  expect_spread_completion_matches_one_team<double>();
}

// The level-0 full sides' plan (plan_full_side_scratch): GEMM tiles where
// there are level0_full_side_tiles_min_cols columns to complete, with the
// most reflectors per pass that fit this backend's scratch, never more than
// two passes; else the one-team completion; a side that completes by
// Gram-Schmidt alone never takes tiles.
template <class T>
void expect_level0_full_side_plan() {
  const std::size_t limit = std::size_t(kwsvd::Impl::team_scratch_bytes_max<Exec>());
  const auto bytes = [](int m, int n, int chunk) {
    return kwsvd::Impl::full_side_scratch_bytes<Exec, T>(m, n, false, chunk);
  };
  for (const auto& [m, n] :
       {std::pair<int, int>{32, 16}, std::pair<int, int>{16, 32}, std::pair<int, int>{100, 16},
        std::pair<int, int>{500, 16}, std::pair<int, int>{600, 16}, std::pair<int, int>{470, 16},
        std::pair<int, int>{215, 16}, std::pair<int, int>{200, 40},
        std::pair<int, int>{2000, 16}}) {
    const std::string at = std::to_string(m) + " x " + std::to_string(n);
    const int k = std::min(m, n);
    const auto plan = kwsvd::Impl::plan_full_side_scratch<Exec, T>({kwsvd::MatrixShape{m, n}});
    const bool many = std::max(m, n) - k >= kwsvd::Impl::level0_full_side_tiles_min_cols;
    int best = 0;  // the most reflectors per pass that fit, in at most two passes
    for (int c = k; many && c > 0 && 2 * c >= k && best == 0; --c)
      best = bytes(m, n, c) <= limit ? c : 0;
    EXPECT_EQ(plan.chunk, best) << at;
    if (best > 0) {
      EXPECT_EQ(plan.bytes, bytes(m, n, best)) << at;
    }
  }
  // One side with few columns to complete keeps the launch's columns per thread.
  const auto few = kwsvd::Impl::plan_full_side_scratch<Exec, T>({{300, 8}, {32, 8}});
  EXPECT_EQ(few.chunk, 0);
  const auto gram_schmidt = kwsvd::Impl::plan_full_side_scratch<Exec, T>({{60, 50}, {50, 60}});
  EXPECT_EQ(gram_schmidt.chunk, 0);
  EXPECT_FALSE(kwsvd::Impl::completes_by_reflectors(60, 50));
}

TEST(FullSideCompletion, Level0PlanTakesTilesInAtMostTwoPasses) {
  expect_level0_full_side_plan<float>();
  expect_level0_full_side_plan<double>();
}

// A variable batch of level-0, block-rotation and empty matrices, tall and
// wide (full sides completed by reflectors on tiles beside one by
// Gram-Schmidt: 130 x 120; level-0 ones by GEMM tiles on one team where
// they have many columns to complete: 140 x 10), through a list of Views
// and through pointer
// arrays: the same values and thin columns as its thin call, every full side
// orthonormal.
TYPED_TEST(FullMatrices, VariableBatchCompletesEveryMatrix) {
  using T = typename TestFixture::Scalar;
  using L = typename TestFixture::Layout;
  const std::vector<kwsvd::MatrixShape> shapes = {{20, 12},   {12, 20},  {90, 40},  {40, 90},
                                                  {6, 0},     {33, 33},  {150, 70}, {2, 1},
                                                  {130, 120}, {140, 10}, {10, 140}};
  std::vector<std::vector<T>> mats;
  for (std::size_t b = 0; b < shapes.size(); ++b)
    mats.push_back(random_matrix<T>(shapes[b].rows, shapes[b].cols, 41u + b));
  const auto solve = [&](bool full, bool pointers) {
    kwsvd::SvdOptions options;
    options.full_matrices = full;
    return kwsvd::test::run_variable_svd<T, L>(shapes, mats, options, pointers);
  };
  const auto thin = solve(false, false);
  for (const bool pointers : {false, true}) {
    if (pointers && !std::is_same<L, Kokkos::LayoutLeft>::value)
      continue;  // the pointer arrays are column-major
    const auto full = solve(true, pointers);
    kwsvd::SvdOptions options;
    for (std::size_t b = 0; b < shapes.size(); ++b) {
      const int m = shapes[b].rows, n = shapes[b].cols;
      typename TestFixture::Result one_thin, one_full;
      for (auto* r : {&one_thin, &one_full}) {
        const auto& from = r == &one_thin ? thin : full;
        r->s.push_back(from.s[b]);
        r->u.push_back(from.u[b]);
        r->v.push_back(from.v[b]);
        r->info.push_back(from.info[b]);
      }
      TestFixture::expect_completes(
          one_thin, one_full, m, n, options,
          std::to_string(m) + " x " + std::to_string(n) + (pointers ? " pointers" : " views"));
    }
  }
}

}  // namespace
