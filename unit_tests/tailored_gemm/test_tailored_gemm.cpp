// Tailored batched GEMMs (Gram and fused update of column-block pairs) against
// a plain double-precision reference, for mixed-m batches, every block width
// the tuning engine can pick, both layouts, narrow last blocks and masks; the
// plate layout and the auto-tuning engine on the host.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "common/oracle.hpp"
#include "kwsvd/kwsvd.hpp"
#include "kwsvd/scheduler/tailored_gemm.hpp"

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using kwsvd::Impl::BlockPairTask;

using kwsvd::test::Case;

// Gram EVD hooks that read each task's Gram where launch_pair_gram_plates left it
// (the W-cycle's way: no cross-plate launch).
template <class T>
struct PlateSumHooks {
  static constexpr bool reports = false;
  kwsvd::Impl::GramPlateSums<T> gram;
  KOKKOS_INLINE_FUNCTION bool skip(int) const { return false; }
  KOKKOS_INLINE_FUNCTION void done(int, bool, bool) const {}
  KOKKOS_INLINE_FUNCTION typename kwsvd::Impl::GramPlateSums<T>::TaskGram gram_source(int t) const {
    return gram.task(t);
  }
};

// One sweep of the Gram EVD of every task's Gram: from B (`hooks` absent)
// or through PlateSumHooks; eigenvalues then J, on the host.
template <class T>
std::vector<T> evd_of_grams(Kokkos::View<T*> B, int tasks, int n,
                            const kwsvd::Impl::GramPlateSums<T>* sums) {
  const std::size_t nn = std::size_t(n) * n;
  const Kokkos::LayoutStride square(std::size_t(tasks), nn, std::size_t(n), 1, std::size_t(n),
                                    std::size_t(n));
  Kokkos::View<T***, Kokkos::LayoutStride> B3(B.data(), square);
  Kokkos::View<T***, Kokkos::LayoutLeft> J("J", tasks, n, n);
  Kokkos::View<T**> lambda("lambda", tasks, n);
  Kokkos::View<kwsvd::EvdInfo*> info("info", tasks);
  kwsvd::EvdOptions evd;
  evd.sweeps = 1;
  evd.positive_semidefinite = true;
  if (sums != nullptr)
    kwsvd::Impl::batched_gram_evd_hooked(Exec(), B3, lambda, J, info, evd, PlateSumHooks<T>{*sums});
  else
    kwsvd::batched_gram_evd(Exec(), B3, lambda, J, info, evd);
  auto hl = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), lambda);
  auto hj = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), J);
  std::vector<T> out;
  for (int t = 0; t < tasks; ++t)
    for (int i = 0; i < n; ++i)
      out.push_back(hl(t, i));
  for (int t = 0; t < tasks; ++t)
    for (int c = 0; c < n; ++c)
      for (int r = 0; r < n; ++r)
        out.push_back(hj(t, r, c));
  return out;
}

// How a Level stores its matrices: one rank-3 View (batch, m_max, n) of the
// case's layout, each matrix using its first m_k rows; or packed: each
// matrix column-major with leading dimension m_k, one after the other from
// 16-byte boundaries (the W-cycle's work matrices; the GPU Gram then loads
// 16-byte column runs where m_k allows, GramChunkPrefetch).
enum class Storage { batch_view, packed };

// A batch of matrices with different row counts and the tasks of one level
// over it: pairs of blocks of width w, the last block narrower.
template <class T, class L>
struct Level {
  int w = 0, n = 0;
  std::vector<int> rows;  // m_k
  Kokkos::View<T***, L> A;
  Kokkos::View<T*> packed;
  std::vector<std::vector<double>> host;  // matrix k, column-major m_k x n
  std::vector<BlockPairTask<T>> tasks;
  Kokkos::View<BlockPairTask<T>*> tasks_d;

  Level(int w_, const std::vector<int>& m, std::uint64_t seed,
        Storage storage = Storage::batch_view)
      : w(w_), rows(m) {
    n = 4 * w - w / 2;  // blocks of w, w, w, w/2
    const int m_max = *std::max_element(m.begin(), m.end());
    constexpr std::size_t align = 16 / sizeof(T);
    std::vector<std::size_t> offset;  // packed: where matrix k starts
    std::size_t total = 0;
    for (int mk : m) {
      offset.push_back(total);
      total += (std::size_t(mk) * n + align - 1) / align * align;
    }
    for (std::size_t k = 0; k < m.size(); ++k) {
      const auto r = kwsvd::test::random_matrix<T>(m[k], n, seed + k);
      host.emplace_back(r.begin(), r.end());
    }
    if (storage == Storage::packed) {
      packed = Kokkos::View<T*>("packed", total);
      auto h = Kokkos::create_mirror_view(packed);
      for (std::size_t k = 0; k < m.size(); ++k)
        for (std::size_t e = 0; e < host[k].size(); ++e)
          h(offset[k] + e) = T(host[k][e]);
      Kokkos::deep_copy(packed, h);
    } else {
      A = Kokkos::View<T***, L>("A", m.size(), m_max, n);
      auto h = Kokkos::create_mirror_view(A);
      for (std::size_t k = 0; k < m.size(); ++k)
        for (int c = 0; c < n; ++c)
          for (int i = 0; i < m[k]; ++i)
            h(k, i, c) = T(host[k][i + std::size_t(m[k]) * c]);
      Kokkos::deep_copy(A, h);
    }
    // Disjoint pairs (0, 3) and (1, 2): block 3 is the narrow one.
    int pair = 0;
    for (std::size_t k = 0; k < m.size(); ++k)
      for (auto [bi, bj] : {std::pair<int, int>{0, 3}, {1, 2}}) {
        BlockPairTask<T> t;
        if (storage == Storage::packed) {
          t.data = packed.data() + offset[k];
          t.row_stride = 1;
          t.col_stride = m[k];
        } else {
          t.data = A.data() + k * A.stride(0);
          t.row_stride = std::ptrdiff_t(A.stride(1));
          t.col_stride = std::ptrdiff_t(A.stride(2));
        }
        t.rows = m[k];
        t.col_i = bi * w;
        t.col_j = bj * w;
        t.width_i = std::min(w, n - bi * w);
        t.width_j = std::min(w, n - bj * w);
        t.matrix = int(k);
        t.pair = pair++;
        tasks.push_back(t);
      }
    tasks_d = Kokkos::View<BlockPairTask<T>*>("tasks", tasks.size());
    auto th = Kokkos::create_mirror_view(tasks_d);
    for (std::size_t t = 0; t < tasks.size(); ++t)
      th(t) = tasks[t];
    Kokkos::deep_copy(tasks_d, th);
  }

  std::vector<int> task_rows() const {
    std::vector<int> r;
    for (const auto& t : tasks)
      r.push_back(t.rows);
    return r;
  }

  // Column c of task t's m x 2w operand in the host copy (zero when absent).
  double x(std::size_t t, int r, int c) const {
    const auto& task = tasks[t];
    const int col = task.column(c, w);
    return col < 0 ? 0.0 : host[std::size_t(task.matrix)][r + std::size_t(task.rows) * col];
  }
};

// A device array of 0/1 flags, `value` at index `masked` and 1 - value
// elsewhere (a mask with only matrix `masked` set by default), filled on the
// host: deep_copy of a scalar into a device View faulted (illegal address in
// Kokkos's ViewFill) in this CUDA build, like every fill of the tests.
Kokkos::View<int*> mask_of(std::size_t matrices, std::size_t masked, int value = 1) {
  Kokkos::View<int*> mask("mask", matrices);
  auto h = Kokkos::create_mirror_view(mask);
  for (std::size_t k = 0; k < matrices; ++k)
    h(k) = k == masked ? value : 1 - value;
  Kokkos::deep_copy(mask, h);
  return mask;
}

template <class C>
class TailoredGemm : public ::testing::Test {
 public:
  using TestScalar = typename C::Scalar;
  using TestLayout = typename C::Layout;
  // Mixed m, including fewer rows than a plate and exact multiples of it.
  const std::vector<int> mixed_rows = {5, 37, 64, 130, 201};
  // Packed storage: rows with whole and partial 16-byte column runs.
  const std::vector<int> packed_rows = {36, 64, 130, 201, 256};
  // The packed matrices are column-major whatever the case's layout: the
  // LayoutLeft cases test them.
  static constexpr bool tests_packed = std::is_same_v<TestLayout, Kokkos::LayoutLeft>;
};

using Cases = kwsvd::test::ScalarLayoutCases;
TYPED_TEST_SUITE(TailoredGemm, Cases);

TYPED_TEST(TailoredGemm, GramMatchesReferenceForEveryWidth) {
  using T = typename TestFixture::TestScalar;
  using L = typename TestFixture::TestLayout;
  // GPU row groups: the backend's choice, and 3 (summed inside the team;
  // at w = 48, 900 threads pass the launch bounds and the GPU takes the
  // tiles in turn in memory, as host backends always do). delta = 201: every
  // task is one plate and the GPU teams write B directly; 16 and 64 mix one-
  // and many-plate tasks; 26 makes the longest segment one row short of
  // what float teams of 3 row groups carry at w = 16 (27 rows) and as long
  // as 2 groups carry at w = 24, where a chunk rounded up to whole column
  // runs once outgrew the threads' registers and left entries unloaded. GPU
  // teams take 4 x 4 or 4 x 8 items (GramItems;
  // host backends always 4 x 4).
  // Packed storage (LayoutLeft cases): every matrix column-major on its
  // own, as the W-cycle keeps them; delta = 201 leaves a partial column run
  // at the end of the first plate and an unaligned second plate. Residual
  // plates a team each (the scheduler's) and packed (at delta = 16, the
  // residuals of 5, 5 and 9 rows make one team of three segments).
  using kwsvd::Impl::GramItems;
  using kwsvd::Impl::ResidualPlates;
  for (Storage storage : {Storage::batch_view, Storage::packed})
    for (int w : {4, 8, 16, 24, 32, 48})
      for (int groups : {0, 3})
        for (int delta : {16, 26, 64, 201})
          for (GramItems items : {GramItems::narrow, GramItems::wide})
            for (ResidualPlates residuals : {ResidualPlates::own_team, ResidualPlates::packed}) {
              if (storage == Storage::packed && !TestFixture::tests_packed)
                continue;
              Level<T, L> level(w,
                                storage == Storage::packed ? this->packed_rows : this->mixed_rows,
                                100 + w, storage);
              auto work = kwsvd::Impl::make_tailored_gemm_work<Exec>(
                  level.task_rows(), {w, delta, 128}, groups, residuals);
              // GPU float Grams: the kernel with column runs on the packed
              // matrices (entries where a task or plate does not fit), the
              // plain one on the batch View.
              work.gram_column_runs = storage == Storage::packed;
              const int n2 = 2 * w;
              Kokkos::View<T*> partial("partial", kwsvd::Impl::tailored_gram_partial_size(work));
              Kokkos::View<T*> B("B", level.tasks.size() * n2 * n2);
              kwsvd::Impl::launch_pair_gram(Exec(), work, level.tasks_d.data(), nullptr,
                                            partial.data(), B.data(), items);
              auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), B);
              for (std::size_t t = 0; t < level.tasks.size(); ++t) {
                const int m = level.tasks[t].rows;
                const double tol = 2 * kwsvd::test::gamma<T>(m);
                for (int b = 0; b < n2; ++b)
                  for (int a = 0; a < n2; ++a) {
                    double ref = 0, mag = 0;
                    for (int r = 0; r < m; ++r) {
                      ref += level.x(t, r, a) * level.x(t, r, b);
                      mag += std::abs(level.x(t, r, a) * level.x(t, r, b));
                    }
                    const double got = h(t * n2 * n2 + a + std::size_t(n2) * b);
                    ASSERT_LE(std::abs(got - ref), tol * mag + 1e-300)
                        << "w " << w << " groups " << groups << " delta " << delta
                        << (items == GramItems::wide ? " wide" : " narrow")
                        << (storage == Storage::packed ? " packed" : "")
                        << (residuals == ResidualPlates::packed ? " residuals packed"
                                                                : " residuals own team")
                        << " task " << t << " entry (" << a << ", " << b << ")";
                  }
              }
              // Without the cross-plate launch, the Gram EVD summing the plates as
              // it loads them (the W-cycle's way) finds what it finds from B, to
              // the bit.
              if (kwsvd::gram_evd_fits<T, Exec>(n2)) {
                Kokkos::View<T*> B2("B2", B.size());
                const auto sums = kwsvd::Impl::launch_pair_gram_plates(
                    Exec(), work, level.tasks_d.data(), nullptr, partial.data(), B2.data(), items);
                const int tasks = int(level.tasks.size());
                EXPECT_EQ(evd_of_grams(B2, tasks, n2, &sums),
                          evd_of_grams<T>(B, tasks, n2, nullptr))
                    << "w " << w << " groups " << groups << " delta " << delta
                    << (items == GramItems::wide ? " wide" : " narrow")
                    << (residuals == ResidualPlates::packed ? " residuals packed"
                                                            : " residuals own team");
              }
            }
}

TYPED_TEST(TailoredGemm, GramIsTheSameRunToRun) {
  using T = typename TestFixture::TestScalar;
  using L = typename TestFixture::TestLayout;
  Level<T, L> level(16, this->mixed_rows, 7);
  auto work = kwsvd::Impl::make_tailored_gemm_work<Exec>(level.task_rows(), {16, 24, 256});
  Kokkos::View<T*> partial("partial", kwsvd::Impl::tailored_gram_partial_size(work));
  Kokkos::View<T*> B1("B1", level.tasks.size() * 32 * 32), B2("B2", B1.size());
  kwsvd::Impl::launch_pair_gram(Exec(), work, level.tasks_d.data(), nullptr, partial.data(),
                                B1.data());
  kwsvd::Impl::launch_pair_gram(Exec(), work, level.tasks_d.data(), nullptr, partial.data(),
                                B2.data());
  auto h1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), B1);
  auto h2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), B2);
  for (std::size_t e = 0; e < h1.size(); ++e)
    ASSERT_EQ(h1(e), h2(e)) << e;
}

TYPED_TEST(TailoredGemm, FusedUpdateMatchesReferenceForEveryWidth) {
  using T = typename TestFixture::TestScalar;
  using L = typename TestFixture::TestLayout;
  // Both widths of the update's items (4 x 4, and 4 x 8 in float with J in
  // scratch) on every backend, whichever the launch's size would pick.
  // delta = 12 and 16: segments of at most 16 rows read J from memory, and
  // on a GPU their items split the k loop (12: three row blocks, packed
  // residuals up to 14 rows; 16: four).
  using kwsvd::Impl::ResidualPlates;
  using kwsvd::Impl::UpdateItems;
  for (int w : {4, 8, 16, 24, 32, 48})
    for (int delta : {12, 16, 201})
      for (UpdateItems items : {UpdateItems::narrow, UpdateItems::wide})
        for (ResidualPlates residuals : {ResidualPlates::own_team, ResidualPlates::packed}) {
          Level<T, L> level(w, this->mixed_rows, 300 + w);
          const int n2 = 2 * w;
          // A different J per pair (any matrix: the kernel is a GEMM).
          std::vector<std::vector<double>> js;
          Kokkos::View<T*> J("J", level.tasks.size() * n2 * n2);
          auto jh = Kokkos::create_mirror_view(J);
          for (std::size_t t = 0; t < level.tasks.size(); ++t) {
            const auto r = kwsvd::test::random_matrix<T>(n2, n2, 900 + t);
            js.emplace_back(r.begin(), r.end());
            for (int e = 0; e < n2 * n2; ++e)
              jh(t * n2 * n2 + e) = r[std::size_t(e)];
          }
          Kokkos::deep_copy(J, jh);
          // Matrix 2 is masked (converged), and pair 1 does not rotate (J = I,
          // here a random J that must not be applied): both must come back
          // untouched.
          const auto mask = mask_of(level.rows.size(), 2);
          const auto rotates = mask_of(level.tasks.size(), 1, 0);
          auto work = kwsvd::Impl::make_tailored_gemm_work<Exec>(level.task_rows(), {w, delta, 128},
                                                                 0, residuals);
          kwsvd::Impl::launch_pair_update(Exec(), work, level.tasks_d.data(), mask.data(), J.data(),
                                          rotates.data(), items);
          auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), level.A);
          for (std::size_t t = 0; t < level.tasks.size(); ++t) {
            const auto& task = level.tasks[t];
            const bool masked = task.matrix == 2 || t == 1;
            for (int c = 0; c < n2; ++c) {
              const int col = task.column(c, w);
              if (col < 0)
                continue;
              for (int r = 0; r < task.rows; ++r) {
                double ref = 0, mag = 0;
                for (int k = 0; k < n2; ++k) {
                  ref += level.x(t, r, k) * js[t][k + std::size_t(n2) * c];
                  mag += std::abs(level.x(t, r, k) * js[t][k + std::size_t(n2) * c]);
                }
                if (masked)
                  ref = level.x(t, r, c), mag = 0;
                const double tol = 2 * kwsvd::test::gamma<T>(n2);
                ASSERT_LE(std::abs(double(h(task.matrix, r, col)) - ref), tol * mag)
                    << "w " << w << " delta " << delta << " task " << t << " row " << r << " col "
                    << col << (items == UpdateItems::wide ? " wide" : " narrow")
                    << (residuals == ResidualPlates::packed ? " residuals packed"
                                                            : " residuals own team")
                    << (masked ? " (masked or not rotating)" : "");
              }
            }
          }
        }
}

TYPED_TEST(TailoredGemm, MaskedGramLeavesItsOutputAlone) {
  using T = typename TestFixture::TestScalar;
  using L = typename TestFixture::TestLayout;
  Level<T, L> level(8, this->mixed_rows, 11);
  auto work = kwsvd::Impl::make_tailored_gemm_work<Exec>(level.task_rows(), {8, 32, 128});
  Kokkos::View<T*> partial("partial", kwsvd::Impl::tailored_gram_partial_size(work));
  Kokkos::View<T*> B("B", level.tasks.size() * 16 * 16);
  kwsvd::test::fill(B, T(-7));
  const auto mask = mask_of(level.rows.size(), 1);
  kwsvd::Impl::launch_pair_gram(Exec(), work, level.tasks_d.data(), mask.data(), partial.data(),
                                B.data());
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), B);
  for (std::size_t t = 0; t < level.tasks.size(); ++t) {
    const bool masked = level.tasks[t].matrix == 1;
    EXPECT_EQ(h(t * 256) == T(-7), masked) << "task " << t;  // B(0,0) = ||a_0||^2 > 0 otherwise
  }
}

TEST(TailoredGemmPlan, GramItemsCoverTheUpperTilesOnce) {
  // Every upper 4 x 4 tile of a (2w) x (2w) Gram belongs to exactly one item,
  // narrow or wide; a wide item's other tile is the one below the diagonal.
  using kwsvd::Impl::gemm_tile;
  for (int p = 0, k = 0; p < 200000; ++p) {  // the closed form against counting
    if ((k + 1) * (k + 2) / 2 <= p)
      ++k;
    ASSERT_EQ(kwsvd::Impl::triangular_root(p), k) << p;
  }
  for (int w : {4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 256}) {
    const int t = 2 * w / gemm_tile;
    std::vector<int> narrow(t * t, 0), wide(t * t, 0);
    for (int i = 0; i < kwsvd::Impl::gram_upper_items(w, gemm_tile); ++i) {
      int P, Q;
      kwsvd::Impl::gram_item_position<gemm_tile>(i, P, Q);
      ASSERT_TRUE(P >= 0 && P <= Q && Q < t) << "w " << w << " item " << i;
      ASSERT_EQ(kwsvd::Impl::gram_tile_index(P, Q), i) << "w " << w;  // where partials are stored
      ++narrow[P + t * Q];
    }
    for (int i = 0; i < kwsvd::Impl::gram_upper_items(w, 2 * gemm_tile); ++i) {
      int P, Q;
      kwsvd::Impl::gram_item_position<2 * gemm_tile>(i, P, Q);
      ASSERT_TRUE(P >= 0 && Q % 2 == 0 && Q + 1 < t && P <= Q + 1) << "w " << w << " item " << i;
      ++wide[P + t * Q];
      ++wide[P + t * (Q + 1)];
    }
    for (int Q = 0; Q < t; ++Q)
      for (int P = 0; P <= Q; ++P) {
        EXPECT_EQ(narrow[P + t * Q], 1) << "w " << w << " tile (" << P << ", " << Q << ")";
        EXPECT_EQ(wide[P + t * Q], 1) << "w " << w << " tile (" << P << ", " << Q << ")";
      }
  }
}

TEST(TailoredGemmPlan, ColumnRunsNeedAlignedColumnMajorTasks) {
  // The GPU Gram loads 16-byte column runs only from column-major matrices
  // whose columns start on 16-byte boundaries.
  alignas(16) static float storage[64 * 40 + 4];
  BlockPairTask<float> t;
  t.data = storage;
  t.row_stride = 1;
  t.col_stride = 64;
  t.rows = 64;
  t.col_i = 0;
  t.col_j = 16;
  t.width_i = t.width_j = 16;
  EXPECT_TRUE(kwsvd::Impl::gram_task_allows_column_runs(t));
  auto odd_ld = t;
  odd_ld.col_stride = odd_ld.rows = 62;
  EXPECT_FALSE(kwsvd::Impl::gram_task_allows_column_runs(odd_ld));
  auto shifted = t;
  shifted.data = storage + 1;
  EXPECT_FALSE(kwsvd::Impl::gram_task_allows_column_runs(shifted));
  auto row_major = t;
  row_major.row_stride = 40;
  row_major.col_stride = 1;
  EXPECT_FALSE(kwsvd::Impl::gram_task_allows_column_runs(row_major));
  // A segment must also start on a run and fit the team's prefetch
  // registers (8 floats a thread: 2 runs).
  kwsvd::Impl::PlateSegment seg;
  seg.rows = 64;
  EXPECT_TRUE(kwsvd::Impl::gram_column_runs_fit(t, seg, 16, 32, 256));
  EXPECT_FALSE(kwsvd::Impl::gram_column_runs_fit(t, seg, 16, 32, 127));
  seg.row_begin = 2;
  EXPECT_FALSE(kwsvd::Impl::gram_column_runs_fit(t, seg, 16, 32, 256));
  // A level takes the kernel with runs when at least half its rows allow
  // them (64 of 126 rows, yes; 64 of 188, no; none, no).
  using kwsvd::Impl::most_rows_allow_column_runs;
  EXPECT_TRUE(most_rows_allow_column_runs(std::vector<BlockPairTask<float>>{t, odd_ld}));
  EXPECT_FALSE(most_rows_allow_column_runs(std::vector<BlockPairTask<float>>{t, odd_ld, odd_ld}));
  EXPECT_FALSE(most_rows_allow_column_runs(std::vector<BlockPairTask<float>>{shifted}));
}

TEST(TailoredGemmPlan, PlatesCoverEveryRowOnceAndPackResiduals) {
  const std::vector<int> rows = {5, 37, 64, 130, 201, 0, 16};
  for (int delta : {1, 7, 16, 64, 300}) {
    const auto layout =
        kwsvd::Impl::build_plate_layout(rows, delta, kwsvd::Impl::ResidualPlates::packed);
    std::vector<std::vector<int>> seen(rows.size());
    for (std::size_t t = 0; t < rows.size(); ++t)
      seen[t].assign(std::size_t(rows[t]), 0);
    std::vector<int> slots(std::size_t(layout.partial_begin.back()), 0);
    for (std::size_t team = 0; team + 1 < layout.team_begin.size(); ++team) {
      int team_rows = 0, count = 0;
      for (int s = layout.team_begin[team]; s < layout.team_begin[team + 1]; ++s, ++count) {
        const auto& seg = layout.segments[std::size_t(s)];
        team_rows += seg.rows;
        for (int r = seg.row_begin; r < seg.row_begin + seg.rows; ++r)
          ++seen[std::size_t(seg.task)][std::size_t(r)];
        ASSERT_GE(seg.partial, layout.partial_begin[std::size_t(seg.task)]);
        ASSERT_LT(seg.partial, layout.partial_begin[std::size_t(seg.task) + 1]);
        ++slots[std::size_t(seg.partial)];
        if (seg.rows == delta) {
          ASSERT_EQ(seg.row_begin % delta, 0);
        }
      }
      ASSERT_GE(count, 1);
      // A standard plate alone (with its task's short residual), or residuals
      // packed up to 1.2 delta rows.
      ASSERT_TRUE(team_rows == delta || team_rows <= 1.2 * delta) << team_rows;
    }
    for (std::size_t t = 0; t < rows.size(); ++t)
      for (int c : seen[t])
        ASSERT_EQ(c, 1) << "delta " << delta << " task " << t;
    for (int c : slots)
      ASSERT_EQ(c, 1);
  }
}

// A residual of at most 0.2 delta rows joins its task's last standard plate
// (one plate of delta + rest rows, its own team) instead of being packed with
// other tasks' residuals, where 100 one-row residuals once made one team the
// launch's long pole; a longer residual is still packed.
TEST(TailoredGemmPlan, ShortResidualsJoinTheirLastPlate) {
  const auto short_rest = kwsvd::Impl::build_plate_layout(std::vector<int>(100, 999), 499,
                                                          kwsvd::Impl::ResidualPlates::packed);
  ASSERT_EQ(short_rest.team_begin.size(), 201u);  // two plates a task, one team each
  for (int t = 0; t < 100; ++t) {
    const auto& a = short_rest.segments[std::size_t(2 * t)];
    const auto& b = short_rest.segments[std::size_t(2 * t + 1)];
    EXPECT_EQ(a.task, t);
    EXPECT_EQ(b.task, t);
    EXPECT_EQ(a.row_begin, 0);
    EXPECT_EQ(a.rows, 499);
    EXPECT_EQ(b.row_begin, 499);
    EXPECT_EQ(b.rows, 500);
    EXPECT_EQ(
        short_rest.partial_begin[std::size_t(t) + 1] - short_rest.partial_begin[std::size_t(t)], 2);
  }
  // 1000 = 3 x 300 + 100: 100 > 60 rows stays a residual; residuals of 100
  // rows pack three to a team (300 <= 360).
  const auto long_rest = kwsvd::Impl::build_plate_layout(std::vector<int>(4, 1000), 300,
                                                         kwsvd::Impl::ResidualPlates::packed);
  ASSERT_EQ(long_rest.segments.size(), 16u);
  EXPECT_EQ(long_rest.team_begin.size(), 12u + 2u + 1u);
  for (std::size_t k = 12; k < 16; ++k)
    EXPECT_EQ(long_rest.segments[k].rows, 100);
  // A task shorter than delta is one residual plate whatever its size.
  const auto short_task =
      kwsvd::Impl::build_plate_layout({5, 7}, 64, kwsvd::Impl::ResidualPlates::packed);
  ASSERT_EQ(short_task.segments.size(), 2u);
  EXPECT_EQ(short_task.team_begin.size(), 2u);
}

// The scheduler's residual plates take a team each (ResidualPlates): three
// pairs of 100 rows at delta = 12 (double 100^2's m / 8) make 8 standard
// plates and a residual of 4 rows each, which the paper's packing puts in
// one team (12 <= 14.4 rows) and own_team in three; the standard plates and
// the joins are the same either way.
TEST(TailoredGemmPlan, ResidualPlatesTakeATeamEachOrPack) {
  using kwsvd::Impl::ResidualPlates;
  const std::vector<int> rows(3, 100);
  const auto packed = kwsvd::Impl::build_plate_layout(rows, 12, ResidualPlates::packed);
  const auto own = kwsvd::Impl::build_plate_layout(rows, 12, ResidualPlates::own_team);
  EXPECT_EQ(packed.team_begin.size(), 3u * 8u + 1u + 1u);
  ASSERT_EQ(own.team_begin.size(), 3u * 8u + 3u + 1u);
  EXPECT_EQ(own.partial_begin, packed.partial_begin);
  ASSERT_EQ(own.segments.size(), packed.segments.size());
  for (std::size_t team = 0; team + 1 < own.team_begin.size(); ++team)
    EXPECT_EQ(own.team_begin[team + 1] - own.team_begin[team], 1) << team;
  for (std::size_t k = 24; k < 27; ++k) {
    EXPECT_EQ(own.segments[k].rows, 4);
    EXPECT_EQ(own.segments[k].row_begin, 96);
    EXPECT_EQ(own.segments[k].task, int(k) - 24);
  }
  // A residual within 0.2 delta still joins its last plate (one team).
  const auto joined = kwsvd::Impl::build_plate_layout({999}, 499, ResidualPlates::own_team);
  ASSERT_EQ(joined.segments.size(), 2u);
  EXPECT_EQ(joined.segments[1].rows, 500);
  // The work the scheduler plans takes a team per residual.
  const auto work = kwsvd::Impl::make_tailored_gemm_work<Kokkos::DefaultExecutionSpace>(
      rows, kwsvd::TailoringPlan{16, 12, 256});
  EXPECT_EQ(work.teams, 27);
}

TEST(TailoredGemmPlan, AlignedPlateHeightsStartEveryPlateOnARun) {
  // float's row_align (4 rows, one 16-byte run) where the Gram moves runs;
  // double keeps the paper's heights.
  EXPECT_EQ(kwsvd::Impl::gemm_plate_row_align<float>(), 4);
  EXPECT_EQ(kwsvd::Impl::gemm_plate_row_align<double>(), 1);
  const auto plain = kwsvd::tailoring_candidates(999, 32);
  const auto aligned = kwsvd::tailoring_candidates(999, 32, 4);
  const std::vector<int> plain_deltas = {999, 999, 499, 499, 249, 124, 249, 124};
  const std::vector<int> aligned_deltas = {999, 999, 496, 496, 248, 124, 248, 124};
  ASSERT_EQ(plain.size(), plain_deltas.size());
  ASSERT_EQ(aligned.size(), aligned_deltas.size());
  for (std::size_t k = 0; k < plain.size(); ++k) {
    EXPECT_EQ(plain[k].delta, plain_deltas[k]) << k;
    EXPECT_EQ(aligned[k].delta, aligned_deltas[k]) << k;
    EXPECT_EQ(aligned[k].w, plain[k].w) << k;
  }
  // Heights that are already multiples, and the 8-row floor, stay.
  const auto table3 = kwsvd::tailoring_candidates(256, 48, 4);
  const auto table3_plain = kwsvd::tailoring_candidates(256, 48);
  ASSERT_EQ(table3.size(), table3_plain.size());
  for (std::size_t k = 0; k < table3.size(); ++k)
    EXPECT_EQ(table3[k].delta, table3_plain[k].delta) << k;
  EXPECT_EQ(kwsvd::tailoring_candidates(20, 16, 4).back().delta, 8);
  EXPECT_THROW(kwsvd::tailoring_candidates(256, 48, 0), kwsvd::invalid_argument);
  // Every plate of a mixed batch starts on a multiple of 4 under a height of
  // 496 (999 rows: two plates, the 7 rows left over join the second), and
  // the team count is that of 499.
  const std::vector<int> rows = {999, 1001, 998, 500, 13, 7, 1000};
  const auto layout =
      kwsvd::Impl::build_plate_layout(rows, 496, kwsvd::Impl::ResidualPlates::packed);
  for (const auto& seg : layout.segments)
    EXPECT_EQ(seg.row_begin % 4, 0) << seg.task;
  EXPECT_EQ(layout.team_begin.size(),
            kwsvd::Impl::build_plate_layout(rows, 499, kwsvd::Impl::ResidualPlates::packed)
                .team_begin.size());
  EXPECT_EQ(layout.segments[1].row_begin, 496);
  EXPECT_EQ(layout.segments[1].rows, 503);
}

TEST(TailoredGemmPlan, CandidatesFollowTableTwoAndTheEnginePicksByThreshold) {
  // The paper's example (Table III): m* = 256, w up to 48.
  const auto c = kwsvd::tailoring_candidates(256, 48);
  const std::vector<std::array<int, 3>> table3 = {{48, 256, 256}, {24, 256, 256}, {24, 128, 256},
                                                  {16, 128, 256}, {16, 64, 256},  {16, 32, 256},
                                                  {8, 64, 128},   {8, 32, 128}};
  ASSERT_EQ(c.size(), table3.size());
  for (std::size_t k = 0; k < c.size(); ++k) {
    EXPECT_EQ(c[k].w, table3[k][0]) << k;
    EXPECT_EQ(c[k].delta, table3[k][1]) << k;
    EXPECT_EQ(c[k].team_threads, table3[k][2]) << k;
  }
  // 100 matrices of 256 x 256: f1 of the first plan is 68,267 and the
  // paper's V100 threshold (306,149) selects the fourth (f1 = 409,600).
  const std::vector<kwsvd::MatrixShape> shapes(100, {256, 256});
  EXPECT_NEAR(kwsvd::tailoring_tlp(c[0], shapes), 68267, 1);
  const auto pick = kwsvd::choose_tailoring_plan(c, shapes, 306149);
  EXPECT_EQ(pick.w, 16);
  EXPECT_EQ(pick.delta, 128);
  EXPECT_NEAR(kwsvd::tailoring_tlp(pick, shapes), 409600, 1);
  // The Gram's AI never rises along the list; TLP rises within each team
  // size (eq. 10 puts the T = 128 plans below the last T = 256 one).
  for (std::size_t k = 1; k < c.size(); ++k) {
    EXPECT_LE(kwsvd::tailoring_ai_gram(c[k], 2), kwsvd::tailoring_ai_gram(c[k - 1], 2));
    if (c[k].team_threads == c[k - 1].team_threads) {
      EXPECT_GE(kwsvd::tailoring_tlp(c[k], shapes), kwsvd::tailoring_tlp(c[k - 1], shapes));
    }
  }
  // Nothing reaches a huge threshold: the most parallel plan. A narrow
  // device limit drops the wide blocks.
  EXPECT_EQ(kwsvd::choose_tailoring_plan(c, shapes, 1e18).w, 8);
  // The W-cycle's engine agrees wherever a plan reaches the threshold, and
  // below it takes the most parallel plan of w >= 16 (w = 8 only when no
  // other is left).
  EXPECT_EQ(kwsvd::choose_wcycle_plan(c, shapes, 306149).delta, 128);
  EXPECT_EQ(kwsvd::choose_wcycle_plan(c, shapes, 306149).w, 16);
  const auto fallback = kwsvd::choose_wcycle_plan(c, shapes, 1e18);
  EXPECT_EQ(fallback.w, 16);
  EXPECT_EQ(fallback.delta, 32);
  const std::vector<kwsvd::TailoringPlan> narrow(c.end() - 2, c.end());
  EXPECT_EQ(kwsvd::choose_wcycle_plan(narrow, shapes, 1e18).delta, 32);
  EXPECT_EQ(kwsvd::choose_wcycle_plan(narrow, shapes, 1e18).w, 8);
  // A batch of few blocks takes the widest plan once its TLP is near the
  // threshold (the H200's float: 100 matrices of 128^2, 4 blocks of 32,
  // TLP 51,200 against 92,682), not with many blocks (10 of 1024^2: 32
  // blocks of 32, the engine's w = 24 with plates of 512 rows).
  const auto c128 = kwsvd::tailoring_candidates(128, 32);
  const std::vector<kwsvd::MatrixShape> hundred(100, {128, 128});
  EXPECT_EQ(kwsvd::choose_tailoring_plan(c128, hundred, 92682).w, 24);
  EXPECT_EQ(kwsvd::choose_wcycle_plan(c128, hundred, 92682).w, 32);
  EXPECT_EQ(kwsvd::choose_wcycle_plan(c128, hundred, 92682).delta, 128);
  EXPECT_EQ(kwsvd::choose_wcycle_plan(c128, hundred, 200000).w, 16);  // TLP too far below
  // Below the threshold with few blocks, the fewest even count of blocks
  // the widest candidate allows where the caller allows it (4 blocks of 32
  // at 128 columns, 10 matrices), not with more blocks (8 of 32 at 256
  // columns) nor where the caller does not (0); the most parallel plan of
  // w >= 16 otherwise. Both precisions allow 4.
  EXPECT_EQ(kwsvd::wcycle_fallback_widest_max_blocks(4), 4);
  EXPECT_EQ(kwsvd::wcycle_fallback_widest_max_blocks(8), 4);
  const std::vector<kwsvd::MatrixShape> ten128(10, {128, 128}), ten256(10, {256, 256});
  EXPECT_EQ(kwsvd::choose_wcycle_plan(c128, ten128, 1e18, 4).w, 32);
  EXPECT_EQ(kwsvd::choose_wcycle_plan(c128, ten128, 1e18, 4).delta, 128);
  EXPECT_EQ(kwsvd::choose_wcycle_plan(c128, ten128, 1e18, 0).w, 16);
  EXPECT_EQ(kwsvd::choose_wcycle_plan(c128, ten128, 1e18).w, 16);
  const auto c256 = kwsvd::tailoring_candidates(256, 32);
  EXPECT_EQ(kwsvd::choose_wcycle_plan(c256, ten256, 1e18, 4).w, 16);
  // An odd count becomes the next even one, each block as narrow as that
  // allows, with the widest candidate's plates (one a pair): 72, 80 and 96
  // columns make 3 blocks at w = 32 and take 4 of 18, 20 and 24; at double's
  // widest, w = 24, 72 to 96 columns make 3 or 4 and take 4; 100 columns make
  // 5 at 24, 6 is too many: w = 16. Nor for tall matrices (rows from
  // wcycle_fallback_widest_max_aspect x columns: 256 x 128, 4 blocks, is
  // tall; 255 x 128 is not).
  for (const auto& [n, w] : {std::pair{96, 24}, std::pair{80, 20}, std::pair{72, 18}}) {
    const std::vector<kwsvd::MatrixShape> square(10, {n, n});
    for (const int widest : {32, 24}) {
      const auto plan =
          kwsvd::choose_wcycle_plan(kwsvd::tailoring_candidates(n, widest), square, 1e18, 4);
      EXPECT_EQ(plan.w, w) << n << ", " << widest;
      EXPECT_EQ(plan.delta, n) << n << ", " << widest;
    }
    EXPECT_EQ(kwsvd::choose_wcycle_plan(kwsvd::tailoring_candidates(n, 32), square, 1e18, 0).w, 16);
  }
  const std::vector<kwsvd::MatrixShape> ten100(10, {100, 100});
  EXPECT_EQ(kwsvd::choose_wcycle_plan(kwsvd::tailoring_candidates(100, 24), ten100, 1e18, 4).w, 16);
  EXPECT_EQ(kwsvd::choose_wcycle_plan(kwsvd::tailoring_candidates(100, 32), ten100, 1e18, 4).w, 26);
  // No columns: no blocks to count.
  EXPECT_EQ(kwsvd::choose_wcycle_plan(c128, {{0, 0}}, 1e18, 4).w, 16);
  constexpr int tall = kwsvd::wcycle_fallback_widest_max_aspect * 128;
  const std::vector<kwsvd::MatrixShape> ten_tall(10, {tall, 128}), ten_below(10, {tall - 1, 128});
  EXPECT_EQ(kwsvd::choose_wcycle_plan(kwsvd::tailoring_candidates(tall, 32), ten_tall, 1e18, 4).w,
            16);
  EXPECT_EQ(
      kwsvd::choose_wcycle_plan(kwsvd::tailoring_candidates(tall - 1, 32), ten_below, 1e18, 4).w,
      32);
  const std::vector<kwsvd::MatrixShape> ten(10, {1024, 1024});
  const auto c1024 = kwsvd::tailoring_candidates(1024, 32);
  EXPECT_EQ(kwsvd::choose_wcycle_plan(c1024, ten, 92682).w, 24);
  EXPECT_EQ(kwsvd::choose_wcycle_plan(c1024, ten, 92682).delta, 512);
  EXPECT_EQ(kwsvd::tailoring_candidates(256, 24).front().w, 24);
  EXPECT_EQ(kwsvd::tailoring_candidates(256, 32).front().w, 32);
  EXPECT_TRUE(kwsvd::tailoring_candidates(256, 4).empty());
  EXPECT_THROW(kwsvd::choose_tailoring_plan({}, shapes, 1), kwsvd::invalid_argument);
}

TEST(TailoredGemmPlan, TuningFileRoundTripsAndBadFilesAreNamed) {
  const std::string path = ::testing::TempDir() + "kwsvd_tuning_test.txt";
  kwsvd::TuningParameters p{123456, "Test GPU", ""};
  kwsvd::write_tuning_file(path, p, "written by a unit test\nsecond line");
  const auto q = kwsvd::read_tuning_file(path);
  EXPECT_EQ(q.tlp_threshold, 123456);
  EXPECT_EQ(q.device, "Test GPU");
  EXPECT_EQ(q.source, path);
  {
    std::ofstream bad(path);
    bad << "device = x\ntlp_threshold = -3\n";
  }
  try {
    kwsvd::read_tuning_file(path);
    ADD_FAILURE() << "no exception";
  } catch (const kwsvd::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  {
    std::ofstream bad(path);
    bad << "device = x\n";
  }
  EXPECT_THROW(kwsvd::read_tuning_file(path), kwsvd::invalid_argument);
  EXPECT_THROW(kwsvd::read_tuning_file(path + ".missing"), kwsvd::invalid_argument);
  // strtod reads these; none is a threshold a plan can reach.
  for (const char* value : {"inf", "-inf", "nan", "1e999", "0", "12abc"}) {
    {
      std::ofstream bad(path);
      bad << "tlp_threshold = " << value << "\n";
    }
    try {
      kwsvd::read_tuning_file(path);
      ADD_FAILURE() << value << " accepted";
    } catch (const kwsvd::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("positive finite number, got '" + std::string(value)),
                std::string::npos)
          << e.what();
    }
  }
  // Every digit survives the round trip (six significant digits would read
  // 1234567.890625 back as 1234570).
  kwsvd::write_tuning_file(path, {1234567.890625, "Test GPU", ""}, "");
  EXPECT_EQ(kwsvd::read_tuning_file(path).tlp_threshold, 1234567.890625);
  // What the file could not hold is refused before it is written.
  const auto refused = [&](const kwsvd::TuningParameters& bad, const std::string& argument) {
    {
      std::ofstream keep(path);
      keep << "tlp_threshold = 7\n";
    }
    try {
      kwsvd::write_tuning_file(path, bad, "");
      ADD_FAILURE() << argument << " accepted";
    } catch (const kwsvd::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(argument), std::string::npos) << e.what();
    }
    EXPECT_EQ(kwsvd::read_tuning_file(path).tlp_threshold, 7) << "the old file was overwritten";
  };
  refused({0, "Test GPU", ""}, "parameters.tlp_threshold");
  refused({std::numeric_limits<double>::infinity(), "Test GPU", ""}, "parameters.tlp_threshold");
  refused({std::nan(""), "Test GPU", ""}, "parameters.tlp_threshold");
  refused({5, "GPU #1", ""}, "parameters.device");
  refused({5, "GPU\n1", ""}, "parameters.device");
  std::remove(path.c_str());
  EXPECT_GT(kwsvd::default_tuning_parameters(true).tlp_threshold, 1);
  EXPECT_EQ(kwsvd::default_tuning_parameters(false).tlp_threshold, 1);
}

// The GPU Gram's row groups: T's count, capped for the narrowest pairs and
// for short plates, never above what T gives; host backends run one group.
TEST(TailoredGemmPlan, GramGroupsFollowTheirCapsBelowThePlansThreads) {
  using kwsvd::Impl::gram_upper_items;
  const auto groups = [](auto scalar, int w, int team_threads, int plate_rows) {
    using T = decltype(scalar);
    return kwsvd::Impl::tailored_gram_groups<Exec, T>(w, team_threads, plate_rows);
  };
  if (!kwsvd::Impl::runs_off_host<Exec>()) {
    EXPECT_EQ(groups(0.0, 16, 256, 128), 1);
    EXPECT_EQ(groups(0.0f, 8, 256, 4096), 1);
    return;
  }
  const int tiles16 = gram_upper_items(16, kwsvd::Impl::gemm_tile);  // 36
  // Long plates: T's count (double rounds down, float to nearest).
  EXPECT_EQ(groups(0.0, 16, 256, 2048), 256 / tiles16);
  EXPECT_EQ(groups(0.0f, 16, 256, 2048), (256 + tiles16 / 2) / tiles16);
  // Short plates, and the narrowest pairs at any length.
  EXPECT_EQ(groups(0.0, 16, 256, kwsvd::Impl::gram_short_plate_rows),
            kwsvd::Impl::gram_short_plate_groups<double>());
  EXPECT_EQ(groups(0.0f, 16, 256, 128), kwsvd::Impl::gram_short_plate_groups<float>());
  EXPECT_EQ(groups(0.0, 8, 256, 4096), kwsvd::Impl::gram_narrowest_groups<double>());
  EXPECT_EQ(groups(0.0f, 8, 256, 64), kwsvd::Impl::gram_narrowest_groups<float>());
  // A small T keeps its smaller count.
  EXPECT_EQ(groups(0.0, 16, 72, 128), 2);
  EXPECT_EQ(groups(0.0f, 8, 30, 4096), 3);
}

// A GPU Gram chunk never holds more entries than its threads' prefetch
// registers carry (GramChunkPrefetch loads nothing past them), with or
// without column runs, for every width, group count and segment length.
TEST(TailoredGemmPlan, GramChunksFitTheThreadsPrefetchRegisters) {
  const auto check = [](auto scalar) {
    using T = decltype(scalar);
    for (int item_cols : {kwsvd::Impl::gemm_tile, 2 * kwsvd::Impl::gemm_tile})
      for (int w : {4, 8, 16, 24, 32, 48})
        for (int groups = 1; groups <= 26; ++groups)
          for (int max_rows = 1; max_rows <= 300; ++max_rows)
            for (bool runs : {false, true}) {
              if ((2 * w) % item_cols != 0)
                continue;
              const auto s =
                  kwsvd::Impl::pipelined_gram_shape<Exec, T>(w, groups, max_rows, item_cols, runs);
              ASSERT_EQ(s.threads, s.groups * kwsvd::Impl::gram_upper_items(w, item_cols));
              ASSERT_LE(s.chunk_rows * 2 * w,
                        kwsvd::Impl::gram_prefetch_entries<T>(item_cols) * s.threads)
                  << "w " << w << " groups " << groups << " rows " << max_rows
                  << (runs ? " runs" : "") << " item columns " << item_cols;
              // At most the longest segment, rounded up to whole runs for runs.
              constexpr int per = kwsvd::Impl::scalars_per_16_bytes<T>();
              ASSERT_LE(s.chunk_rows, runs ? (max_rows + per - 1) / per * per : max_rows);
            }
  };
  check(0.0);
  check(0.0f);
}

}  // namespace
