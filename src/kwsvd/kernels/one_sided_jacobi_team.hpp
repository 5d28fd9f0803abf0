#pragma once
// Team-level one-sided Jacobi SVD of one matrix resident in level-0 scratch
// (W-cycle paper §II-C and §IV-B; level 0 of the W-cycle).
//
// The team copies its matrix into scratch (transposed when m < n, so the work
// matrix W is M x N with M = max(m, n) >= N = min(m, n)), orthogonalizes the
// columns of W by plane rotations applied from the right, accumulates the
// rotations in V (N x N), and writes sigma_k = ||w_k||, U = W diag(1/sigma),
// V. The matrix is read once and the outputs written once.
//
// Parallel ordering: round-robin (circle method). With N' = N rounded up to
// even, each of the N'-1 steps of a sweep pairs every column exactly once, so
// the N'/2 rotations of a step touch disjoint columns and run concurrently;
// for odd N the column paired with the phantom index N idles for that step.
// One team thread per pair, `lanes` vector lanes per pair over the rows.

#include <algorithm>
#include <cstddef>
#include <limits>
#include <type_traits>
#include <vector>

#include "kwsvd/api/options.hpp"
#include "kwsvd/impl/kokkos_compat.hpp"
#include "kwsvd/kernels/gram_team.hpp"
#include "kwsvd/kernels/pair_ordering.hpp"

namespace kwsvd::Impl {

/// Tangent t of the rotation that makes columns i and j orthogonal, from
/// their squared norms d_i, d_j and inner product g (§II-C eq. (3)-(4)).
/// With zeta = (d_j - d_i) / (2 g) the textbook form is t = sign(zeta) /
/// (|zeta| + sqrt(1 + zeta^2)) (Golub & Van Loan §8.5.2); multiplying through
/// by |g| gives t = sign(h) g / (|h| + sqrt(h^2 + g^2)), h = (d_j - d_i) / 2,
/// one square root and one division, |t| <= 1, and no overflow because the
/// kernel scales the matrix so that h and g stay below the row count. Only if
/// h^2 + g^2 underflows (both below ~1e-154 in double) does it fall back to
/// the scaled form, where squaring zeta is guarded.
/// The rotation maps [a_i a_j] to [c a_i - s a_j, s a_i + c a_j].
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar jacobi_tangent(Scalar d_i, Scalar d_j, Scalar g) {
  const Scalar h = (d_j - d_i) / Scalar(2);
  const Scalar r2 = h * h + g * g;
  if (r2 >= scalar_limits<Scalar>::min_normal) {
    const Scalar t = g / (kmath::fabs(h) + kmath::sqrt(r2));
    return h < Scalar(0) ? -t : t;
  }
  const Scalar zeta = h / g;
  const Scalar az = kmath::fabs(zeta);
  // Beyond 1/eps, sqrt(1 + az^2) rounds to az: t = 1 / (2 az) without squaring.
  const Scalar t = az < Scalar(1) / scalar_limits<Scalar>::epsilon
                       ? Scalar(1) / (az + kmath::sqrt(Scalar(1) + az * az))
                       : Scalar(1) / (Scalar(2) * az);
  return zeta < Scalar(0) ? -t : t;
}

/// c = 1 / sqrt(1 + t^2) of the rotation with tangent t, by the backend's
/// reciprocal square root instead of a square root and a division (about
/// half the instructions in double, a quarter in float): the rotations are
/// the longest path of a step, in the Gram EVD and in the level-0 sweeps
/// (there it took Fig. 7's batches 2 to 13% faster on the H200, with the
/// compile-time row-block modulus). Double's is within 1 ulp; float's
/// (CUDA's rsqrtf, 2 ulp) gets one Newton step, without which J misses the
/// orthogonality bound of the tests (20 n u) at n = 32.
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar rotation_cosine(Scalar t) {
  const Scalar x = Scalar(1) + t * t;
  const Scalar y = reciprocal_sqrt(x);
  if constexpr (std::is_same<Scalar, double>::value)
    return y;
  else
    return y + Scalar(0.5) * y * (Scalar(1) - x * y * y);
}

/// The rotation (c, s) of columns i and j and its tangent t = s / c, as
/// jacobi_tangent and rotation_cosine give them, without a division and
/// brought to c^2 + s^2 = 1 to rounding.
///
/// No division: with r = sqrt(h^2 + g^2) and a = |h| + r, 1 + t^2 =
/// 1 + g^2 / a^2 = 2 r a / a^2, so q = 1 / sqrt(2 r a) gives c = a q,
/// s = sign(h) g q and t = g / a = s (2 r q). The rotation is the longest
/// chain of a step (phase (a) of the Gram EVD, which the rest of the team
/// waits for at its barrier, and every pair of the level-0 sweeps), and a
/// division is a chain of its own in double on a GPU.
///
/// Unit norm: e = c^2 + s^2 - 1, computed with two fused multiply-adds
/// (c^2 - 1 first: exact for the small angles of the late sweeps), and
/// (c, s) <- (1 - e/2) (c, s). A rotation that is not orthogonal scales its
/// two columns, and the level-0 sweeps never renormalize V, so a bias in
/// c^2 + s^2 adds up over a column's hundreds of rotations: one-sided Jacobi
/// on the host (the level-0 kernel's sweeps, random 64 x 64, 8 matrices)
/// ended with max |V^T V - I| 1.5e-14 in double with the tangent and
/// rotation_cosine, 2.8e-15 with this; float 1.1e-5 against 1.5e-6. On the
/// H100 the suites' orthV fell at 91 of 104 points, by up to 6x (float 64^2
/// 5.4e-5 -> 8.8e-6, double 2.1e-14 -> 1.8e-14; perf_tests/notes/small_svd.md). (The
/// reciprocal square root's own error goes with it: no Newton step.)
/// Where h^2 + g^2 underflows, the scaled tangent of jacobi_tangent.
template <class Scalar>
struct JacobiRotation {
  Scalar c, s, t;
};

template <class Scalar>
KOKKOS_INLINE_FUNCTION JacobiRotation<Scalar> jacobi_rotation(Scalar d_i, Scalar d_j, Scalar g) {
  const Scalar h = (d_j - d_i) / Scalar(2);
  const Scalar r2 = h * h + g * g;
  Scalar c, s, t;
  if (r2 >= scalar_limits<Scalar>::min_normal) {
    const Scalar r = kmath::sqrt(r2);
    const Scalar a = kmath::fabs(h) + r;
    const Scalar q = reciprocal_sqrt(Scalar(2) * r * a);
    c = a * q;
    s = (h < Scalar(0) ? -g : g) * q;
    t = s * (Scalar(2) * r * q);
  } else {
    t = jacobi_tangent(d_i, d_j, g);
    c = rotation_cosine(t);
    s = t * c;
  }
  const Scalar half_e =
      fused_multiply_add(s, s, fused_multiply_add(c, c, Scalar(-1))) * Scalar(0.5);
  return {fused_multiply_add(-half_e, c, c), fused_multiply_add(-half_e, s, s), t};
}

/// The squared norm below which a column of a working matrix (scaled so that
/// its largest entry lies in [1/2, 1)) is numerically zero: min_normal / u^2,
/// a norm of 1.3e-138 in double and 1.8e-12 in float, far below u ||A||.
/// Below it a column's entries square into the subnormal range, so neither
/// its norm nor its cosines with other columns are accurate, and the relative
/// test could rotate it forever (a float matrix of rank 1, 40 x 90, ran 60
/// W-cycle sweeps). Every sweep leaves such columns alone (the level-0 and
/// whole-matrix sweeps, the pair SVD, the Gram EVD), and the finishes report
/// their singular values as zero and complete their left vectors.
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar negligible_squared_norm() {
  const Scalar u = scalar_limits<Scalar>::epsilon / 2;
  return scalar_limits<Scalar>::min_normal / (u * u);
}

/// A converged column's squared norm, or 0 for a numerically zero column
/// (negligible_squared_norm).
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar resolved_squared_norm(Scalar ss) {
  return ss < negligible_squared_norm<Scalar>() ? Scalar(0) : ss;
}

/// Whether column l (norm or squared norm x_l) comes before column c (x_c)
/// in the outputs: descending, ties by index. The level-0 kernel, the
/// W-cycle's finish and the Gram EVD's eigenvalues rank by it, so all order
/// alike.
template <class Scalar>
KOKKOS_INLINE_FUNCTION bool sorts_before(Scalar x_l, int l, Scalar x_c, int c) {
  return x_l > x_c || (x_l == x_c && l < c);
}

/// Whether column l (norm or squared norm x_l >= 0, numerically zero ones
/// resolved to 0) is written before column c (x_c) by an SVD: by sorts_before
/// when `sorted` (SvdOptions::sort), else in column order with the zero
/// values last, where the null-space completion of U expects them.
template <class Scalar>
KOKKOS_INLINE_FUNCTION bool svd_output_before(Scalar x_l, int l, Scalar x_c, int c, bool sorted) {
  if (sorted)
    return sorts_before(x_l, l, x_c, c);
  const bool zero_l = !(x_l > Scalar(0)), zero_c = !(x_c > Scalar(0));
  return zero_l != zero_c ? zero_c : l < c;
}

/// sum + p with the rounding error of the addition carried in `lost`
/// (Knuth's TwoSum: sum + lost is exact up to the lost term's own rounding).
template <class Scalar>
KOKKOS_INLINE_FUNCTION void two_sum_add(Scalar& sum, Scalar& lost, const Scalar p) {
  const Scalar t = sum + p;
  const Scalar z = t - sum;
  lost += (sum - (t - z)) + (p - z);
  sum = t;
}

/// f such that q + f q has unit norm, from e = ||q||^2 - 1:
/// f = (1 + e)^(-1/2) - 1 = -e/2 + 3e^2/8 - ... for the small e of a product
/// of rotations; 0 for an empty column.
///
/// Why: such a product drifts in norm. A rotation with t^2 below the
/// spacing of floating-point numbers at 1 gets c = 1 exactly and s = t, so it
/// lengthens both its columns by sqrt(1 + t^2), and a block pair's Gram EVD
/// rotates each block's own, already orthogonal, columns by such angles at
/// every W-cycle step; each step multiplies A's and V's blocks by J. Where
/// the backend's arithmetic leaves that drift (the host's double: the EVDs'
/// J at ||q||^2 - 1 of +1 u to +9 u on average in the middle sweeps of seed
/// 002's geo spectrum; float on the H200), A's and V's columns inherit it
/// step after step: host, geo, kappa = 1e10, double, 256^2: V's columns up
/// to 1.7e3 u from unit norm, e1 5.4 u, e3 13.7 u, e4 2.6 u; 1024^2: e3
/// 36.9 u, past seed 002's 30 u. The correction is applied as q + f q, not as
/// q / ||q||: a computed 1 / ||q|| lies on the grid of numbers near 1 (steps
/// of u and 2 u), which on the H200's double, whose J barely drifts, added
/// more error than it removed (perf_tests/notes/wcycle.md, "J's columns to
/// unit norm").
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar unit_norm_correction(Scalar e) {
  if (!(e > Scalar(-1)))
    return Scalar(0);
  if (kmath::fabs(e) < Scalar(1) / Scalar(64))
    return e * (Scalar(3) / Scalar(8) * e - Scalar(1) / Scalar(2));
  return Scalar(1) / kmath::sqrt(Scalar(1) + e) - Scalar(1);
}

/// Rows of a column that one item of unit_norm_corrections sums.
constexpr int unit_norm_chunk = 8;

/// Scalars of work unit_norm_corrections needs for n columns of n rows.
KOKKOS_INLINE_FUNCTION constexpr int unit_norm_work_scalars(int n) {
  return 2 * n * ((n + unit_norm_chunk - 1) / unit_norm_chunk);
}

/// factors[c] = unit_norm_correction(||q_c||^2 - 1) for the columns q_c =
/// entry(0..n-1, c), c < n, of an accumulated product of rotations (the Gram
/// EVD's J, the pair SVD's; collective, ends with a barrier). The squares
/// are summed with two_sum_add (a plain sum's rounding, up to a few u, would
/// be as large as the drift it measures; the products' own errors, at most
/// u/2 together, are the error left) in chunks of unit_norm_chunk rows, a
/// chunk per team item, then the chunks of a column in order: the same
/// arithmetic whatever the team's shape (every team size gives the same
/// bits), spread over the team. `work` holds unit_norm_work_scalars(n).
/// (H200, against the W-cycle without the corrections: one thread summing
/// each column cost 0.7 to 4.9%, these chunks -0.2 to +3.3%.)
template <class Member, class Scalar, class Entry>
KOKKOS_INLINE_FUNCTION void unit_norm_corrections(const Member& member, int n, const Entry& entry,
                                                  Scalar* work, Scalar* factors) {
  const int chunks = (n + unit_norm_chunk - 1) / unit_norm_chunk;
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, n * chunks), [&](const int e) {
    const int c = e / chunks, r0 = (e - c * chunks) * unit_norm_chunk;
    const int r1 = r0 + unit_norm_chunk < n ? r0 + unit_norm_chunk : n;
    Scalar sum = 0, lost = 0;
    for (int r = r0; r < r1; ++r) {
      const Scalar x = entry(r, c);
      two_sum_add(sum, lost, x * x);
    }
    work[2 * e] = sum;
    work[2 * e + 1] = lost;
  });
  member.team_barrier();
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, n), [&](const int c) {
    const Scalar* const w = work + 2 * c * chunks;
    Scalar sum = w[0], lost = w[1];
    for (int k = 1; k < chunks; ++k) {
      two_sum_add(sum, lost, w[2 * k]);
      lost += w[2 * k + 1];
    }
    factors[c] = unit_norm_correction((sum - Scalar(1)) + lost);
  });
  member.team_barrier();
}

/// |x|, or +Inf for NaN and Inf: the largest magnitude of a matrix scanned
/// with it is finite exactly when every entry is (one pass finds both).
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar magnitude_or_inf(Scalar x) {
  return kmath::isfinite(x) ? kmath::fabs(x) : scalar_limits<Scalar>::infinity();
}

/// X(r, c) = entry(r, c) for a rows x cols matrix (column-major, leading
/// dimension ldx), returning the team's largest magnitude_or_inf of the
/// entries: the load and the NaN/Inf scan of every kernel in one pass.
/// Columns over team threads, rows over vector lanes (contiguous stores).
/// (The Gram EVD's symmetric load: load_upper_with_max_magnitude.)
template <class Member, class Scalar, class Entry>
KOKKOS_INLINE_FUNCTION Scalar copy_with_max_magnitude(const Member& member, int rows, int cols,
                                                      const Entry& entry, Scalar* X,
                                                      std::size_t ldx) {
  Scalar amax = 0;
  Kokkos::parallel_reduce(
      Kokkos::TeamThreadRange(member, cols),
      [&](const int c, Scalar& team_max) {
        Scalar col_max = 0;
        Kokkos::parallel_reduce(
            Kokkos::ThreadVectorRange(member, rows),
            [&](const int r, Scalar& lane_max) {
              const Scalar x = entry(r, c);
              X[r + ldx * c] = x;
              const Scalar ax = magnitude_or_inf(x);
              if (ax > lane_max)
                lane_max = ax;
            },
            Kokkos::Max<Scalar>(col_max));
        if (col_max > team_max)
          team_max = col_max;
      },
      Kokkos::Max<Scalar>(amax));
  return amax;
}

/// NaN into `count` values, `stride` apart: what a matrix with NaN/Inf input
/// gets in its value outputs.
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void poison_values(const Member& member, Scalar* values, int count,
                                          std::ptrdiff_t stride) {
  const Scalar nan = quiet_nan<Scalar>();
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, count),
                       [&](const int c) { values[c * stride] = nan; });
}

/// NaN into every entry of an output matrix.
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void poison_matrix(const Member& member, const StridedMatrix<Scalar>& X) {
  const Scalar nan = quiet_nan<Scalar>();
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, X.rows * X.cols),
                       [&](const int e) { X(e % X.rows, e / X.rows) = nan; });
}

/// One team's SvdInfo / EvdInfo, written by one thread.
template <class Member>
KOKKOS_INLINE_FUNCTION void write_info(const Member& member, SvdInfo* info, int sweeps,
                                       bool converged, bool nonfinite) {
  Kokkos::single(Kokkos::PerTeam(member), [&]() {
    info->sweeps = sweeps;
    info->converged = converged ? 1 : 0;
    info->nonfinite_input = nonfinite ? 1 : 0;
  });
}

/// Power of two p with |amax| * p in [0.5, 1) (p = 1 for 0 or non-finite
/// amax), capped so p itself stays finite. Scaling by p is exact and keeps the
/// squared column norms away from overflow and underflow.
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar power_of_two_scale(Scalar amax) {
  if (!(amax > Scalar(0)) || !kmath::isfinite(amax))
    return Scalar(1);
  constexpr int max_exp = std::numeric_limits<Scalar>::max_exponent;
  Scalar p = 1, x = amax;
  int e = 0;
  while (x >= Scalar(1)) {
    x *= Scalar(0.5);
    p *= Scalar(0.5);
  }
  while (x < Scalar(0.5) && e < max_exp - 2) {
    x *= Scalar(2);
    p *= Scalar(2);
    ++e;
  }
  return p;
}

/// Scratch layout of one team: W (M x N, column-major, leading dimension
/// ld_w >= M), V (N x N, leading dimension ld_v >= N, only when kept), the
/// N squared column norms and two convergence flags.
///
/// Each lane of a pair owns the rows lane + b * row_block, b = 0, 1, ...; the
/// pair visits its blocks starting at its own block (pair index mod blocks).
/// With the leading dimensions padded to a multiple of one shared-memory
/// wavefront (128 bytes), element (r, c) lies in a bank that depends on r
/// only, so the pairs that share a warp read disjoint banks instead of all
/// hitting the banks of row block 0 (an up to 8-way conflict).
///
/// rows_per_lane > 0 selects the compiled path for that many blocks: W and V
/// are padded with zero rows up to rows_per_lane * row_block (zeros add
/// nothing to inner products and rotate into zeros), so the row loops are
/// fully unrolled with neither bounds tests nor index arithmetic beyond an
/// add. rows_per_lane < 0 is the same loop over -rows_per_lane blocks, bounded:
/// rows past the matrix are skipped by a test instead of padded, for the
/// shapes whose padding does not fit scratch (float 65^2 to 71^2 with 8 lanes
/// need 72 rows a column, 96 with 128-byte leading dimensions) and for nine
/// blocks (bounded_rows_per_lane). It visits the rows in the padded loop's
/// order, so its sums are the padded loop's to the bit. rows_per_lane = 0
/// is the general path for any row count.
struct OneSidedJacobiShape {
  int m = 0, n = 0;         // the input matrix
  int rows = 0;             // M = max(m, n): rows of the work matrix W
  int cols = 0;             // N = min(m, n): columns of W
  bool transposed = false;  // W = A^T (m < n)
  bool vectors = true;      // W's right vectors kept in scratch (job_keeps_rotations)
  bool sorted = true;       // outputs in descending order (SvdOptions::sort)
  int ld_w = 0, ld_v = 0;   // leading dimensions in scratch
  int row_block_log2 = 0;   // row_block = 1 << row_block_log2
  int rows_per_lane = 0;    // compiled block count (< 0: bounded), 0: general path
  // The lanes' inner products summed through scratch (one_sided_jacobi_sweeps).
  bool lane_partials = false;

  OneSidedJacobiShape() = default;
  KOKKOS_INLINE_FUNCTION OneSidedJacobiShape(int m_, int n_, bool vectors_)
      : m(m_),
        n(n_),
        rows(m_ >= n_ ? m_ : n_),
        cols(m_ >= n_ ? n_ : m_),
        transposed(m_ < n_),
        vectors(vectors_),
        ld_w(rows),
        ld_v(cols) {}
};

/// Block counts with a compiled, padded row loop (the others take the
/// general path or, for nine blocks, the bounded loop).
KOKKOS_INLINE_FUNCTION constexpr int compiled_rows_per_lane(int blocks) {
  return blocks <= 1   ? 1
         : blocks <= 2 ? 2
         : blocks <= 4 ? 4
         : blocks <= 6 ? 6
         : blocks <= 8 ? 8
                       : 0;
}

/// The bounded row loop for `blocks` row blocks (a negative rows_per_lane),
/// or 0 where the general loop is as fast. H200, the general loop against
/// the bounded one where the padding does not fit (ms): nine blocks, float
/// 65^2 x 1000 5.76 -> 4.22, 70^2 6.55 -> 5.67; five, float 65^2 x 100
/// (16 lanes) 1.40 -> 1.03; three or four, double 40^2 to 50^2 x 100
/// (16 lanes) 0.68 -> 0.59 to 0.92 -> 0.78. Seven and eight blocks stay
/// general: the general loop, which runs blocks in fours, visits no more
/// of them there, and bounded, double 49^2 and 50^2 x 1000 (8 lanes) ran
/// 7% slower (3.95 -> 4.23 ms). One or two blocks, whose padding is a few
/// rows, share the four-block loop. Nine blocks (65 to 72 rows of the 8
/// lanes the measured rule gives them at large batches) are bounded even
/// where their padding fits, which is only beside a short V: padded, V's
/// rows were padded to W's 72 too (x 1000, general -> padded nine: double
/// 70 x 24 0.63 -> 0.71; bounded nine: 0.54).
KOKKOS_INLINE_FUNCTION constexpr int bounded_rows_per_lane(int blocks) {
  return blocks <= 4 ? -4 : blocks <= 6 ? -6 : blocks == 9 ? -9 : 0;
}

/// Row blocks a compiled row loop visits (padded or bounded), 0 for the
/// general loop.
KOKKOS_INLINE_FUNCTION constexpr int row_loop_blocks(int rows_per_lane) {
  return rows_per_lane < 0 ? -rows_per_lane : rows_per_lane;
}

/// f(std::integral_constant<int, R>()) with R = rows_per_lane when that is a
/// compiled row loop (compiled_rows_per_lane, bounded_rows_per_lane), else
/// R = 0 (the general path): the kernels' RowsPerLane from a planned
/// shape's run-time value.
template <class F>
void with_compiled_rows_per_lane(int rows_per_lane, const F& f) {
  switch (rows_per_lane) {
    case 1:
      return f(std::integral_constant<int, 1>());
    case 2:
      return f(std::integral_constant<int, 2>());
    case 4:
      return f(std::integral_constant<int, 4>());
    case 6:
      return f(std::integral_constant<int, 6>());
    case 8:
      return f(std::integral_constant<int, 8>());
    case -4:
      return f(std::integral_constant<int, -4>());
    case -6:
      return f(std::integral_constant<int, -6>());
    case -9:
      return f(std::integral_constant<int, -9>());
    default:
      return f(std::integral_constant<int, 0>());
  }
}

/// Scalars of the lanes' partial inner products of `s` (one per vector index
/// of every column pair of a step), 0 without them.
KOKKOS_INLINE_FUNCTION std::size_t one_sided_lane_partial_count(const OneSidedJacobiShape& s) {
  return s.lane_partials ? std::size_t((s.cols + 1) / 2) << s.row_block_log2 : 0;
}

/// Level-0 scratch bytes one team needs for `shape` (with its leading dimensions).
template <class ExecSpace, class Scalar>
std::size_t one_sided_jacobi_scratch_bytes(const OneSidedJacobiShape& s) {
  return scratch_bytes_for<ExecSpace, Scalar>(std::size_t(s.ld_w) * s.cols) +
         (s.vectors ? scratch_bytes_for<ExecSpace, Scalar>(std::size_t(s.ld_v) * s.cols) : 0) +
         scratch_bytes_for<ExecSpace, Scalar>(std::size_t(s.cols)) +
         (s.lane_partials ? scratch_bytes_for<ExecSpace, Scalar>(one_sided_lane_partial_count(s))
                          : 0) +
         scratch_bytes_for<ExecSpace, int>(2);
}

/// Level-0 scratch bytes one team needs at least (unpadded) for an m x n SVD.
template <class ExecSpace, class Scalar>
std::size_t one_sided_jacobi_scratch_bytes(int m, int n, bool vectors) {
  return one_sided_jacobi_scratch_bytes<ExecSpace, Scalar>(OneSidedJacobiShape(m, n, vectors));
}

/// `s` laid out for the row loop `rows_per_lane` (compiled: W and V padded
/// with zero rows to rows_per_lane row blocks; bounded or general: no
/// padding rows), their leading dimensions rounded up to a multiple of
/// 128 bytes.
template <class Scalar>
OneSidedJacobiShape shape_for_rows_per_lane(OneSidedJacobiShape s, int rows_per_lane) {
  constexpr int wavefront = int(128 / sizeof(Scalar));
  auto round_up = [](int x) { return (x + wavefront - 1) / wavefront * wavefront; };
  const int padded_rows = rows_per_lane > 0 ? rows_per_lane * (1 << s.row_block_log2) : 0;
  s.rows_per_lane = rows_per_lane;
  s.ld_w = round_up(s.rows > padded_rows ? s.rows : padded_rows);
  s.ld_v = round_up(s.cols > padded_rows ? s.cols : padded_rows);
  return s;
}

/// Whether `s`, with its leading dimensions, fits `scratch_limit` bytes.
template <class ExecSpace, class Scalar>
bool one_sided_jacobi_fits(const OneSidedJacobiShape& s, std::size_t scratch_limit) {
  return one_sided_jacobi_scratch_bytes<ExecSpace, Scalar>(s) <= scratch_limit;
}

/// Row blocks of `s`'s work matrix (its row_block_log2 set).
KOKKOS_INLINE_FUNCTION int one_sided_row_blocks(const OneSidedJacobiShape& s) {
  return (s.rows + (1 << s.row_block_log2) - 1) >> s.row_block_log2;
}

/// The shape of an m x n SVD run with `lanes` vector lanes per column pair,
/// the fastest layout that fits `scratch_limit`: the compiled row loop
/// padded, with 128-byte leading dimensions; else the bounded compiled loop
/// with them, then without them (the minimum small_svd_fits checks); else,
/// past the compiled counts, the general loop with and then without them.
/// H200, batch 1000: float 65^2 took 5.76 ms on the general loop (2.91 at
/// 64^2, padded), 4.22 on the bounded one.
template <class ExecSpace, class Scalar>
OneSidedJacobiShape plan_one_sided_jacobi_layout(int m, int n, bool vectors, int lanes,
                                                 std::size_t scratch_limit) {
  OneSidedJacobiShape s(m, n, vectors);
  while ((1 << s.row_block_log2) < lanes)
    ++s.row_block_log2;
  const int blocks = one_sided_row_blocks(s);
  const OneSidedJacobiShape compiled =
      shape_for_rows_per_lane<Scalar>(s, compiled_rows_per_lane(blocks));
  if (compiled.rows_per_lane > 0 &&
      one_sided_jacobi_fits<ExecSpace, Scalar>(compiled, scratch_limit))
    return compiled;
  s.rows_per_lane = bounded_rows_per_lane(blocks);
  const OneSidedJacobiShape rounded = shape_for_rows_per_lane<Scalar>(s, s.rows_per_lane);
  return one_sided_jacobi_fits<ExecSpace, Scalar>(rounded, scratch_limit) ? rounded : s;
}

/// plan_one_sided_jacobi_layout's shape, with the lanes' partial inner
/// products in scratch (OneSidedJacobiShape::lane_partials) where they fit
/// beside the layouts it chooses with and without V: they never cost a
/// shape its row loop, and the choice does not depend on the job, so that
/// a call for values or for one side gets the full call's bits (the row
/// loops give the same bits whatever their padding; the two reductions
/// round differently).
template <class ExecSpace, class Scalar>
OneSidedJacobiShape plan_one_sided_jacobi(int m, int n, bool vectors, int lanes,
                                          std::size_t scratch_limit) {
  OneSidedJacobiShape s =
      plan_one_sided_jacobi_layout<ExecSpace, Scalar>(m, n, vectors, lanes, scratch_limit);
  bool partials = s.cols >= 2;
  for (const bool v : {false, true}) {
    OneSidedJacobiShape t =
        plan_one_sided_jacobi_layout<ExecSpace, Scalar>(m, n, v, lanes, scratch_limit);
    t.lane_partials = true;
    partials = partials && one_sided_jacobi_fits<ExecSpace, Scalar>(t, scratch_limit);
  }
  s.lane_partials = partials;
  return s;
}

/// One row loop for a group of shapes planned with the same lanes
/// (plan_one_sided_jacobi), which one launch runs: the padded loop of the
/// most row blocks among them where every shape has a compiled count and
/// fits `scratch_limit` padded to it (the shapes are padded); else the
/// bounded loop of that many blocks (the shapes as planned: bounded rows
/// need no padding); else, past the compiled counts, the general loop.
/// Without the lanes' partial inner products (lane_partials cleared).
template <class ExecSpace, class Scalar>
int plan_group_row_loop(std::vector<OneSidedJacobiShape>& shapes, std::size_t scratch_limit) {
  int blocks = 1;
  for (auto& shape : shapes) {
    shape.lane_partials = false;
    blocks = std::max(blocks, one_sided_row_blocks(shape));
  }
  int chosen = compiled_rows_per_lane(blocks);
  for (const auto& shape : shapes)
    if (chosen > 0 && !one_sided_jacobi_fits<ExecSpace, Scalar>(
                          shape_for_rows_per_lane<Scalar>(shape, chosen), scratch_limit))
      chosen = 0;
  if (chosen == 0)
    chosen = bounded_rows_per_lane(blocks);
  for (auto& shape : shapes) {
    if (chosen > 0)
      shape = shape_for_rows_per_lane<Scalar>(shape, chosen);
    shape.rows_per_lane = chosen;
  }
  return chosen;
}

/// plan_group_row_loop's row loop, then the lanes' partial inner products
/// (lane_partials) for every shape of two or more columns where they fit
/// beside the group's loop for all of its shapes, and beside the loops the
/// same shapes would get all with V and all without (so that, as in
/// plan_one_sided_jacobi, the choice does not depend on the job; only a
/// group whose shapes keep V for some and not for others under a one-sided
/// job can differ), else for none.
template <class ExecSpace, class Scalar>
int plan_group_rows_per_lane(std::vector<OneSidedJacobiShape>& shapes, std::size_t scratch_limit) {
  auto partials_fit = [&](std::vector<OneSidedJacobiShape> group) {
    bool fit = true;
    for (auto& shape : group) {
      shape.lane_partials = shape.cols >= 2;
      fit = fit && one_sided_jacobi_fits<ExecSpace, Scalar>(shape, scratch_limit);
    }
    return fit;
  };
  bool partials = true;
  for (const bool v : {false, true}) {
    std::vector<OneSidedJacobiShape> job;
    for (const auto& shape : shapes)
      job.push_back(plan_one_sided_jacobi_layout<ExecSpace, Scalar>(
          shape.m, shape.n, v, 1 << shape.row_block_log2, scratch_limit));
    plan_group_row_loop<ExecSpace, Scalar>(job, scratch_limit);
    partials = partials && partials_fit(job);
  }
  const int chosen = plan_group_row_loop<ExecSpace, Scalar>(shapes, scratch_limit);
  partials = partials && partials_fit(shapes);
  for (auto& shape : shapes)
    shape.lane_partials = partials && shape.cols >= 2;
  return chosen;
}

/// Row visited at vector index q (0 <= q < blocks << log2) by a pair whose
/// traversal starts at row block `first`: block (q >> log2) + first, wrapped,
/// lane q & (block - 1) within it. The order PairRows walks; a bijection for
/// every first.
KOKKOS_INLINE_FUNCTION int staggered_row(int q, int first, int blocks, int log2) {
  int b = (q >> log2) + first;
  if (b >= blocks)
    b -= blocks;
  return (b << log2) + (q & ((1 << log2) - 1));
}

/// The rows one pair's lanes visit, in the staggered order: `for_rows(lane,
/// f)` calls f(r) for every row r of that lane. Used from
/// ThreadVectorRange(member, 2^log2): on a GPU every lane takes one `lane`;
/// on a host backend one thread takes them all in turn, visiting the same rows.
///
/// RowsPerLane > 0: the compiled path. The block offsets are computed once
/// per pair and step; rows past the matrix are zero padding, so no bounds
/// test. RowsPerLane < 0: the same blocks and order, rows past `rows`
/// skipped (the bounded loop).
template <int RowsPerLane>
struct PairRows {
  static constexpr int Blocks = row_loop_blocks(RowsPerLane);
  int offset[Blocks];
  int rows;
  KOKKOS_INLINE_FUNCTION PairRows(int first, int /*blocks*/, int log2, int rows_) : rows(rows_) {
    KWSVD_UNROLL
    for (int t = 0; t < Blocks; ++t) {
      const int b = first + t < Blocks ? first + t : first + t - Blocks;
      offset[t] = b << log2;
    }
  }
  template <class F>
  KOKKOS_INLINE_FUNCTION void for_rows(int lane, const F& f) const {
    KWSVD_UNROLL
    for (int t = 0; t < Blocks; ++t) {
      const int r = lane + offset[t];
      if (RowsPerLane > 0 || r < rows)
        f(r);
    }
  }
};

/// Blocks = 0: the general path for any row count, unrolled by four with
/// bounds tests.
template <>
struct PairRows<0> {
  int first, blocks, log2, rows;
  KOKKOS_INLINE_FUNCTION PairRows(int first_, int blocks_, int log2_, int rows_)
      : first(first_), blocks(blocks_), log2(log2_), rows(rows_) {}
  template <class F>
  KOKKOS_INLINE_FUNCTION void for_rows(int lane, const F& f) const {
    int b = first;
    for (int t0 = 0; t0 < blocks; t0 += 4) {
      KWSVD_UNROLL
      for (int u = 0; u < 4; ++u) {
        const int r = lane + (b << log2);
        if (t0 + u < blocks && r < rows)
          f(r);
        b = b + 1 == blocks ? 0 : b + 1;
      }
    }
  }
};

/// Work arrays of one team, carved from level-0 scratch by the caller.
template <class Scalar>
struct OneSidedJacobiScratch {
  Scalar* W;         // ld_w x cols
  Scalar* V;         // ld_v x cols (nullptr without vectors)
  Scalar* norm2;     // cols
  int* rotated;      // 2 flags: "some pair rotated in this sweep", by sweep parity
  Scalar* partials;  // one_sided_lane_partial_count (nullptr without lane_partials)
};

/// A running sum that keeps the rounding error of every addition (two_sum_add:
/// to the bit the error Neumaier's variant of Kahan's summation keeps) and
/// adds it back at the end: a sum of n terms is then accurate to about 2u
/// instead of n u. Singular values are the finished columns' norms, and one
/// lane's share of a tall column is long. Summed plainly, the W-cycle's
/// 10^6 x 4 float columns (125000 rows a lane on a GPU, all in one lane on a
/// host backend) left sigma 190 u and 640 u off LAPACK's, and the level-0
/// kernel's float 6000 x 1 (one lane, host) up to 23 u.
template <class Scalar>
struct CompensatedSum {
  Scalar sum = 0, error = 0;
  KOKKOS_INLINE_FUNCTION void add(Scalar x) { two_sum_add(sum, error, x); }
  KOKKOS_INLINE_FUNCTION Scalar value() const { return sum + error; }
};

/// Exact squared norms d[c] of W's N columns (M rows), each lane's share of
/// the rows summed plainly (the sweeps' norms: a few u is far below the 30 u
/// tolerance, and the sweeps' loops are sensitive to added registers) or,
/// `Compensated`, with CompensatedSum (the singular values). Collective.
template <int RowsPerLane, bool Compensated = false, class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void one_sided_column_norms(const Member& member, const Scalar* W,
                                                   std::size_t ldw, int M, int N, int log2,
                                                   Scalar* d) {
  const int w_blocks =
      RowsPerLane != 0 ? row_loop_blocks(RowsPerLane) : (M + (1 << log2) - 1) >> log2;
  using Rows = PairRows<RowsPerLane>;
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, N), [&](const int c) {
    const Scalar* w = W + ldw * c;
    const Rows rows(c % w_blocks, w_blocks, log2, M);
    Scalar sum = 0;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(member, 1 << log2),
        [&](const int lane, Scalar& acc) {
          if constexpr (Compensated) {
            CompensatedSum<Scalar> lane_sum;
            rows.for_rows(lane, [&](const int r) { lane_sum.add(w[r] * w[r]); });
            acc += lane_sum.value();
          } else {
            rows.for_rows(lane, [&](const int r) { acc += w[r] * w[r]; });
          }
        },
        sum);
    Kokkos::single(Kokkos::PerThread(member), [&]() { d[c] = sum; });
  });
}

/// p[0] + ... + p[count - 1] for count = 1, 2, 4, ... (a power of two), in
/// one fixed order: four running sums, then (s0 + s1) + (s2 + s3). Every
/// lane that calls it on the same values gets the same bits, and the chain
/// of dependent additions is count / 4 + 2 long instead of count - 1.
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar sum_lane_partials(const Scalar* p, int count) {
  if (count < 4)
    return count == 1 ? p[0] : p[0] + p[1];
  Scalar s0 = p[0], s1 = p[1], s2 = p[2], s3 = p[3];
  for (int l = 4; l < count; l += 4) {
    s0 += p[l];
    s1 += p[l + 1];
    s2 += p[l + 2];
    s3 += p[l + 3];
  }
  return (s0 + s1) + (s2 + s3);
}

/// Round-robin sweeps of the one-sided Jacobi method (W-cycle paper §II-B,
/// §IV-B) on the N columns of W (M rows, leading dimension ldw), rotating the
/// columns of V (N x N, leading dimension ldv; null: no vectors) alongside,
/// until a sweep rotates nothing or after max_sweeps. W and V may live in
/// scratch or in memory; `v_padded`: with a compiled row loop (RowsPerLane >
/// 0), V's columns hold W's padded rows (zero past N), so V's rows take W's
/// offsets; otherwise (V in memory, or shorter than W's blocks) W's offsets
/// bounded by N, or with the general loop, the general loop over N rows. d: N
/// scalars for the squared norms, rotated: two flags (both may be in
/// scratch). Columns whose squared norm is at most `zero_column` (negative:
/// none) are left alone. Returns the sweeps run; `converged` tells whether
/// the last one rotated nothing. `partials` (npairs << log2 scalars, or null):
/// where the lanes of a pair leave their shares of its inner product (below).
/// Collective; one team thread per column pair and 1 << log2 vector lanes, as
/// one_sided_jacobi_team.
template <int RowsPerLane, class Member, class Scalar>
KOKKOS_INLINE_FUNCTION int one_sided_jacobi_sweeps(const Member& member, Scalar* W, std::size_t ldw,
                                                   int M, int N, Scalar* V, std::size_t ldv,
                                                   int log2, Scalar* d, int* rotated, Scalar tol,
                                                   Scalar zero_column, int max_sweeps,
                                                   bool& converged, bool v_padded = true,
                                                   Scalar* partials = nullptr) {
  const int w_blocks =
      RowsPerLane != 0 ? row_loop_blocks(RowsPerLane) : (M + (1 << log2) - 1) >> log2;
  const int v_blocks = (N + (1 << log2) - 1) >> log2;
  using Rows = PairRows<RowsPerLane>;
  // Exact squared column norms. Inner-product caching (§IV-B-2, eq. 6) updates
  // them by formula after each rotation; recomputing them here at the start of
  // every sweep bounds the drift of the cached values to one sweep's worth of
  // rotations, and the final sigma always come from exact norms.
  auto exact_norms = [&]() { one_sided_column_norms<RowsPerLane>(member, W, ldw, M, N, log2, d); };
  // Rotating pairs raise this sweep's flag (a benign race: every writer
  // stores 1) instead of a team reduction per step, so a step costs one
  // barrier. The flags alternate with the sweep's parity so that clearing
  // the next sweep's flag never races with reading this one's.
  const int n_even = N + (N & 1);
  const int npairs = n_even / 2;
  const Scalar tiny = scalar_limits<Scalar>::min_normal;
  const Scalar didj_floor = tiny / (tol * tol);  // above it tol^2 d_i d_j is normal
  int sweeps = 0;
  converged = N < 2;
  while (!converged && sweeps < max_sweeps) {
    int* const flag = rotated + (sweeps & 1);
    ++sweeps;
    Kokkos::single(Kokkos::PerTeam(member), [&]() { *flag = 0; });
    exact_norms();
    member.team_barrier();
    for (int step = 0; step < n_even - 1; ++step) {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, npairs), [&](const int pair) {
        int i, j;
        round_robin_pair(n_even, step, pair, i, j);
        if (j >= N)
          return;  // the phantom column of odd N
        Scalar* wi = W + ldw * i;
        Scalar* wj = W + ldw * j;
        // Consecutive pairs of a warp start at consecutive row blocks
        // (a compile-time modulus where the blocks are compiled).
        int first = pair;
        if constexpr (RowsPerLane != 0) {
          first = pair % row_loop_blocks(RowsPerLane);
        } else {
          while (first >= w_blocks)
            first -= w_blocks;
        }
        const Rows wrows(first, w_blocks, log2, M);
        // Read before the lanes' reduction, which orders them before the
        // norm update below.
        const Scalar di = d[i], dj = d[j];
        // Only a_i^T a_j is computed: the norms are cached (eq. 6).
        Scalar g = 0;
        if (partials != nullptr) {
          // Each lane leaves its share in scratch and every lane sums all
          // shares in the same order. Kokkos's vector loops end with the
          // lanes' writes visible to one another (a warp sync on CUDA, a
          // sub-group barrier on SYCL, lockstep wavefronts on HIP; host
          // backends run the lanes in turn). Its vector reduction instead
          // shuffles log2 times and broadcasts, and on CUDA each shuffle
          // with a mask known only at run time checks the warp's
          // convergence first (MATCH.ANY, REDUX.OR, VOTE in the SASS):
          // the reduction held 30% of the sampled warp stalls of the
          // level-0 kernel at 32 x 32 x 100 on the H200 (16 lanes, float
          // and double), whose steps wait on that chain; summed here,
          // Fig. 7's points ran 2 to 15% faster (perf_tests/notes/small_svd.md).
          Scalar* const share = partials + (std::size_t(pair) << log2);
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, 1 << log2), [&](const int lane) {
            Scalar acc = 0;
            wrows.for_rows(lane, [&](const int r) { acc += wi[r] * wj[r]; });
            share[lane] = acc;
          });
          g = sum_lane_partials(share, 1 << log2);
        } else {
          Kokkos::parallel_reduce(
              Kokkos::ThreadVectorRange(member, 1 << log2),
              [&](const int lane, Scalar& acc) {
                wrows.for_rows(lane, [&](const int r) { acc += wi[r] * wj[r]; });
              },
              g);
        }
        // Rotate when |g| > tol ||a_i|| ||a_j||, compared squared (no square
        // root) unless tol^2 d_i d_j could underflow; the scaling keeps d_i,
        // d_j and g below the row count, so nothing overflows.
        const Scalar didj = di * dj;
        const bool rotates =
            (zero_column < Scalar(0) || (di > zero_column && dj > zero_column)) &&
            (didj > didj_floor ? g * g > tol * tol * didj
                               : kmath::fabs(g) > tol * kmath::sqrt(di) * kmath::sqrt(dj));
        if (!rotates)
          return;
        const JacobiRotation<Scalar> rot = jacobi_rotation(di, dj, g);
        const Scalar c = rot.c, s = rot.s, t = rot.t;
        // [x y] <- [c x - s y, s x + c y] over the rows of one pair of columns.
        auto rotate = [&](const auto& rows, Scalar* x, Scalar* y) {
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, 1 << log2), [&](const int lane) {
            rows.for_rows(lane, [&](const int r) {
              const Scalar xr = x[r], yr = y[r];
              x[r] = c * xr - s * yr;
              y[r] = s * xr + c * yr;
            });
          });
        };
        // eq. (6) with the orthogonality condition folded in: the updated
        // squared norms are d_i - t g and d_j + t g (no cancellation).
        auto record_rotation = [&]() {
          d[i] = di - t * g;
          d[j] = dj + t * g;
          *flag = 1;
        };
        if (RowsPerLane > 0 && v_padded && V != nullptr) {
          // A padded V (in scratch, the level-0 kernels) has W's blocks: the
          // same row offsets, so W's and V's rows turn in one vector loop.
          // Its end is one warp sync a step instead of two (on CUDA each
          // checks the warp's convergence), and V's loads go out beside
          // W's (all four loaded before any store: turning W's rows and
          // then V's gained a third less): H200, Fig. 7's points 4 to 15%
          // faster. Not for V in memory (the whole-matrix sweeps): there it
          // cost 9.5% at double 64^2 x 1000 (perf_tests/notes/small_svd.md).
          // Lane 0 records the rotation from inside the loop: only this
          // pair reads d_i and d_j before the step's barrier (above, before
          // its lanes' sum), so the loop's own warp sync suffices and the
          // Kokkos::single, a third, goes.
          Scalar* const vi = V + ldv * i;
          Scalar* const vj = V + ldv * j;
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, 1 << log2), [&](const int lane) {
            wrows.for_rows(lane, [&](const int r) {
              const Scalar xr = wi[r], yr = wj[r], ur = vi[r], zr = vj[r];
              wi[r] = c * xr - s * yr;
              wj[r] = s * xr + c * yr;
              vi[r] = c * ur - s * zr;
              vj[r] = s * ur + c * zr;
            });
            if (lane == 0)
              record_rotation();
          });
        } else {
          rotate(wrows, wi, wj);
          if (V != nullptr) {
            // Any other V of a compiled loop takes W's row offsets bounded
            // by its N rows (N <= M): the matrices swept whole keep V in
            // memory (H200, double x 1000, V on the general loop ->
            // bounded: 56^2 4.43 -> 4.26 ms, 60^2 5.13 -> 4.95).
            if constexpr (RowsPerLane != 0) {
              rotate(PairRows<-row_loop_blocks(RowsPerLane)>(first, w_blocks, log2, N), V + ldv * i,
                     V + ldv * j);
            } else {
              int vfirst = pair;
              while (vfirst >= v_blocks)
                vfirst -= v_blocks;
              rotate(PairRows<0>(vfirst, v_blocks, log2, N), V + ldv * i, V + ldv * j);
            }
          }
          Kokkos::single(Kokkos::PerThread(member), record_rotation);
        }
      });
      member.team_barrier();
    }
    converged = *flag == 0;
  }
  return sweeps;
}

/// Results of one team's SVD, written to memory the caller owns.
template <class Scalar>
struct OneSidedJacobiOutput {
  Scalar* S;  // s_count values, stride s_stride
  std::ptrdiff_t s_stride;
  int s_count;  // min(m, n), or the leading r of them (SvdOptions::rank)
  // m x k and n x k (ignored without vectors), or fewer columns under
  // SvdOptions::rank (their leading ones), or more under full_matrices.
  StridedMatrix<Scalar> U;
  StridedMatrix<Scalar> V;
  SvdInfo* info;
};

/// The whole SVD of the team's matrix A (m x n). Collective over the team.
/// Expects one team thread per column pair (team size (N + 1) / 2 or fewer:
/// TeamThreadRange loops over the rest) and shape.row_block vector lanes.
/// RowsPerLane must equal shape.rows_per_lane (the caller dispatches).
template <int RowsPerLane, class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void one_sided_jacobi_team(const Member& member,
                                                  const StridedMatrix<const Scalar>& A,
                                                  const OneSidedJacobiShape& shape,
                                                  const OneSidedJacobiScratch<Scalar>& ws,
                                                  const OneSidedJacobiOutput<Scalar>& out,
                                                  Scalar tol, int max_sweeps) {
  const int M = shape.rows, N = shape.cols;
  const std::size_t ldw = shape.ld_w, ldv = shape.ld_v;
  const int log2 = shape.row_block_log2;
  Scalar* const W = ws.W;
  Scalar* const V = ws.V;
  Scalar* const d = ws.norm2;

  // 1. Load (transposing when m < n) and find the largest magnitude in one
  //    pass; a NaN or Inf entry counts as +Inf, so amax is finite exactly
  //    when the matrix is.
  const Scalar amax = copy_with_max_magnitude(
      member, M, N, [&](const int r, const int c) { return shape.transposed ? A(c, r) : A(r, c); },
      W, ldw);

  if (!(amax < scalar_limits<Scalar>::infinity())) {
    // Report and poison this matrix's outputs; the other teams are unaffected.
    poison_values(member, out.S, out.s_count, out.s_stride);
    poison_matrix(member, out.U);  // a side not asked for is empty: nothing to poison
    poison_matrix(member, out.V);
    write_info(member, out.info, 0, false, true);
    return;
  }

  // 2. Exact power-of-two scaling (undone on sigma at the end), V = I.
  const Scalar scale = power_of_two_scale(amax);
  member.team_barrier();
  // The padding rows (M..ld_w of W, N..ld_v of V) are zeroed: the compiled
  // row loops run over them.
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, N), [&](const int c) {
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, int(ldw)), [&](const int r) {
      W[r + ldw * c] = r < M ? W[r + ldw * c] * scale : Scalar(0);
    });
    if (shape.vectors) {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, int(ldv)),
                           [&](const int r) { V[r + ldv * c] = r == c ? Scalar(1) : Scalar(0); });
    }
  });
  member.team_barrier();

  // 3. Sweeps until one rotates nothing.
  bool converged = false;
  const int sweeps = one_sided_jacobi_sweeps<RowsPerLane>(
      member, W, ldw, M, N, shape.vectors ? V : nullptr, ldv, log2, d, ws.rotated, tol,
      negligible_squared_norm<Scalar>(), max_sweeps, converged, true, ws.partials);
  one_sided_column_norms<RowsPerLane, true>(member, W, ldw, M, N, log2, d);
  member.team_barrier();
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, N),
                       [&](const int c) { d[c] = resolved_squared_norm(d[c]); });
  member.team_barrier();

  // 4. sigma_c = ||w_c||; the output position of column c (descending, ties
  //    by index, or unsorted: svd_output_before). Outputs narrower than N
  //    (SvdOptions::rank) take the positions they have.
  const Scalar unscale = Scalar(1) / scale;
  auto rank_of = [&](const int c) {
    int rank = 0;
    for (int l = 0; l < N; ++l)
      rank += svd_output_before(d[l], l, d[c], c, shape.sorted) ? 1 : 0;
    return rank;
  };
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, N), [&](const int c) {
    const int rank = rank_of(c);
    if (rank < out.s_count)
      out.S[rank * out.s_stride] = kmath::sqrt(d[c]) * unscale;
  });

  // W's columns become the work matrix's left vectors (A's U, or V when
  // transposed), V holds its right vectors (only where the job keeps them:
  // Job). A side not asked for is an empty matrix and is not written. (The
  // sides are picked here only by their pointers, and as whole descriptors
  // below the barrier: picked once, before this block, they took 8 more
  // registers, and float's level-0 kernel ran 5% slower on an H100.)
  if ((shape.transposed ? out.V.data : out.U.data) != nullptr) {
    // Normalize: W becomes the left singular vectors of the work matrix.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, N), [&](const int c) {
      const Scalar sigma = kmath::sqrt(d[c]);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, M), [&](const int r) {
        if (sigma > Scalar(0))
          W[r + ldw * c] /= sigma;
      });
    });
    member.team_barrier();
    // Columns with sigma = 0 (exact rank deficiency) get an orthonormal
    // completion: e_r for the row r least covered by the columns kept so far,
    // made orthogonal to them by two Gram-Schmidt passes. Rare, so done by one
    // thread rather than complicating the common path. Not the W-cycle's
    // wcycle_complete_null_columns: compiled into this kernel, that one cost
    // float's level-0 throughput 5 to 10% at batches of 1000 and 10000 on an
    // H100 (perf_tests/notes/wcycle.md, "one completion for both finishes").
    Kokkos::single(Kokkos::PerTeam(member), [&]() {
      for (int c = 0; c < N; ++c) {
        if (d[c] > Scalar(0))
          continue;
        auto kept = [&](int l) { return l != c && (d[l] > Scalar(0) || l < c); };
        int best_row = 0;
        Scalar best_cover = 2;
        for (int r = 0; r < M; ++r) {
          Scalar cover = 0;
          for (int l = 0; l < N; ++l)
            if (kept(l))
              cover += W[r + ldw * l] * W[r + ldw * l];
          if (cover < best_cover) {
            best_cover = cover;
            best_row = r;
          }
        }
        Scalar* x = W + ldw * c;
        for (int r = 0; r < M; ++r)
          x[r] = r == best_row ? Scalar(1) : Scalar(0);
        for (int pass = 0; pass < 2; ++pass) {
          for (int l = 0; l < N; ++l) {
            if (!kept(l))
              continue;
            const Scalar* u = W + ldw * l;
            Scalar dot = 0;
            for (int r = 0; r < M; ++r)
              dot += u[r] * x[r];
            for (int r = 0; r < M; ++r)
              x[r] -= dot * u[r];
          }
        }
        Scalar nrm2 = 0;
        for (int r = 0; r < M; ++r)
          nrm2 += x[r] * x[r];
        const Scalar inv = Scalar(1) / kmath::sqrt(nrm2);
        for (int r = 0; r < M; ++r)
          x[r] *= inv;
      }
    });
    member.team_barrier();
  }
  // Copies, not references: a reference chosen at run time would put the
  // output descriptors in local memory.
  const StridedMatrix<Scalar> long_side = shape.transposed ? out.V : out.U;
  const StridedMatrix<Scalar> short_side = shape.transposed ? out.U : out.V;
  const bool write_long = long_side.data != nullptr;
  const bool write_short = shape.vectors && short_side.data != nullptr;
  if (write_long || write_short) {
    // W holds U (or V when transposed), V holds V (or U), M x N and N x N.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, N), [&](const int c) {
      const int rank = rank_of(c);
      if (write_long && rank < long_side.cols)
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, M),
                             [&](const int r) { long_side(r, rank) = W[r + ldw * c]; });
      if (write_short && rank < short_side.cols)
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, N),
                             [&](const int r) { short_side(r, rank) = V[r + ldv * c]; });
    });
  }
  write_info(member, out.info, sweeps, converged, false);
}

}  // namespace kwsvd::Impl
