#pragma once
// The QR preprocessing of a uniform batch of non-square matrices
// (SvdOptions::qr; seed 002 §9.2): its buffers and its two launches around
// the SVD of the triangular factors, which BatchedSvd runs in between.
//
//   factor: a team per matrix loads its working matrix W (A, or A^T when m
//     < n; M x N, M > N) scaled by a power of two, as the W-cycle does, takes
//     its Householder QR W = Q [R; 0] in place and writes X = R^T (N x N).
//     Past qr_panel_cols columns the QR is blocked (LAPACK dgeqrf's
//     scheme): a team per matrix factors a panel of qr_panel_cols columns,
//     then a team per matrix and tile of the columns right of it applies the
//     panel's Q^T to them in the compact WY form, a GEMM over many teams,
//     and so on panel by panel.
//   (BatchedSvd: the SVD X = U_X S V_X^T of every factor.)
//   finish: the long side (U of a tall matrix, V of a wide one) Q [V_X; 0],
//     a team per matrix and tile of columns (blocked: the panels' Q applied
//     last panel first), and S unscaled.
//
// A working matrix of one panel and many rows (uses_qr_tree; up to
// qr_tree_max_cols columns where its factor is solved at level 0) is factored
// as a tree instead (TSQR; Demmel, Grigori, Hoemmen and Langou): its rows
// are cut into leaves of qr_tree_leaf_rows to twice that, a team per leaf
// factors its own, their N x N factors are stacked and cut again, level by
// level, until one leaf is left, whose factor is R. One team walking all
// M rows a reflector at a time kept a few matrices waiting on a few SMs
// (H200, double 4000 x 32 x 1: 2.27 ms with the QR against 1.12 without;
// 0.94 as a tree). The finish then applies the levels' Q top down, each
// leaf's Q to its slice of the level above's product.
//
// Jacobi runs on R^T rather than R: R^T R = W^T W, so sweeping R would
// rotate exactly as sweeping W does, while R R^T is one step of the QR
// iteration nearer diagonal (Drmac and Veselic, seed 002 ref. [38]), which
// the sweeps' count shows. W = Q R = Q V_X S U_X^T gives W's left vectors Q
// [V_X; 0] and its right vectors U_X.

#include <algorithm>
#include <cstddef>

#include "kwsvd/impl/kokkos_compat.hpp"
#include "kwsvd/impl/matrix_slot.hpp"
#include "kwsvd/impl/workspace.hpp"
#include "kwsvd/kernels/householder_qr_team.hpp"
#include "kwsvd/kernels/one_sided_jacobi_team.hpp"
#include "kwsvd/kernels/orthonormal_completion_team.hpp"
#include "kwsvd/tuning/qr_preprocessing.hpp"

namespace kwsvd::Impl {

/// Columns of the long side per team of the finish (a row's sums in
/// registers).
constexpr int qr_finish_tile_cols = 8;
/// Most threads of a factor team (vector lanes over rows, threads over the
/// trailing columns of a reflector).
constexpr int qr_factor_threads_max = 16;
/// Most levels of a QR tree: a level's rows are at most 1/8 of the level's
/// below (leaves of qr_tree_leaf_rows = 512 rows or more, N <=
/// qr_tree_max_cols = 64 rows a leaf above), so 8 levels reach past 2^30
/// rows.
constexpr int qr_tree_levels_max = 8;
static_assert(qr_tree_leaf_rows >= 8 * qr_tree_max_cols,
              "a level's rows at most 1/8 of the level's below");

/// The levels of a QR tree (uses_qr_tree), planned on the host and passed
/// to the kernels by value. Level 0 is the working matrix (K); level l > 0
/// stacks level l - 1's leaf factors, rows = its leaves x N; the last has
/// one leaf. Offsets and sizes are a matrix's share of each buffer.
struct QrTree {
  struct Level {
    int rows = 0, leaves = 0;
    std::size_t data = 0;  // this level's rows x N, column-major (l > 0)
    std::size_t tau = 0;   // per leaf: tau, then R's diagonal (2 N)
    std::size_t wy = 0;    // per leaf: the compact WY form's N x N (long side)
    std::size_t out = 0;   // its rows x r of the long side's product (l > 0)
  };
  int levels = 0;
  Level level[qr_tree_levels_max];
  std::size_t data = 0, tau = 0, wy = 0, out = 0;

  /// The tree of an M x N working matrix with r columns of the long side.
  static QrTree plan(int M, int N, int r) {
    QrTree tree;
    for (int rows = M;;) {
      if (tree.levels == qr_tree_levels_max)
        Kokkos::abort("kwsvd: a QR tree past qr_tree_levels_max levels");
      Level& l = tree.level[tree.levels];
      l.rows = rows;
      l.leaves = rows >= 2 * qr_tree_leaf_rows ? rows / qr_tree_leaf_rows : 1;
      l.data = tree.data;
      l.tau = tree.tau;
      l.wy = tree.wy;
      l.out = tree.out;
      if (tree.levels > 0) {
        tree.data += std::size_t(rows) * std::size_t(N);
        tree.out += std::size_t(rows) * std::size_t(r);
      }
      tree.tau += std::size_t(l.leaves) * 2 * std::size_t(N);
      tree.wy += std::size_t(l.leaves) * std::size_t(N) * std::size_t(N);
      ++tree.levels;
      if (l.leaves == 1)
        return tree;
      rows = l.leaves * N;
    }
  }

  /// Leaf i of `leaves` over `rows` rows: its first row and its count
  /// (the rows shared out evenly, so that each has at least the leaf rows).
  KOKKOS_INLINE_FUNCTION static void leaf(int rows, int leaves, int i, int& start, int& count) {
    const int base = rows / leaves, extra = rows % leaves;
    start = i * base + (i < extra ? i : extra);
    count = base + (i < extra ? 1 : 0);
  }
};

template <class ExecSpace, class Scalar>
class QrPreprocessor {
 public:
  using memory_space = typename ExecSpace::memory_space;
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  /// The factors X = R^T, (batch, N, N).
  using Factors = Kokkos::View<Scalar***, Kokkos::LayoutRight, memory_space, Unmanaged>;
  /// V_X, the inner SVD's right vectors, (batch, N, r), column-major blocks.
  using Blocks = Kokkos::View<Scalar***, Kokkos::LayoutStride, memory_space, Unmanaged>;

  QrPreprocessor() = default;

  /// For `batch` matrices of m x n (m != n, both >= 2); `long_side`: the
  /// call's job computes W's left vectors (U of a tall matrix, V of a wide
  /// one), r of them (SvdOptions::rank), and all max(m, n) where `full`
  /// (SvdOptions::full_matrices: the columns past min(m, n) are Q e_j);
  /// `factor_crosses_level0` as uses_qr_tree takes it.
  QrPreprocessor(long batch, int m, int n, int r, bool long_side, bool full,
                 bool factor_crosses_level0, WorkspaceAllocator<memory_space>& alloc)
      : batch_(batch),
        M_(m > n ? m : n),
        N_(m > n ? n : m),
        r_(r),
        transposed_(m < n),
        long_side_(long_side),
        full_(full) {
    const std::size_t b = std::size_t(batch), N = std::size_t(N_);
    K_ = alloc.template zeros<Scalar>("kwsvd::qr_reflectors", b * ldk() * N);
    scale_ = alloc.template zeros<Scalar>("kwsvd::qr_scale", b);
    X_ = alloc.template zeros<Scalar>("kwsvd::qr_factor", b * N * N);
    if (uses_qr_tree<Scalar>(batch, M_, N_, full, factor_crosses_level0)) {
      tree_ = QrTree::plan(M_, N_, r);
      leaf_max_ = alloc.template zeros<Scalar>("kwsvd::qr_leaf_max",
                                               b * std::size_t(tree_.level[0].leaves));
      finite_ = alloc.template zeros<int>("kwsvd::qr_finite", b);
      tree_data_ = alloc.template zeros<Scalar>("kwsvd::qr_tree_levels", b * tree_.data);
      tree_tau_ = alloc.template zeros<Scalar>("kwsvd::qr_tree_tau", b * tree_.tau);
      if (long_side) {
        tree_wy_ = alloc.template zeros<Scalar>("kwsvd::qr_tree_wy", b * tree_.wy);
        tree_out_ = alloc.template zeros<Scalar>("kwsvd::qr_tree_products", b * tree_.out);
        Y_ = alloc.template zeros<Scalar>("kwsvd::qr_right_vectors", b * N * std::size_t(r));
      }
      return;
    }
    tau_ = alloc.template zeros<Scalar>("kwsvd::qr_tau", b * 2 * N);  // tau, then R's diagonal
    // The panels' T (panel p's at p pw^2, its leading dimension its width):
    // for the trailing updates of a blocked QR, and for the long side.
    const std::size_t pw = std::size_t(panel_cols());
    if (long_side || panels() > 1)
      wy_ = alloc.template zeros<Scalar>("kwsvd::qr_wy", b * std::size_t(panels()) * pw * pw);
    if (panels() > 1)  // which matrices the panels after the first factor
      finite_ = alloc.template zeros<int>("kwsvd::qr_finite", b);
    chunk_ = panels() > 1 ? reflector_chunk_rows() : 0;  // planned once, not per call
    if (long_side) {
      Y_ = alloc.template zeros<Scalar>("kwsvd::qr_right_vectors", b * N * std::size_t(r));
      if (panels() == 1)  // a blocked QR's finish keeps its tiles in team scratch
        zw_ = alloc.template zeros<Scalar>(
            "kwsvd::qr_tiles",
            b * std::size_t(tiles() + full_tiles()) * 2 * N * qr_finish_tile_cols);
    }
  }

  /// X = R^T of every matrix, for the inner SVD.
  Factors factors() const { return Factors(X_.data(), batch_, N_, N_); }
  /// Where the inner SVD writes its right vectors V_X (an empty View when
  /// the job does not need W's left vectors).
  Blocks right_vectors() const {
    if (!long_side_)
      return Blocks();
    const std::size_t N = std::size_t(N_), r = std::size_t(r_);
    return Blocks(Y_.data(), Kokkos::LayoutStride(std::size_t(batch_), N * r, N, 1, r, N));
  }

  /// Loads, scales and factors every matrix b of slots(b).a; writes its
  /// factor (NaN for a matrix with NaN or Inf, which the inner SVD then
  /// reports) and, for the long side, the compact WY form of its Q.
  template <class Slots>
  void factor(const ExecSpace& exec, const Slots& slots) const {
    if (tree_.levels > 0) {
      factor_tree(exec, slots);
      return;
    }
    using Policy = Kokkos::TeamPolicy<ExecSpace>;
    // The factor teams (at most qr_factor_threads_max x 32 lanes) with two
    // to an SM: at most 64 registers a thread on a GPU, which the float
    // factor overran (70) once the blocked QR's code joined it, halving its
    // occupancy (float 1000 x 16 x 1000: 0.97 -> 1.44 ms on the H200).
    using FactorPolicy =
        Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<qr_factor_threads_max * 32, 2>>;
    using Member = typename Policy::member_type;
    const int M = M_, N = N_, P = panels(), pw = panel_cols();
    const bool transposed = transposed_, long_side = long_side_;
    const std::size_t ldk = this->ldk();
    Scalar* K = K_.data();
    Scalar* tau = tau_.data();
    Scalar* scale = scale_.data();
    Scalar* X = X_.data();
    Scalar* wy = wy_.data();
    int* finite_flags = finite_.data();
    const std::size_t panel_wy = std::size_t(pw) * std::size_t(pw);
    // The first panel (every column when P = 1) on the load's team.
    const auto body = KOKKOS_LAMBDA(const Member& member) {
      const int b = member.league_rank();
      const StridedMatrix<const Scalar> a = slots(b).a;
      Scalar* Kb = K + std::size_t(b) * ldk * std::size_t(N);
      Scalar* xb = X + std::size_t(b) * std::size_t(N) * std::size_t(N);
      Scalar* tb = tau + std::size_t(b) * 2 * std::size_t(N);
      const Scalar amax = copy_with_max_magnitude(
          member, M, N, [&](const int r, const int c) { return transposed ? a(c, r) : a(r, c); },
          Kb, ldk);
      const bool finite = amax < scalar_limits<Scalar>::infinity();
      if (P > 1)
        Kokkos::single(Kokkos::PerTeam(member), [&]() { finite_flags[b] = finite ? 1 : 0; });
      if (!finite) {  // no factor: NaN in X is what the inner SVD reports
        poison_values(member, xb, N * N, 1);
        Kokkos::single(Kokkos::PerTeam(member), [&]() { scale[b] = Scalar(1); });
        return;
      }
      // Scaled by a power of two (exact), as the W-cycle's load: no column
      // norm can overflow, and the values are unscaled by the finish.
      const Scalar s = power_of_two_scale(amax);
      member.team_barrier();
      scale_columns(member, Kb, ldk, M, N, s);
      Kokkos::single(Kokkos::PerTeam(member), [&]() { scale[b] = s; });
      member.team_barrier();
      Scalar* beta = tb + N;  // R's diagonal
      const int width = P == 1 ? N : pw;
      householder_qr_steps(member, Kb, ldk, M, width, tb, beta);
      if (P == 1)
        write_factor(member, Kb, ldk, beta, N, xb, std::size_t(N));
      if (long_side || P > 1) {
        member.team_barrier();
        compact_wy_factor(member, Kb, ldk, M, width, tb, wy + std::size_t(b) * P * panel_wy);
      }
    };
    const int lanes = std::min(32, vector_length_max<ExecSpace>());
    const int threads = std::max(
        1, std::min(qr_factor_threads_max, FactorPolicy(exec, int(batch_), 1, lanes)
                                               .team_size_max(body, Kokkos::ParallelForTag())));
    Kokkos::parallel_for("kwsvd::qr_factor", FactorPolicy(exec, int(batch_), threads, lanes), body);
    // The blocked QR's further panels: panel p - 1's Q^T on the columns
    // right of it, a team per matrix and tile of them, then panel p factored
    // on a team per matrix; the last one writes X.
    constexpr int tile = qr_finish_tile_cols;
    using Scratch = TeamScratch<ExecSpace, Scalar>;
    const int chunk = chunk_;
    const std::size_t zw_count = block_reflector_scratch(pw, tile, chunk);
    for (int p = 1; p < P; ++p) {
      const int j0 = p * pw, width = std::min(pw, N - j0), prev = j0 - pw;
      const int trailing = (N - j0 + tile - 1) / tile;
      Kokkos::parallel_for(
          "kwsvd::qr_trailing_update",
          Policy(exec, int(batch_) * trailing, Kokkos::AUTO, lanes)
              .set_scratch_size(0, Kokkos::PerTeam(int(Scratch::shmem_size(zw_count)))),
          KOKKOS_LAMBDA(const Member& member) {
            const int b = member.league_rank() / trailing, q = member.league_rank() % trailing;
            if (finite_flags[b] == 0)
              return;
            Scalar* Kb = K + std::size_t(b) * ldk * std::size_t(N);
            const StridedMatrix<Scalar> k_matrix{Kb, M, N, 1, std::ptrdiff_t(ldk)};
            Scratch zw(member.team_scratch(0), zw_count);
            const int c0 = j0 + q * tile, nc = N - c0 < tile ? N - c0 : tile;
            apply_block_reflector<tile>(member, M, prev, pw, Kb, ldk,
                                        wy + std::size_t(b) * P * panel_wy + (p - 1) * panel_wy,
                                        true, k_matrix, c0, nc, chunk, zw.data());
          });
      const bool last = p == P - 1;
      const bool keep_wy = long_side || !last;
      const auto panel = KOKKOS_LAMBDA(const Member& member) {
        const int b = member.league_rank();
        if (finite_flags[b] == 0)
          return;
        Scalar* Kb = K + std::size_t(b) * ldk * std::size_t(N);
        Scalar* tb = tau + std::size_t(b) * 2 * std::size_t(N);
        Scalar* kp = Kb + std::size_t(j0) + ldk * std::size_t(j0);
        householder_qr_steps(member, kp, ldk, M - j0, width, tb + j0, tb + N + j0);
        if (last)
          write_factor(member, Kb, ldk, tb + N, N,
                       X + std::size_t(b) * std::size_t(N) * std::size_t(N), std::size_t(N));
        if (keep_wy) {
          member.team_barrier();
          compact_wy_factor(member, kp, ldk, M - j0, width, tb + j0,
                            wy + std::size_t(b) * P * panel_wy + p * panel_wy);
        }
      };
      Kokkos::parallel_for("kwsvd::qr_panel", FactorPolicy(exec, int(batch_), threads, lanes),
                           panel);
    }
  }

  /// R, column-major with leading dimension ldx: X[j + ldx i] = R(j, i); R
  /// above its diagonal is K's, its diagonal `beta`, below it zero. With ldx
  /// = N that is X = R^T row-major (a LayoutRight View), the factor; a QR
  /// tree's leaf writes its R into the level above's stack this way.
  template <class Member>
  KOKKOS_INLINE_FUNCTION static void write_factor(const Member& member, const Scalar* Kb,
                                                  std::size_t ldk, const Scalar* beta, int N,
                                                  Scalar* xb, std::size_t ldx) {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, N), [&](const int i) {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, N), [&](const int j) {
        xb[std::size_t(j) + ldx * std::size_t(i)] = j < i
                                                        ? Kb[std::size_t(j) + ldk * std::size_t(i)]
                                                    : j == i ? beta[i]
                                                             : Scalar(0);
      });
    });
  }

  /// The rows x cols block at K (column-major, leading dimension ldk)
  /// multiplied by s: the load's power of two.
  template <class Member>
  KOKKOS_INLINE_FUNCTION static void scale_columns(const Member& member, Scalar* K, std::size_t ldk,
                                                   int rows, int cols, const Scalar s) {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, cols), [&](const int c) {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, rows),
                           [&](const int r) { K[r + ldk * std::size_t(c)] *= s; });
    });
  }

  /// The QR tree's factor (uses_qr_tree): the leaves of level 0 load their
  /// rows and their largest magnitude; then each level's leaves, a team a
  /// leaf, factor their rows (level 0 first scaled by the matrix's power of
  /// two, from all its leaves' magnitudes) and write their R into the level
  /// above's stack, the last level's one leaf into X.
  template <class Slots>
  void factor_tree(const ExecSpace& exec, const Slots& slots) const {
    using Policy = Kokkos::TeamPolicy<ExecSpace>;
    using FactorPolicy =
        Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<qr_factor_threads_max * 32, 2>>;
    using Member = typename Policy::member_type;
    const int M = M_, N = N_;
    const bool transposed = transposed_, long_side = long_side_;
    const std::size_t ldk = this->ldk();
    const QrTree tree = tree_;
    const int leaves0 = tree.level[0].leaves;
    Scalar* K = K_.data();
    Scalar* scale = scale_.data();
    Scalar* X = X_.data();
    Scalar* leaf_max = leaf_max_.data();
    Scalar* data = tree_data_.data();
    Scalar* tau = tree_tau_.data();
    Scalar* wy = tree_wy_.data();
    int* finite_flags = finite_.data();
    const int lanes = std::min(32, vector_length_max<ExecSpace>());
    Kokkos::parallel_for(
        "kwsvd::qr_tree_load", Policy(exec, int(batch_) * leaves0, Kokkos::AUTO, lanes),
        KOKKOS_LAMBDA(const Member& member) {
          const int b = member.league_rank() / leaves0, i = member.league_rank() % leaves0;
          int start, count;
          QrTree::leaf(M, leaves0, i, start, count);
          const StridedMatrix<const Scalar> a = slots(b).a;
          Scalar* Kb = K + std::size_t(b) * ldk * std::size_t(N);
          const Scalar amax = copy_with_max_magnitude(
              member, count, N,
              [&](const int r, const int c) {
                return transposed ? a(c, start + r) : a(start + r, c);
              },
              Kb + start, ldk);
          Kokkos::single(Kokkos::PerTeam(member),
                         [&]() { leaf_max[std::size_t(b) * leaves0 + i] = amax; });
        });
    // Factors leaf i of level l (its rows at `rows`, leading dimension ld)
    // and writes its R to the level above's stack, or to X at the last.
    const auto factor_leaf =
        KOKKOS_LAMBDA(const Member& member, const int b, const int l, const int i, Scalar* rows,
                      const std::size_t ld, const int count) {
      const QrTree::Level& level = tree.level[l];
      Scalar* tl = tau + std::size_t(b) * tree.tau + level.tau + std::size_t(i) * 2 * N;
      householder_qr_steps(member, rows, ld, count, N, tl, tl + N);
      if (l == tree.levels - 1) {
        write_factor(member, rows, ld, tl + N, N,
                     X + std::size_t(b) * std::size_t(N) * std::size_t(N), std::size_t(N));
      } else {
        const QrTree::Level& above = tree.level[l + 1];
        write_factor(member, rows, ld, tl + N, N,
                     data + std::size_t(b) * tree.data + above.data + std::size_t(i) * N,
                     std::size_t(above.rows));
      }
      if (long_side) {
        member.team_barrier();
        compact_wy_factor(
            member, rows, ld, count, N, tl,
            wy + std::size_t(b) * tree.wy + level.wy + std::size_t(i) * N * std::size_t(N));
      }
    };
    const auto leaf0 = KOKKOS_LAMBDA(const Member& member) {
      const int b = member.league_rank() / leaves0, i = member.league_rank() % leaves0;
      const Scalar* maxima = leaf_max + std::size_t(b) * leaves0;
      Scalar amax = 0;
      for (int j = 0; j < leaves0; ++j)
        amax = maxima[j] > amax ? maxima[j] : amax;
      const bool finite = amax < scalar_limits<Scalar>::infinity();
      if (!finite) {  // no factor: NaN in X is what the inner SVD reports
        if (i == 0) {
          poison_values(member, X + std::size_t(b) * std::size_t(N) * std::size_t(N), N * N, 1);
          Kokkos::single(Kokkos::PerTeam(member), [&]() {
            scale[b] = Scalar(1);
            finite_flags[b] = 0;
          });
        }
        return;
      }
      // The matrix's power of two (the one-team load's), on every leaf.
      const Scalar s = power_of_two_scale(amax);
      int start, count;
      QrTree::leaf(M, leaves0, i, start, count);
      Scalar* rows = K + std::size_t(b) * ldk * std::size_t(N) + start;
      scale_columns(member, rows, ldk, count, N, s);
      if (i == 0)
        Kokkos::single(Kokkos::PerTeam(member), [&]() {
          scale[b] = s;
          finite_flags[b] = 1;
        });
      member.team_barrier();
      factor_leaf(member, b, 0, i, rows, ldk, count);
    };
    const int threads = std::max(
        1, std::min(qr_factor_threads_max, FactorPolicy(exec, int(batch_) * leaves0, 1, lanes)
                                               .team_size_max(leaf0, Kokkos::ParallelForTag())));
    Kokkos::parallel_for("kwsvd::qr_tree_leaves",
                         FactorPolicy(exec, int(batch_) * leaves0, threads, lanes), leaf0);
    for (int l = 1; l < tree.levels; ++l) {
      const int leaves = tree.level[l].leaves;
      Kokkos::parallel_for(
          "kwsvd::qr_tree_level", FactorPolicy(exec, int(batch_) * leaves, threads, lanes),
          KOKKOS_LAMBDA(const Member& member) {
            const int b = member.league_rank() / leaves, i = member.league_rank() % leaves;
            if (finite_flags[b] == 0)
              return;
            const QrTree::Level& level = tree.level[l];
            int start, count;
            QrTree::leaf(level.rows, leaves, i, start, count);
            Scalar* rows = data + std::size_t(b) * tree.data + level.data + start;
            factor_leaf(member, b, l, i, rows, std::size_t(level.rows), count);
          });
    }
  }

  /// After the inner SVD: S unscaled, and where `long_side` (the call
  /// computes it; the plan must have) Q [V_X; 0] into slots(b)'s U (tall) or
  /// V (wide), a team per matrix and tile of qr_finish_tile_cols columns.
  template <class Slots>
  void finish(const ExecSpace& exec, const Slots& slots, bool long_side) const {
    using Policy = Kokkos::TeamPolicy<ExecSpace>;
    using Member = typename Policy::member_type;
    constexpr int tile = qr_finish_tile_cols;
    const int M = M_, N = N_, r = r_, tiles = this->tiles();
    const bool transposed = transposed_;
    const std::size_t ldk = this->ldk();
    const Scalar* K = K_.data();
    const Scalar* scale = scale_.data();
    const Scalar* wy = wy_.data();
    const Scalar* Y = Y_.data();
    Scalar* zw = zw_.data();
    const auto unscale = KOKKOS_LAMBDA(const Member& member, const int b) {
      unscale_values(member, slots(b), scale[b]);
    };
    const int lanes = std::min(8, vector_length_max<ExecSpace>());
    if (!long_side) {
      Kokkos::parallel_for(
          "kwsvd::qr_unscale", Policy(exec, int(batch_), Kokkos::AUTO, lanes),
          KOKKOS_LAMBDA(const Member& member) { unscale(member, member.league_rank()); });
      return;
    }
    // Tiles [0, tiles) of a matrix: its first r columns; [tiles, tiles +
    // full_tiles): under full_matrices, columns N .. M - 1, Q e_j (with the
    // first N the same bits as a thin call's).
    const int per_matrix = tiles + full_tiles();
    if (tree_.levels > 0) {
      finish_tree(exec, slots);
      return;
    }
    if (panels() > 1) {
      finish_blocked(exec, slots);
      return;
    }
    Kokkos::parallel_for(
        "kwsvd::qr_finish", Policy(exec, int(batch_) * per_matrix, Kokkos::AUTO, lanes),
        KOKKOS_LAMBDA(const Member& member) {
          const int t = member.league_rank(), b = t / per_matrix, q = t % per_matrix;
          if (q == 0)
            unscale(member, b);
          const StridedMatrix<Scalar> out = working_left_side(slots(b), transposed);
          const std::size_t nn = std::size_t(N) * std::size_t(N);
          const Scalar* Kb = K + std::size_t(b) * ldk * std::size_t(N);
          Scalar* zt = zw + std::size_t(t) * 2 * std::size_t(N) * tile;
          if (q < tiles) {
            const int j0 = q * tile, nc = r - j0 < tile ? r - j0 : tile;
            apply_compact_wy_to_top_block<tile>(
                member, M, N, Kb, ldk, wy + std::size_t(b) * nn,
                Y + std::size_t(b) * std::size_t(N) * std::size_t(r), std::size_t(N), j0, nc, out,
                zt);
          } else {
            const int j0 = N + (q - tiles) * tile, j1 = j0 + tile < M ? j0 + tile : M;
            complete_columns_from_reflectors<tile>(member, out, M, j0, j1, N, Kb,
                                                   wy + std::size_t(b) * nn, zt, N);
          }
        });
  }

  /// finish's long side after a blocked QR: each team's tile of columns set
  /// to [V_X; 0] (or e_j past N), then the panels' Q applied to it in place,
  /// the last panel first: Q = Q_0 Q_1 ... Q_{P-1}.
  template <class Slots>
  void finish_blocked(const ExecSpace& exec, const Slots& slots) const {
    using Policy = Kokkos::TeamPolicy<ExecSpace>;
    using Member = typename Policy::member_type;
    using Scratch = TeamScratch<ExecSpace, Scalar>;
    constexpr int tile = qr_finish_tile_cols;
    const int M = M_, N = N_, r = r_, tiles = this->tiles(), P = panels(), pw = panel_cols();
    const bool transposed = transposed_;
    const std::size_t ldk = this->ldk(), panel_wy = std::size_t(pw) * std::size_t(pw);
    const int chunk = chunk_;
    const std::size_t zw_count = block_reflector_scratch(pw, tile, chunk);
    const Scalar* K = K_.data();
    const Scalar* scale = scale_.data();
    const Scalar* wy = wy_.data();
    const Scalar* Y = Y_.data();
    const int per_matrix = tiles + full_tiles();
    const int lanes = std::min(32, vector_length_max<ExecSpace>());
    Kokkos::parallel_for(
        "kwsvd::qr_finish_blocked",
        Policy(exec, int(batch_) * per_matrix, Kokkos::AUTO, lanes)
            .set_scratch_size(0, Kokkos::PerTeam(int(Scratch::shmem_size(zw_count)))),
        KOKKOS_LAMBDA(const Member& member) {
          const int t = member.league_rank(), b = t / per_matrix, q = t % per_matrix;
          if (q == 0)
            unscale_values(member, slots(b), scale[b]);
          const StridedMatrix<Scalar> out = working_left_side(slots(b), transposed);
          const Scalar* Kb = K + std::size_t(b) * ldk * std::size_t(N);
          const Scalar* yb = Y + std::size_t(b) * std::size_t(N) * std::size_t(r);
          const bool thin = q < tiles;
          const int c0 = thin ? q * tile : N + (q - tiles) * tile;
          const int end = thin ? r : M, nc = end - c0 < tile ? end - c0 : tile;
          Kokkos::parallel_for(Kokkos::TeamVectorRange(member, M), [&](const int row) {
            for (int j = 0; j < nc; ++j)
              out(row, c0 + j) = thin ? (row < N ? yb[row + std::size_t(N) * (c0 + j)] : Scalar(0))
                                      : (row == c0 + j ? Scalar(1) : Scalar(0));
          });
          member.team_barrier();
          Scratch zw(member.team_scratch(0), zw_count);
          for (int p = P - 1; p >= 0; --p)
            apply_block_reflector<tile>(member, M, p * pw, N - p * pw < pw ? N - p * pw : pw, Kb,
                                        ldk, wy + std::size_t(b) * P * panel_wy + p * panel_wy,
                                        false, out, c0, nc, chunk, zw.data());
        });
  }

  /// finish's long side after a QR tree: level by level from the top, a
  /// team per matrix, leaf and tile of qr_finish_tile_cols columns computes
  /// its leaf's Q [Y; 0], Y its slice of the level above's product (at the
  /// top, V_X), into its rows of this level's product; level 0's is the
  /// long side. Z and W of the tile in team scratch.
  template <class Slots>
  void finish_tree(const ExecSpace& exec, const Slots& slots) const {
    using Policy = Kokkos::TeamPolicy<ExecSpace>;
    using Member = typename Policy::member_type;
    using Scratch = TeamScratch<ExecSpace, Scalar>;
    constexpr int tile = qr_finish_tile_cols;
    const int N = N_, r = r_, tiles = this->tiles();
    const bool transposed = transposed_;
    const std::size_t ldk = this->ldk(), zw_count = 2 * std::size_t(N) * tile;
    const QrTree tree = tree_;
    const Scalar* K = K_.data();
    const Scalar* scale = scale_.data();
    const Scalar* data = tree_data_.data();
    const Scalar* wy = tree_wy_.data();
    Scalar* out = tree_out_.data();
    const Scalar* Y = Y_.data();
    const int lanes = std::min(8, vector_length_max<ExecSpace>());
    for (int l = tree.levels - 1; l >= 0; --l) {
      const int leaves = tree.level[l].leaves, per_matrix = leaves * tiles;
      Kokkos::parallel_for(
          "kwsvd::qr_tree_finish",
          Policy(exec, int(batch_) * per_matrix, Kokkos::AUTO, lanes)
              .set_scratch_size(0, Kokkos::PerTeam(int(Scratch::shmem_size(zw_count)))),
          KOKKOS_LAMBDA(const Member& member) {
            const int t = member.league_rank(), b = t / per_matrix, i = (t % per_matrix) / tiles,
                      q = t % tiles;
            const QrTree::Level& level = tree.level[l];
            if (l == 0 && i == 0 && q == 0)
              unscale_values(member, slots(b), scale[b]);
            int start, count;
            QrTree::leaf(level.rows, leaves, i, start, count);
            // The leaf's reflectors, and the top N rows of its product's
            // columns: V_X at the top, else its slice of the level above's.
            const Scalar* rows = l == 0 ? K + std::size_t(b) * ldk * std::size_t(N) + start
                                        : data + std::size_t(b) * tree.data + level.data + start;
            const std::size_t ld = l == 0 ? ldk : std::size_t(level.rows);
            const Scalar* top =
                l == tree.levels - 1
                    ? Y + std::size_t(b) * std::size_t(N) * std::size_t(r)
                    : out + std::size_t(b) * tree.out + tree.level[l + 1].out + std::size_t(i) * N;
            const std::size_t ldy =
                l == tree.levels - 1 ? std::size_t(N) : std::size_t(tree.level[l + 1].rows);
            StridedMatrix<Scalar> product;
            if (l == 0) {
              product = working_left_side(slots(b), transposed);
              product.data += start * product.row_stride;
            } else {
              product = StridedMatrix<Scalar>{out + std::size_t(b) * tree.out + level.out + start,
                                              count, r, 1, std::ptrdiff_t(level.rows)};
            }
            product.rows = count;
            Scratch zw(member.team_scratch(0), zw_count);
            const int j0 = q * tile, nc = r - j0 < tile ? r - j0 : tile;
            apply_compact_wy_to_top_block<tile>(
                member, count, N, rows, ld,
                wy + std::size_t(b) * tree.wy + level.wy + std::size_t(i) * N * std::size_t(N), top,
                ldy, j0, nc, product, zw.data());
          });
    }
  }

  /// A matrix's singular values divided by the scale its working matrix
  /// was multiplied by before the QR (one team).
  template <class Member>
  KOKKOS_INLINE_FUNCTION static void unscale_values(const Member& member,
                                                    const MatrixSlot<Scalar>& slot,
                                                    const Scalar scale) {
    const Scalar inv = Scalar(1) / scale;
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, slot.s_count),
                         [&](const int l) { slot.s[l * slot.s_stride] *= inv; });
  }

  /// Rows of a chunk of apply_block_reflector's team scratch: 64, or fewer
  /// where the execution space's level-0 scratch is smaller than that needs
  /// (27 KB in double for panels of 32 columns).
  int reflector_chunk_rows() const {
    using Scratch = TeamScratch<ExecSpace, Scalar>;
    const std::size_t limit = std::size_t(team_scratch_bytes_max<ExecSpace>());
    int chunk = 64;
    while (chunk > 1 && Scratch::shmem_size(block_reflector_scratch(
                            panel_cols(), qr_finish_tile_cols, chunk)) > limit)
      chunk /= 2;
    return chunk;
  }

  /// K's leading dimension in scalars (M: a matrix's reflectors, column-major).
  std::size_t ldk() const { return std::size_t(M_); }
  int tiles() const { return (r_ + qr_finish_tile_cols - 1) / qr_finish_tile_cols; }
  /// Columns of a panel of the QR (all N when it is not blocked), and panels.
  int panel_cols() const { return std::min(N_, qr_panel_cols); }
  int panels() const { return N_ > 0 ? (N_ + panel_cols() - 1) / panel_cols() : 0; }
  /// Tiles of the columns past N of a full long side (none unless full).
  int full_tiles() const {
    return full_ ? (M_ - N_ + qr_finish_tile_cols - 1) / qr_finish_tile_cols : 0;
  }

 private:
  long batch_ = 0;
  int M_ = 0, N_ = 0, r_ = 0;
  int chunk_ = 0;  // apply_block_reflector's rows a chunk (reflector_chunk_rows; blocked QR only)
  bool transposed_ = false, long_side_ = false, full_ = false;
  QrTree tree_;  // levels = 0 unless uses_qr_tree
  typename WorkspaceAllocator<memory_space>::template Buffer<Scalar> K_, tau_, scale_, X_, wy_, Y_,
      zw_, leaf_max_, tree_data_, tree_tau_, tree_wy_, tree_out_;
  typename WorkspaceAllocator<memory_space>::template Buffer<int> finite_;
};

}  // namespace kwsvd::Impl
