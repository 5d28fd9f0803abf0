#pragma once
// The W-cycle scheduler (W-cycle paper §III, Algorithm 2) for the matrices of
// a batch (any mix of shapes) that do not fit the level-0 SVD kernel.
//
// Each matrix (transposed when wide) is split into column blocks of width w_1
// (SvdOptions::level_widths, or the tailoring auto-tuning engine's choice,
// tuning/tailoring_plan.hpp); a matrix with fewer than 2 w_1 columns uses
// half its columns. A sweep walks the steps of the blocks' recursive
// ordering (scheduler/block_ordering.hpp); every pair (i, j), i < j, of a
// step at level h lands in one of the paper's three groups
// (§III-C, Step 2):
//   (i)   its rows fit level-0 scratch: one-sided Jacobi on [A_i A_j] in
//         scratch gives J_ij directly (Observation 1, scheduler/pair_svd.hpp);
//   (ii)  its 2w_h x 2w_h Gram fits: tailored Gram GEMM, Gram EVD (one inner
//         sweep, seed 002 Design-2, its steps in the same recursive
//         ordering), fused update; the EVD's eigenvectors are sorted,
//         larger eigenvalues into block i (paper 001 §4.3, after [21]: the
//         order of the column norms settles). With both orderings, Table
//         IV's 512^2 needs 11.2 sweeps, not 14.2, in double;
//   (iii) neither: its two blocks are cut into blocks of w_{h+1} and swept at
//         level h + 1 (Step 3), the rotations applied in place, so the level
//         returns to h when that sweep ends (Step 4).
// The plan flattens this recursion into launch steps, ordered depth first
// (step s of level h, then the level-(h+1) steps of its third-group pairs):
// all work of one group of one step of one level, over all matrices, is one
// launch, and V's blocks are updated with J in the same update launch as A's
// (a solver planned for values only, SvdOptions::job, has no V at all).
// A matrix converges when a whole sweep rotates none of its pairs (the EVD's
// relative test is the one-sided criterion on the columns), or only by
// rotations so small that the next sweep would rotate nothing by more than
// the tolerance (LAPACK dgesvj's stopping test, WcycleEvdHooks::small_off2
// and small_sin2: one sweep fewer); from then on it is masked out (seed 002
// Design-4). One small device-to-host read per sweep (the count of active
// matrices) ends the loop.
//
// On a GPU a large batch is swept in two to four parts (alternate matrices;
// how many by the batch's work, count and precision), each with its own
// steps and buffers on a stream of its own (SvdOptions::instances,
// tuning/sweep_instances.hpp), their launches interleaved: one part's
// memory-bound updates run beside another's Gram EVDs, and each fills the
// others' last, partial waves (H200, two parts against one: Table IV 512^2
// 7% faster, Fig. 8(b) 512^2 x 100 14%).
//
// A matrix whose working matrix fits level-0 scratch on its own, but not
// beside V (double 64^2 on a 40 KB GPU), and has at most 64 columns
// (tuning/whole_matrix_sweeps.hpp) is not split at all: one launch
// sweeps it whole, as the level-0 kernel would, with V's rotations applied in
// memory (kernels/wcycle_team.hpp, wcycle_whole_matrix_team; SvdOptions::
// level0). Its sweeps then cost one launch, not a chain of launches per step.
//
// Not yet here: compaction of converged matrices out of the launches (they
// are masked, so their teams exit at once).

#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <vector>

#include "kwsvd/api/batched_gram_evd.hpp"
#include "kwsvd/api/batched_small_svd.hpp"
#include "kwsvd/api/options.hpp"
#include "kwsvd/impl/matrix_slot.hpp"
#include "kwsvd/kernels/one_sided_jacobi_team.hpp"
#include "kwsvd/kernels/wcycle_team.hpp"
#include "kwsvd/scheduler/block_ordering.hpp"
#include "kwsvd/scheduler/pair_svd.hpp"
#include "kwsvd/scheduler/tailored_gemm.hpp"
#include "kwsvd/tuning/gram_evd_team_threads.hpp"
#include "kwsvd/tuning/sweep_instances.hpp"
#include "kwsvd/tuning/tailoring_plan.hpp"
#include "kwsvd/tuning/whole_matrix_sweeps.hpp"

namespace kwsvd::Impl {

/// Whether the n x n Gram EVD fits `limit` bytes of level-0 scratch (and
/// the kernel's largest n).
template <class ExecSpace, class Scalar>
bool gram_evd_fits_within(int n, std::size_t limit) {
  return n <= gram_evd_max_n &&
         gram_evd_scratch_bytes<ExecSpace, Scalar>(
             n, !gram_evd_j_in_registers<ExecSpace, Scalar>(n, limit)) <= limit;
}

/// The level-0 scratch the W-cycle plans with under `options`: ExecSpace's,
/// or SvdOptions::block_scratch_bytes where that is smaller.
template <class ExecSpace>
std::size_t wcycle_scratch_limit(const SvdOptions& options) {
  const std::size_t device = std::size_t(team_scratch_bytes_max<ExecSpace>());
  return options.block_scratch_bytes > 0
             ? std::min(device, std::size_t(options.block_scratch_bytes))
             : device;
}

/// Whether the W-cycle sweeps a rows x cols working matrix whole (the
/// level-0 sweeps on it in `limit` bytes of scratch, V in memory) rather
/// than in column blocks (tuning/whole_matrix_sweeps.hpp).
template <class ExecSpace, class Scalar>
bool wcycle_sweeps_whole(const SvdOptions& options, int rows, int cols, std::size_t limit) {
  return options.level0 && sweeps_whole(cols) &&
         one_sided_jacobi_scratch_bytes<ExecSpace, Scalar>(rows, cols, false) <= limit;
}

/// The widest block w (of 48, 32, 24, 16, 8) whose 2w x 2w Gram EVD fits
/// `limit` bytes of level-0 scratch (default: ExecSpace's) with J in scratch
/// too; 0 when none does. Wider blocks whose EVD would keep J in registers
/// (w = 32 in double on a GPU) are left to SvdOptions::level_widths: that
/// EVD is slower per pair, which the engine's GEMM model does not see. On
/// the H200's Table IV (double, 200 matrices) w = 32 against 24 takes
/// 14.2 ms against 18.0 at 128^2, but 14.6 against 11.4 at 100^2, 92 against
/// 87 at 256^2 and 639 against 568 at 512^2. `any_evd`: count those too.
template <class ExecSpace, class Scalar>
int widest_evd_block(std::size_t limit = std::size_t(team_scratch_bytes_max<ExecSpace>()),
                     bool any_evd = false) {
  for (int w : {48, 32, 24, 16, 8})
    if (gram_evd_fits_within<ExecSpace, Scalar>(2 * w, limit) &&
        (any_evd || !gram_evd_j_in_registers<ExecSpace, Scalar>(2 * w, limit)))
      return w;
  return 0;
}

/// The block width of one working matrix with N columns at a level of width
/// w: w, or half its columns when that is narrower, so that every matrix of
/// two or more columns has at least two blocks to rotate. The pair's Gram is
/// still 2w x 2w, its missing columns zero (BlockPairTask).
inline int wcycle_block_width(int w, int N) {
  return std::max(1, std::min(w, (N + 1) / 2));
}

/// Blocks of a working matrix with N columns at a level of width w.
inline int wcycle_block_count(int w, int N) {
  const int wb = wcycle_block_width(w, N);
  return (N + wb - 1) / wb;
}

/// The narrowest even width w' <= w that cuts every matrix of `shapes` into
/// as many blocks as w does. Every pair's Gram, EVD and update are 2w x 2w
/// whatever its blocks' widths (missing columns are zero), so a narrow last
/// block costs its pairs as much as full ones: 100 columns at w = 24 make
/// blocks of 24, 24, 24, 24 and 4, at w = 20 five blocks of 20, the same
/// pairs and steps, each pair on 40 x 40 instead of 48 x 48. H200, double,
/// the engine's w = 24 against the level width forced to 20 or 22: Table IV
/// (200 matrices) 100^2 7.52 -> 6.20 ms (w = 20), 128^2 9.79 -> 9.40 (22),
/// Fig. 8(b) 128^2 x 100 7.34 -> 6.97 (22), same sweeps. A narrower width
/// that adds blocks is slower (256^2: 42.3 ms at 24 with 11 blocks, 48.6 at
/// 22 with 12, 46.2 at 20 with 13), hence the rule of equal counts.
inline int balanced_wcycle_width(int w, const std::vector<MatrixShape>& shapes) {
  std::vector<int> cols;
  for (const auto& s : shapes)
    if (s.cols >= 2)
      cols.push_back(s.cols);
  std::sort(cols.begin(), cols.end());
  cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
  if (cols.empty())
    return w;
  auto same_blocks = [&](const int v) {
    for (const int N : cols)
      if (wcycle_block_count(v, N) != wcycle_block_count(w, N))
        return false;
    return true;
  };
  int best = w;
  for (int v = w - 2; v >= 2 && same_blocks(v); v -= 2)
    best = v;
  return best;
}

/// The width, at most `cap`, that removes the sliver block of the widest
/// matrix of `shapes` at width w: where its N columns are one block and less
/// than half of another past a multiple of w ((b - 1) w < N < (b - 1) w + w /
/// 2 for b blocks) and b - 1 <= wcycle_widest_max_blocks, the narrowest even
/// width that cuts N into b - 1 blocks, where there is one; else w. Table
/// II's widths are 8, 16, 24, ...: N = 2^k + 1 columns at the engine's width
/// made a block of one column, whose pairs cost what full ones do (each
/// pair's Gram, EVD and update are 2w x 2w), and b - 1 more pairs and one
/// more step a sweep against 2^k columns. H200, double / float, 100 matrices
/// of 1000 rows: 1000 x 17 1.47 / 1.36 ms (w = 8, 3 blocks) against 0.78 / 0.55 at 16
/// columns (2 blocks), 1000 x 33 2.37 / 1.88 against 1.32 / 0.89, 1000 x 65
/// 5.94 / 4.28 (5 blocks) against 3.67 / 2.38. Fewer blocks mean less
/// parallelism, so only few and only by one; balanced_wcycle_width then
/// evens them out. An even count b is widened only where balancing its b
/// blocks would leave the sliver (26 columns at w = 8: 8, 8, 8, 2): b - 1
/// blocks, an odd count, take as many steps a sweep (b - 1) as b do, with
/// fewer, wider pairs, whose Jacobi chains are longer. H200, b blocks
/// balanced against b - 1 widened, double / float: 84^2 x 1 / 10 / 30
/// (double, 6 blocks of 14 against 5 of 18) -13 / -19 / -15%, 1000 x 52 x 10
/// -14 / -12%, 2000 x 50 x 100 -5 / -2%, 500 x 54 x 100 -2 / -11%, 1000 x 52
/// x 100 +1 / +0%; where the sliver stays, 1000 x 26 x 1000 (4 blocks of 8
/// against 3 of 10) +9 / +20% (perf_tests/notes/wcycle.md, "Even counts of
/// blocks").
inline int widened_wcycle_width(int w, const std::vector<MatrixShape>& shapes, int cap) {
  int N = 0;
  for (const auto& s : shapes)
    N = std::max(N, s.cols);
  if (w < 2 || N < 2)
    return w;
  const int wb = wcycle_block_width(w, N), b = (N + wb - 1) / wb;
  const int last = N - (b - 1) * wb;
  if (wb != w || b < 3 || b - 1 > wcycle_widest_max_blocks || 2 * last >= w)
    return w;
  if (b % 2 == 0) {
    // An even count keeps its blocks where balancing them removes the sliver.
    const int v = wcycle_block_width(balanced_wcycle_width(w, shapes), N);
    if (2 * (N - (b - 1) * v) >= v)
      return w;
  }
  const int per = (N + b - 2) / (b - 1), wider = (per + 1) / 2 * 2;
  return wider <= cap && wcycle_block_count(wider, N) == b - 1 ? wider : w;
}

/// Table II's plate heights and team sizes for the batch's largest row count
/// (tailoring_candidates, duplicates dropped), all at width w: the plans of a
/// level whose width is not one of the table's (a level of at most 12
/// columns, whose half is narrower than 8, or a width the caller forces).
/// Such a level had one plate of all the rows a pair, one team a pair: H200,
/// 100 matrices of 8192 x 8 (100 teams of 8192 rows) 7.14 ms double, 3.25
/// float, against 2.65 / 1.57 for 4096 x 16 (Table II's plates of m* / 8).
/// T is at most the threads of the update's team at width w (a chunk of
/// tailored_update_chunk_max rows: 16 w), which eq. (8)'s TLP counts: the
/// table's T = 256 made plates 4 times too tall at w = 4 (H200, double 1000
/// x 6 x 1000: one plate of 1000 rows a pair, teams of 64 threads, the
/// update 553 us a launch under Nsight Compute against 138 at 1000 x 16).
inline std::vector<TailoringPlan> width_off_table_candidates(int max_rows, int w, int row_align) {
  std::vector<TailoringPlan> out;
  const int update_threads = update_chunk_items(tailored_update_chunk_max, w, gemm_tile);
  for (auto p : tailoring_candidates(max_rows, 48, row_align)) {
    p.w = w;
    p.team_threads = std::max(1, std::min(p.team_threads, update_threads));
    if (std::find(out.begin(), out.end(), p) == out.end())
      out.push_back(p);
  }
  return out;
}

/// The block width and tailoring plan of a level whose working matrices
/// (M >= N each) have these shapes: the engine's choice among widths whose
/// Gram EVD fits `limit` bytes of scratch, never wider than half the columns
/// of the widest matrix (rounded up to even, at least 2), then narrowed as
/// far as no matrix gets more blocks (balanced_wcycle_width); or, when
/// `width` > 0, the engine's choice among the plans of that width. Narrower
/// matrices use narrower blocks (wcycle_block_width).
template <class ExecSpace, class Scalar>
TailoringPlan plan_wcycle_level(
    const std::vector<MatrixShape>& shapes,
    std::size_t limit = std::size_t(team_scratch_bytes_max<ExecSpace>()), int width = 0) {
  int max_rows = 1, max_cols = 1;
  for (const auto& s : shapes) {
    max_rows = std::max(max_rows, s.rows);
    max_cols = std::max(max_cols, s.cols);
  }
  const int w_max = width > 0 ? std::max(width, 8) : widest_evd_block<ExecSpace, Scalar>(limit);
  const int half = std::max(2, ((max_cols + 1) / 2 + 1) / 2 * 2);
  const int align = gemm_plate_row_align<Scalar>();
  const double threshold = active_tuning_parameters(runs_off_host<ExecSpace>()).tlp_threshold;
  std::vector<TailoringPlan> candidates;
  for (const auto& p : tailoring_candidates(max_rows, w_max, align))
    if (width > 0 ? p.w == width : p.w <= half)
      candidates.push_back(p);
  // No candidate: only the width is decided (at most half the columns and
  // w_max), the plate heights are still the engine's, by TLP alone
  // (choose_wcycle_plan's rules are about widths).
  TailoringPlan plan =
      candidates.empty()
          ? choose_tailoring_plan(
                width_off_table_candidates(
                    max_rows, width > 0 ? width : std::min(half, std::max(w_max, 2)), align),
                shapes, threshold)
          : choose_wcycle_plan(candidates, shapes, threshold,
                               wcycle_fallback_widest_max_blocks(int(sizeof(Scalar))));
  // A caller's width stands: choose_wcycle_plan's few blocks narrow the
  // widest candidate (80 columns at w = 24 to 4 blocks of 20), but the
  // scheduler cuts a level's blocks by its plan's w, which is then the
  // caller's. Widening leaves an off-table width as it is: that width is
  // the cap.
  if (width > 0) {
    plan.w = width;
    return plan;
  }
  plan.w =
      balanced_wcycle_width(widened_wcycle_width(plan.w, shapes, std::min(w_max, half)), shapes);
  // A small batch of nearly square matrices: six or eight blocks where the
  // engine's plan is narrower (makes more), planned as a caller's width
  // would be.
  const int few =
      wcycle_few_blocks_width(candidates, shapes, threshold, w_max, int(sizeof(Scalar)));
  return few > plan.w ? plan_wcycle_level<ExecSpace, Scalar>(shapes, limit, few) : plan;
}

/// Columns of a working matrix per team of the load and finish launches
/// (ColumnChunk, kernels/wcycle_team.hpp): enough teams to spread a small
/// batch of large matrices over the device (10 matrices of 512^2: 320
/// teams), few enough that a team's fixed costs stay small against its
/// columns.
constexpr int wcycle_chunk_cols = 16;

/// Columns of a full side per team of the W-cycle's completion by
/// reflectors (FullSideTile): each thread or lane sums a row of them in
/// registers (complete_columns_from_reflectors), and a tall matrix's full
/// side has many (1000 x 64 x 100: 30 teams per matrix instead of one).
constexpr int wcycle_full_side_tile_cols = 32;

/// Threads (each with a warp's lanes on CUDA) per team of the W-cycle's
/// preparation of a full side's completion (prepare_reflector_completion):
/// at most this many, and what the kernel fits.
constexpr int wcycle_prepare_threads_max = 32;

/// FullSideTile's offset of a matrix whose full side, if any, its
/// completion team completes whole.
constexpr std::size_t no_full_side_tiles = ~std::size_t(0);

/// Columns [col, col + cols) of a matrix's full side (SvdOptions::
/// full_matrices), completed by one team from the reflectors and compact WY
/// factor (at `wy` in the solver's buffer) that one team per matrix
/// prepared before (prepare_reflector_completion).
struct FullSideTile {
  int matrix = 0;
  int col = 0, cols = 0;
  /// The matrix's full_side_wy_offset_ again: the tiles' launch reading it
  /// from there measured 2 to 10% slower on an H100 (full U of tall_k,
  /// perf_tests/notes/wcycle.md, forty-ninth session).
  std::size_t wy = 0;
};

/// Where one working matrix lives in the solver's buffers.
struct WorkGeometry {
  std::size_t w_offset = 0, v_offset = 0;  ///< W: M x N (leading dimension ld), V: N x N (ldv)
  int rows = 0, cols = 0;                  ///< M >= N
  int transpose = 0;                       ///< W = A^T (the input is wide)
  int keeps_v = 1;  ///< W's right vectors kept in V and rotated (job_keeps_rotations)
  /// W's leading dimension: M in whole 16-byte runs. With it (and offsets
  /// that are such multiples) every column of W is 16-byte aligned, which
  /// the float Gram's column runs need (gram_task_allows_column_runs). With
  /// columns M apart, a matrix whose M is not a multiple of 4, and every
  /// matrix after it in the buffer, would take the plain Gram kernel (up to
  /// 2.6x slower). The padding rows are zero, and no kernel reads or writes
  /// them: tasks keep M rows. Computed, not stored: as a member it made the
  /// struct 8 bytes larger and the whole-matrix launch 3% slower (H200,
  /// double 64^2 x 10 and x 100, whose layout it does not change).
  template <class Scalar>
  KOKKOS_INLINE_FUNCTION std::size_t ld() const {
    return std::size_t(rows_in_whole_runs<Scalar>(rows));
  }
  /// V's leading dimension: N in whole 32-byte sectors (rows_in_whole_sectors),
  /// so that every column of V starts a sector. V is rotated in memory (the
  /// matrices swept whole, the update GEMM's V pairs) in runs of rows; with
  /// columns N apart most columns start inside a sector and each run reads
  /// one more (Nsight Compute, H200, double 63^2 x 1000 swept whole: 30%
  /// more global sectors than 64^2 from as many requests; in sectors, 26%
  /// fewer and 31% faster, double 57^2 to 62^2 21 to 29%). No kernel reads
  /// or writes the padding rows: tasks and loops keep N rows.
  template <class Scalar>
  KOKKOS_INLINE_FUNCTION std::size_t ldv() const {
    return std::size_t(rows_in_whole_sectors<Scalar>(cols));
  }
  /// The matrix's V in buffer `V` (null for no buffer, or where it keeps none).
  template <class Scalar>
  KOKKOS_INLINE_FUNCTION Scalar* v_in(Scalar* V) const {
    return V != nullptr && keeps_v != 0 ? V + v_offset : nullptr;
  }
};

/// A column range of a working matrix: one block at some level.
struct ColumnBlock {
  int col = 0, width = 0;
};

/// The W-cycle's hooks around each pair's Gram EVD (GramEvdNoHooks says
/// what hooks do): the pairs of converged (masked) matrices are skipped, and
/// each pair records whether its J rotates, so that the update skips the
/// pairs whose J = I (late sweeps, where most pairs have converged, then
/// cost little besides their Grams), and a rotating pair marks its matrix as
/// not converged. In the EVD's launch instead of two launches of their own.
/// The EVD also reads each Gram where the Gram GEMM left it, summing its
/// plates as it loads them, instead of a launch that sums them into B.
template <class Scalar>
struct WcycleEvdHooks {
  static constexpr bool reports = true;
  const BlockPairTask<Scalar>* tasks;  // the step's EVD pairs
  const int* mask;                     // per matrix: nonzero when done
  int* rotates;                        // per EVD pair: 0 when J = I
  int* rotated;                        // per matrix: this sweep's rotation_any | rotation_large
  GramPlateSums<Scalar> gram;          // the pairs' Grams
  // LAPACK dgesvj's stopping test (Drmač and Veselić): a sweep of an N-column
  // matrix whose largest relative off-diagonal |b_ij| / sqrt(b_ii b_jj) is
  // below sqrt(N) tol and whose largest sine s satisfies N max(off) max|s| <
  // tol leaves nothing the next sweep would rotate by more than tol, so the
  // matrix stops there instead of after a sweep that rotates nothing. Held
  // per rotation, with bounds whose product meets the second condition:
  // off^2 <= N tol^2 and s^2 <= 1 / N^3, N the smallest and the largest
  // column count of the step's matrices, so one pair of bounds per launch
  // (GramEvdControl::small_off2, small_sin2) holds for each of them.
  Scalar small_off2, small_sin2;

  KOKKOS_INLINE_FUNCTION bool skip(int t) const { return mask[tasks[t].matrix] != 0; }
  KOKKOS_INLINE_FUNCTION void done(int t, bool rotates_t, bool large) const {
    rotates[t] = rotates_t ? 1 : 0;
    const int b = tasks[t].matrix;
    if (rotates_t && mask[b] == 0)
      Kokkos::atomic_fetch_or(&rotated[b], large ? rotation_any | rotation_large : rotation_any);
  }
  KOKKOS_INLINE_FUNCTION typename GramPlateSums<Scalar>::TaskGram gram_source(int t) const {
    return gram.task(t);
  }
};

/// The sweeps of the matrices swept whole in scratch
/// (wcycle_whole_matrix_team), one team each: matrices[k] with shapes[k].
/// A matrix already done (non-finite input) is left alone; the others end
/// with their sweeps and mask 1 (converged) or 2 (max_sweeps reached).
template <class ExecSpace, class Scalar, int RowsPerLane>
struct WcycleWholeMatrixFunctor {
  using Member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using ScratchVector = TeamScratch<ExecSpace, Scalar>;
  using FlagVector = TeamScratch<ExecSpace, int>;
  Scalar* W;
  Scalar* V;  // null: no vectors
  const WorkGeometry* geometry;
  const int* matrices;
  const OneSidedJacobiShape* shapes;
  int* mask;
  int* sweeps;
  Scalar tol;
  int max_sweeps;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const int k = member.league_rank();
    const int b = matrices[k];
    const OneSidedJacobiShape shape = shapes[k];
    // Carved as one_sided_jacobi_scratch_bytes sized them without vectors.
    ScratchVector X(member.team_scratch(0), std::size_t(shape.ld_w) * std::size_t(shape.cols));
    ScratchVector d(member.team_scratch(0), std::size_t(shape.cols));
    FlagVector flags(member.team_scratch(0), 2);
    if (mask[b] != 0)
      return;
    const WorkGeometry g = geometry[b];
    bool converged = false;
    const int s = wcycle_whole_matrix_team<RowsPerLane>(
        member, W + g.w_offset, g.ld<Scalar>(), g.v_in(V), g.ldv<Scalar>(), shape,
        WholeMatrixScratch<Scalar>{X.data(), d.data(), flags.data()}, tol, max_sweeps, converged);
    Kokkos::single(Kokkos::PerTeam(member), [&]() {
      sweeps[b] = s;
      mask[b] = converged ? 1 : 2;
    });
  }
};

/// Device state and plan of the block-rotation matrices of one batch (any
/// mix of shapes, each at least one row and one column); run() allocates
/// nothing.
template <class ExecSpace, class Scalar>
class WcycleLevelSolver {
 public:
  using memory_space = typename ExecSpace::memory_space;
  template <class T>
  using Vec = Kokkos::View<T*, memory_space>;
  using Stride3 = Kokkos::View<Scalar***, Kokkos::LayoutStride, memory_space>;
  using Task = BlockPairTask<Scalar>;

  WcycleLevelSolver() = default;

  /// `shapes` are the input shapes (m x n, wide ones transposed inside);
  /// `exec` the instance the parts' streams are made from. `fn` names the
  /// public entry point in error messages (bad level_widths, instances).
  /// `allocate` false plans without allocating (workspace_bytes() only:
  /// such a solver must never run).
  WcycleLevelSolver(const ExecSpace& exec, const std::vector<MatrixShape>& shapes,
                    const SvdOptions& options, const char* fn = "kwsvd::batched_svd",
                    bool allocate = true)
      : WcycleLevelSolver(exec, shapes, options, fn,
                          WorkspaceAllocator<memory_space>(allocate, fn)) {}

  /// The same with the allocator given: one that shares an arena for the
  /// per-call state (WorkspaceAllocator::sharing) makes a plan that must be
  /// run only after its owner cleared that arena.
  WcycleLevelSolver(const ExecSpace& exec, const std::vector<MatrixShape>& shapes,
                    const SvdOptions& options, const char* fn,
                    const WorkspaceAllocator<memory_space>& alloc)
      : batch_(int(shapes.size())), vectors_(false), options_(options), alloc_(alloc) {
    const bool allocate = alloc.allocates();
    std::vector<WorkGeometry> geometry(shapes.size());
    std::vector<MatrixShape> work(shapes.size());
    std::size_t w_size = 0, v_size = 0;
    for (std::size_t b = 0; b < shapes.size(); ++b) {
      auto& g = geometry[b];
      g.transpose = shapes[b].rows < shapes[b].cols ? 1 : 0;
      g.rows = std::max(shapes[b].rows, shapes[b].cols);
      g.cols = std::min(shapes[b].rows, shapes[b].cols);
      g.keeps_v = job_keeps_rotations(options.job, shapes[b].rows, shapes[b].cols) ? 1 : 0;
      g.w_offset = w_size;
      g.v_offset = v_size;
      w_size += g.ld<Scalar>() * std::size_t(g.cols);
      if (g.keeps_v != 0)
        v_size += g.ldv<Scalar>() * std::size_t(g.cols);
      vectors_ = vectors_ || g.keeps_v != 0;
      completes_left_ = completes_left_ ||
                        (g.transpose != 0 ? job_writes_v(options.job) : job_writes_u(options.job));
      work[b] = {g.rows, g.cols};
      max_cols_ = std::max(max_cols_, g.cols);
    }
    plan_limit();
    // Matrices whose working matrix fits level-0 scratch (without V) are
    // swept whole, up to tuning/whole_matrix_sweeps.hpp's column count; the
    // others are split into blocks.
    std::vector<int> whole, blocked;
    std::vector<MatrixShape> blocked_work;
    for (int b = 0; b < batch_; ++b) {
      const auto& g = geometry[std::size_t(b)];
      if (wcycle_sweeps_whole<ExecSpace, Scalar>(options, g.rows, g.cols, limit_)) {
        whole.push_back(b);
      } else {
        blocked.push_back(b);
        blocked_work.push_back(work[std::size_t(b)]);
      }
    }
    plan_levels(blocked_work.empty() ? work : blocked_work, fn);
    W_ = alloc_.template zeros<Scalar>("kwsvd::W", std::max<std::size_t>(w_size, 1));
    V_ = alloc_.template zeros<Scalar>("kwsvd::V", vectors_ ? std::max<std::size_t>(v_size, 1) : 1);
    geometry_ = alloc_.upload(geometry, "kwsvd::geometry");
    plan_chunks(geometry);
    plan_full_side_tiles(geometry);
    scale_ = alloc_.template zeros<Scalar>("kwsvd::scale", batch_);
    state_ = alloc_.template zeros<int>("kwsvd::state", 4 * std::size_t(batch_));
    double sweep_work = 0;  // sum of M N^2, what a sweep's work grows with
    for (const auto& s : blocked_work)
      sweep_work += double(s.rows) * double(s.cols) * double(s.cols);
    const int wanted = options.instances > 0
                           ? options.instances
                           : sweep_instances(splits_into_streams<ExecSpace>(), sweep_work,
                                             int(blocked.size()), sizeof(Scalar) < 8);
    const int parts = std::max(1, std::min(wanted, int(blocked.size())));
    build_steps(geometry, blocked, parts);
    plan_whole(geometry, whole);
    // With one part beside matrices swept whole, the part runs on a stream
    // of its own too, so that the whole sweeps (on exec) overlap it.
    if constexpr (splits_into_streams<ExecSpace>())
      if (allocate && (parts > 1 || (!whole.empty() && !blocked.empty())))
        streams_ = stream_instances(exec, std::max(parts, 2));
    active_ = alloc_.template zeros<int>("kwsvd::active", std::size_t(parts));
    if (allocate)
      host_active_ = Kokkos::create_mirror_view(active_);
  }

  /// Bytes of device memory the plan holds (its workspace, plans and task
  /// lists; with `allocate` false, what it would hold; not the part of it
  /// carved from a shared arena).
  std::size_t workspace_bytes() const { return alloc_.bytes(); }
  /// Bytes of the per-call state carved from a shared arena (0 unless the
  /// allocator shares one).
  std::size_t arena_bytes() const { return alloc_.arena_bytes(); }

  /// Runs the parts on `other`'s streams instead of its own, where both
  /// have streams and `other` has as many: plans that run one after another
  /// (a variable batch's rounds) then hold one set of streams in all.
  void share_streams(const WcycleLevelSolver& other) {
    if (!streams_.empty() && other.streams_.size() >= streams_.size())
      streams_ = other.streams_;
  }
  std::size_t stream_count() const { return streams_.size(); }

  /// w_1, the column-block width of level 1.
  int width() const { return plans_.empty() ? 0 : plans_.front().w; }
  /// The tailoring plan of level 1's GEMMs.
  const TailoringPlan& plan() const { return plans_.front(); }
  const WcyclePlanSummary& summary() const { return summary_; }

  /// The SVD of every matrix b, read from and written to slots(b) (an
  /// accessor: UniformSlots or IndexedSlots); `vectors`: the vectors of the
  /// solver's job too (SvdOptions::job), in the slots' U and V (a side the
  /// job does not compute is null there), else values only. The public
  /// entry points check the slots against the job before they call this.
  template <class Slots>
  void run(const ExecSpace& exec, const Slots& slots, bool vectors) {
    Scalar* W = W_.data();
    Scalar* Vw = vectors_ ? V_.data() : nullptr;
    const WorkGeometry* geometry = geometry_.data();
    Scalar* scale = scale_.data();
    int* mask = state_.data();  // 1: done (converged or non-finite); 2: swept whole, not converged
    int* rotated = state_.data() + batch_;     // this sweep's rotation_any | rotation_large
    int* sweeps = state_.data() + 2 * batch_;  // sweeps performed
    int* nonfinite = state_.data() + 3 * batch_;
    using Policy = Kokkos::TeamPolicy<ExecSpace>;
    using Member = typename Policy::member_type;
    int lanes = std::min(8, vector_length_max<ExecSpace>());

    // 1. Load (transpose, NaN scan), then scale and V = I, state reset: a
    // team per chunk of columns (ColumnChunk), the scale from the largest
    // magnitude over the matrix's chunks (the same scale as over the whole
    // matrix: the maximum is exact).
    const ColumnChunk* chunks = chunks_.data();
    const int nchunks = int(chunks_.extent(0));
    Scalar* chunk_max = chunk_max_.data();
    const bool multi_chunk = nchunks > batch_;  // some matrix has more than one chunk
    // A chunk's scaling and V = I, given its matrix's largest magnitude; the
    // matrix's first chunk resets its state.
    const auto scale_chunk = KOKKOS_LAMBDA(const Member& member, const ColumnChunk& ch,
                                           const WorkGeometry& g, const Scalar amax) {
      const int b = ch.matrix;
      const bool finite = amax < scalar_limits<Scalar>::infinity();
      const Scalar s = finite ? power_of_two_scale(amax) : Scalar(1);
      wcycle_scale_columns(member, W + g.w_offset, g.ld<Scalar>(), g.rows, ch.col, ch.cols, s,
                           g.v_in(Vw), g.ldv<Scalar>(), g.cols);
      if (ch.col == 0)
        Kokkos::single(Kokkos::PerTeam(member), [&]() {
          scale[b] = s;
          nonfinite[b] = finite ? 0 : 1;
          mask[b] = finite ? 0 : 1;
          rotated[b] = 0;
          sweeps[b] = 0;
        });
    };
    Kokkos::parallel_for(
        "kwsvd::wcycle_load", Policy(exec, nchunks, Kokkos::AUTO, lanes),
        KOKKOS_LAMBDA(const Member& member) {
          const int t = member.league_rank();
          const ColumnChunk ch = chunks[t];
          const WorkGeometry g = geometry[ch.matrix];
          const Scalar amax = wcycle_load_columns(member, slots(ch.matrix).a, g.transpose != 0,
                                                  W + g.w_offset, g.ld<Scalar>(), ch.col, ch.cols);
          if (ch.count > 1) {
            Kokkos::single(Kokkos::PerTeam(member), [&]() { chunk_max[t] = amax; });
            return;
          }
          // The whole matrix is this team's: scaled here, no second pass.
          member.team_barrier();
          scale_chunk(member, ch, g, amax);
        });
    if (multi_chunk)
      Kokkos::parallel_for(
          "kwsvd::wcycle_scale", Policy(exec, nchunks, Kokkos::AUTO, lanes),
          KOKKOS_LAMBDA(const Member& member) {
            const ColumnChunk ch = chunks[member.league_rank()];
            if (ch.count == 1)
              return;  // done by the load
            Scalar amax = 0;
            for (int k = ch.first; k < ch.first + ch.count; ++k)
              amax = chunk_max[k] > amax ? chunk_max[k] : amax;
            scale_chunk(member, ch, geometry[ch.matrix], amax);
          });

    // 2. Sweeps of block rotations, every level's steps in their order;
    // the parts' launches interleaved step by step, on streams of their own
    // (which start after the load) where the backend has them.
    const std::size_t parts = parts_.size();
    const auto instance = [&](std::size_t p) -> const ExecSpace& {
      return streams_.empty() ? exec : streams_[p];
    };
    if (!streams_.empty())
      exec.fence();
    // The matrices swept whole: one launch on the caller's instance, beside
    // the parts' sweeps where those run on streams of their own (GPU
    // backends); the finish below follows it on the same instance.
    run_whole(exec, vectors ? Vw : nullptr, mask, sweeps);
    std::array<bool, sweep_instances_max> running{};  // per part: still sweeping
    running.fill(true);
    std::size_t most_steps = 0;
    for (const auto& part : parts_)
      most_steps = std::max(most_steps, part.steps.size());
    for (int sweep = 0; sweep < options_.max_sweeps && most_steps > 0; ++sweep) {
      for (std::size_t s = 0; s < most_steps; ++s)
        for (std::size_t p = 0; p < parts; ++p)
          if (running[p] && s < parts_[p].steps.size())
            run_step(instance(p), parts_[p], parts_[p].steps[s], mask, rotated);
      for (std::size_t p = 0; p < parts; ++p) {
        if (!running[p])
          continue;
        const int* matrices = parts_[p].matrices.data();
        Kokkos::View<int, memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>> active(
            active_.data() + p);
        Kokkos::parallel_reduce(
            "kwsvd::wcycle_converged",
            Kokkos::RangePolicy<ExecSpace>(instance(p), 0, int(parts_[p].matrices.size())),
            KOKKOS_LAMBDA(const int k, int& count) {
              const int b = matrices[k];
              if (mask[b] != 0)
                return;
              ++sweeps[b];
              if ((rotated[b] & rotation_large) == 0)  // no rotation, or small ones only
                mask[b] = 1;
              else
                ++count;
              rotated[b] = 0;
            },
            active);
      }
      // The sweep's one device-to-host read: every part's count of active
      // matrices, once every part's work is done (so the finish below, on
      // exec, follows the parts' last sweep too).
      for (std::size_t p = 1; p < parts; ++p)
        instance(p).fence();
      Kokkos::deep_copy(instance(0), host_active_, active_);
      instance(0).fence();
      bool any = false;
      for (std::size_t p = 0; p < parts; ++p) {
        running[p] = running[p] && host_active_(p) > 0;
        any = any || running[p];
      }
      if (!any)
        break;
    }
    if (most_steps == 0) {  // single columns only: nothing to rotate
      Kokkos::parallel_for(
          "kwsvd::wcycle_single_block", Kokkos::RangePolicy<ExecSpace>(exec, 0, batch_),
          KOKKOS_LAMBDA(const int b) {
            if (mask[b] == 0) {
              mask[b] = 1;
              sweeps[b] = 1;
            }
          });
    }

    // 3. Sigma, U, V and info, a team per chunk of columns as the load: the
    // column norms first, then each column's rank among its matrix's norms
    // and its outputs.
    Scalar* norms = norms_.data();
    const std::size_t* norms_offset = norms_offset_.data();
    const bool sorted = options_.sort;
    if (multi_chunk)
      Kokkos::parallel_for(
          "kwsvd::wcycle_norms", Policy(exec, nchunks, Kokkos::AUTO, lanes),
          KOKKOS_LAMBDA(const Member& member) {
            const ColumnChunk ch = chunks[member.league_rank()];
            if (ch.count == 1 || nonfinite[ch.matrix] != 0)
              return;  // a one-chunk matrix's norms are the finish's
            const WorkGeometry g = geometry[ch.matrix];
            wcycle_column_norms(member, W + g.w_offset, g.ld<Scalar>(), g.rows, ch.col, ch.cols,
                                lanes, norms + ch.norms);
          });
    using ScratchVector = TeamScratch<ExecSpace, Scalar>;
    Policy finish(exec, nchunks, Kokkos::AUTO, lanes);
    finish.set_scratch_size(0, Kokkos::PerTeam(int(ScratchVector::shmem_size(max_cols_))));
    Kokkos::parallel_for(
        "kwsvd::wcycle_finish", finish, KOKKOS_LAMBDA(const Member& member) {
          const ColumnChunk ch = chunks[member.league_rank()];
          const int b = ch.matrix;
          const WorkGeometry g = geometry[b];
          const MatrixSlot<Scalar> slot = slots(b);
          const bool bad = nonfinite[b] != 0;
          // Every column's rank reads all the matrix's norms: from scratch
          // (a one-chunk matrix computes its own there).
          ScratchVector own(member.team_scratch(0), g.cols);
          if (!bad) {
            if (ch.count == 1)
              wcycle_column_norms(member, W + g.w_offset, g.ld<Scalar>(), g.rows, 0, g.cols, lanes,
                                  own.data());
            else
              Kokkos::parallel_for(Kokkos::TeamVectorRange(member, g.cols),
                                   [&](const int c) { own(c) = norms[ch.norms + std::size_t(c)]; });
            member.team_barrier();
          }
          wcycle_finish_columns(member, W + g.w_offset, g.ld<Scalar>(), g.v_in(Vw), g.ldv<Scalar>(),
                                g.rows, g.cols, ch.col, ch.cols, own.data(), scale[b],
                                g.transpose != 0, bad, slot.s, slot.s_stride, slot.s_count, slot.u,
                                slot.v, sorted);
          if (ch.col == 0)
            Kokkos::single(Kokkos::PerTeam(member), [&]() {
              slot.info->sweeps = sweeps[b];
              slot.info->nonfinite_input = nonfinite[b];
              slot.info->converged = nonfinite[b] == 0 && mask[b] == 1 ? 1 : 0;
            });
        });

    // 4. The left vectors of zero singular values (exact, or numerically
    // zero: resolved_squared_norm), which the finish left zero, and under
    // SvdOptions::full_matrices the columns past N of a left side of M
    // columns, completed to an orthonormal set (complete_orthonormal_columns)
    // by a team per matrix that has such columns; the others return at once.
    // The finished working matrix is the team's workspace, the matrix's
    // column norms (read by the finish) its reflector factors. A full side
    // completed by reflectors (plan_full_side_tiles) is left to two launches
    // of its own: a team per matrix prepares its reflectors and their
    // compact WY factor (prepare_reflector_completion), then its columns
    // are spread over teams (complete_full_side_tiles).
    const std::size_t* wy_offset = full_side_wy_offset_.data();
    Scalar* wy = full_side_wy_.data();
    if (vectors && completes_left_)
      Kokkos::parallel_for(
          "kwsvd::wcycle_complete_columns", Policy(exec, batch_, Kokkos::AUTO, lanes),
          KOKKOS_LAMBDA(const Member& member) {
            const int b = member.league_rank();
            const WorkGeometry g = geometry[b];
            if (nonfinite[b] != 0 || g.cols == 0)
              return;
            const MatrixSlot<Scalar> slot = slots(b);
            const StridedMatrix<Scalar> left = working_left_side(slot, g.transpose != 0);
            if (left.data == nullptr)  // the job does not compute them
              return;
            // The first zero value among the columns written (all N, or the
            // leading ones of SvdOptions::rank, whose values S holds).
            int r0 = left.cols < g.cols ? left.cols : g.cols;
            while (r0 > 0 && slot.s[(r0 - 1) * slot.s_stride] == Scalar(0))
              --r0;
            // The zero values' columns first, as a thin call completes them,
            // so that the first N columns are its bits (under a rank, those
            // of them that are written: complete_orthonormal_columns); then
            // a full side's.
            if (r0 < g.cols && r0 < left.cols)
              complete_orthonormal_columns(member, left, g.rows, g.cols, r0, W + g.w_offset,
                                           norms + norms_offset[b]);
            if (left.cols > g.cols) {
              member.team_barrier();
              if (wy_offset == nullptr || wy_offset[b] == no_full_side_tiles)
                complete_orthonormal_columns(member, left, g.rows, left.cols, g.cols,
                                             W + g.w_offset, norms + norms_offset[b]);
            }
          });
    if (vectors && full_side_tiles_.extent(0) > 0) {
      const int* tiled = full_side_matrices_.data();
      const auto prepare = KOKKOS_LAMBDA(const Member& member) {
        const int b = tiled[member.league_rank()];
        const WorkGeometry g = geometry[b];
        if (nonfinite[b] != 0)
          return;
        const MatrixSlot<Scalar> slot = slots(b);
        const StridedMatrix<Scalar> left = working_left_side(slot, g.transpose != 0);
        if (left.data == nullptr)
          return;
        prepare_reflector_completion(member, left, g.rows, g.cols, W + g.w_offset,
                                     norms + norms_offset[b], wy + wy_offset[b]);
      };
      // A team per matrix, its columns worked on in turn, each step a few
      // reductions down the columns: a warp's lanes per column and as many
      // threads as fit (the matrices are few: 100 teams on 132 SMs for
      // 1000 x 64 x 100), so that a step's columns run at once. Full U of
      // double 1000 x 64 x 100 on an H100: this launch took 14.8 ms with 8
      // lanes and Kokkos::AUTO threads, 10.3 ms with 32 lanes, 2.5 ms with
      // 32 lanes and up to 32 threads.
      const int count = int(full_side_matrices_.extent(0));
      const int wide = std::min(32, vector_length_max<ExecSpace>());
      const int threads = std::max(
          1,
          std::min(wcycle_prepare_threads_max,
                   Policy(exec, count, 1, wide).team_size_max(prepare, Kokkos::ParallelForTag())));
      Kokkos::parallel_for("kwsvd::wcycle_prepare_full_side", Policy(exec, count, threads, wide),
                           prepare);
      complete_full_side_tiles(exec, slots, lanes);
    }
  }

  /// The full sides' columns completed by reflectors, a team per tile
  /// (FullSideTile), from what the preparation launch left for each matrix
  /// (complete_columns_from_reflectors). (Public only because CUDA's
  /// extended lambdas cannot live in private members.)
  template <class Slots>
  void complete_full_side_tiles(const ExecSpace& exec, const Slots& slots, int lanes) const {
    using Policy = Kokkos::TeamPolicy<ExecSpace>;
    using Member = typename Policy::member_type;
    using ScratchVector = TeamScratch<ExecSpace, Scalar>;
    constexpr int tile_cols = wcycle_full_side_tile_cols;
    const int chunk = full_side_chunk_;
    const std::size_t w_scalars = std::size_t(chunk) * tile_cols;
    const FullSideTile* tiles = full_side_tiles_.data();
    const WorkGeometry* geometry = geometry_.data();
    const int* nonfinite = state_.data() + 3 * batch_;
    const Scalar* W = W_.data();
    const Scalar* wy = full_side_wy_.data();
    Policy policy(exec, int(full_side_tiles_.extent(0)), Kokkos::AUTO, lanes);
    policy.set_scratch_size(0, Kokkos::PerTeam(int(ScratchVector::shmem_size(w_scalars))));
    Kokkos::parallel_for(
        "kwsvd::wcycle_complete_full_side", policy, KOKKOS_LAMBDA(const Member& member) {
          const FullSideTile tile = tiles[member.league_rank()];
          const int b = tile.matrix;
          if (nonfinite[b] != 0)
            return;
          const WorkGeometry g = geometry[b];
          const MatrixSlot<Scalar> slot = slots(b);
          const StridedMatrix<Scalar> left = working_left_side(slot, g.transpose != 0);
          if (left.data == nullptr)
            return;
          ScratchVector w(member.team_scratch(0), w_scalars);
          complete_columns_from_reflectors<tile_cols>(member, left, g.rows, tile.col,
                                                      tile.col + tile.cols, g.cols, W + g.w_offset,
                                                      wy + tile.wy, w.data(), chunk);
        });
  }

  /// One launch step: the pairs of one step of one level's ordering, over
  /// all matrices of a part, by group. J holds the pair SVDs' rotations
  /// first, then the EVDs'.
  struct Step {
    int level = 0, w = 0;
    int svd_pairs = 0, evd_pairs = 0, svd_rows = 0, svd_lanes = 1;
    int evd_min_cols = 0, evd_max_cols = 0;  // of the EVD pairs' matrices
    Vec<Task> svd_tasks;                     // A's pairs of group (i), pair = 0 .. svd_pairs - 1
    Vec<Task> gram_tasks;                    // A's pairs of group (ii), pair = svd_pairs + k
    Vec<Task> update_tasks;                  // group (ii)'s A pairs, then V's pairs of both groups
    TailoredGemmWork<ExecSpace> gram_work, update_work;
  };

  /// Matrices swept together on one instance: their steps and the buffers
  /// the steps reuse one after another.
  struct Part {
    Vec<int> matrices;  // indices into the batch
    std::vector<Step> steps;
    Vec<Scalar> partial, B, J, lambda;
    Vec<EvdInfo> evd_info;
    Vec<int> rotates;  // per J of a step: 0 when J = I (the update skips the pair)
  };

  /// One launch step: the pair SVDs; the Grams and their EVD, which marks
  /// the matrices it rotated; one update of A's and V's blocks. (Public
  /// only because CUDA's extended lambdas cannot live in private members.)
  void run_step(const ExecSpace& exec, const Part& part, const Step& step, const int* mask,
                int* rotated);

 private:
  /// Host-side lists of one step while the plan is built.
  struct StepTasks {
    std::vector<Task> svd, evd, v_svd, v_evd;
  };

  /// The scratch bytes the groups are planned with (limit_).
  /// SvdOptions::block_scratch_bytes was checked by require_svd_options.
  void plan_limit() { limit_ = wcycle_scratch_limit<ExecSpace>(options_); }

  /// Level widths and their GEMM plans: the caller's, or the engine's one
  /// level. Throws when the last of SvdOptions::level_widths (whose form
  /// require_svd_options checked) has a Gram EVD too large for the scratch.
  void plan_levels(const std::vector<MatrixShape>& work, const char* fn) {
    if (options_.level_widths.empty()) {
      plans_.push_back(plan_wcycle_level<ExecSpace, Scalar>(work, limit_));
    } else {
      const auto& lw = options_.level_widths;
      if (!gram_evd_fits_within<ExecSpace, Scalar>(2 * lw.back(), limit_)) {
        throw_invalid_argument(
            fn, "options.level_widths",
            "must end with a width whose 2w x 2w Gram EVD fits the " + std::to_string(limit_) +
                " bytes of level-0 scratch planned with on " + std::string(ExecSpace::name()) +
                " (w <= " + std::to_string(widest_evd_block<ExecSpace, Scalar>(limit_, true)) +
                " of 48, 32, 24, 16, 8); got " + format_widths(lw));
      }
      for (int w : lw)
        plans_.push_back(plan_wcycle_level<ExecSpace, Scalar>(work, limit_, w));
    }
  }

  /// Element `at` of buffer x; null in a plan that allocates nothing.
  static Scalar* offset(const Vec<Scalar>& x, std::size_t at) {
    return x.data() != nullptr ? x.data() + at : nullptr;
  }

  static Task pair_task(Scalar* data, int rows, int ld, const ColumnBlock& bi,
                        const ColumnBlock& bj, int matrix) {
    Task t;
    t.data = data;
    t.row_stride = 1;
    t.col_stride = ld;
    t.rows = rows;
    t.col_i = bi.col;
    t.col_j = bj.col;
    t.width_i = bi.width;
    t.width_j = bj.width;
    t.matrix = matrix;
    return t;
  }

  /// Cuts a block into blocks of width at most w.
  static void split_block(const ColumnBlock& block, int w, std::vector<ColumnBlock>& out) {
    for (int c = 0; c < block.width; c += w)
      out.push_back({block.col + c, std::min(w, block.width - c)});
  }

  /// The ordering's steps of matrix b's `blocks` at level h (0-based),
  /// under the step path `path`: every pair goes to its group's list of the
  /// step, or down one level (Algorithm 2, Step 2 and 3).
  void plan_blocks(int b, const WorkGeometry& g, int h, std::vector<int>& path,
                   const std::vector<ColumnBlock>& blocks,
                   std::map<std::vector<int>, StepTasks>& steps) const {
    const int count = int(blocks.size());
    if (count < 2)
      return;
    const int w = plans_[std::size_t(h)].w;
    const bool svd = options_.pair_svd && pair_svd_fits<ExecSpace, Scalar>(g.rows, w, limit_);
    const bool evd = gram_evd_fits_within<ExecSpace, Scalar>(2 * w, limit_);
    const auto order = block_pair_ordering(count);
    for (int step = 0; step < int(order.size()); ++step) {
      path.push_back(step);
      for (const auto& [i, j] : order[std::size_t(step)]) {
        const ColumnBlock& bi = blocks[std::size_t(i)];
        const ColumnBlock& bj = blocks[std::size_t(j)];
        if (svd || evd || h + 1 == int(plans_.size())) {
          StepTasks& s = steps[path];
          auto& tasks = svd ? s.svd : s.evd;
          tasks.push_back(
              pair_task(offset(W_, g.w_offset), g.rows, int(g.ld<Scalar>()), bi, bj, b));
          if (g.keeps_v != 0) {
            // V's pair takes the J of A's: its index in A's list for now
            // (build_part adds the group's offset).
            (svd ? s.v_svd : s.v_evd)
                .push_back(
                    pair_task(offset(V_, g.v_offset), g.cols, int(g.ldv<Scalar>()), bi, bj, b));
            (svd ? s.v_svd : s.v_evd).back().pair = int(tasks.size()) - 1;
          }
        } else {
          std::vector<ColumnBlock> sub;
          split_block(bi, plans_[std::size_t(h) + 1].w, sub);
          split_block(bj, plans_[std::size_t(h) + 1].w, sub);
          plan_blocks(b, g, h + 1, path, sub, steps);
        }
      }
      path.pop_back();
    }
  }

  /// Plans every step of a sweep of the `blocked` matrices for each of
  /// `parts` parts (blocked[k] in part k % parts, so that both see the
  /// batch's mix of shapes) and sizes their buffers.
  void build_steps(const std::vector<WorkGeometry>& geometry, const std::vector<int>& blocked,
                   int parts) {
    summary_ = WcyclePlanSummary{};
    for (const auto& plan : plans_)
      summary_.widths.push_back(plan.w);
    for (int p = 0; p < parts; ++p) {
      std::vector<int> matrices;
      for (std::size_t k = std::size_t(p); k < blocked.size(); k += std::size_t(parts))
        matrices.push_back(blocked[k]);
      parts_.push_back(build_part(geometry, matrices));
      summary_.launch_steps = std::max(summary_.launch_steps, int(parts_.back().steps.size()));
    }
    summary_.instances = parts;
  }

  /// Plans every step of a sweep of these matrices (depth first: std::map
  /// orders a step's path before the paths of its level-(h+1) steps) and
  /// sizes the buffers.
  Part build_part(const std::vector<WorkGeometry>& geometry, const std::vector<int>& matrices) {
    Part part;
    part.matrices = alloc_.upload(matrices, "kwsvd::part_matrices");
    std::map<std::vector<int>, StepTasks> planned;
    std::vector<int> path;
    for (const int b : matrices) {
      const auto& g = geometry[std::size_t(b)];
      const int wb = wcycle_block_width(plans_.front().w, g.cols);
      std::vector<ColumnBlock> blocks;
      split_block({0, g.cols}, wb, blocks);
      plan_blocks(b, g, 0, path, blocks, planned);
    }
    std::size_t j_size = 1, b_size = 1, partial = 1, lambda = 1, evd_pairs = 1, step_pairs = 1;
    for (auto& [key, lists] : planned) {
      Step step;
      step.level = int(key.size()) - 1;
      const TailoringPlan& plan = plans_[std::size_t(step.level)];
      step.w = plan.w;
      step.svd_pairs = int(lists.svd.size());
      step.evd_pairs = int(lists.evd.size());
      std::vector<Task> update;
      std::vector<int> gram_rows, update_rows;
      for (int k = 0; k < step.svd_pairs; ++k) {
        lists.svd[std::size_t(k)].pair = k;
        step.svd_rows = std::max(step.svd_rows, lists.svd[std::size_t(k)].rows);
      }
      // V's pairs (of the matrices that keep V) hold their A pair's index.
      for (auto& t : lists.v_evd)
        t.pair += step.svd_pairs;
      for (int k = 0; k < step.evd_pairs; ++k) {
        const Task& t = lists.evd[std::size_t(k)];
        lists.evd[std::size_t(k)].pair = step.svd_pairs + k;
        gram_rows.push_back(t.rows);
        const int cols = geometry[std::size_t(t.matrix)].cols;
        step.evd_min_cols = k == 0 ? cols : std::min(step.evd_min_cols, cols);
        step.evd_max_cols = std::max(step.evd_max_cols, cols);
      }
      for (const auto* list : {&lists.evd, &lists.v_svd, &lists.v_evd})
        for (const auto& t : *list) {
          update.push_back(t);
          update_rows.push_back(t.rows);
        }
      // Pairs 0: the rule as fitted before it took the pairs. The pair SVD
      // is opt-in; with it, passing w (a team's pairs) moved the float
      // points that run it by -12% to +21% on the H200 (wcycle.md, "Level 0
      // or the blocks, float 65^2 to 71^2"), so it was not kept.
      step.svd_lanes = small_svd_lanes(options_, step.svd_rows, long(step.svd_pairs), 0);
      step.svd_tasks = alloc_.upload(lists.svd, "kwsvd::svd_tasks");
      step.gram_tasks = alloc_.upload(lists.evd, "kwsvd::gram_tasks");
      step.update_tasks = alloc_.upload(update, "kwsvd::update_tasks");
      step.gram_work = make_tailored_gemm_work<ExecSpace>(gram_rows, plan, 0, alloc_);
      step.gram_work.gram_column_runs = most_rows_allow_column_runs(lists.evd);
      step.update_work = make_tailored_gemm_work<ExecSpace>(update_rows, plan, 0, alloc_);
      const std::size_t nn = std::size_t(2 * step.w) * std::size_t(2 * step.w);
      j_size = std::max(j_size, std::size_t(step.svd_pairs + step.evd_pairs) * nn);
      b_size = std::max(b_size, std::size_t(step.evd_pairs) * nn);
      lambda = std::max(lambda, std::size_t(step.evd_pairs) * std::size_t(2 * step.w));
      evd_pairs = std::max(evd_pairs, std::size_t(step.evd_pairs));
      step_pairs = std::max(step_pairs, std::size_t(step.svd_pairs + step.evd_pairs));
      partial = std::max(partial, tailored_gram_partial_size(step.gram_work));
      summary_.levels = std::max(summary_.levels, step.level + 1);
      summary_.pair_svds += step.svd_pairs;
      summary_.gram_evds += step.evd_pairs;
      if (step.gram_work.gram_column_runs)
        summary_.gram_column_run_pairs += step.evd_pairs;
      part.steps.push_back(std::move(step));
    }
    part.partial = alloc_.template zeros<Scalar>("kwsvd::partial", partial);
    part.B = alloc_.template zeros<Scalar>("kwsvd::B", b_size);
    part.J = alloc_.template zeros<Scalar>("kwsvd::J", j_size);
    part.lambda = alloc_.template zeros<Scalar>("kwsvd::lambda", lambda);
    part.evd_info = alloc_.template zeros<EvdInfo>("kwsvd::evd_info", evd_pairs);
    part.rotates = alloc_.template zeros<int>("kwsvd::pair_rotates", step_pairs);
    return part;
  }

  /// Plans the sweeps of the matrices swept whole: lanes per pair by
  /// whole_matrix_lanes (the level-0 kernel's, raised where that keeps the
  /// row loop compiled); one shape each (plan_one_sided_jacobi without
  /// vectors) and one row loop for all (plan_group_row_loop).
  void plan_whole(const std::vector<WorkGeometry>& geometry, const std::vector<int>& whole) {
    summary_.whole_matrices = long(whole.size());
    whole_ = WholePlan{};
    if (whole.empty())
      return;
    int rows = 1;
    for (const int b : whole) {
      rows = std::max(rows, geometry[std::size_t(b)].rows);
      whole_.pairs = std::max(whole_.pairs, (geometry[std::size_t(b)].cols + 1) / 2);
    }
    int lanes = whole_matrix_lanes(options_, rows, long(whole.size()), whole_.pairs);
    std::vector<OneSidedJacobiShape> shapes;
    for (const int b : whole) {
      const auto& g = geometry[std::size_t(b)];
      shapes.push_back(
          plan_one_sided_jacobi<ExecSpace, Scalar>(g.rows, g.cols, false, lanes, limit_));
    }
    // The row loop alone (plan_group_row_loop, no lane_partials): the whole
    // sweeps reduce their lanes' inner products by Kokkos's vector
    // reduction, not through scratch. Compiled in, the scratch path took the
    // float kernels of 8 row blocks from 64 to 72 registers, one team of 512
    // threads an SM instead of two (H200, float 100 x 63, 120 x 64 and 128 x
    // 61 x 1000 +25%), and double 64^2 x 10 and x 100 +1.1 to 1.3%, where
    // double x 1000 gained 3 to 4% (perf_tests/notes/small_svd.md, "Lanes'
    // partial inner products").
    whole_.rows_per_lane = plan_group_row_loop<ExecSpace, Scalar>(shapes, limit_);
    for (const auto& shape : shapes)
      whole_.scratch =
          std::max(whole_.scratch, one_sided_jacobi_scratch_bytes<ExecSpace, Scalar>(shape));
    while (lanes > 1 && lanes > vector_length_max<ExecSpace>())
      lanes /= 2;
    whole_.lanes = lanes;
    whole_.matrices = alloc_.upload(whole, "kwsvd::whole_matrices");
    whole_.shapes = alloc_.upload(shapes, "kwsvd::whole_shapes");
  }

  /// The column chunks of the load and finish launches (ColumnChunk): each
  /// matrix's columns in runs of wcycle_chunk_cols, and the buffers of the
  /// chunks' maxima and the matrices' column norms.
  void plan_chunks(const std::vector<WorkGeometry>& geometry) {
    std::vector<ColumnChunk> chunks;
    std::vector<std::size_t> offsets;
    std::size_t norms = 0;
    for (int b = 0; b < batch_; ++b) {
      const int cols = geometry[std::size_t(b)].cols;
      offsets.push_back(norms);
      const int first = int(chunks.size());
      const int count = (cols + wcycle_chunk_cols - 1) / wcycle_chunk_cols;
      for (int k = 0; k < count; ++k) {
        const int col = k * wcycle_chunk_cols;
        chunks.push_back({b, col, std::min(wcycle_chunk_cols, cols - col), first, count, norms});
      }
      norms += std::size_t(cols);
    }
    chunks_ = alloc_.upload(chunks, "kwsvd::column_chunks");
    chunk_max_ =
        alloc_.template zeros<Scalar>("kwsvd::chunk_max", std::max<std::size_t>(chunks.size(), 1));
    norms_ = alloc_.template zeros<Scalar>("kwsvd::column_norms", std::max<std::size_t>(norms, 1));
    norms_offset_ = alloc_.upload(offsets, "kwsvd::column_norms_offset");
  }

  /// The teams of the full sides' completion (FullSideTile): under
  /// SvdOptions::full_matrices, each matrix whose left side (U, or V of a
  /// wide input) the job computes and whose M - N columns past N complete
  /// by reflectors (completes_by_reflectors) gets its compact WY factor's
  /// place in full_side_wy_ and its columns in tiles of
  /// wcycle_full_side_tile_cols, each tile's passes over at most
  /// full_side_chunk_ reflectors (what the scratch limit holds of W's rows).
  /// The others' offset is no_full_side_tiles: their completion team
  /// completes them (by Gram-Schmidt: a few columns), as every full side
  /// where the scratch holds no row of W. No buffers where no matrix is
  /// tiled.
  void plan_full_side_tiles(const std::vector<WorkGeometry>& geometry) {
    std::vector<FullSideTile> tiles;
    std::vector<int> matrices;
    std::vector<std::size_t> offsets(std::size_t(batch_), no_full_side_tiles);
    std::size_t wy = 0;
    // The most reflectors whose rows of W (with a scratch View's padding)
    // fit the scratch limit.
    int chunk_max = completion_wy_chunk_max;
    while (chunk_max > 0 && TeamScratch<ExecSpace, Scalar>::shmem_size(
                                std::size_t(chunk_max) * wcycle_full_side_tile_cols) > limit_)
      --chunk_max;
    int reflectors = 1;
    for (int b = 0; b < batch_ && chunk_max > 0; ++b) {
      const auto& g = geometry[std::size_t(b)];
      const bool left = g.transpose != 0 ? job_writes_v(options_.job) : job_writes_u(options_.job);
      if (!options_.full_matrices || !left || g.rows == g.cols ||
          !completes_by_reflectors(g.rows, g.cols))
        continue;
      offsets[std::size_t(b)] = wy;
      matrices.push_back(b);
      for (int col = g.cols; col < g.rows; col += wcycle_full_side_tile_cols)
        tiles.push_back({b, col, std::min(wcycle_full_side_tile_cols, g.rows - col), wy});
      wy += completion_wy_scalars(g.cols);
      reflectors = std::max(reflectors, g.cols);
    }
    if (tiles.empty())
      offsets.clear();  // nothing tiled: no buffers (the completion reads none)
    full_side_chunk_ = std::min(chunk_max, reflectors);
    full_side_tiles_ = alloc_.upload(tiles, "kwsvd::full_side_tiles");
    full_side_matrices_ = alloc_.upload(matrices, "kwsvd::full_side_matrices");
    full_side_wy_offset_ = alloc_.upload(offsets, "kwsvd::full_side_wy_offset");
    full_side_wy_ = alloc_.template zeros<Scalar>("kwsvd::full_side_wy", wy);
  }

  /// One launch of the matrices swept whole (WcycleWholeMatrixFunctor), if any.
  void run_whole(const ExecSpace& exec, Scalar* V, int* mask, int* sweeps) const {
    const int count = int(whole_.matrices.extent(0));
    if (count == 0)
      return;
    with_compiled_rows_per_lane(whole_.rows_per_lane, [&](auto rows_per_lane) {
      const WcycleWholeMatrixFunctor<ExecSpace, Scalar, decltype(rows_per_lane)::value> functor{
          W_.data(),
          V,
          geometry_.data(),
          whole_.matrices.data(),
          whole_.shapes.data(),
          mask,
          sweeps,
          resolved_tolerance<Scalar>(options_.tolerance),
          options_.max_sweeps};
      launch_column_pair_teams(exec, "kwsvd::wcycle_whole_matrices", count, whole_.pairs,
                               whole_.lanes, whole_.scratch, functor);
    });
  }

  /// The matrices swept whole in scratch (plan_whole).
  struct WholePlan {
    int rows_per_lane = 0, lanes = 1, pairs = 1;
    std::size_t scratch = 0;
    Vec<int> matrices;
    Vec<OneSidedJacobiShape> shapes;
  };

  int batch_ = 0, max_cols_ = 0;
  // Some matrix keeps V (SvdOptions::job, WorkGeometry::keeps_v): its V's
  // blocks are rotated with A's. A matrix that does not keep it has no V
  // allocated nor updated: the updates of a square matrix's sweeps halve.
  bool vectors_ = true;
  // Some matrix's job asks for its work matrix's left vectors (U, or V when
  // transposed), whose columns of zero singular values are completed.
  bool completes_left_ = false;
  SvdOptions options_;
  WorkspaceAllocator<memory_space> alloc_;  // every device buffer below, and their bytes
  // Each level's GEMM plan; its w is the level's width (block cuts, groups,
  // GEMM work): one copy, so the blocks and the GEMMs cannot disagree.
  std::vector<TailoringPlan> plans_;
  std::size_t limit_ = 0;  // scratch bytes the groups are planned with
  WcyclePlanSummary summary_;
  WholePlan whole_;
  Vec<Scalar> W_, V_, scale_;
  Vec<WorkGeometry> geometry_;
  Vec<ColumnChunk> chunks_;  // the load's and finish's teams (plan_chunks)
  // The full sides' completion teams, and per matrix where its compact WY
  // factor starts in full_side_wy_ (plan_full_side_tiles); the reflectors
  // per pass of a tile over its columns.
  Vec<FullSideTile> full_side_tiles_;
  Vec<int> full_side_matrices_;  // the matrices that have tiles
  Vec<std::size_t> full_side_wy_offset_;
  Vec<Scalar> full_side_wy_;
  int full_side_chunk_ = 1;
  Vec<Scalar> chunk_max_, norms_;  // per chunk: largest magnitude; per column: norm
  // Per matrix: where its column norms start in norms_ (ColumnChunk::norms),
  // read by the completion of its left vectors (a field of WorkGeometry
  // instead cost the whole-matrix sweeps of double 64^2 3% on an H100).
  Vec<std::size_t> norms_offset_;
  Vec<int> state_;
  std::vector<Part> parts_;
  std::vector<ExecSpace> streams_;  // the parts' streams, on backends that have them
  Vec<int> active_;                 // per part: matrices still active after a sweep
  typename Vec<int>::HostMirror host_active_;
};

template <class ExecSpace, class Scalar>
void WcycleLevelSolver<ExecSpace, Scalar>::run_step(const ExecSpace& exec, const Part& part,
                                                    const Step& step, const int* mask,
                                                    int* rotated) {
  const Scalar tol = resolved_tolerance<Scalar>(options_.tolerance);
  launch_pair_svd(exec, step.svd_tasks.data(), step.svd_pairs, step.svd_rows, step.w,
                  step.svd_lanes, mask, rotated, part.rotates.data(), part.J.data(), tol, 1);
  const int pairs = step.evd_pairs;
  if (pairs > 0) {
    const Task* tasks = step.gram_tasks.data();
    const GramPlateSums<Scalar> gram = launch_pair_gram_plates(exec, step.gram_work, tasks, mask,
                                                               part.partial.data(), part.B.data());
    const int n = 2 * step.w;
    const std::size_t nn = std::size_t(n) * std::size_t(n);
    const Kokkos::LayoutStride square(std::size_t(pairs), nn, std::size_t(n), 1, std::size_t(n),
                                      std::size_t(n));
    Stride3 B3(part.B.data(), square), J3(part.J.data() + std::size_t(step.svd_pairs) * nn, square);
    Kokkos::View<Scalar**, Kokkos::LayoutRight, memory_space,
                 Kokkos::MemoryTraits<Kokkos::Unmanaged>>
        lambda(part.lambda.data(), std::size_t(pairs), std::size_t(n));
    Kokkos::View<EvdInfo*, memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>> einfo(
        part.evd_info.data(), std::size_t(pairs));
    EvdOptions evd;
    evd.tolerance = options_.tolerance;
    evd.sweeps = 1;
    evd.team_threads = wcycle_gram_evd_team_threads(n, int(sizeof(Scalar)));
    // The EVD's steps follow the recursive ordering too (cross pairs
    // first). Larger eigenvalues go into block i, the one of lower columns
    // (paper 001 §4.3: sorted pairs). A narrow block's missing columns are
    // zero in B and never rotated, so zero columns keep their place: no real
    // column is moved into a missing one.
    evd.order = EigenOrder::descending;
    evd.positive_semidefinite = true;
    // The EVD skips the pairs of converged (masked) matrices, whose Grams
    // were not computed, marks which pairs rotate and sums the Grams' plates
    // (WcycleEvdHooks).
    const Scalar max_cols = Scalar(step.evd_max_cols);
    const WcycleEvdHooks<Scalar> hooks{tasks,
                                       mask,
                                       part.rotates.data() + step.svd_pairs,
                                       rotated,
                                       gram,
                                       Scalar(step.evd_min_cols) * tol * tol,
                                       Scalar(1) / (max_cols * max_cols * max_cols)};
    batched_gram_evd_hooked(exec, B3, lambda, J3, einfo, evd, hooks, /*zero_columns_stay=*/true,
                            /*recursive_pairs=*/true);
  }
  // Pairs whose J = I (pair SVDs or Gram EVDs that found nothing to
  // rotate, marked by their own launches) are skipped by the update.
  launch_pair_update(exec, step.update_work, step.update_tasks.data(), mask, part.J.data(),
                     part.rotates.data());
}

}  // namespace kwsvd::Impl
