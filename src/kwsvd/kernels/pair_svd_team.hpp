#pragma once
// The W-cycle's first group (W-cycle paper §III-A, Observation 1, and §III-C,
// Step 2 (i)): a column-block pair A_ij = [A_i A_j] whose rows fit level-0
// scratch is orthogonalized there by one-sided Jacobi sweeps, and the
// accumulated column rotations are the pair's rotation J_ij (the right
// singular vectors of A_ij). The pair's columns are read once and written
// once, where the second group reads them twice (Gram, update) besides its
// EVD; the level then applies J_ij to V's blocks with the tailored update.

#include <cstddef>

#include "kwsvd/impl/kokkos_compat.hpp"
#include "kwsvd/kernels/one_sided_jacobi_team.hpp"
#include "kwsvd/kernels/tailored_gemm_team.hpp"

namespace kwsvd::Impl {

/// Writes scratch X (rows x 2w, column-major, leading dimension `rows`) back
/// to rows [r0, r0 + rows) of the task's columns (missing columns skipped):
/// the inverse of load_pair_rows.
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void store_pair_rows(const Member& member, const BlockPairTask<Scalar>& t,
                                            int w, int r0, int rows, const Scalar* X) {
  for_pair_entries(member, t, w, rows, [&](const int r, const int c, const int col) {
    if (col >= 0)
      t.data[(r0 + r) * t.row_stride + col * t.col_stride] = X[r + rows * c];
  });
}

/// Scratch of one pair-SVD team: X (rows x 2w), J (2w x 2w), d (the norms
/// of the sweeps, 2w, then the work of J's corrections to unit norm,
/// pair_svd_d_scalars) and two flags.
KOKKOS_INLINE_FUNCTION std::size_t pair_svd_d_scalars(int w) {
  return std::size_t(unit_norm_work_scalars(2 * w) + 2 * w);
}

template <class ExecSpace, class Scalar>
std::size_t pair_svd_scratch_bytes(int rows, int w) {
  const std::size_t n = std::size_t(2 * w);
  return scratch_bytes_for<ExecSpace, Scalar>(std::size_t(rows) * n) +
         scratch_bytes_for<ExecSpace, Scalar>(n * n) +
         scratch_bytes_for<ExecSpace, Scalar>(pair_svd_d_scalars(w)) +
         scratch_bytes_for<ExecSpace, int>(2);
}

/// One pair: loads [A_i A_j] (m x 2w, missing columns zero) into X, sets J =
/// I, runs `sweeps` one-sided Jacobi sweeps on X's columns rotating J's
/// alongside (fewer when one rotates nothing), and stores X back. X, J (2w x
/// 2w, leading dimension 2w, columns corrected to unit norm), d
/// (pair_svd_d_scalars) and flags are scratch; J is left there for the
/// caller. Only numerically zero columns (negligible_squared_norm: a narrow
/// block's missing ones among them) are left alone, as the Gram EVD leaves
/// them: tiny columns, a rank-deficient matrix's null space among them, are
/// orthogonalized relative to their own length.
/// Returns whether any column pair was rotated. Collective; one team thread
/// per column pair (w) and 1 << log2 vector lanes.
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION bool pair_svd_team(const Member& member, const BlockPairTask<Scalar>& t,
                                          int w, Scalar* X, Scalar* J, Scalar* d, int* flags,
                                          int log2, Scalar tol, int sweeps) {
  const int n = 2 * w;
  load_pair_rows(member, t, w, 0, t.rows, X);
  // J = I through a vector reduction (its maximum is not needed), for the
  // code nvcc makes of the sweeps: as in wcycle_whole_matrix_team, ptxas
  // then keeps the __syncwarp mask of Kokkos's CUDA vector loops in a
  // register instead of recomputing its two integer divisions in every step.
  copy_with_max_magnitude(
      member, n, n, [&](const int r, const int c) { return r == c ? Scalar(1) : Scalar(0); }, J,
      std::size_t(n));
  member.team_barrier();
  bool converged = false;
  const int done = one_sided_jacobi_sweeps<0>(member, X, std::size_t(t.rows), t.rows, n, J,
                                              std::size_t(n), log2, d, flags, tol,
                                              negligible_squared_norm<Scalar>(), sweeps, converged);
  // one_sided_jacobi_sweeps ends every step with a barrier: X and J are
  // final. J's columns to unit norm (unit_norm_correction), as the Gram
  // EVD's, and X's by the same factors: X = [A_i A_j] J holds for the
  // rotated columns, which drifted in norm with J's (host, seed 002's geo
  // spectrum at 80^2, double: e3 16.6 u -> 5.9 u correcting J, and e1
  // 7.2 u -> 0.8 u correcting X too).
  // d (the sweeps' norms) is done with: it takes the corrections' work and
  // then their factors.
  Scalar* const factors = d + unit_norm_work_scalars(n);
  unit_norm_corrections(
      member, n, [&](const int r, const int c) { return J[r + std::size_t(n) * std::size_t(c)]; },
      d, factors);
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, n), [&](const int c) {
    Scalar* const jc = J + std::size_t(n) * std::size_t(c);
    Scalar* const xc = X + std::size_t(t.rows) * std::size_t(c);
    const Scalar f = factors[c];
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, n),
                         [&](const int r) { jc[r] += f * jc[r]; });
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, t.rows),
                         [&](const int r) { xc[r] += f * xc[r]; });
  });
  member.team_barrier();  // stored and copied out over other threads
  store_pair_rows(member, t, w, 0, t.rows, X);
  return !(converged && done == 1);
}

}  // namespace kwsvd::Impl
