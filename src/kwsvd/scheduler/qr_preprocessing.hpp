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

namespace kwsvd::Impl {

/// Columns of the long side per team of the finish (a row's sums in
/// registers).
constexpr int qr_finish_tile_cols = 8;
/// Most threads of a factor team (vector lanes over rows, threads over the
/// trailing columns of a reflector).
constexpr int qr_factor_threads_max = 16;
/// Columns of a panel of the blocked QR: a working matrix of more columns
/// is factored a panel at a time on one team per matrix, each panel's Q^T
/// applied to the columns right of it by many teams. One team factoring
/// every column took 2x to 3x the sweeps' time at 256 to 300 columns
/// (perf_tests/notes/wcycle.md, "QR preprocessing of tall matrices").
constexpr int qr_panel_cols = 32;

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
  /// (SvdOptions::full_matrices: the columns past min(m, n) are Q e_j).
  QrPreprocessor(long batch, int m, int n, int r, bool long_side, bool full,
                 WorkspaceAllocator<memory_space>& alloc)
      : batch_(batch),
        M_(m > n ? m : n),
        N_(m > n ? n : m),
        r_(r),
        transposed_(m < n),
        long_side_(long_side),
        full_(full) {
    const std::size_t b = std::size_t(batch), N = std::size_t(N_);
    K_ = alloc.template zeros<Scalar>("kwsvd::qr_reflectors", b * ldk() * N);
    tau_ = alloc.template zeros<Scalar>("kwsvd::qr_tau", b * 2 * N);  // tau, then R's diagonal
    scale_ = alloc.template zeros<Scalar>("kwsvd::qr_scale", b);
    X_ = alloc.template zeros<Scalar>("kwsvd::qr_factor", b * N * N);
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
        const Scalar nan = quiet_nan<Scalar>();
        Kokkos::parallel_for(Kokkos::TeamVectorRange(member, N * N),
                             [&](const int p) { xb[p] = nan; });
        Kokkos::single(Kokkos::PerTeam(member), [&]() { scale[b] = Scalar(1); });
        return;
      }
      // Scaled by a power of two (exact), as the W-cycle's load: no column
      // norm can overflow, and the values are unscaled by the finish.
      const Scalar s = power_of_two_scale(amax);
      member.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, N), [&](const int c) {
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, M),
                             [&](const int r) { Kb[r + ldk * std::size_t(c)] *= s; });
      });
      Kokkos::single(Kokkos::PerTeam(member), [&]() { scale[b] = s; });
      member.team_barrier();
      Scalar* beta = tb + N;  // R's diagonal
      const int width = P == 1 ? N : pw;
      householder_qr_steps(member, Kb, ldk, M, width, tb, beta);
      if (P == 1)
        write_factor(member, Kb, ldk, beta, N, xb);
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
                       X + std::size_t(b) * std::size_t(N) * std::size_t(N));
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

  /// X = R^T, row-major (a LayoutRight View): X[i N + j] = R(j, i); R above
  /// its diagonal is K's, its diagonal `beta`, below it zero.
  template <class Member>
  KOKKOS_INLINE_FUNCTION static void write_factor(const Member& member, const Scalar* Kb,
                                                  std::size_t ldk, const Scalar* beta, int N,
                                                  Scalar* xb) {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, N), [&](const int i) {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, N), [&](const int j) {
        xb[std::size_t(i) * std::size_t(N) + std::size_t(j)] =
            j < i    ? Kb[std::size_t(j) + ldk * std::size_t(i)]
            : j == i ? beta[i]
                     : Scalar(0);
      });
    });
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
  typename WorkspaceAllocator<memory_space>::template Buffer<Scalar> K_, tau_, scale_, X_, wy_, Y_,
      zw_;
  typename WorkspaceAllocator<memory_space>::template Buffer<int> finite_;
};

}  // namespace kwsvd::Impl
