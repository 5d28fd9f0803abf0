#pragma once
// Options and per-matrix results shared by kwsvd's SVD entry points.

#include <cstddef>
#include <limits>
#include <vector>

#include <Kokkos_Macros.hpp>

namespace kwsvd {

/// What an SVD call computes (k = min(m, n)). One-sided Jacobi rotates the
/// columns of the work matrix (A, or A^T when m < n) until they are
/// orthogonal: its left vectors are those columns normalized, its right
/// vectors the product of the rotations, kept in a second array and rotated
/// with them. A job that asks only for the left ones (U of a tall or square
/// matrix, V of a wide one) keeps no such array, and a square matrix's
/// sweeps do half the updates (Job::values's speed, plus the vectors'
/// normalization and write); the other side's job keeps and rotates it as
/// values_and_vectors does, only not writing the normalized columns.
enum class Job {
  values,                    ///< singular values only
  values_and_vectors,        ///< singular values, U (m x k) and V (n x k)
  values_and_left_vectors,   ///< singular values and U (m x k) only: V is not computed
  values_and_right_vectors,  ///< singular values and V (n x k) only: U is not computed
};

/// Whether a job writes U (left) or V (right).
KOKKOS_INLINE_FUNCTION constexpr bool job_writes_u(Job job) {
  return job == Job::values_and_vectors || job == Job::values_and_left_vectors;
}
KOKKOS_INLINE_FUNCTION constexpr bool job_writes_v(Job job) {
  return job == Job::values_and_vectors || job == Job::values_and_right_vectors;
}

/// How vector lanes per column pair (the W-cycle paper's alpha x warp,
/// §IV-B-1) are chosen when SvdOptions::lanes_per_pair is 0.
enum class LanesRule {
  /// The paper's second method: a decision tree on the largest row count and
  /// the batch size, fitted to measured runs (the default).
  measured,
  /// The paper's first method: max(4, gcd(largest row count, 32)).
  gcd
};

/// Whether BatchedSvd first reduces a tall matrix (or a wide one's
/// transpose) to its triangular factor (SvdOptions::qr).
enum class QrPreprocessing {
  /// Where tuning/qr_preprocessing.hpp's rule expects it to pay: shapes
  /// not solved at level 0 with rows enough times the columns, at batch
  /// sizes where the QR pays for that shape, no max_workspace_bytes, and
  /// level0 = true (the default).
  automatic,
  never,  ///< always sweep the matrix itself
  /// every non-square matrix of two columns (rows) or more (refused with
  /// max_workspace_bytes, and by VariableBatchedSvd)
  always,
};

/// Settings of a batched SVD call (a plain struct: copy it, change a field).
struct SvdOptions {
  /// What the calls of a handle compute. Job::values plans without V: the
  /// W-cycle keeps and rotates no V (a square matrix's sweeps then do half
  /// the updates), and only those calls without U and V are allowed. The
  /// one-sided jobs take the call with U and V, the side they do not compute
  /// passed as an empty View (null in the pointer forms); see Job for which
  /// of them saves work. A call with values only is allowed whatever the job.
  Job job = Job::values_and_vectors;
  /// Relative orthogonality threshold: columns a_i, a_j are rotated while
  /// |a_i^T a_j| > tolerance * ||a_i|| ||a_j||. 0 selects the default 30 u
  /// (u = unit roundoff of the scalar type: 3.3e-15 in double, 1.8e-6 in float),
  /// the accuracy target of the MAGMA batch Jacobi paper (seed 002, §10.1);
  /// otherwise it must lie in [eps, 1), eps = 2 u the machine epsilon, as
  /// LAPACK dgesvj's (the cosines' rounding errors of about u keep anything
  /// below from being met: at u, clustered singular values kept rotating).
  /// A matrix has converged after a sweep that rotates no pair, or (matrices
  /// swept by the W-cycle's blocks) one whose rotations all pass LAPACK
  /// dgesvj's test of small rotations, after which no pair would rotate by
  /// more than the tolerance.
  double tolerance = 0;
  /// Sweeps after which a matrix that has not converged is reported as such.
  /// Graded spectra take the most: about 35 at 1024^2 with singular values
  /// down to 1e-15 (LAPACK's dgesvj, sequential and pivoted, takes 25 to 29
  /// of its 30), hence twice dgesvj's bound. A matrix stops when it
  /// converges, so the bound costs only the matrices that would not.
  int max_sweeps = 60;
  /// Order of the singular values and of U's and V's columns. true (the
  /// default): descending, ties by index, as LAPACK's gesvd. false: the order
  /// of the Jacobi iteration's columns, as cuSOLVER's gesvdj with sort_svd =
  /// 0 (column c of A for m >= n, row c for m < n, is where value c started;
  /// a matrix whose columns are already orthogonal keeps them in place),
  /// except that zero singular values come last, where their left vectors are
  /// completed. The values and vectors are the same either way, only placed
  /// differently.
  bool sort = true;
  /// Shape of the vectors: false (the default) the thin ones, U m x k and V
  /// n x k (LAPACK's jobu = 'S'); true the full ones, U m x m and V n x n
  /// (jobu = 'A', numpy's full_matrices, the shapes cuSOLVER's gesvdjBatched
  /// writes): columns k .. m - 1 of a tall matrix's U (k .. n - 1 of a wide
  /// one's V) complete the first k to an orthonormal basis. A square matrix's
  /// vectors are the same either way, and so are the first k columns and
  /// the values, to the bit: the completion is one more launch after the
  /// thin SVD, the Householder QR of the k columns (or Gram-Schmidt, where
  /// few columns are missing), whose Q gives the missing ones. It applies to
  /// the sides the job computes. It costs the writes of the larger side and
  /// a QR per matrix: on an H100, double 32 x 16 x 10000 1.56 ms against 0.95
  /// thin (gesvdjBatched: 15.3), 500 x 16 x 1000 9.1 against 1.7.
  bool full_matrices = false;
  /// Leading singular triplets the outputs hold (gesvdaStridedBatched's
  /// rank; LAPACK gesvdx's range 'I' with il = 1, iu = rank): 0 (the default)
  /// all k = min(m, n); r >= 1 the r largest values with their vectors, U m
  /// x r and V n x r (all k where k <= r, so one rank serves a variable
  /// batch: each matrix keeps min(r, k_b)). S holds those r values, or, in
  /// the View forms, all k (every value, with the r leading vectors: what a
  /// truncation leaves out). The SVD is still computed whole, so the values
  /// and the columns written are the untruncated call's, to the bit; what
  /// the rank saves is the outputs' memory and writes (1000 vectors of
  /// 512 x 512 in double take 2 GB a side, their 16 leading columns 66 MB).
  /// Needs sort (leading means largest) and excludes full_matrices.
  int rank = 0;
  /// Vector lanes that orthogonalize one column pair (the W-cycle paper's
  /// alpha x warp, §IV-B-1): 0 selects them by lanes_rule; otherwise 1, 2,
  /// 4, 8, 16 or 32. Either way clamped to what the backend supports.
  int lanes_per_pair = 0;
  LanesRule lanes_rule = LanesRule::measured;
  /// batched_svd: solve matrices that fit level-0 scratch in the level-0
  /// kernel, and sweep those whose columns fit it but not beside V whole,
  /// by the same sweeps with V in memory (the default; also those that fit
  /// beside V only on the kernel's slower general row loop, where the
  /// whole sweeps are measured faster). false sends every
  /// matrix through the W-cycle's block rotations, for tests and
  /// comparisons.
  bool level0 = true;
  /// Column-block widths of the W-cycle's levels 1, 2, ... (W-cycle paper
  /// §III-C, Algorithm 2): empty lets the tuning engine choose one level;
  /// otherwise strictly decreasing, each even, the last one narrow enough
  /// that the 2w x 2w Gram EVD of its pairs fits level-0 scratch. A pair of
  /// blocks at level h that neither fits the pair SVD nor the Gram EVD in
  /// scratch is split into blocks of w_{h+1} and swept at level h + 1.
  std::vector<int> level_widths;
  /// Solve block pairs whose rows and rotation fit level-0 scratch (and
  /// w >= 16) by one-sided Jacobi in scratch (the paper's first group,
  /// Observation 1: the pair's V is its rotation) instead of the Gram GEMM
  /// and EVD. Off by default: on the H200 it was faster only for 64^2 x 100
  /// (2.9 against 3.1 ms) and slower for the Table VI group m, n <= 128
  /// (16.8 against 11.9 ms); see perf_tests/notes/wcycle.md.
  bool pair_svd = false;
  /// Level-0 scratch bytes per team that the W-cycle plans its groups with
  /// (pair SVD, Gram EVD, the engine's widest block): 0 for the device's
  /// limit; a smaller value reproduces a GPU's choices on a host backend
  /// (whose limit is far larger), for tests.
  int block_scratch_bytes = 0;
  /// Parts the W-cycle's matrices are swept in: 1 to 4 (alternate matrices;
  /// on GPU backends with Kokkos 4 or later each part runs on a stream of
  /// its own made from the caller's instance, so that one part's
  /// memory-bound updates overlap another's Gram EVDs and the parts fill
  /// each other's partial waves; elsewhere all run on the caller's
  /// instance, with the same results to the bit); 0 picks by the batch's
  /// work, count and precision on those GPU backends
  /// (tuning/sweep_instances.hpp: 1 for small batches, 2 for larger ones, 4
  /// in double and 3 in float for batches of 20 or more large matrices,
  /// where they measured up to 7% faster than 2 on an H200 and an H100;
  /// perf_tests/notes/wcycle.md) and 1 elsewhere. The call still orders
  /// itself on the caller's instance (the streams wait for it before the
  /// sweeps, and it finishes on it).
  int instances = 0;
  /// Most device memory (bytes) a BatchedSvd's workspace may take; 0 for no
  /// limit. A batch whose W-cycle workspace (BatchedSvd::
  /// planned_workspace_bytes) is larger is swept in rounds of equal numbers
  /// of matrices, each round's workspace within the limit, one round after
  /// another on the caller's instance: a batch whose arrays fit the device
  /// but whose workspace beside them would not still runs in one call. Each
  /// round is solved as a batch of its size alone would be: its block width
  /// and tailoring are planned for its size, so the results are as accurate
  /// as an unlimited call's but need not be the same bits, and fewer
  /// matrices at a time fill the device less (BatchedSvd::
  /// matrices_per_round). The last round ends at the batch's end, so it may
  /// solve again a few matrices of the round before, to the same results. A
  /// limit below one matrix's workspace is refused. Level-0 shapes hold no
  /// workspace. A VariableBatchedSvd sweeps its block-rotation matrices in
  /// rounds of consecutive matrices (VariableBatchedSvd::rounds), each as
  /// long as fits: every round keeps its own plan and task lists, and the
  /// rounds share one workspace for their working copies, so that its
  /// workspace_bytes() stays within the limit.
  std::size_t max_workspace_bytes = 0;
  /// BatchedSvd's QR preprocessing of non-square matrices (seed 002 §9.2):
  /// the Householder QR A = Q [R; 0] of the m x n working matrix (A, or A^T
  /// when m < n), one-sided Jacobi on R^T (n x n), whose Gram matrix R R^T
  /// is nearer diagonal than R^T R = A^T A (Drmac and Veselic's
  /// preconditioner, seed 002 ref. [38]: fewer sweeps), then U = Q [V_R; 0]
  /// and V = U_R (under full_matrices U's columns past n are Q's, Q e_j).
  /// Each sweep then works on n rows instead of m. The same
  /// accuracy thresholds hold either way; the values and vectors are not the
  /// same bits. info's sweeps are the triangular factor's. Under sort =
  /// false the order is that of the Jacobi columns of R^T (R's rows), not
  /// A's columns. VariableBatchedSvd solves without it (and refuses
  /// QrPreprocessing::always).
  QrPreprocessing qr = QrPreprocessing::automatic;
};

/// Per sweep, how a W-cycle plan splits its work (for tests, benchmarks and
/// users tuning SvdOptions::level_widths): BatchedSvd::plan_summary().
struct WcyclePlanSummary {
  int levels = 0;           ///< deepest level with work (1 = no recursion)
  int launch_steps = 0;     ///< steps per sweep, each a few launches
  long pair_svds = 0;       ///< pairs solved by the pair SVD in scratch (group i)
  long gram_evds = 0;       ///< pairs solved by Gram GEMM + EVD (group ii)
  std::vector<int> widths;  ///< w_1, w_2, ... of the levels planned
  int instances = 1;        ///< parts of the batch swept on instances of their own
  /// Matrices swept whole by the level-0 sweeps in scratch, V in memory (their
  /// columns fit level-0 scratch without V; SvdOptions::level0), not
  /// split into blocks.
  long whole_matrices = 0;
  /// Of gram_evds, the pairs whose step's Gram takes the kernel that loads
  /// columns in 16-byte runs, where the type's GPU Gram has one (float). The
  /// working matrices' columns are 16-byte aligned, so every pair qualifies.
  long gram_column_run_pairs = 0;
};

/// Order of the eigenvalues (and eigenvector columns) of an EVD.
enum class EigenOrder {
  descending,  ///< largest first, like singular values (the default)
  ascending,   ///< smallest first, like LAPACK ?syev
  unsorted     ///< as the Jacobi iteration leaves them
};

/// Settings of a batched symmetric EVD call (batched_gram_evd).
struct EvdOptions {
  /// Relative off-diagonal threshold: pair (i, j) is rotated while |b_ij| >
  /// tolerance * sqrt(|b_ii b_jj|) (and |b_ij| is above rounding level, u
  /// max|b|). 0 selects 30 u, as for the SVD; otherwise in [eps, 1), eps =
  /// 2 u the machine epsilon.
  double tolerance = 0;
  /// Sweeps after which a matrix that has not converged is reported as such.
  int max_sweeps = 30;
  /// 0: run to convergence. s > 0: run exactly s sweeps (the W-cycle's outer
  /// iteration uses one, seed 002 Design-2), stopping earlier only when a
  /// sweep finds nothing to rotate.
  int sweeps = 0;
  EigenOrder order = EigenOrder::descending;
  /// Threads per team (one team per matrix); 0 picks the tuned value of
  /// tuning/gram_evd_team_threads.hpp. Clamped to what the backend allows.
  int team_threads = 0;
  /// The inputs are Gram matrices (positive semidefinite), as in the W-cycle:
  /// rotate on the relative test alone, without the absolute floor u max|b|
  /// that keeps indefinite inputs from rotating on rounding noise. This is
  /// what gives the vectors of tiny eigenvalues (small singular values of
  /// the underlying columns) their accuracy. Only rows and columns whose
  /// diagonal entry is exactly zero are left alone.
  bool positive_semidefinite = false;
};

/// Per-matrix outcome of a batched SVD.
struct SvdInfo {
  int sweeps = 0;           ///< Jacobi sweeps performed (the last one found nothing to rotate)
  int converged = 0;        ///< 1 if the matrix converged within max_sweeps
  int nonfinite_input = 0;  ///< 1 if the input held NaN or Inf; its outputs are then NaN
};

/// Per-matrix outcome of a batched EVD: the same fields as for the SVD
/// (converged is 0 after `sweeps` fixed sweeps that still rotated; with fixed
/// sweeps, sweeps is 0 for an input that had nothing to rotate).
using EvdInfo = SvdInfo;

namespace Impl {
/// Whether one-sided Jacobi on an m x n matrix must keep the right vectors of
/// its work matrix (A, or A^T when m < n: see Job), which are A's V when m
/// >= n and A's U when m < n.
constexpr bool job_keeps_rotations(Job job, long m, long n) {
  return m >= n ? job_writes_v(job) : job_writes_u(job);
}

/// The job that computes U where `u` and V where `v`: what the pointer
/// forms' null U or V name.
constexpr Job job_computing(bool u, bool v) {
  return u && v ? Job::values_and_vectors
         : u    ? Job::values_and_left_vectors
         : v    ? Job::values_and_right_vectors
                : Job::values;
}

/// Columns of U and V, and values of S, that a call under `options` writes
/// for a matrix of k = min(m, n) values (SvdOptions::rank): k, or min(rank,
/// k).
inline long output_rank(const SvdOptions& options, long k) {
  return options.rank > 0 && options.rank < k ? long(options.rank) : k;
}

/// The tolerance a call runs with: the caller's, or 30 u when it is 0.
template <class Scalar>
Scalar resolved_tolerance(double tolerance) {
  return tolerance > 0 ? Scalar(tolerance)
                       : Scalar(30) * std::numeric_limits<Scalar>::epsilon() / 2;
}
}  // namespace Impl

}  // namespace kwsvd
