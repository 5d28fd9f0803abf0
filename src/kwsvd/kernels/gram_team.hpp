#pragma once
// Team-level Gram kernel: B = A^T A for one m x n matrix per team.
//
// This is step 1 of a column-block rotation (W-cycle paper, Algorithm 1 line 5:
// B_ij = A_ij^T A_ij). The team streams A through level-0 scratch in chunks of
// rows and accumulates the n(n+1)/2 entries of the upper triangle in scratch,
// so A is read from memory exactly once and B written once. The chunk height
// is planned on the host from the run-time scratch limit (plan_gram_team).
//
// Parallelism: team threads over the upper-triangle entries (i <= j), vector
// lanes over the rows of the chunk (a deterministic tree reduction, so results
// are the same run to run).

#include <cstddef>

#include "kwsvd/impl/kokkos_compat.hpp"
#include "kwsvd/impl/strided_matrix.hpp"

namespace kwsvd::Impl {

/// How a team computes one Gram matrix: rows of A per scratch chunk and the
/// level-0 scratch bytes it requests. Pure host data, unit-tested on the host.
struct GramTeamPlan {
  int chunk_rows = 0;             ///< rows of A held in scratch at a time (>= 1 when m > 0)
  std::size_t scratch_bytes = 0;  ///< level-0 scratch per team
  bool fits = false;              ///< false when n is too wide for the scratch limit
};

/// Number of upper-triangle entries of an n x n symmetric matrix.
KOKKOS_INLINE_FUNCTION constexpr int triangle_size(int n) {
  return n * (n + 1) / 2;
}

/// Scratch bytes for `count` scalars, with the alignment padding Kokkos adds.
template <class ExecSpace, class Scalar>
std::size_t scratch_bytes_for(std::size_t count) {
  using ScratchView = TeamScratch<ExecSpace, Scalar>;
  return ScratchView::shmem_size(count);
}

/// Plans the Gram of an m x n matrix within `scratch_limit` bytes of level-0
/// scratch: the accumulator takes n(n+1)/2 scalars, the rest holds as many whole
/// rows of A as fit (never more than m).
template <class ExecSpace, class Scalar>
GramTeamPlan plan_gram_team(int m, int n, std::size_t scratch_limit) {
  GramTeamPlan plan;
  if (n < 0 || m < 0)
    return plan;
  const std::size_t acc = scratch_bytes_for<ExecSpace, Scalar>(triangle_size(n));
  if (acc >= scratch_limit)
    return plan;
  const std::size_t row_bytes = std::size_t(n) * sizeof(Scalar);
  std::size_t rows = row_bytes > 0 ? (scratch_limit - acc) / row_bytes : std::size_t(m);
  rows = rows < std::size_t(m) ? rows : std::size_t(m > 0 ? m : 1);
  // shmem_size adds alignment padding: step back until the request fits.
  while (rows > 0 && acc + scratch_bytes_for<ExecSpace, Scalar>(rows * n) > scratch_limit)
    --rows;
  if (rows == 0)
    return plan;
  plan.chunk_rows = static_cast<int>(rows);
  plan.scratch_bytes = acc + scratch_bytes_for<ExecSpace, Scalar>(rows * n);
  plan.fits = true;
  return plan;
}

/// Row i <= column j of upper-triangle entry p, numbering column by column:
/// p = j(j+1)/2 + i.
KOKKOS_INLINE_FUNCTION void triangle_index(int p, int& i, int& j) {
  j = static_cast<int>((kmath::sqrt(8.0 * p + 1.0) - 1.0) / 2.0);
  while (triangle_size(j + 1) <= p)
    ++j;  // guard against rounding of the sqrt
  while (triangle_size(j) > p)
    --j;
  i = p - triangle_size(j);
}

/// B = A^T A for the team's matrix. `tile` holds chunk_rows * n scalars and
/// `acc` n(n+1)/2 scalars of level-0 scratch (plan_gram_team). B receives both
/// triangles. Collective over the team; ends with a team barrier.
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void gram_team(const Member& member, const StridedMatrix<const Scalar>& A,
                                      const StridedMatrix<Scalar>& B, int chunk_rows, Scalar* tile,
                                      Scalar* acc) {
  const int m = A.rows, n = A.cols, npairs = triangle_size(n);
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, npairs),
                       [&](const int p) { acc[p] = Scalar(0); });
  // Walk A along whichever index has the smaller stride, for contiguous loads.
  const bool rows_fastest = A.row_stride <= A.col_stride;
  for (int r0 = 0; r0 < m; r0 += chunk_rows) {
    const int rows = (m - r0 < chunk_rows) ? m - r0 : chunk_rows;
    member.team_barrier();  // previous chunk fully consumed
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, rows * n), [&](const int e) {
      const int r = rows_fastest ? e % rows : e / n;
      const int c = rows_fastest ? e / rows : e % n;
      tile[c * rows + r] = A(r0 + r, c);
    });
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, npairs), [&](const int p) {
      int i, j;
      triangle_index(p, i, j);
      const Scalar* ci = tile + i * rows;
      const Scalar* cj = tile + j * rows;
      Scalar dot = Scalar(0);
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(member, rows),
          [&](const int r, Scalar& sum) { sum += ci[r] * cj[r]; }, dot);
      Kokkos::single(Kokkos::PerThread(member), [&]() { acc[p] += dot; });
    });
  }
  member.team_barrier();
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, npairs), [&](const int p) {
    int i, j;
    triangle_index(p, i, j);
    B(i, j) = acc[p];
    B(j, i) = acc[p];
  });
  member.team_barrier();
}

}  // namespace kwsvd::Impl
