#pragma once
// The QR preprocessing of a uniform batch of non-square matrices
// (SvdOptions::qr; seed 002 §9.2): its buffers and its two launches around
// the SVD of the triangular factors, which BatchedSvd runs in between.
//
//   factor: a team per matrix loads its working matrix W (A, or A^T when m
//     < n; M x N, M > N) scaled by a power of two, as the W-cycle does, takes
//     its Householder QR W = Q [R; 0] in place and writes X = R^T (N x N).
//   (BatchedSvd: the SVD X = U_X S V_X^T of every factor.)
//   finish: the long side (U of a tall matrix, V of a wide one) Q [V_X; 0],
//     a team per matrix and tile of columns, and S unscaled.
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
    if (long_side) {
      wy_ = alloc.template zeros<Scalar>("kwsvd::qr_wy", b * N * N);
      Y_ = alloc.template zeros<Scalar>("kwsvd::qr_right_vectors", b * N * std::size_t(r));
      zw_ = alloc.template zeros<Scalar>(
          "kwsvd::qr_tiles", b * std::size_t(tiles() + full_tiles()) * 2 * N * qr_finish_tile_cols);
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
    using Member = typename Policy::member_type;
    const int M = M_, N = N_;
    const bool transposed = transposed_, long_side = long_side_;
    const std::size_t ldk = this->ldk();
    Scalar* K = K_.data();
    Scalar* tau = tau_.data();
    Scalar* scale = scale_.data();
    Scalar* X = X_.data();
    Scalar* wy = wy_.data();
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
      householder_qr_steps(member, Kb, ldk, M, N, tb, beta);
      // X(i, j) = R(j, i), row-major (a LayoutRight View): X[i N + j]; R
      // above its diagonal is K's, below it zero.
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, N), [&](const int i) {
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, N), [&](const int j) {
          xb[std::size_t(i) * std::size_t(N) + std::size_t(j)] =
              j < i    ? Kb[std::size_t(j) + ldk * std::size_t(i)]
              : j == i ? beta[i]
                       : Scalar(0);
        });
      });
      if (long_side) {
        member.team_barrier();
        compact_wy_factor(member, Kb, ldk, M, N, tb,
                          wy + std::size_t(b) * std::size_t(N) * std::size_t(N));
      }
    };
    const int lanes = std::min(32, vector_length_max<ExecSpace>());
    const int threads = std::max(
        1, std::min(
               qr_factor_threads_max,
               Policy(exec, int(batch_), 1, lanes).team_size_max(body, Kokkos::ParallelForTag())));
    Kokkos::parallel_for("kwsvd::qr_factor", Policy(exec, int(batch_), threads, lanes), body);
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
      const MatrixSlot<Scalar> slot = slots(b);
      const Scalar inv = Scalar(1) / scale[b];
      Kokkos::parallel_for(Kokkos::TeamVectorRange(member, slot.s_count),
                           [&](const int l) { slot.s[l * slot.s_stride] *= inv; });
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

  /// K's leading dimension in scalars (M: a matrix's reflectors, column-major).
  std::size_t ldk() const { return std::size_t(M_); }
  int tiles() const { return (r_ + qr_finish_tile_cols - 1) / qr_finish_tile_cols; }
  /// Tiles of the columns past N of a full long side (none unless full).
  int full_tiles() const {
    return full_ ? (M_ - N_ + qr_finish_tile_cols - 1) / qr_finish_tile_cols : 0;
  }

 private:
  long batch_ = 0;
  int M_ = 0, N_ = 0, r_ = 0;
  bool transposed_ = false, long_side_ = false, full_ = false;
  typename WorkspaceAllocator<memory_space>::template Buffer<Scalar> K_, tau_, scale_, X_, wy_, Y_,
      zw_;
};

}  // namespace kwsvd::Impl
