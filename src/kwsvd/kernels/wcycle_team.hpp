#pragma once
// Team-level steps of the W-cycle driver around the level GEMMs and the Gram
// EVD (W-cycle paper §III-C, Algorithm 2): bringing a matrix in (transposed
// when wide, scaled by a power of two, scanned for NaN/Inf), starting V = I,
// and, after convergence, reading Sigma, U and V off the orthogonalized
// columns (Algorithm 2's last step: U Sigma = A V). Each works on a chunk of
// a matrix's columns (ColumnChunk), so that the work spreads over many teams
// even when the batch is small.

#include <cstddef>

#include "kwsvd/api/options.hpp"
#include "kwsvd/impl/kokkos_compat.hpp"
#include "kwsvd/impl/strided_matrix.hpp"
#include "kwsvd/kernels/one_sided_jacobi_team.hpp"
#include "kwsvd/kernels/orthonormal_completion_team.hpp"

namespace kwsvd::Impl {

/// A range of columns of one working matrix: the unit of work of the
/// W-cycle's load and finish launches (scheduler/wcycle.hpp). A team per
/// matrix left a small batch of large matrices on as many multiprocessors
/// as matrices: at Fig. 8(b) double 512^2 x 10 on an H100 the load and the
/// finish took 2.0 and 2.7 ms of a 32 ms call on 10 teams. In chunks the
/// call takes 27.5 ms (1024^2 x 10: 146 -> 126 ms double, 86 -> 70 float;
/// batch 100 3 to 6% faster, batch 1000 unchanged; perf_tests/notes). A
/// matrix of one chunk is still loaded and finished by one team in one pass.
struct ColumnChunk {
  int matrix = 0;
  int col = 0, cols = 0;     ///< columns [col, col + cols) of the working matrix
  int first = 0, count = 0;  ///< the matrix's chunks: the first one's index, how many
  std::size_t norms = 0;     ///< offset of the matrix's N column norms
};

/// Copies columns [c0, c0 + cols) of the working matrix W (M x N,
/// column-major, leading dimension ldw; W = A, or A^T when `transpose`) from
/// A and returns their largest magnitude (NaN or Inf counts as +Inf: the
/// matrix is finite exactly when the maximum over its chunks is). Collective
/// over the team.
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION Scalar wcycle_load_columns(const Member& member,
                                                  const StridedMatrix<const Scalar>& A,
                                                  bool transpose, Scalar* W, std::size_t ldw,
                                                  int c0, int cols) {
  const int M = transpose ? A.cols : A.rows;
  return copy_with_max_magnitude(
      member, M, cols,
      [&](const int r, const int c) { return transpose ? A(c0 + c, r) : A(r, c0 + c); },
      W + ldw * std::size_t(c0), ldw);
}

/// Scales columns [c0, c0 + cols) of W (M rows) by `scale`, the power of two
/// that puts the matrix's largest magnitude in [1/2, 1) (power_of_two_scale:
/// the Gram of any block pair then neither overflows nor loses normal
/// range), and sets the same columns of V (N x N, leading dimension ldv;
/// null: no vectors) to those of I. Collective over the team.
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void wcycle_scale_columns(const Member& member, Scalar* W, std::size_t ldw,
                                                 int M, int c0, int cols, Scalar scale, Scalar* V,
                                                 std::size_t ldv, int N) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, c0, c0 + cols), [&](const int c) {
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, M),
                         [&](const int r) { W[r + ldw * c] *= scale; });
    if (V != nullptr)
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, N),
                           [&](const int r) { V[r + ldv * c] = r == c ? Scalar(1) : Scalar(0); });
  });
}

/// Scratch of wcycle_whole_matrix_team: the level-0 kernel's, without V.
template <class Scalar>
struct WholeMatrixScratch {
  Scalar* W;      // shape.ld_w x N
  Scalar* norm2;  // N
  int* rotated;   // 2 flags
};

/// One-sided Jacobi sweeps (the level-0 kernel's, one_sided_jacobi_sweeps)
/// on a whole working matrix W (M x N in memory, leading dimension ldw, as
/// the W-cycle's load left it) copied into scratch, its rotations applied to V
/// in memory (N x N, leading dimension ldv; null: no vectors), W written
/// back: a matrix whose columns fit level-0 scratch but not beside V, which
/// the W-cycle would otherwise split into column blocks. V's rotations go
/// through the caches instead of scratch, and the sweeps cost one launch
/// instead of a chain of launches per step (scheduler/wcycle.hpp). `shape`:
/// M, N, the scratch leading dimension and the row blocks
/// (plan_one_sided_jacobi without vectors). Returns the sweeps; converged:
/// whether the last one rotated nothing. Collective over the team.
template <int RowsPerLane, class Member, class Scalar>
KOKKOS_INLINE_FUNCTION int wcycle_whole_matrix_team(const Member& member, Scalar* W,
                                                    std::size_t ldw, Scalar* V, std::size_t ldv,
                                                    const OneSidedJacobiShape& shape,
                                                    const WholeMatrixScratch<Scalar>& ws,
                                                    Scalar tol, int max_sweeps, bool& converged) {
  const int M = shape.rows, N = shape.cols, log2 = shape.row_block_log2;
  const std::size_t lds = std::size_t(shape.ld_w);
  // The padding rows are zero: the compiled row loops run over them. The
  // copy goes through a vector reduction (its maximum is not needed) for
  // the code nvcc makes of the sweeps: Kokkos's CUDA vector loops end with a
  // __syncwarp whose mask takes two integer divisions (threadIdx.y % (32 /
  // blockDim.x)), and after a plain vector loop here ptxas recomputed them
  // inside every step (3 to 5 a step, about 100 instructions a warp), where
  // after a reduction, as in the level-0 kernel, it keeps the mask in a
  // register. H200, Fig. 8(b) double 64^2 x 10 / x 100: 1.54 -> 1.18 ms,
  // Table VI double group 64 -13%, seed 002's 64^2 x 1000 -16%.
  copy_with_max_magnitude(
      member, int(lds), N,
      [&](const int r, const int c) { return r < M ? W[r + ldw * c] : Scalar(0); }, ws.W, lds);
  member.team_barrier();
  // V takes W's row offsets bounded by N (v_padded false), even where W's
  // blocks end within V's leading dimension: with a second, padded path for
  // V beside it, the float sweeps of 8 row blocks took 72 registers instead
  // of 64, one team of 512 threads an SM instead of two (H200, float 100 x 63,
  // 120 x 64 and 128 x 61 x 1000 +32%), where the padded path saved 1.2 to
  // 1.5% (double 61^2 to 63^2).
  const int sweeps = one_sided_jacobi_sweeps<RowsPerLane>(
      member, ws.W, lds, M, N, V, ldv, log2, ws.norm2, ws.rotated, tol,
      negligible_squared_norm<Scalar>(), max_sweeps, converged, false);
  // The sweeps end with a barrier.
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, N), [&](const int c) {
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, M),
                         [&](const int r) { W[r + ldw * c] = ws.W[r + lds * c]; });
  });
  return sweeps;
}

/// norms[c] = ||w_c|| for the columns c0 <= c < c0 + cols of the converged
/// W (M rows), 0 for a numerically zero column (resolved_squared_norm); the
/// rows r = l, l + lanes, ... of each of `lanes` parts (the team's vector
/// length, or any count) summed with compensation (CompensatedSum: these
/// are the singular values). Collective over the team.
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void wcycle_column_norms(const Member& member, const Scalar* W,
                                                std::size_t ldw, int M, int c0, int cols, int lanes,
                                                Scalar* norms) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, c0, c0 + cols), [&](const int c) {
    const Scalar* w = W + ldw * c;
    Scalar ss = 0;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(member, lanes),
        [&](const int lane, Scalar& acc) {
          CompensatedSum<Scalar> lane_sum;
          for (int r = lane; r < M; r += lanes)
            lane_sum.add(w[r] * w[r]);
          acc += lane_sum.value();
        },
        ss);
    Kokkos::single(Kokkos::PerThread(member),
                   [&]() { norms[c] = kmath::sqrt(resolved_squared_norm(ss)); });
  });
}

/// Sigma, U and V for the columns c0 <= c < c0 + cols of the team's
/// converged W = U Sigma (M x N) and V, given all N column norms (`norms`,
/// scaled; wcycle_column_norms): sigma = ||w_c|| (unscaled), columns in
/// descending order of sigma (ties by index) or, unless `sorted`, in column
/// order with zero values last (svd_output_before), u = w_c / sigma, and a zero
/// column for sigma = 0 (no NaN; complete_orthonormal_columns then completes
/// those columns). When the input was transposed, the roles
/// of U and V swap. `nonfinite` writes NaN into all of the matrix's outputs
/// instead (from its chunk with c0 = 0). Collective over the team.
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void wcycle_finish_columns(
    const Member& member, const Scalar* W, std::size_t ldw, const Scalar* V, std::size_t ldv, int M,
    int N, int c0, int cols, const Scalar* norms, Scalar scale, bool transpose, bool nonfinite,
    Scalar* S, std::ptrdiff_t s_stride, int s_count, const StridedMatrix<Scalar>& U_out,
    const StridedMatrix<Scalar>& V_out, bool sorted) {
  // Outputs for A (m x n): S of s_count values, U_out m x k, V_out n x k, k =
  // min(m, n) = N, or fewer (SvdOptions::rank: the leading values and
  // columns; a column ranked past an output's width is not written there); a
  // side the call does not compute is an empty matrix (null data), and V is
  // given (null otherwise) exactly where the right vectors are asked for.
  if (nonfinite) {  // the matrix's first chunk poisons all of its outputs (a rare path)
    if (c0 == 0) {
      poison_values(member, S, s_count, s_stride);
      poison_matrix(member, U_out);
      poison_matrix(member, V_out);
    }
    return;
  }
  // Left vectors of the working matrix (M x N) and its right vectors (N x N).
  const StridedMatrix<Scalar>& left = transpose ? V_out : U_out;
  const StridedMatrix<Scalar>& right = transpose ? U_out : V_out;
  const bool write_left = left.data != nullptr, write_right = V != nullptr && right.data != nullptr;
  const Scalar unscale = Scalar(1) / scale;
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, c0, c0 + cols), [&](const int c) {
    const Scalar sc = norms[c];
    int rank = 0;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(member, N),
        [&](const int l, int& acc) {
          acc += svd_output_before(norms[l], l, sc, c, sorted) ? 1 : 0;
        },
        rank);
    Kokkos::single(Kokkos::PerThread(member), [&]() {
      if (rank < s_count)
        S[rank * s_stride] = sc * unscale;
    });
    if (write_left && rank < left.cols) {
      const Scalar inv = sc > Scalar(0) ? Scalar(1) / sc : Scalar(0);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, M),
                           [&](const int r) { left(r, rank) = W[r + ldw * c] * inv; });
    }
    if (write_right && rank < right.cols)
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, N),
                           [&](const int r) { right(r, rank) = V[r + ldv * c]; });
  });
}

}  // namespace kwsvd::Impl
