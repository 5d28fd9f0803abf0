#pragma once
// Team-level Householder QR of a matrix in memory, the compact WY form of
// its Q, and Q applied to a block that is zero below its first N rows. Two
// callers: the QR preprocessing of tall matrices (SvdOptions::qr; seed 002
// §9.2: A = Q [R; 0], the SVD of the N x N factor, U = Q [U_R; 0]), and the
// orthonormal completion of kept columns (orthonormal_completion_team.hpp),
// whose Q gives the missing ones.

#include <cstddef>

#include "kwsvd/impl/kokkos_compat.hpp"
#include "kwsvd/impl/strided_matrix.hpp"
#include "kwsvd/kernels/one_sided_jacobi_team.hpp"

namespace kwsvd::Impl {

/// Shares of a sum over a column's rows that a thread's vector lanes take,
/// whatever their count (a GPU's 32 lanes one each, a host's one lane all).
constexpr int qr_sum_shares = 32;

/// The sum of term(r) over r in [begin, end) by the calling thread, in
/// `threads` x qr_sum_shares interleaved shares, the thread's `thread`-th
/// row of them: share q takes rows begin + q, begin + q + stride, ...,
/// stride = threads x qr_sum_shares (consecutive lanes, consecutive rows),
/// each share compensated (CompensatedSum), the shares summed plainly. The
/// QR's sums run down columns of up to M rows: summed plainly (all of them in
/// one lane on a host backend), 10^6 x 4 left the values 10 u to 40 u off
/// the reference where the W-cycle's compensated norms keep 8 u.
template <class Scalar, class Member, class Term>
KOKKOS_INLINE_FUNCTION Scalar share_sum(const Member& member, int begin, int end, int thread,
                                        int threads, const Term& term) {
  const int stride = threads * qr_sum_shares;
  Scalar sum = 0;
  Kokkos::parallel_reduce(
      Kokkos::ThreadVectorRange(member, qr_sum_shares),
      [&](const int q, Scalar& acc) {
        CompensatedSum<Scalar> share;
        for (int r = begin + thread * qr_sum_shares + q; r < end; r += stride)
          share.add(term(r));
        acc += share.value();
      },
      sum);
  return sum;
}

/// share_sum over the whole team (every thread's shares; the result on
/// every thread). `threads`: the team's size.
template <class Scalar, class Member, class Term>
KOKKOS_INLINE_FUNCTION Scalar team_share_sum(const Member& member, int begin, int end, int threads,
                                             const Term& term) {
  Scalar sum = 0;
  Kokkos::parallel_reduce(
      Kokkos::TeamThreadRange(member, threads),
      [&](const int t, Scalar& acc) {
        const Scalar part = share_sum<Scalar>(member, begin, end, t, threads, term);
        acc += part;
      },
      sum);
  return sum;
}

/// Reflectors of the Householder QR of K (M x N, N <= M, column-major with
/// leading dimension ldk) in place, in LAPACK dgeqr2's form: step k makes
/// H_k = I - tau_k v_k v_k^T with v_k(k) = 1 (stored at K(k, k)) and
/// v_k(r) at K(r, k) below it, so that H_{N-1} ... H_0 K = [R; 0]; R's
/// entries above the diagonal are left in K above it, its diagonal (beta_k)
/// goes to `diag` when that is not null. Each reflector as LAPACK dlarfg
/// makes it: beta = -sign(x_0) ||x||, tau = (beta - x_0) / beta, the rest of
/// x divided by x_0 - beta (no squared norm divides anything, so the factor
/// keeps columns near the underflow threshold); H = I where x has nothing
/// below x_0. The norm of x below x_0 is its sum of squares, taken again
/// scaled by the largest magnitude where that sum falls below the normal
/// range (dnrm2's concern: a column of 1e-160 in double); it and the
/// reflections' dot products are compensated sums (share_sum). O(M N^2),
/// one reflector at a time, a few barriers each. Collective over the team;
/// ends with a barrier.
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void householder_qr_steps(const Member& member, Scalar* K, std::size_t ldk,
                                                 int M, int N, Scalar* tau, Scalar* diag) {
  const auto k_at = [&](int r, int c) -> Scalar& { return K[r + ldk * std::size_t(c)]; };
  constexpr Scalar tiny = scalar_limits<Scalar>::min_normal / scalar_limits<Scalar>::epsilon;
  const int threads = member.team_size();
  for (int k = 0; k < N; ++k) {
    const Scalar below2 = team_share_sum<Scalar>(
        member, k + 1, M, threads, [&](const int r) { return k_at(r, k) * k_at(r, k); });
    Scalar below = kmath::sqrt(below2);
    if (below2 < tiny) {  // uniform over the team: every thread has the sum
      Scalar top = 0;
      Kokkos::parallel_reduce(
          Kokkos::TeamVectorRange(member, k + 1, M),
          [&](const int r, Scalar& acc) {
            const Scalar x = kmath::fabs(k_at(r, k));
            acc = x > acc ? x : acc;
          },
          Kokkos::Max<Scalar>(top));
      const Scalar scaled2 = top > Scalar(0)
                                 ? team_share_sum<Scalar>(member, k + 1, M, threads,
                                                          [&](const int r) {
                                                            const Scalar x = k_at(r, k) / top;
                                                            return x * x;
                                                          })
                                 : Scalar(0);
      below = top * kmath::sqrt(scaled2);
    }
    const Scalar x0 = k_at(k, k);
    member.team_barrier();     // every thread has read the column before it changes
    if (below == Scalar(0)) {  // H_k = I: nothing below x_0 to remove
      Kokkos::single(Kokkos::PerTeam(member), [&]() {
        tau[k] = Scalar(0);
        if (diag != nullptr)
          diag[k] = x0;
        k_at(k, k) = Scalar(1);
      });
      member.team_barrier();
      continue;
    }
    // beta = -sign(x0) hypot(x0, below), without overflow (LAPACK dlapy2).
    const Scalar ax0 = kmath::fabs(x0), big = ax0 > below ? ax0 : below,
                 small = ax0 > below ? below : ax0;
    const Scalar ratio = small / big;
    const Scalar norm = big * kmath::sqrt(Scalar(1) + ratio * ratio);
    const Scalar beta = x0 < Scalar(0) ? norm : -norm;
    const Scalar t = (beta - x0) / beta, inv = Scalar(1) / (x0 - beta);
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k + 1, M),
                         [&](const int r) { k_at(r, k) *= inv; });
    Kokkos::single(Kokkos::PerTeam(member), [&]() {
      tau[k] = t;
      if (diag != nullptr)
        diag[k] = beta;
      k_at(k, k) = Scalar(1);
    });
    member.team_barrier();
    // The trailing columns: a_j -= tau v (v^T a_j), a thread per column.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k + 1, N), [&](const int j) {
      const Scalar dot = share_sum<Scalar>(member, k, M, 0, 1,
                                           [&](const int r) { return k_at(r, k) * k_at(r, j); });
      const Scalar f = t * dot;
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, k, M),
                           [&](const int r) { k_at(r, j) -= f * k_at(r, k); });
    });
    member.team_barrier();
  }
}

/// The compact WY form of the reflectors householder_qr_steps left in K (M x
/// r0, leading dimension ldk) and tau: Q = H_0 ... H_{r0 - 1} = I - V T V^T
/// (LAPACK dlarft, forward and columnwise: T(k, k) = tau_k, T(0 .. k - 1, k)
/// = -tau_k T(0 .. k - 1, 0 .. k - 1) V(:, 0 .. k - 1)^T v_k), into `wy`
/// (r0 x r0, column-major): T on and above the diagonal, the reflectors'
/// Gram matrix's entries v_l^T v_k (l < k) at (k, l) below it, which the
/// recurrence reads. O(M r0^2) for the Gram matrix and O(r0^3) for T, one
/// column after another. Collective over the team; ends with a barrier.
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void compact_wy_factor(const Member& member, const Scalar* K,
                                              std::size_t ldk, int M, int r0, const Scalar* tau,
                                              Scalar* wy) {
  const auto k_at = [&](int r, int c) { return K[r + ldk * std::size_t(c)]; };
  const auto at = [&](int i, int k) -> Scalar& { return wy[i + std::size_t(r0) * k]; };
  // v_l^T v_k for l < k, over the rows from k (v_k is zero above them).
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, r0 * r0), [&](const int p) {
    const int l = p % r0, k = p / r0;
    if (l >= k)
      return;
    const Scalar dot =
        share_sum<Scalar>(member, k, M, 0, 1, [&](const int r) { return k_at(r, l) * k_at(r, k); });
    Kokkos::single(Kokkos::PerThread(member), [&]() { at(k, l) = dot; });
  });
  member.team_barrier();
  for (int k = 0; k < r0; ++k) {
    const Scalar t = tau[k];
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k), [&](const int i) {
      Scalar sum = 0;
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(member, i, k),
          [&](const int l, Scalar& acc) { acc += at(i, l) * at(k, l); }, sum);
      Kokkos::single(Kokkos::PerThread(member), [&]() { at(i, k) = -t * sum; });
    });
    Kokkos::single(Kokkos::PerTeam(member), [&]() { at(k, k) = t; });
    member.team_barrier();
  }
}

/// Columns [j0, j0 + nc) of `out` (M rows, nc <= Tile) become Q [Y; 0], Q
/// = I - V T V^T the compact WY form of N reflectors (K, M x N with leading
/// dimension ldk, householder_qr_steps; `wy`, compact_wy_factor) and Y the
/// same columns of an N-row block (leading dimension ldy): Z = V_1^T Y (V_1
/// the unit lower triangular top N rows of V: Y is zero below them), W = T
/// Z, then each row r of out summed in registers, Y(r, :) - V(r, :) W. Z
/// and W go to `zw` (2 N Tile scalars of the team's own). O(N^2 Tile) for Z
/// and W, O(M N Tile) for the rows: the update of a tall matrix's U after
/// the SVD of its triangular factor as one GEMM tile per team instead of N
/// reflectors applied in turn. Collective over the team.
template <int Tile, class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void apply_compact_wy_to_top_block(const Member& member, int M, int N,
                                                          const Scalar* K, std::size_t ldk,
                                                          const Scalar* wy, const Scalar* Y,
                                                          std::size_t ldy, int j0, int nc,
                                                          const StridedMatrix<Scalar>& out,
                                                          Scalar* zw) {
  const auto k_at = [&](int r, int c) { return K[r + ldk * std::size_t(c)]; };
  Scalar* Z = zw;
  Scalar* W = zw + std::size_t(N) * Tile;
  // Z(l, j) = Y(l, j) + sum over r in (l, N) of v_l(r) Y(r, j).
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, N * nc), [&](const int p) {
    const int l = p / nc, j = p % nc;
    const Scalar* y = Y + ldy * std::size_t(j0 + j);
    Scalar sum = 0;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(member, l + 1, N),
        [&](const int r, Scalar& acc) { acc += k_at(r, l) * y[r]; }, sum);
    Kokkos::single(Kokkos::PerThread(member), [&]() { Z[l * Tile + j] = y[l] + sum; });
  });
  member.team_barrier();
  // W(l, j) = sum over q >= l of T(l, q) Z(q, j).
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, N * nc), [&](const int p) {
    const int l = p / nc, j = p % nc;
    Scalar sum = 0;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(member, l, N),
        [&](const int q, Scalar& acc) { acc += wy[l + std::size_t(N) * q] * Z[q * Tile + j]; },
        sum);
    Kokkos::single(Kokkos::PerThread(member), [&]() { W[l * Tile + j] = sum; });
  });
  member.team_barrier();
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, M), [&](const int r) {
    Scalar acc[Tile];
    for (int j = 0; j < Tile; ++j)
      acc[j] = r < N && j < nc ? Y[r + ldy * std::size_t(j0 + j)] : Scalar(0);
    const int top = r < N ? r : N;  // v_l(r) = 0 for l > r; v_r(r) = 1
    for (int l = 0; l < top; ++l) {
      const Scalar v = k_at(r, l);
      const Scalar* wl = W + std::size_t(l) * Tile;
      for (int j = 0; j < Tile; ++j)
        acc[j] -= v * wl[j];
    }
    if (r < N)
      for (int j = 0; j < Tile; ++j)
        acc[j] -= W[std::size_t(r) * Tile + j];
    for (int j = 0; j < Tile; ++j)
      if (j < nc)
        out(r, j0 + j) = acc[j];
  });
}

/// Scalars of team scratch that apply_block_reflector takes for panels of
/// up to nb reflectors, Tile columns and chunks of `chunk` rows.
KOKKOS_INLINE_FUNCTION constexpr std::size_t block_reflector_scratch(int nb, int tile, int chunk) {
  return std::size_t(chunk) * std::size_t(nb + 1) + std::size_t(chunk) * std::size_t(tile + 1) +
         3 * std::size_t(nb) * std::size_t(tile);
}

/// Columns [c0, c0 + nc) (nc <= Tile) of C, rows [j0, M), become H C,
/// where H = I - V T V^T, or its transpose I - V T^T V^T where `transpose`,
/// is the compact WY form of a panel of nb reflectors that
/// householder_qr_steps left in K's columns [j0, j0 + nb) (K column-major
/// with leading dimension ldk; v_l's rows from j0 + l, where K holds its 1)
/// and compact_wy_factor in T (nb x nb, column-major; only its upper
/// triangle is read). Three phases, a barrier apart:
///   Z = V^T C: chunks of `chunk` rows of V and C staged in team scratch
///     (coalesced down the columns), each entry of Z a lane's: a chunk's
///     rows summed plainly, the chunks' sums compensated (CompensatedSum),
///     so that a sum down M rows errs by about a chunk's rounding, not M's
///     (the QR's own dot products compensate every term: a compensated
///     term here made the finish 3x the plain one's flops, 5.3 ms of 1000 x
///     300 x 50's 33.5 in double on the H200);
///   W = T Z or T^T Z;
///   each row of C summed in registers, C(r, :) - V(r, :) W.
/// `scratch`: block_reflector_scratch(nb, Tile, chunk) scalars of the
/// team's own. The blocked QR's trailing update (H^T on the columns right
/// of a panel) and its Q applied panel by panel (H): GEMM tiles over many
/// teams, where householder_qr_steps alone applies every reflector to every
/// column on one team. Collective over the team; ends with a barrier.
template <int Tile, class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void apply_block_reflector(const Member& member, int M, int j0, int nb,
                                                  const Scalar* K, std::size_t ldk, const Scalar* T,
                                                  bool transpose, const StridedMatrix<Scalar>& C,
                                                  int c0, int nc, int chunk, Scalar* scratch) {
  const int ldv = nb + 1, ldc = Tile + 1;  // padded: the column-wise stores spread over banks
  Scalar* vc = scratch;
  Scalar* cc = vc + std::size_t(chunk) * ldv;
  Scalar* z_sum = cc + std::size_t(chunk) * ldc;
  Scalar* z_error = z_sum + std::size_t(nb) * Tile;
  Scalar* W = z_error + std::size_t(nb) * Tile;
  const int pairs = nb * Tile;  // entry (l, j) of Z and W at l Tile + j
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, pairs), [&](const int p) {
    z_sum[p] = Scalar(0);
    z_error[p] = Scalar(0);
  });
  for (int row0 = j0; row0 < M; row0 += chunk) {
    const int rows = M - row0 < chunk ? M - row0 : chunk;
    member.team_barrier();  // the last chunk's reads are done
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, nb * chunk), [&](const int i) {
      const int l = i / chunk, r = i % chunk, row = row0 + r;
      vc[r * ldv + l] =
          r < rows && row >= j0 + l ? K[std::size_t(row) + ldk * std::size_t(j0 + l)] : Scalar(0);
    });
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, Tile * chunk), [&](const int i) {
      const int j = i / chunk, r = i % chunk;
      cc[r * ldc + j] = r < rows && j < nc ? C(row0 + r, c0 + j) : Scalar(0);
    });
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, pairs), [&](const int p) {
      const int l = p / Tile, j = p % Tile;
      Scalar part = 0;  // a chunk's rows summed plainly, the chunks compensated
      for (int r = 0; r < rows; ++r)
        part += vc[r * ldv + l] * cc[r * ldc + j];
      CompensatedSum<Scalar> sum{z_sum[p], z_error[p]};
      sum.add(part);
      z_sum[p] = sum.sum;
      z_error[p] = sum.error;
    });
  }
  member.team_barrier();
  // W(l, j): T's row l from its diagonal on (T Z), or its column l down to
  // the diagonal (T^T Z).
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, pairs), [&](const int p) {
    const int l = p / Tile, j = p % Tile;
    Scalar sum = 0;
    for (int q = transpose ? 0 : l; q < (transpose ? l + 1 : nb); ++q) {
      const Scalar t = transpose ? T[q + std::size_t(nb) * l] : T[l + std::size_t(nb) * q];
      sum += t * (z_sum[q * Tile + j] + z_error[q * Tile + j]);
    }
    W[p] = sum;
  });
  member.team_barrier();
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, j0, M), [&](const int r) {
    Scalar acc[Tile];
    for (int j = 0; j < Tile; ++j)
      acc[j] = j < nc ? C(r, c0 + j) : Scalar(0);
    const int top = r - j0 + 1 < nb ? r - j0 + 1 : nb;  // v_l(r) = 0 for l > r - j0
    for (int l = 0; l < top; ++l) {
      const Scalar v = K[std::size_t(r) + ldk * std::size_t(j0 + l)];
      const Scalar* wl = W + std::size_t(l) * Tile;
      for (int j = 0; j < Tile; ++j)
        acc[j] -= v * wl[j];
    }
    for (int j = 0; j < Tile; ++j)
      if (j < nc)
        C(r, c0 + j) = acc[j];
  });
  member.team_barrier();
}

}  // namespace kwsvd::Impl
