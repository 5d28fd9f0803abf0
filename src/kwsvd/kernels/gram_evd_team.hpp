#pragma once
// Team-level parallel two-sided Jacobi EVD of one symmetric matrix resident in
// level-0 scratch (W-cycle paper §II-D and §IV-C): the kernel the W-cycle
// scheduler uses for the 2w x 2w Gram blocks B_ij = A_ij^T A_ij whose A_ij is
// too tall for scratch.
//
// Each step of a sweep takes the n/2 disjoint pairs of a round-robin ordering
// (the same circle method as the one-sided kernel), computes all their Givens
// rotations at once and applies them together, B <- G^T B G with G the
// product of the step's rotations (eq. (7)). Because every row and column of
// G has at most two nonzeros, every entry of the new B depends on at most four
// old ones; the kernel updates B by 2 x 2 blocks (rows of pair P, columns of
// pair Q), so each block is read and written by one thread, in place, and all
// blocks of the step run in parallel (Fig. 5) instead of row by row. J <- J G
// rotates two columns per pair, also in parallel.

#include <cstddef>

#include "kwsvd/api/options.hpp"
#include "kwsvd/impl/kokkos_compat.hpp"
#include "kwsvd/impl/strided_matrix.hpp"
#include "kwsvd/kernels/gram_team.hpp"
#include "kwsvd/kernels/one_sided_jacobi_team.hpp"

namespace kwsvd::Impl {

/// Scratch one team needs for an n x n EVD: B and J (n' x n' each, n' = n
/// rounded up to even: odd n gets a decoupled zero row and column), the
/// step's rotations (c, s, t per pair, the pair's two indices) and two flags.
template <class ExecSpace, class Scalar>
std::size_t gram_evd_scratch_bytes(int n) {
  const std::size_t ne = std::size_t(n + (n & 1));
  const std::size_t pairs = ne / 2;
  return 2 * scratch_bytes_for<ExecSpace, Scalar>(ne * ne) +
         3 * scratch_bytes_for<ExecSpace, Scalar>(pairs) +
         scratch_bytes_for<ExecSpace, int>(2 * pairs + 2);
}

/// Work arrays of one team, carved from level-0 scratch by the caller.
template <class Scalar>
struct GramEvdScratch {
  Scalar* B;  // n' x n', column-major, leading dimension n'
  Scalar* J;  // n' x n'
  Scalar* c;  // per pair of the current step
  Scalar* s;
  Scalar* t;
  int* pair_ij;  // 2 per pair: the step's (i, j), i < j
  int* rotated;  // 2 flags by sweep parity (see one_sided_jacobi_team)
};

/// Where one team's results go (memory the caller owns).
template <class Scalar>
struct GramEvdOutput {
  Scalar* lambda;  // n eigenvalues, stride lambda_stride
  std::ptrdiff_t lambda_stride;
  StridedMatrix<Scalar> J;  // n x n eigenvectors (columns)
  SvdInfo* info;
};

/// Settings the kernel needs (the launcher resolves defaults).
template <class Scalar>
struct GramEvdControl {
  Scalar tol;        // relative threshold: rotate when |b_ij| > tol sqrt(|b_ii b_jj|)
  int max_sweeps;    // sweeps allowed when running to convergence
  int fixed_sweeps;  // > 0: run exactly this many sweeps (fewer if nothing is left to rotate)
  EigenOrder order;
};

/// Position (P, Q), P <= Q, of upper-triangle block e of a w x w block grid:
/// rows P and w - 1 - P are folded into one row of w + 1 blocks, so the
/// w (w + 1) / 2 blocks map onto a rectangle without a square root.
KOKKOS_INLINE_FUNCTION void upper_block(int w, int e, int& P, int& Q) {
  const int folded = w / 2;  // full folded rows
  const int fr = e / (w + 1);
  if (fr < folded) {
    const int k = e - fr * (w + 1);
    if (k < w - fr) {
      P = fr;
      Q = fr + k;
    } else {
      P = w - 1 - fr;
      Q = P + (k - (w - fr));
    }
  } else {  // odd w: the middle row, (w + 1) / 2 blocks
    P = folded;
    Q = P + (e - folded * (w + 1));
  }
}

/// The EVD B = J diag(lambda) J^T of the team's symmetric matrix (upper
/// triangle read). Collective over the team.
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void gram_evd_team(const Member& member,
                                          const StridedMatrix<const Scalar>& A, int n,
                                          const GramEvdScratch<Scalar>& ws,
                                          const GramEvdOutput<Scalar>& out,
                                          const GramEvdControl<Scalar>& ctl) {
  const int ne = n + (n & 1);
  const int w = ne / 2;
  const std::size_t ld = std::size_t(ne);
  Scalar* const B = ws.B;
  Scalar* const J = ws.J;

  // 1. Load the upper triangle into both triangles (odd n: zero last row and
  //    column), J = I, and the largest magnitude (non-finite counts as Inf).
  Scalar amax = 0;
  Kokkos::parallel_reduce(
      Kokkos::TeamThreadRange(member, ne),
      [&](const int col, Scalar& team_max) {
        Scalar col_max = 0;
        Kokkos::parallel_reduce(
            Kokkos::ThreadVectorRange(member, ne),
            [&](const int row, Scalar& lane_max) {
              const bool inside = row < n && col < n;
              const Scalar x = inside ? (row <= col ? A(row, col) : A(col, row)) : Scalar(0);
              B[row + ld * col] = x;
              J[row + ld * col] = row == col ? Scalar(1) : Scalar(0);
              const Scalar ax = magnitude_or_inf(x);
              if (ax > lane_max)
                lane_max = ax;
            },
            Kokkos::Max<Scalar>(col_max));
        if (col_max > team_max)
          team_max = col_max;
      },
      Kokkos::Max<Scalar>(amax));

  if (!(amax < scalar_limits<Scalar>::infinity())) {
    const Scalar nan = quiet_nan<Scalar>();
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, n),
                         [&](const int c) { out.lambda[c * out.lambda_stride] = nan; });
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, n * n),
                         [&](const int e) { out.J(e % n, e / n) = nan; });
    write_info(member, out.info, 0, false, true);
    return;
  }

  // 2. Exact power-of-two scaling (undone on lambda): keeps b_ii b_jj and the
  //    tangent's squares in range whatever the scale of the input.
  const Scalar scale = power_of_two_scale(amax);
  member.team_barrier();
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, ne * ne),
                       [&](const int e) { B[e] *= scale; });
  member.team_barrier();

  // Rotate pair (i, j) when |b_ij| > tol sqrt(|b_ii b_jj|): the relative test
  // that gives a Gram (positive semidefinite) matrix eigenvalues with high
  // relative accuracy; below the absolute floor u max|b| an entry is rounding
  // noise for any symmetric matrix, which keeps indefinite inputs (whose
  // diagonal may tend to 0) from rotating forever.
  const Scalar floor = scalar_limits<Scalar>::epsilon / 2 * amax * scale;
  const Scalar tiny = scalar_limits<Scalar>::min_normal;
  const int sweep_limit = ctl.fixed_sweeps > 0 ? ctl.fixed_sweeps : ctl.max_sweeps;
  const int nblocks = w * (w + 1) / 2;
  int sweeps = 0;
  bool converged = ne < 2;
  while (!converged && sweeps < sweep_limit) {
    int* const flag = ws.rotated + (sweeps & 1);
    ++sweeps;
    Kokkos::single(Kokkos::PerTeam(member), [&]() { *flag = 0; });
    for (int step = 0; step < ne - 1; ++step) {
      // (a) The step's rotations, one team thread per pair (§II-D: the 2 x 2
      //     symmetric eigenproblem; the tangent is the one-sided kernel's).
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, w), [&](const int P) {
        int i, j;
        round_robin_pair(ne, step, P, i, j);
        const Scalar bii = B[i + ld * i], bjj = B[j + ld * j], bij = B[i + ld * j];
        const Scalar abs_b = kmath::fabs(bij);
        const Scalar didj = kmath::fabs(bii * bjj);
        const bool rotate =
            abs_b > floor && (didj > tiny ? abs_b * abs_b > ctl.tol * ctl.tol * didj
                                          : abs_b > ctl.tol * kmath::sqrt(kmath::fabs(bii)) *
                                                        kmath::sqrt(kmath::fabs(bjj)));
        Scalar c = 1, s = 0, t = 0;
        if (rotate) {
          t = jacobi_tangent(bii, bjj, bij);
          c = Scalar(1) / kmath::sqrt(Scalar(1) + t * t);
          s = t * c;
        }
        Kokkos::single(Kokkos::PerThread(member), [&]() {
          ws.pair_ij[2 * P] = i;
          ws.pair_ij[2 * P + 1] = j;
          ws.c[P] = c;
          ws.s[P] = s;
          ws.t[P] = t;
          if (rotate)
            *flag = 1;
        });
      });
      member.team_barrier();
      // (b) B <- G^T B G by 2 x 2 blocks (eq. (7)) and J <- J G, all at once.
      Kokkos::parallel_for(Kokkos::TeamVectorRange(member, nblocks + w * ne), [&](const int e) {
        if (e < nblocks) {
          int P, Q;
          upper_block(w, e, P, Q);
          const int i = ws.pair_ij[2 * P], j = ws.pair_ij[2 * P + 1];
          const Scalar cp = ws.c[P], sp = ws.s[P];
          if (P == Q) {
            // The pair's own 2 x 2 block becomes diagonal; the update of eq.
            // (6) (b_ii - t b_ij, b_jj + t b_ij) avoids cancellation.
            const Scalar tb = ws.t[P] * B[i + ld * j];
            if (sp != Scalar(0)) {
              B[i + ld * i] -= tb;
              B[j + ld * j] += tb;
              B[i + ld * j] = 0;
              B[j + ld * i] = 0;
            }
            return;
          }
          const int k = ws.pair_ij[2 * Q], l = ws.pair_ij[2 * Q + 1];
          const Scalar cq = ws.c[Q], sq = ws.s[Q];
          if (sp == Scalar(0) && sq == Scalar(0))
            return;  // neither pair rotated: the block is unchanged
          // X = B({i,j},{k,l}); Y = X G_Q; Z = G_P^T Y, G = [c s; -s c].
          const Scalar xik = B[i + ld * k], xil = B[i + ld * l];
          const Scalar xjk = B[j + ld * k], xjl = B[j + ld * l];
          const Scalar yik = cq * xik - sq * xil, yil = sq * xik + cq * xil;
          const Scalar yjk = cq * xjk - sq * xjl, yjl = sq * xjk + cq * xjl;
          const Scalar zik = cp * yik - sp * yjk, zjk = sp * yik + cp * yjk;
          const Scalar zil = cp * yil - sp * yjl, zjl = sp * yil + cp * yjl;
          B[i + ld * k] = zik;
          B[k + ld * i] = zik;
          B[i + ld * l] = zil;
          B[l + ld * i] = zil;
          B[j + ld * k] = zjk;
          B[k + ld * j] = zjk;
          B[j + ld * l] = zjl;
          B[l + ld * j] = zjl;
        } else {
          const int q = e - nblocks;
          const int P = q / ne, r = q - P * ne;
          const Scalar cp = ws.c[P], sp = ws.s[P];
          if (sp == Scalar(0))
            return;
          const int i = ws.pair_ij[2 * P], j = ws.pair_ij[2 * P + 1];
          const Scalar x = J[r + ld * i], y = J[r + ld * j];
          J[r + ld * i] = cp * x - sp * y;
          J[r + ld * j] = sp * x + cp * y;
        }
      });
      member.team_barrier();
    }
    converged = *flag == 0;
  }

  // 3. lambda = diag(B) (unscaled) and J, in the requested order.
  const Scalar unscale = Scalar(1) / scale;
  auto rank_of = [&](const int c) {
    if (ctl.order == EigenOrder::unsorted)
      return c;
    const Scalar dc = B[c + ld * c];
    int rank = 0;
    for (int l = 0; l < n; ++l) {
      const Scalar dl = B[l + ld * l];
      const bool before = ctl.order == EigenOrder::descending ? dl > dc : dl < dc;
      rank += (before || (dl == dc && l < c)) ? 1 : 0;
    }
    return rank;
  };
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, n), [&](const int c) {
    const int rank = rank_of(c);
    Kokkos::single(Kokkos::PerThread(member),
                   [&]() { out.lambda[rank * out.lambda_stride] = B[c + ld * c] * unscale; });
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, n),
                         [&](const int r) { out.J(r, rank) = J[r + ld * c]; });
  });
  write_info(member, out.info, sweeps, converged, false);
}

}  // namespace kwsvd::Impl
