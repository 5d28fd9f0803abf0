#pragma once
// kwsvd::batched_small_svd: the SVD of every matrix of a batch whose working
// set fits in one team's level-0 scratch, one team per matrix (level 0 of the
// W-cycle; the W-cycle scheduler calls the same kernel for column-block pairs).

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kwsvd/api/errors.hpp"
#include "kwsvd/api/options.hpp"
#include "kwsvd/impl/matrix_slot.hpp"
#include "kwsvd/kernels/one_sided_jacobi_team.hpp"
#include "kwsvd/kernels/orthonormal_completion_team.hpp"
#include "kwsvd/tuning/lanes_per_pair.hpp"
#include "kwsvd/tuning/tailoring_plan.hpp"
#include "kwsvd/tuning/whole_matrix_sweeps.hpp"

namespace kwsvd {

/// True when an m x n SVD of this job fits in the run-time level-0 team
/// scratch of ExecSpace, i.e. batched_small_svd accepts it (a job that keeps
/// no rotations, see Job, needs no V in scratch).
template <class Scalar, class ExecSpace = Kokkos::DefaultExecutionSpace>
bool small_svd_fits(int m, int n, Job job = Job::values_and_vectors) {
  if (m < 0 || n < 0)
    return false;
  return Impl::one_sided_jacobi_scratch_bytes<ExecSpace, Scalar>(
             m, n, Impl::job_keeps_rotations(job, m, n)) <=
         std::size_t(Impl::team_scratch_bytes_max<ExecSpace>());
}

namespace Impl {

// The launch closure holds raw pointers and strides only (the layer below the
// Views): one closure type per scalar and execution space, whatever the
// layouts, and nothing whose layout could differ between host and device
// compilation passes.
template <class ExecSpace, class Scalar, int RowsPerLane>
struct BatchedSmallSvdFunctor {
  using Member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  // The kernels of short row loops (up to 4 rows a lane in double, 2 in
  // float) are compiled for teams of up to 1024 threads, which caps them at
  // 64 registers (double's took 72 uncapped) and changes ptxas's schedule:
  // H200, shapes of up to 32^2 at batches of 100 0.5 to 4.7% faster, of
  // 1000 up to 3%, of 10000 within 3% either way, so the gain is not
  // occupancy (a hundred teams leave most multiprocessors idle); float's
  // kernel of 4 rows a lane kept its 64 registers and lost 2 to 3% capped
  // (64^2 x 10 and x 100), so it is not capped
  // (perf_tests/notes/small_svd.md). Host backends ignore the bounds.
  static constexpr int capped_rows_per_lane = sizeof(Scalar) >= 8 ? 4 : 2;
  using launch_bounds =
      std::conditional_t<(RowsPerLane >= 1 && RowsPerLane <= capped_rows_per_lane),
                         Kokkos::LaunchBounds<1024, 1>, Kokkos::LaunchBounds<>>;
  using ScratchVector = TeamScratch<ExecSpace, Scalar>;
  using FlagVector = TeamScratch<ExecSpace, int>;
  StridedMatrix<const Scalar> A;  // matrix 0; matrix b starts a_batch_stride later
  std::ptrdiff_t a_batch_stride;
  Scalar* S;
  std::ptrdiff_t s_batch_stride, s_stride;
  int s_count;                 // values per matrix (min(m, n), or SvdOptions::rank's)
  StridedMatrix<Scalar> U, V;  // matrix 0 of each (empty: not computed)
  std::ptrdiff_t u_batch_stride, v_batch_stride;
  SvdInfo* info;
  std::ptrdiff_t info_stride;  // info is any rank-1 View (a column of a 2-D one, say)
  OneSidedJacobiShape shape;
  Scalar tol;
  int max_sweeps;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const int b = member.league_rank();
    const int N = shape.cols;
    // Carved exactly as one_sided_jacobi_scratch_bytes sized them. The slotted
    // functor below repeats these lines on purpose: one shared helper changed
    // these kernels' code and cost float up to 4.7% on an H100
    // (perf_tests/notes/small_svd.md, "One carving of the level-0 scratch").
    ScratchVector W(member.team_scratch(0), std::size_t(shape.ld_w) * N);
    ScratchVector Vw(member.team_scratch(0), shape.vectors ? std::size_t(shape.ld_v) * N : 0);
    ScratchVector d(member.team_scratch(0), std::size_t(N));
    ScratchVector partials(member.team_scratch(0), one_sided_lane_partial_count(shape));
    FlagVector flags(member.team_scratch(0), 2);
    StridedMatrix<const Scalar> a = A;
    a.data += b * a_batch_stride;
    OneSidedJacobiOutput<Scalar> out{S + b * s_batch_stride, s_stride, s_count, U, V,
                                     info + b * info_stride};
    // A side not computed is null with a zero batch stride: it stays null.
    // (Offsets under a null test took 8 more registers.)
    out.U.data += b * u_batch_stride;
    out.V.data += b * v_batch_stride;
    one_sided_jacobi_team<RowsPerLane>(
        member, a, shape,
        OneSidedJacobiScratch<Scalar>{W.data(), Vw.data(), d.data(), flags.data(),
                                      shape.lane_partials ? partials.data() : nullptr},
        out, tol, max_sweeps);
  }
};

// The same closure compiled for a fixed number of row blocks per lane.
template <int RowsPerLane, class ExecSpace, class Scalar>
BatchedSmallSvdFunctor<ExecSpace, Scalar, RowsPerLane> with_rows_per_lane(
    const BatchedSmallSvdFunctor<ExecSpace, Scalar, 0>& f) {
  return {f.A,
          f.a_batch_stride,
          f.S,
          f.s_batch_stride,
          f.s_stride,
          f.s_count,
          f.U,
          f.V,
          f.u_batch_stride,
          f.v_batch_stride,
          f.info,
          f.info_stride,
          f.shape,
          f.tol,
          f.max_sweeps};
}

/// A functor's Kokkos::LaunchBounds (its `launch_bounds`), or none.
template <class F, class = void>
struct LaunchBoundsOf {
  using type = Kokkos::LaunchBounds<>;
};
template <class F>
struct LaunchBoundsOf<F, std::void_t<typename F::launch_bounds>> {
  using type = typename F::launch_bounds;
};

/// Launches `functor` with one team per matrix (`count` of them), one team
/// thread per column pair of a round-robin step (`pairs`; fewer if the
/// backend cannot), `lanes` vector lanes per pair and `scratch` bytes of
/// level-0 scratch a team: the level-0 kernel's launch, and the W-cycle's
/// for the matrices it sweeps whole; under the functor's launch bounds.
template <class ExecSpace, class Functor>
void launch_column_pair_teams(const ExecSpace& exec, const char* label, int count, int pairs,
                              int lanes, std::size_t scratch, const Functor& functor) {
  using Policy = Kokkos::TeamPolicy<ExecSpace, typename LaunchBoundsOf<Functor>::type>;
  Policy probe(exec, count, 1, lanes);
  probe.set_scratch_size(0, Kokkos::PerTeam(static_cast<int>(scratch)));
  const int team_max = probe.team_size_max(functor, Kokkos::ParallelForTag());
  const int team = pairs < 1 ? 1 : (pairs < team_max ? pairs : team_max);
  Policy policy(exec, count, team, lanes);
  policy.set_scratch_size(0, Kokkos::PerTeam(static_cast<int>(scratch)));
  Kokkos::parallel_for(label, policy, functor);
}

/// Vector lanes per column pair for a group whose largest work matrix has
/// `rows` rows and whose widest one `pairs` column pairs (0: not known): the
/// caller's choice or the chosen rule (§IV-B-1).
inline int small_svd_lanes(const SvdOptions& options, int rows, long batch, int pairs) {
  return options.lanes_per_pair != 0            ? options.lanes_per_pair
         : options.lanes_rule == LanesRule::gcd ? lanes_per_pair_rule(rows)
                                                : lanes_per_pair_measured(rows, batch, pairs);
}

/// Vector lanes per column pair of the W-cycle's whole-matrix sweeps for
/// work matrices of up to `rows` rows and `pairs` column pairs: the level-0 kernel's
/// (small_svd_lanes), raised where that keeps the row loop compiled (8 row
/// blocks or fewer; V is in memory, so W alone must fit padded), unless the
/// caller forced the lanes.
inline int whole_matrix_lanes(const SvdOptions& options, int rows, long batch, int pairs) {
  int lanes = small_svd_lanes(options, rows, batch, pairs);
  while (options.lanes_per_pair == 0 && lanes < 32 && (rows + lanes - 1) / lanes > 8)
    lanes *= 2;
  return lanes;
}

/// The level-0 kernel's lanes per pair and plan for an m x n matrix of a
/// call of `batch` matrices on `limit` bytes of level-0 scratch a team:
/// what the rules below weigh against the W-cycle's routes.
struct Level0Plan {
  int lanes = 0;  // small_svd_lanes
  OneSidedJacobiShape shape;
};

template <class ExecSpace, class Scalar>
Level0Plan level0_plan(int m, int n, long batch, const SvdOptions& options, std::size_t limit) {
  const int rows = m > n ? m : n, cols = m > n ? n : m;
  const int lanes = small_svd_lanes(options, rows, batch, (cols + 1) / 2);
  return {lanes, plan_one_sided_jacobi<ExecSpace, Scalar>(
                     m, n, job_keeps_rotations(options.job, m, n), lanes, limit)};
}

/// Whether an m x n matrix that fits level-0 scratch with V, in a call of
/// `batch` matrices, is faster swept whole by the W-cycle (W in scratch, V
/// in memory): where the level-0 kernel would run the general row loop
/// (V beside W leaves no room to pad W's rows to a compiled loop) and the
/// whole-matrix sweeps a compiled one (with `limit` bytes of level-0
/// scratch a team), on the same lanes or where the batch
/// is small enough that level 0 gives a pair 16 lanes or more
/// (lanes_per_pair_measured: 400 matrices or fewer, of few pairs). H200, ms, level 0
/// against whole (perf_tests/notes/wcycle.md, "General row loops at level
/// 0"): double 49^2 x 1000 3.94 -> 3.46, 56 x 46 2.69 -> 2.35, 60 x 44 x
/// 1000 2.41 -> 2.25 (8 lanes, 7 or 8 blocks); x 100 double 120 x 30 0.475
/// -> 0.441, 256 x 16 0.285 -> 0.233, float 200 x 16 0.208 -> 0.182 (16
/// lanes at level 0, 16 or 32 whole). At large batches with more blocks
/// the whole sweeps' raised lanes lose: x 1000 double 100 x 30 1.41 ->
/// 1.71 (8 lanes, 13 blocks at level 0; 16 lanes whole). So do they once
/// the batch of 16 lanes at level 0 holds more than 2500 pairs: float 256 x
/// 32 x 200 (3200) 0.606 -> 0.654, 160 x 20 x 400 (4000) 0.313 -> 0.447,
/// double 0.433 -> 0.650 (small_svd.md, "Tall matrices at batches of 200 to
/// 400"), where float 120 x 50 x 100 (2500) still gains (0.793 -> 0.750).
///
/// Nor, for whole teams of more than 10 pairs (over 320 threads on 32
/// lanes), once the batch has more matrices than the GPU has SMs (Kokkos's
/// `concurrency` over the 2048 threads an SM of NVIDIA's sm_80 and later
/// holds: 132 on the H200): from there some SMs hold two teams, and those
/// slow the whole sweeps more than level 0. H200, ms, level 0 against whole
/// (wcycle.md, "Whole sweeps past one team an SM"): float 256 x 32 x 132
/// 0.507 -> 0.457 but x 136 0.568 -> 0.621, 256 x 24 x 132 0.359 -> 0.314
/// but x 136 0.375 -> 0.387, 192 x 32 x 136 0.493 -> 0.563; teams of 10
/// pairs or fewer still gain there, 200 x 20 x 150 0.305 -> 0.297, 256 x
/// 16 x 150 0.225 -> 0.203.
template <class ExecSpace, class Scalar>
bool sweeps_whole_instead_of_level0(int m, int n, long batch, const SvdOptions& options,
                                    const Level0Plan& level0, std::size_t limit, long concurrency) {
  const int rows = level0.shape.rows, cols = level0.shape.cols;
  if (!sweeps_whole(cols) || level0.shape.rows_per_lane != 0)
    return false;
  const int pairs = (cols + 1) / 2;
  const int whole_lanes = whole_matrix_lanes(options, rows, batch, pairs);
  const OneSidedJacobiShape whole =
      plan_one_sided_jacobi<ExecSpace, Scalar>(m, n, false, whole_lanes, limit);
  const bool sm_each = pairs <= 10 || batch <= concurrency / 2048;  // no SM holds two of many pairs
  return whole.rows_per_lane != 0 &&
         (whole_lanes == level0.lanes || (level0.lanes >= 16 && batch * pairs <= 2500 && sm_each));
}

/// Whether an m x n matrix that fits level-0 scratch with V, in a call of
/// `batch` matrices, is faster in the W-cycle's column blocks: more than 68
/// columns on the level-0 kernel's bounded nine-block row loop (65 to 72
/// rows on 8 lanes; float, since double that wide does not fit) at batches
/// above 400 (the blocks: w = 24, three blocks, one level). Not profiled:
/// the measured boundary is all there is. H200, float, level 0 against the
/// blocks (ms, best of two; wcycle.md, "Level 0 or the blocks, float 65^2
/// to 71^2"): x 1000 69^2 5.31 -> 4.85, 70^2 5.67 -> 4.84, 71^2 5.88 ->
/// 4.49; x 500 69^2 3.37 -> 2.74, 71^2 3.72 -> 2.78; but x 1000 65^2 4.22
/// -> 4.51, 67^2 4.60 -> 4.77, and x 300 69^2 2.05 -> 2.22, x 200 1.57 ->
/// 1.95. Values-only calls (no V in scratch) were not measured and stay at
/// level 0. `level0` is the matrix's plan (level0_plan), which holds its
/// columns and whether V is kept.
inline bool blocks_instead_of_level0(long batch, const Level0Plan& level0) {
  return batch > 400 && level0.shape.cols > 68 && level0.shape.vectors &&
         level0.shape.rows_per_lane == bounded_rows_per_lane(9);
}

/// Whether batched_svd (uniform or variable batch, SvdOptions::level0) solves
/// an m x n matrix of a call of `batch` matrices in the level-0 kernel:
/// where the kernel's working set fits level-0 scratch with V and neither
/// the W-cycle's whole-matrix sweeps (sweeps_whole_instead_of_level0) nor
/// its blocks (blocks_instead_of_level0) are faster, and, for jobs that keep no rotations
/// (no V in scratch: values only, or the work matrix's left vectors only),
/// where it fits without and the W-cycle would sweep it whole anyway
/// (tuning/whole_matrix_sweeps.hpp). Wider matrices that fit only without V
/// run faster through the W-cycle's blocks (H200, values only: float 100^2
/// x 200 6.16 ms in the level-0 kernel against 4.56 ms through the blocks).
template <class Scalar, class ExecSpace>
bool solves_at_level0(int m, int n, long batch, const SvdOptions& options) {
  const Job job = options.job;
  if (small_svd_fits<Scalar, ExecSpace>(m, n, Job::values_and_vectors)) {
    const std::size_t limit = std::size_t(team_scratch_bytes_max<ExecSpace>());
    const Level0Plan level0 = level0_plan<ExecSpace, Scalar>(m, n, batch, options, limit);
    return !sweeps_whole_instead_of_level0<ExecSpace, Scalar>(m, n, batch, options, level0, limit,
                                                              long(ExecSpace().concurrency())) &&
           !blocks_instead_of_level0(batch, level0);
  }
  return !job_keeps_rotations(job, m, n) && sweeps_whole(m < n ? m : n) &&
         small_svd_fits<Scalar, ExecSpace>(m, n, job);
}

/// Level-0 SVDs of a group of matrices of different shapes, one team each,
/// read and written through slots; each matrix has its own shape, planned on
/// the host for the group's one row loop: RowsPerLane compiled row blocks
/// (every shape padded to that many; negative: bounded), or 0, the general
/// loop.
template <class ExecSpace, class Scalar, int RowsPerLane = 0>
struct SlottedSmallSvdFunctor {
  using Member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using ScratchVector = TeamScratch<ExecSpace, Scalar>;
  using FlagVector = TeamScratch<ExecSpace, int>;
  IndexedSlots<Scalar> slots;
  const OneSidedJacobiShape* shapes;
  bool vectors;  // the call computes vectors (else values only: V not rotated)
  Scalar tol;
  int max_sweeps;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const int b = member.league_rank();
    OneSidedJacobiShape shape = shapes[b];
    shape.vectors = shape.vectors && vectors;
    const int N = shape.cols;
    ScratchVector W(member.team_scratch(0), std::size_t(shape.ld_w) * N);
    ScratchVector Vw(member.team_scratch(0), shape.vectors ? std::size_t(shape.ld_v) * N : 0);
    ScratchVector d(member.team_scratch(0), std::size_t(N));
    ScratchVector partials(member.team_scratch(0), one_sided_lane_partial_count(shape));
    FlagVector flags(member.team_scratch(0), 2);
    const MatrixSlot<Scalar> slot = slots(b);
    one_sided_jacobi_team<RowsPerLane>(
        member, slot.a, shape,
        OneSidedJacobiScratch<Scalar>{W.data(), Vw.data(), d.data(), flags.data(),
                                      shape.lane_partials ? partials.data() : nullptr},
        OneSidedJacobiOutput<Scalar>{slot.s, slot.s_stride, slot.s_count, slot.u, slot.v,
                                     slot.info},
        tol, max_sweeps);
  }
};

/// The host plan of such a group: per-matrix shapes (padded as far as the
/// scratch limit allows), the group's row loop (plan_group_rows_per_lane),
/// lanes per pair, team size and scratch per team.
struct SlottedSmallSvdPlan {
  std::vector<OneSidedJacobiShape> shapes;
  int rows_per_lane = 0;
  int lanes = 1, pairs = 1;
  std::size_t scratch = 0;
};

/// The size class of a level-0 matrix of a mixed batch: 32 for matrices
/// whose larger extent is at most 32, else the power of two that bounds it.
/// A launch's teams all get the team size, lanes and scratch of its largest
/// matrix, so one launch for every level-0 matrix runs the small ones with
/// the scratch of the largest (a 64 x 64 float with V takes 32 KB: 7 teams a
/// multiprocessor) and with the lanes the rule gives its rows
/// (lanes_per_pair_measured: 8 for 33 to 256 rows at batches above 400,
/// where matrices of up to 32 rows run fastest on 4). Each class is
/// launched on its own (VariableBatchedSvd). Up to 32 one class: H200,
/// perf_svd_suite's mixed_small in double (10000 matrices of up to 32 x 32
/// at level 0), one launch 3.86 ms against 3.98 in four classes (4, 8, 16,
/// 32); in float, where its 64 x 64 ones join them, 4.90 against 2.91 ms.
inline int level0_size_class(const MatrixShape& s) {
  const int e = std::max(s.rows, s.cols);
  int c = 32;
  while (c < e)
    c *= 2;
  return c;
}

template <class ExecSpace, class Scalar>
SlottedSmallSvdPlan plan_slotted_small_svd(const std::vector<MatrixShape>& shapes,
                                           const SvdOptions& options) {
  SlottedSmallSvdPlan plan;
  int rows = 1;
  for (const auto& s : shapes) {
    rows = std::max(rows, std::max(s.rows, s.cols));
    plan.pairs = std::max(plan.pairs, (std::min(s.rows, s.cols) + 1) / 2);
  }
  int lanes = small_svd_lanes(options, rows, long(shapes.size()), plan.pairs);
  const std::size_t limit = std::size_t(team_scratch_bytes_max<ExecSpace>());
  std::vector<OneSidedJacobiShape> planned;
  for (const auto& s : shapes) {
    planned.push_back(plan_one_sided_jacobi<ExecSpace, Scalar>(
        s.rows, s.cols, job_keeps_rotations(options.job, s.rows, s.cols), lanes, limit));
    planned.back().sorted = options.sort;
  }
  // One row loop for the group (plan_group_rows_per_lane): compiled with
  // the most row blocks of its matrices, every matrix padded to them with
  // zero rows (as a uniform batch pads to its compiled count) where they all
  // fit scratch padded, else bounded, else general.
  plan.rows_per_lane = plan_group_rows_per_lane<ExecSpace, Scalar>(planned, limit);
  for (const auto& shape : planned) {
    plan.shapes.push_back(shape);
    plan.scratch = std::max(plan.scratch, one_sided_jacobi_scratch_bytes<ExecSpace, Scalar>(shape));
  }
  while (lanes > 1 && lanes > vector_length_max<ExecSpace>())
    lanes /= 2;
  plan.lanes = lanes;
  return plan;
}

/// The level-0 launch of a group planned by plan_slotted_small_svd: `count`
/// teams, the functor's fields as `functor` holds them, compiled for the
/// plan's row loop.
template <class ExecSpace, class Scalar>
void launch_slotted_small_svd(const ExecSpace& exec, int count, const SlottedSmallSvdPlan& plan,
                              const SlottedSmallSvdFunctor<ExecSpace, Scalar>& functor) {
  if (count == 0)
    return;
  with_compiled_rows_per_lane(plan.rows_per_lane, [&](auto rows_per_lane) {
    const SlottedSmallSvdFunctor<ExecSpace, Scalar, decltype(rows_per_lane)::value> f{
        functor.slots, functor.shapes, functor.vectors, functor.tol, functor.max_sweeps};
    launch_column_pair_teams(exec, "kwsvd::batched_small_svd_variable", count, plan.pairs,
                             plan.lanes, plan.scratch, f);
  });
}

/// Whether an m x n matrix's SVD under `options` and `job` has vector
/// columns past k = min(m, n) to complete (SvdOptions::full_matrices): the
/// longer side of a non-square matrix, where the job computes it.
inline bool has_full_side(const SvdOptions& options, Job job, long m, long n) {
  return options.full_matrices && m != n && (m > n ? job_writes_u(job) : job_writes_v(job));
}

/// Columns per tile of a level-0 full side completed as GEMM tiles
/// (complete_columns_by_compact_wy): each thread or lane sums a row of them
/// in registers. 16, not the W-cycle's 32 (wcycle_full_side_tile_cols): this
/// launch runs many teams at once, and 32 sums a row took the kernel to 254
/// registers a thread and 12.5% occupancy (float 500 x 16 x 1000 on an
/// H100: the launch took 1.68 ms with 32, 1.09 ms with 16 at 93 registers,
/// 2.71 ms one column per thread).
constexpr int level0_full_side_tile_cols = 16;

/// The fewest columns to complete for which a level-0 full side goes by
/// GEMM tiles: the preparation (the compact WY factor, a step per kept
/// column) costs more than the tiles save on fewer. Whole calls with full U
/// on an H100, one column per thread against tiles: float 32 x 16 x 10000
/// 1.18 against 1.68 ms; 100 x 16 x 1000 within 6% either way; double 200 x
/// 16 x 1000 1.80 against 1.22, float 500 x 16 x 1000 3.41 against 1.90.
constexpr int level0_full_side_tiles_min_cols = 128;

/// Reflectors per pass of a level-0 full side's GEMM tiles over k kept
/// columns, for a launch planned with passes of `chunk`: at least one, so
/// that a side with no kept columns still takes its one pass (writing e_j).
KOKKOS_INLINE_FUNCTION constexpr int level0_full_side_pass(int chunk, int k) {
  return k < 1 ? 1 : chunk < k ? chunk : k;
}

/// Level-0 scratch bytes of one team of FullSideCompletionFunctor for an m
/// x n matrix, k = min(m, n) kept columns: the completion's workspace
/// (complete_orthonormal_columns: the reflectors, never more than the
/// level-0 kernel's W for the same shape) and tau; with `gram` a block of the
/// reflectors' Gram matrix (min(k, completion_gram_max_columns)^2 scalars);
/// with `chunk` > 0, where the side completes by reflectors, their compact
/// WY factor and W's rows for passes of level0_full_side_pass(chunk, k)
/// reflectors instead (complete_columns_by_compact_wy).
template <class ExecSpace, class Scalar>
std::size_t full_side_scratch_bytes(int m, int n, bool gram, int chunk = 0) {
  const int rows = m > n ? m : n, k = m < n ? m : n;
  const std::size_t base =
      scratch_bytes_for<ExecSpace, Scalar>(completion_work_scalars(rows, rows, k)) +
      scratch_bytes_for<ExecSpace, Scalar>(std::size_t(k));
  if (chunk > 0 && completes_by_reflectors(rows, k))
    return base + scratch_bytes_for<ExecSpace, Scalar>(completion_wy_scalars(k)) +
           scratch_bytes_for<ExecSpace, Scalar>(std::size_t(level0_full_side_pass(chunk, k)) *
                                                level0_full_side_tile_cols);
  return base + (gram ? scratch_bytes_for<ExecSpace, Scalar>(completion_gram_scalars(k)) : 0);
}

/// The scratch a FullSideCompletionFunctor launch over matrices of these
/// shapes takes, and how it completes them. `chunk` > 0: by GEMM tiles
/// (complete_columns_by_compact_wy) in passes of `chunk` reflectors, where
/// every side completed by reflectors has at least
/// level0_full_side_tiles_min_cols columns to complete and that fits
/// level-0 scratch for all of them in at most two passes (each pass past
/// the first reads the columns back). Else with the reflectors'
/// Gram matrices where those fit (`gram` set), else without;
/// `several_blocks` where some matrix completes from more than
/// completion_gram_max_columns columns (the launch then takes the
/// functor's instance that can).
struct FullSideScratch {
  std::size_t bytes = 0;
  bool gram = false;
  bool several_blocks = false;
  int chunk = 0;
};
template <class ExecSpace, class Scalar>
FullSideScratch plan_full_side_scratch(const std::vector<MatrixShape>& shapes) {
  const std::size_t limit = std::size_t(team_scratch_bytes_max<ExecSpace>());
  const auto bytes_max = [&](bool gram, int chunk) {
    std::size_t bytes = 0;
    for (const auto& s : shapes)
      bytes =
          std::max(bytes, full_side_scratch_bytes<ExecSpace, Scalar>(s.rows, s.cols, gram, chunk));
    return bytes;
  };
  // The most kept columns of a side completed by reflectors; 0 (no tiles)
  // where one such side has fewer than level0_full_side_tiles_min_cols to
  // complete.
  int reflectors = 0;
  for (const auto& s : shapes) {
    const int rows = std::max(s.rows, s.cols), k = std::min(s.rows, s.cols);
    if (!completes_by_reflectors(rows, k))
      continue;
    if (rows - k < level0_full_side_tiles_min_cols) {
      reflectors = 0;
      break;
    }
    reflectors = std::max(reflectors, k);
  }
  for (int chunk = std::min(reflectors, completion_wy_chunk_max);
       chunk > 0 && 2 * chunk >= reflectors; --chunk)
    if (const std::size_t bytes = bytes_max(false, chunk); bytes <= limit)
      return {bytes, false, false, chunk};
  FullSideScratch with{bytes_max(true, 0), true, false}, without{bytes_max(false, 0), false, false};
  for (const auto& s : shapes)
    with.several_blocks =
        with.several_blocks || std::min(s.rows, s.cols) > completion_gram_max_columns;
  without.several_blocks = with.several_blocks;
  return with.bytes <= limit ? with : without;
}

/// SvdOptions::full_matrices after the level-0 kernel: the longer side of
/// each matrix (U of a tall one, V of a wide one; slots(b), `count` of
/// them), whose first k = min(m, n) columns the kernel wrote, completed to a
/// square orthonormal matrix, a team per matrix, its workspace in scratch
/// (plan_full_side_scratch): with `chunk` > 0 a side completed by
/// reflectors goes by GEMM tiles (complete_columns_by_compact_wy; compiled
/// with `Tiles`), else by complete_orthonormal_columns (with the reflectors'
/// Gram matrix where `gram`). Matrices without such a side, or with
/// non-finite input (already NaN throughout), are left alone; an empty
/// matrix (k = 0) gets the identity. `SeveralBlocks`: compiled for k >
/// completion_gram_max_columns (complete_orthonormal_columns).
template <class ExecSpace, class Scalar, class Slots, bool SeveralBlocks, bool Tiles = false>
struct FullSideCompletionFunctor {
  using Member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using ScratchVector = TeamScratch<ExecSpace, Scalar>;
  Slots slots;
  bool gram;
  int chunk = 0;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const MatrixSlot<Scalar> slot = slots(member.league_rank());
    const int k = slot.a.rows < slot.a.cols ? slot.a.rows : slot.a.cols;
    const StridedMatrix<Scalar> side = working_left_side(slot, slot.a.rows < slot.a.cols);
    if (side.data == nullptr || side.cols <= k || slot.info->nonfinite_input != 0)
      return;
    ScratchVector work(member.team_scratch(0), completion_work_scalars(side.rows, side.cols, k));
    ScratchVector tau(member.team_scratch(0), std::size_t(k));
    if constexpr (Tiles) {
      if (completes_by_reflectors(side.cols, k)) {
        const int pass = level0_full_side_pass(chunk, k);
        ScratchVector wy(member.team_scratch(0), completion_wy_scalars(k));
        ScratchVector w(member.team_scratch(0), std::size_t(pass) * level0_full_side_tile_cols);
        complete_columns_by_compact_wy<level0_full_side_tile_cols>(
            member, side, side.rows, side.cols, k, work.data(), tau.data(), wy.data(), w.data(),
            pass);
        return;
      }
    }
    ScratchVector g(member.team_scratch(0), gram ? completion_gram_scalars(k) : 0);
    complete_orthonormal_columns<SeveralBlocks>(member, side, side.rows, side.cols, k, work.data(),
                                                tau.data(), gram ? g.data() : nullptr);
  }
};

/// Launches FullSideCompletionFunctor over `count` matrices with the
/// scratch plan_full_side_scratch gave for them.
template <class ExecSpace, class Scalar, class Slots>
void launch_full_side_completion(const ExecSpace& exec, const Slots& slots, int count,
                                 const FullSideScratch& scratch) {
  if (count == 0)
    return;
  const int lanes = std::min(8, vector_length_max<ExecSpace>());
  Kokkos::TeamPolicy<ExecSpace> policy(exec, count, Kokkos::AUTO, lanes);
  policy.set_scratch_size(0, Kokkos::PerTeam(static_cast<int>(scratch.bytes)));
  if (scratch.chunk > 0)
    Kokkos::parallel_for("kwsvd::complete_full_side", policy,
                         FullSideCompletionFunctor<ExecSpace, Scalar, Slots, false, true>{
                             slots, false, scratch.chunk});
  else if (scratch.several_blocks)
    Kokkos::parallel_for(
        "kwsvd::complete_full_side", policy,
        FullSideCompletionFunctor<ExecSpace, Scalar, Slots, true>{slots, scratch.gram});
  else
    Kokkos::parallel_for(
        "kwsvd::complete_full_side", policy,
        FullSideCompletionFunctor<ExecSpace, Scalar, Slots, false>{slots, scratch.gram});
}

/// SvdOptions::full_matrices for a uniform batch (rank-3 Views) whose thin
/// SVD the level-0 kernel wrote, or with no values (k = 0): its full sides
/// completed, if it has any (has_full_side).
template <class ExecSpace, class AView, class SView, class UView, class VView, class InfoView>
void complete_uniform_full_sides(const ExecSpace& exec, const AView& A, const SView& S,
                                 const UView& U, const VView& V, const InfoView& info,
                                 const SvdOptions& options, Job job) {
  using Scalar = typename SView::non_const_value_type;
  const int m = int(A.extent(1)), n = int(A.extent(2));
  if (has_full_side(options, job, m, n))
    launch_full_side_completion<ExecSpace, Scalar>(
        exec, uniform_slots<Scalar>(A, S, U, V, info, job), int(A.extent(0)),
        plan_full_side_scratch<ExecSpace, Scalar>({MatrixShape{m, n}}));
}

/// The level-0 launch of a checked uniform batch (batched_small_svd_impl)
/// with the planned `shape` and the backend's `lanes`: one team a matrix,
/// compiled for the shape's row loop; then the full sides' completion.
/// Tests pass the shapes of other row loops.
template <class ExecSpace, class AView, class SView, class UView, class VView, class InfoView>
void launch_uniform_small_svd(const ExecSpace& exec, const AView& A, const SView& S, const UView& U,
                              const VView& V, const InfoView& info, const SvdOptions& options,
                              Job job, const OneSidedJacobiShape& shape, int lanes) {
  using Scalar = typename SView::non_const_value_type;
  const std::size_t batch = A.extent(0), k = std::min(A.extent(1), A.extent(2));
  const Scalar tol = resolved_tolerance<Scalar>(options.tolerance);
  // The sides the job computes (an empty matrix for the others, which the
  // kernel then does not write).
  const bool left = job_writes_u(job) && k > 0, right = job_writes_v(job) && k > 0;
  const BatchedSmallSvdFunctor<ExecSpace, Scalar, 0> general{
      matrix_of<const Scalar>(A, 0),
      std::ptrdiff_t(A.stride(0)),
      S.data(),
      std::ptrdiff_t(S.stride(0)),
      std::ptrdiff_t(S.stride(1)),
      int(S.extent(1)),
      left ? matrix_of<Scalar>(U, 0) : StridedMatrix<Scalar>{},
      right ? matrix_of<Scalar>(V, 0) : StridedMatrix<Scalar>{},
      left ? std::ptrdiff_t(U.stride(0)) : 0,
      right ? std::ptrdiff_t(V.stride(0)) : 0,
      info.data(),
      std::ptrdiff_t(info.stride(0)),
      shape,
      tol,
      options.max_sweeps};
  const std::size_t scratch = one_sided_jacobi_scratch_bytes<ExecSpace, Scalar>(shape);
  with_compiled_rows_per_lane(shape.rows_per_lane, [&](auto rows_per_lane) {
    launch_column_pair_teams(exec, "kwsvd::batched_small_svd", int(batch), (shape.cols + 1) / 2,
                             lanes, scratch,
                             with_rows_per_lane<decltype(rows_per_lane)::value>(general));
  });
  complete_uniform_full_sides(exec, A, S, U, V, info, options, job);
}

template <class ExecSpace, class AView, class SView, class UView, class VView, class InfoView>
void batched_small_svd_impl(const ExecSpace& exec, const AView& A, const SView& S, const UView& U,
                            const VView& V, const InfoView& info, const SvdOptions& options,
                            Job job) {
  using Scalar = typename SView::non_const_value_type;
  static_assert(Kokkos::is_view<AView>::value && AView::rank == 3,
                "kwsvd::batched_small_svd: A must be a rank-3 View (batch, m, n)");
  static_assert(Kokkos::is_view<SView>::value && SView::rank == 2,
                "kwsvd::batched_small_svd: S must be a rank-2 View (batch, min(m, n))");
  static_assert(UView::rank == 3 && VView::rank == 3,
                "kwsvd::batched_small_svd: U and V must be rank-3 Views (batch, m|n, min(m, n))");
  static_assert(Kokkos::is_view<InfoView>::value && InfoView::rank == 1 &&
                    std::is_same<typename InfoView::value_type, SvdInfo>::value,
                "kwsvd::batched_small_svd: info must be a rank-1 View of kwsvd::SvdInfo");
  static_assert(std::is_floating_point<Scalar>::value,
                "kwsvd::batched_small_svd: the scalar type must be float or double");
  static_assert(std::is_same<typename AView::non_const_value_type, Scalar>::value &&
                    std::is_same<typename SView::value_type, Scalar>::value &&
                    std::is_same<typename UView::value_type, Scalar>::value &&
                    std::is_same<typename VView::value_type, Scalar>::value,
                "kwsvd::batched_small_svd: A, S, U and V must share one scalar type and "
                "S, U, V must not be const");
  static_assert(
      Kokkos::SpaceAccessibility<ExecSpace, typename AView::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<ExecSpace, typename SView::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<ExecSpace, typename UView::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<ExecSpace, typename VView::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<ExecSpace, typename InfoView::memory_space>::accessible,
      "kwsvd::batched_small_svd: every View must be in a memory space the execution "
      "space can access");

  constexpr const char* fn = "kwsvd::batched_small_svd";
  const std::size_t batch = A.extent(0), m = A.extent(1), n = A.extent(2);
  if (batch > std::size_t(1) << 30 || m > std::size_t(1) << 20 || n > std::size_t(1) << 20) {
    throw_invalid_argument(fn, "A", "is too large: extents " + format_extents({batch, m, n}));
  }
  require_svd_options<Scalar>(fn, options);
  require_uniform_values(fn, options, S, batch, m, n);
  require_extents(fn, "info", {info.extent(0)}, {batch}, "(batch) with batch taken from A");
  if (job != Job::values)
    require_uniform_vectors(fn, job, options, U, V, batch, m, n);
  require_disjoint_svd_storage(fn, A, S, U, V, info, job);
  if (batch == 0)
    return;
  // V in scratch only where the job asks for the work matrix's right vectors.
  const bool keeps = job_keeps_rotations(job, long(m), long(n));
  if (!small_svd_fits<Scalar, ExecSpace>(int(m), int(n), job)) {
    throw_invalid_argument(
        fn, "A",
        "has shape " + std::to_string(m) + " x " + std::to_string(n) + ", whose working set (" +
            std::to_string(
                one_sided_jacobi_scratch_bytes<ExecSpace, Scalar>(int(m), int(n), keeps)) +
            " bytes) exceeds the " + std::to_string(team_scratch_bytes_max<ExecSpace>()) +
            " bytes of level-0 team scratch of " + ExecSpace::name() +
            "; check kwsvd::small_svd_fits first");
  }

  // alpha x warp per pair (§IV-B-1): the caller's choice or the chosen rule,
  // from the row count of the work matrix; never more than the backend has.
  const int rows = int(m > n ? m : n);
  int lanes = small_svd_lanes(options, rows, long(batch), int((std::min(m, n) + 1) / 2));
  // The row-block order follows the requested lanes even where the backend
  // runs fewer (host backends: 1), so host CI exercises the same traversal.
  OneSidedJacobiShape shape = plan_one_sided_jacobi<ExecSpace, Scalar>(
      int(m), int(n), keeps, lanes, std::size_t(team_scratch_bytes_max<ExecSpace>()));
  shape.sorted = options.sort;
  while (lanes > 1 && lanes > vector_length_max<ExecSpace>())
    lanes /= 2;
  launch_uniform_small_svd(exec, A, S, U, V, info, options, job, shape, lanes);
}

}  // namespace Impl

/// Singular values and vectors of every matrix of a batch, A(b) = U(b) S(b) V(b)^T,
/// one team per matrix with the matrix resident in level-0 team scratch.
///
/// A: rank-3 View (batch, m, n), float or double, any layout, left unchanged
/// (S, U, V and info must not share storage with A or with each other).
/// S: (batch, k) with k = min(m, n), singular values in descending order.
/// U: (batch, m, k) and V: (batch, n, k), orthonormal columns ((batch, m,
/// m) and (batch, n, n) under options.full_matrices; (batch, m, r) and
/// (batch, n, r), S (batch, r) or (batch, k), under options.rank = r < k);
/// under
/// options.job = Job::values_and_left_vectors (right_vectors) V (U) is not
/// computed and must be an empty View.
/// info: (batch) kwsvd::SvdInfo: sweeps used, converged, non-finite input (a
/// matrix with NaN/Inf gets NaN outputs; the others are unaffected).
/// Every View must be accessible from `exec`; the call is asynchronous.
///
/// Throws kwsvd::invalid_argument naming the argument when extents, options or
/// the shape are unusable; small_svd_fits<Scalar, ExecSpace>(m, n, job) tells
/// beforehand whether a shape fits the run-time scratch limit.
template <class ExecSpace, class AView, class SView, class UView, class VView, class InfoView>
void batched_small_svd(const ExecSpace& exec, const AView& A, const SView& S, const UView& U,
                       const VView& V, const InfoView& info, const SvdOptions& options = {}) {
  Impl::require_vector_job("kwsvd::batched_small_svd", options.job);
  Impl::batched_small_svd_impl(exec, A, S, U, V, info, options, options.job);
}

/// Singular values only (options.job is ignored).
template <class ExecSpace, class AView, class SView, class InfoView>
void batched_small_svd(const ExecSpace& exec, const AView& A, const SView& S, const InfoView& info,
                       const SvdOptions& options = {}) {
  using Scalar = typename SView::non_const_value_type;
  using NoVectors = Kokkos::View<Scalar***, Kokkos::LayoutRight, typename SView::memory_space>;
  Impl::batched_small_svd_impl(exec, A, S, NoVectors(), NoVectors(), info, options, Job::values);
}

}  // namespace kwsvd
