#pragma once
// Host side of the tailored batched GEMMs (W-cycle paper §IV-D-1, Fig. 6):
// cutting every column-block pair into plates, giving the residual plates
// teams (packed, or one each), and launching the Gram, its deterministic
// cross-plate reduction and the fused update over a whole level in one
// launch each.
//
// Planning (build_plate_layout, make_tailored_gemm_work) allocates and is
// done once per level shape; the launches allocate nothing. The host only
// sees row counts, never matrix entries.

#include <algorithm>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "kwsvd/api/errors.hpp"
#include "kwsvd/impl/kokkos_compat.hpp"
#include "kwsvd/impl/workspace.hpp"
#include "kwsvd/kernels/gram_team.hpp"
#include "kwsvd/kernels/one_sided_jacobi_team.hpp"
#include "kwsvd/kernels/tailored_gemm_team.hpp"
#include "kwsvd/tuning/tailoring_plan.hpp"

namespace kwsvd::Impl {

/// Which rows of which task each team processes, and where each plate's
/// partial Gram goes.
struct PlateLayout {
  std::vector<PlateSegment> segments;  ///< grouped by team
  std::vector<int> team_begin;         ///< teams + 1 offsets into segments
  std::vector<int> partial_begin;      ///< tasks + 1 offsets: the task's partial slots
};

/// The plates of task t's rows (partial_begin as in PlateLayout).
KOKKOS_INLINE_FUNCTION int task_plate_count(const int* partial_begin, int t) {
  return partial_begin[t + 1] - partial_begin[t];
}

/// Whether task t's rows form exactly one plate: the GPU Gram team then
/// writes the task's B itself, and the cross-plate sum leaves it alone.
KOKKOS_INLINE_FUNCTION bool task_is_one_plate(const int* partial_begin, int t) {
  return task_plate_count(partial_begin, t) == 1;
}

/// Where a residual plate runs: packed with other tasks' residuals into
/// teams of at most 1.2 delta rows (the paper's §IV-D), or in a team of its
/// own. A segment costs a team more than its rows: each starts its own chunk
/// pipeline, and each Gram segment sums its row groups and writes a (2w)^2
/// partial, so a team of three packed residuals of 4 rows runs about three
/// times as long as a standard plate of 12, and sets the launch's time where
/// the launch is short. The scheduler takes own_team: H200, default options,
/// own teams against packed, best of two (`-residual-plates-*.json`, sixty-
/// seventh session): double 100^2 / 140^2 / 150^2 / 230^2 x 1 -19 / -31 /
/// -21 / -36%, x 10 -17 / -34 / -22 / -33%; float 150^2 / 230^2 x 1 -25 /
/// -41%, 300 x 150 x 10 -22%, 500 x 54 x 10 -18%; Table VI's mixed batch
/// (single runs) -10% (double group 3) to +0%; the other points (no
/// residuals, or none packed), -3.1 to +1.3%. The tests take both, so that
/// the GEMMs' teams of several segments stay covered.
enum class ResidualPlates { packed, own_team };

/// The tailoring of Fig. 6: every task's rows are cut into floor(m / delta)
/// standard plates of delta rows, one team each, and one residual plate of
/// m mod delta rows; residual plates are packed, in task order, into teams of
/// at most pack_factor * delta rows (the paper's 1.2 delta), or take a team
/// each (ResidualPlates::own_team). A residual that fits beside its task's
/// last standard plate within that bound joins it instead (one plate of
/// delta + rest rows), either way: a plate's cost does not shrink
/// with its rows (each Gram plate writes a (2w)^2 partial, each segment of
/// both GEMMs starts its own chunk pipeline), so a team packed with many
/// short residuals ran far longer than the rest of its launch. H200, double
/// 999 x 100 x 100 (delta = 499: a residual of 1 row per task, all 100 in
/// one team): Gram 357 against 48 us a launch, the SVD 16.7 ms against 3.75
/// at 1000 rows.
inline PlateLayout build_plate_layout(const std::vector<int>& task_rows, int delta,
                                      ResidualPlates residual_plates, double pack_factor = 1.2) {
  if (delta < 1) {
    throw_invalid_argument("kwsvd::Impl::build_plate_layout", "delta",
                           "must be at least 1, got " + std::to_string(delta));
  }
  PlateLayout layout;
  const int tasks = int(task_rows.size());
  layout.partial_begin.assign(std::size_t(tasks) + 1, 0);
  std::vector<PlateSegment> residuals;
  const double limit = pack_factor * delta;
  int slot = 0;
  for (int t = 0; t < tasks; ++t) {
    const int m = task_rows[std::size_t(t)];
    layout.partial_begin[std::size_t(t)] = slot;
    int standard = m / delta, rest = m - standard * delta;
    const bool joins = standard > 0 && rest > 0 && double(delta + rest) <= limit;
    if (joins)
      --standard;
    for (int p = 0; p < standard; ++p) {
      layout.team_begin.push_back(int(layout.segments.size()));
      layout.segments.push_back({t, p * delta, delta, slot++});
    }
    if (joins) {
      layout.team_begin.push_back(int(layout.segments.size()));
      layout.segments.push_back({t, standard * delta, delta + rest, slot++});
    } else if (rest > 0) {
      residuals.push_back({t, standard * delta, rest, slot++});
    }
  }
  layout.partial_begin[std::size_t(tasks)] = slot;
  double in_team = 0;
  for (std::size_t k = 0; k < residuals.size(); ++k) {
    if (k == 0 || residual_plates == ResidualPlates::own_team ||
        in_team + residuals[k].rows > limit) {
      layout.team_begin.push_back(int(layout.segments.size()));
      in_team = 0;
    }
    layout.segments.push_back(residuals[k]);
    in_team += residuals[k].rows;
  }
  layout.team_begin.push_back(int(layout.segments.size()));
  return layout;
}

/// Appends the column-block pairs of round-robin step `step` of a
/// column-major rows x cols matrix at `data` (leading dimension rows), blocks
/// of width w (the last one narrower), tagged with `matrix`; each task's
/// `pair` is its index in `tasks`.
template <class Scalar>
void append_step_pairs(std::vector<BlockPairTask<Scalar>>& tasks, Scalar* data, int rows, int cols,
                       int w, int step, int matrix) {
  const int blocks = (cols + w - 1) / w, even = blocks + (blocks & 1);
  for (int k = 0; k < even / 2; ++k) {
    int i, j;
    round_robin_pair(even, step, k, i, j);
    if (j >= blocks)
      continue;  // the phantom block of an odd count
    BlockPairTask<Scalar> t;
    t.data = data;
    t.row_stride = 1;
    t.col_stride = rows;
    t.rows = rows;
    t.col_i = i * w;
    t.col_j = j * w;
    t.width_i = std::min(w, cols - i * w);
    t.width_j = std::min(w, cols - j * w);
    t.matrix = matrix;
    t.pair = int(tasks.size());
    tasks.push_back(t);
  }
}

/// A plate layout on the device plus the launch shape of one level.
template <class ExecSpace>
struct TailoredGemmWork {
  using memory_space = typename ExecSpace::memory_space;
  Kokkos::View<PlateSegment*, memory_space> segments;
  Kokkos::View<int*, memory_space> team_begin, partial_begin;
  int teams = 0, tasks = 0, partials = 0;
  int tasks_not_one_plate = 0;  ///< tasks of several plates, or of none (no rows)
  int w = 0, max_segment_rows = 0;
  int team_threads = 0;
  int gram_groups = 0;  ///< row groups of a GPU Gram team (0: tailored_gram_groups)
  /// Whether a GPU Gram whose width wants column runs (gram_column_runs_wanted)
  /// takes the kernel that has them. Callers set it from their tasks
  /// (most_rows_allow_column_runs): that kernel loads the chunks of
  /// segments without runs unpipelined (gram_plate_team_pipelined), and
  /// when it pipelined them per entry it was already 2% slower than the
  /// plain kernel (H200, Table VI float group 512, whose random m are
  /// mostly not multiples of 4). Off by default: a caller that does not
  /// set it gets the plain kernel, at most 2.6x slower than runs on rows
  /// that allow them, where the other default cost up to 1.7x the plain
  /// kernel on rows that do not (H200, perf_tests/notes/tailored_gemm.md).
  bool gram_column_runs = false;
};

/// Whether at least half the rows of a level's Gram tasks (host copies) can
/// be loaded in 16-byte column runs (gram_task_allows_column_runs: m_k
/// scalars a multiple of 16 bytes): the value for
/// TailoredGemmWork::gram_column_runs, whose kernel loads the chunks of the
/// other tasks unpipelined.
template <class Scalar>
bool most_rows_allow_column_runs(const std::vector<BlockPairTask<Scalar>>& tasks) {
  std::size_t fit = 0, all = 0;
  for (const BlockPairTask<Scalar>& t : tasks) {
    all += std::size_t(t.rows);
    if (gram_task_allows_column_runs(t))
      fit += std::size_t(t.rows);
  }
  return 2 * fit >= all;
}

/// Largest team of both GEMMs (their launch bounds).
template <class Scalar>
constexpr int tailored_gemm_team_max() {
  return sizeof(Scalar) > 4 ? 384 : 512;
}

/// Team policy of both GEMMs: a register cap that lets several teams share
/// a multiprocessor (uncapped, the double kernels took 96 registers, two
/// Gram teams fit, and both waited on shared-memory latency). 64 registers
/// hold a float 4 x 4 tile with its loads; a double one needs 80 (at 64
/// ptxas spills). Teams up to 384 (double) or 512 (float) threads.
template <class ExecSpace, class Scalar, int TeamMax = tailored_gemm_team_max<Scalar>()>
using TailoredGemmPolicy = Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<TeamMax, 2>>;

/// Largest team of the GPU Gram with wide items (gram_wide_item_cols): its
/// 32 accumulators take 126 registers in double, room for 2 teams of 256.
constexpr int gram_wide_team_max = 256;

/// Narrowest block width whose GPU Gram takes wide items (where the type
/// has them, gram_wide_item_cols). H200, double, 1000 pairs: w = 24, 32 and
/// 48 5 to 15% faster at m = 512 and 2048 (2048 x 96: 1.90 -> 1.63 ms), but
/// w = 8 and 16 10 to 28% slower: a narrow pair has few items, and its
/// team's row groups then split each chunk into runs of a few rows.
constexpr int gram_wide_min_w = 24;

/// Largest team of `teams` teams of functor f with `scratch` bytes of
/// level-0 scratch each.
template <class ExecSpace, class Scalar, int TeamMax = tailored_gemm_team_max<Scalar>(),
          class Functor>
int tailored_team_size_max(const ExecSpace& exec, int teams, std::size_t scratch,
                           const Functor& f) {
  TailoredGemmPolicy<ExecSpace, Scalar, TeamMax> probe(exec, teams, 1, 1);
  probe.set_scratch_size(0, Kokkos::PerTeam(int(scratch)));
  return probe.team_size_max(f, Kokkos::ParallelForTag());
}

/// Launches `teams` teams of `team` threads of functor f with `scratch`
/// bytes of level-0 scratch each.
template <class ExecSpace, class Scalar, int TeamMax = tailored_gemm_team_max<Scalar>(),
          class Functor>
void launch_tailored_teams(const ExecSpace& exec, const char* name, int teams, int team,
                           std::size_t scratch, const Functor& f) {
  TailoredGemmPolicy<ExecSpace, Scalar, TeamMax> policy(exec, teams, team, 1);
  policy.set_scratch_size(0, Kokkos::PerTeam(int(scratch)));
  Kokkos::parallel_for(name, policy, f);
}

/// Most row groups of the narrowest GPU Gram (pairs of at most
/// gram_narrowest_tiles tiles: w <= 8), below what T gives (25 in double,
/// 26 in float at T = 256; 12 / 13 at Table II's T = 128 for w = 8). Such
/// a team computes 16 products a row, so a large team spends its time on
/// the chunks' loads and its final group sums. H200, 1000 pairs, groups
/// forced (`-tailored_gemm-groups-*-trial.json`, twenty-fifth session):
/// double 6 to 8 groups and float 6 to 12 were fastest at m = 128, 512
/// and 2048; float with column runs 12 (70 us at 2048 x 8, against 76 to 86
/// at 6, 10 and 16 groups).
constexpr int gram_narrowest_tiles = 10;
template <class Scalar>
constexpr int gram_narrowest_groups() {
  return sizeof(Scalar) > 4 ? 8 : 12;
}

/// Most row groups of a GPU Gram team whose plates are short (at most
/// gram_short_plate_rows rows; pairs wider than the narrowest, narrow
/// items). Every thread of a team pays a few costs once a plate: the first
/// chunk's load, which nothing overlaps, and the sum of the groups' tiles.
/// On a short plate they outweigh the latency that more groups hide, and
/// smaller teams fit more of them on a multiprocessor. H200, w = 16, 1000
/// pairs of m rows (one plate each) unless stated, groups forced, best of
/// two (`-tailored_gemm-short-plates-g*-trial[-run2].json`, twenty-sixth
/// session): float 3 groups fastest from m = 64 to 384 (128:
/// 27.4 -> 23.1 us at 3 against the rule's 7; 256 x 10000 pairs 251.6 ->
/// 220.5), level with 7 at 512 (51.3 against 50.8 to 52.1) and 7% slower
/// at 2048 (twenty-fifth session); double 5 groups fastest or within 4% of
/// the fastest from m = 64 to 512 (128: 38.3 -> 34.8), and at 10000 pairs
/// 10% faster than 7 though 6% behind 3 (128 rows: 283.1 / 253.7 / 238.5).
/// Wider float pairs, and double pairs from w = 24, already take at most 3
/// groups, so the cap leaves them as they are.
constexpr int gram_short_plate_rows = 512;
template <class Scalar>
constexpr int gram_short_plate_groups() {
  return sizeof(Scalar) > 4 ? 5 : 3;
}

/// Row groups of a Gram team on a GPU: enough that tiles x groups threads
/// come near the plan's T, so narrow pairs still run full teams and long
/// chunks; the narrowest pairs take at most gram_narrowest_groups, teams
/// whose longest plate (max_plate_rows) is short at most
/// gram_short_plate_groups. In double, within T: a team of 9 warps at the
/// kernel's 80 registers left room for 2 teams per multiprocessor instead
/// of 3 (H200, w = 8 and 32); float's 64
/// registers leave room either way, and its w = 32 teams ran 10% faster at
/// 272 threads than at 136. At most what the launch bounds allow. The
/// groups' tiles are summed inside the team, so the cross-plate sum sees
/// one slot per plate whatever the count. Host backends run small teams,
/// so 1.
template <class ExecSpace, class Scalar>
int tailored_gram_groups(int w, int team_threads, int max_plate_rows, int item_cols = gemm_tile) {
  if (!runs_off_host<ExecSpace>())
    return 1;
  const int tiles = gram_upper_items(w, item_cols);
  const bool wide = item_cols != gemm_tile;
  const int team_max = wide ? gram_wide_team_max : tailored_gemm_team_max<Scalar>();
  int groups = sizeof(Scalar) > 4 ? team_threads / tiles : (team_threads + tiles / 2) / tiles;
  if (!wide) {  // both caps leave the plan's T bounding the count
    if (tiles <= gram_narrowest_tiles)
      groups = std::min(groups, gram_narrowest_groups<Scalar>());
    else if (max_plate_rows <= gram_short_plate_rows)
      groups = std::min(groups, gram_short_plate_groups<Scalar>());
  }
  return std::max(1, std::min(groups, team_max / tiles));
}

/// Plans a level: its tasks' row counts and the tailoring plan. Allocates
/// its plate lists through `alloc`. `gram_groups` > 0 sets the GPU Gram's row
/// groups (tests); 0 lets tailored_gram_groups choose at launch.
/// `residual_plates`: a team each (the scheduler's), or packed (tests).
template <class ExecSpace>
TailoredGemmWork<ExecSpace> make_tailored_gemm_work(
    const std::vector<int>& task_rows, const TailoringPlan& plan, int gram_groups,
    WorkspaceAllocator<typename TailoredGemmWork<ExecSpace>::memory_space>& alloc,
    ResidualPlates residual_plates = ResidualPlates::own_team) {
  constexpr const char* fn = "kwsvd::Impl::make_tailored_gemm_work";
  if (plan.w < gemm_tile / 2 || (2 * plan.w) % gemm_tile != 0) {
    throw_invalid_argument(fn, "plan.w",
                           "must be a positive multiple of " + std::to_string(gemm_tile / 2) +
                               ", got " + std::to_string(plan.w));
  }
  if (plan.team_threads < 1) {
    throw_invalid_argument(fn, "plan.team_threads",
                           "must be positive, got " + std::to_string(plan.team_threads));
  }
  const PlateLayout layout = build_plate_layout(task_rows, plan.delta, residual_plates);
  TailoredGemmWork<ExecSpace> work;
  work.tasks = int(task_rows.size());
  work.teams = int(layout.team_begin.size()) - 1;
  work.partials = layout.partial_begin.back();
  work.w = plan.w;
  work.team_threads = plan.team_threads;
  work.gram_groups = std::max(0, gram_groups);
  for (const auto& s : layout.segments)
    work.max_segment_rows = std::max(work.max_segment_rows, s.rows);
  for (int t = 0; t < work.tasks; ++t)
    work.tasks_not_one_plate += !task_is_one_plate(layout.partial_begin.data(), t);
  work.segments = alloc.upload(layout.segments, "kwsvd::plate_segments");
  work.team_begin = alloc.upload(layout.team_begin, "kwsvd::plate_team_begin");
  work.partial_begin = alloc.upload(layout.partial_begin, "kwsvd::plate_partial_begin");
  return work;
}

/// make_tailored_gemm_work with its own allocator (tests, benchmarks).
template <class ExecSpace>
TailoredGemmWork<ExecSpace> make_tailored_gemm_work(
    const std::vector<int>& task_rows, const TailoringPlan& plan, int gram_groups = 0,
    ResidualPlates residual_plates = ResidualPlates::own_team) {
  WorkspaceAllocator<typename TailoredGemmWork<ExecSpace>::memory_space> alloc;
  return make_tailored_gemm_work<ExecSpace>(task_rows, plan, gram_groups, alloc, residual_plates);
}

/// Scalars of partial-Gram workspace a level needs (one set of upper tiles
/// per plate).
template <class ExecSpace>
std::size_t tailored_gram_partial_size(const TailoredGemmWork<ExecSpace>& work) {
  return std::size_t(work.partials) * gram_upper_tiles(work.w) * gemm_tile * gemm_tile;
}

/// Scratch an in-memory Gram team (host backends) aims for: a moderate chunk
/// that stays in the core's cache while every tile walks it.
constexpr std::size_t tailored_gram_scratch_target = 24 * 1024;

/// Longest update chunk: 32 row blocks per column group.
constexpr int tailored_update_chunk_max = 128;

/// Scratch of an in-memory Gram team with chunks of `rows` rows (16-byte
/// aligned).
template <class ExecSpace, class Scalar>
std::size_t tailored_gram_scratch_bytes(int w, int rows) {
  return scratch_bytes_for<ExecSpace, Scalar>(
      aligned16_extent<Scalar>(std::size_t(gram_chunk_ld<Scalar>(w)) * std::size_t(rows)));
}

/// Scratch of an update team's chunk buffer for chunks of `rows` rows
/// (update_chunk_scalars, 16-byte aligned).
template <class ExecSpace, class Scalar>
std::size_t tailored_update_chunk_bytes(int w, int rows) {
  return scratch_bytes_for<ExecSpace, Scalar>(
      aligned16_extent<Scalar>(update_chunk_scalars(rows, w)));
}

/// Scratch of J transposed in an update team (16-byte aligned).
template <class ExecSpace, class Scalar>
std::size_t tailored_update_j_bytes(int w) {
  return scratch_bytes_for<ExecSpace, Scalar>(
      aligned16_extent<Scalar>(std::size_t(2 * w) * std::size_t(2 * w)));
}

/// Rows of an in-memory Gram chunk: as many as fit the target (or the device limit
/// when not even one row fits the target), at most the longest segment; 0
/// when not even one row fits the device.
template <class ExecSpace, class Scalar>
int tailored_gram_chunk_rows(int w, int max_rows) {
  const std::size_t device_limit = std::size_t(team_scratch_bytes_max<ExecSpace>());
  std::size_t limit = std::min(device_limit, tailored_gram_scratch_target);
  if (tailored_gram_scratch_bytes<ExecSpace, Scalar>(w, 1) > limit)
    limit = device_limit;
  if (tailored_gram_scratch_bytes<ExecSpace, Scalar>(w, 1) > limit)
    return 0;
  int rows =
      int(std::min<std::size_t>(std::size_t(std::max(1, max_rows)),
                                limit / (std::size_t(gram_chunk_ld<Scalar>(w)) * sizeof(Scalar))));
  // Alignment padding: step back until the request fits.
  while (rows > 1 && tailored_gram_scratch_bytes<ExecSpace, Scalar>(w, rows) > limit)
    --rows;
  return rows;
}

/// Rows of an update chunk next to `reserved` bytes (J in scratch, or 0):
/// a multiple of the 4 * update_lane_blocks rows a lane run covers, at most
/// tailored_update_chunk_max, or the longest segment when that is shorter;
/// 0 when not even one row fits.
template <class ExecSpace, class Scalar>
int tailored_update_chunk_rows(int w, int max_rows, std::size_t reserved) {
  const std::size_t limit = std::size_t(team_scratch_bytes_max<ExecSpace>());
  const auto fits = [&](int rows) {
    return reserved + tailored_update_chunk_bytes<ExecSpace, Scalar>(w, rows) <= limit;
  };
  const int run = gemm_tile * update_lane_blocks;
  int rows = std::min(std::max(1, max_rows), tailored_update_chunk_max);
  if (rows > run)
    rows = rows / run * run;  // whole lane runs
  while (rows > run && !fits(rows))
    rows -= run;
  while (rows > 1 && !fits(rows))
    --rows;
  return fits(rows) ? rows : 0;
}

/// Chunk rows and scratch of a GPU Gram team (gram_plate_team_pipelined).
struct PipelinedGramShape {
  int groups = 1, threads = 0, chunk_rows = 0;
  std::size_t scratch_scalars = 0;  ///< pipelined_gram_scratch_scalars of this shape
  std::size_t scratch = 0;          ///< bytes
};

/// Scalars of a pipelined Gram team's scratch: two chunks, or the buffer
/// that sums the row groups' tiles when that is larger (16-byte aligned).
template <class Scalar>
std::size_t pipelined_gram_scratch_scalars(int w, int chunk_rows, int threads, int groups) {
  const std::size_t chunks = 2 * std::size_t(gram_chunk_ld<Scalar>(w)) * std::size_t(chunk_rows);
  const std::size_t sums = groups > 1 ? std::size_t(gram_group_sum_ld) * std::size_t(threads) : 0;
  return aligned16_extent<Scalar>(std::max(chunks, sums));
}

/// The shape of a GPU Gram launch: `groups` row groups (fewer when their
/// sum buffer would not fit the device's scratch), and chunks of as many
/// rows as the team's prefetch registers carry (gram_prefetch_entries per
/// thread), at most the longest segment; chunk_rows = 0 when not even one
/// row fits the scratch or the registers. column_runs: the launch takes
/// GramChunkPrefetch's column runs, so chunks hold whole runs.
template <class ExecSpace, class Scalar>
PipelinedGramShape pipelined_gram_shape(int w, int groups, int max_rows, int item_cols = gemm_tile,
                                        bool column_runs = false) {
  const std::size_t limit = std::size_t(team_scratch_bytes_max<ExecSpace>());
  const int tiles = gram_upper_items(w, item_cols), n = 2 * w;
  PipelinedGramShape s;
  const auto bytes = [&](int rows, int threads, int g) {
    return scratch_bytes_for<ExecSpace, Scalar>(
        pipelined_gram_scratch_scalars<Scalar>(w, rows, threads, g));
  };
  s.groups = std::max(1, groups);
  while (s.groups > 1 && bytes(1, tiles * s.groups, s.groups) > limit)
    --s.groups;
  s.threads = tiles * s.groups;
  // The rows whose entries the threads' prefetch registers hold: a chunk
  // never has more, or GramChunkPrefetch would leave entries unloaded.
  const int carried = gram_prefetch_entries<Scalar>(item_cols) * s.threads / n;
  int rows = std::max(1, carried);
  rows = std::min(rows, std::max(1, max_rows));
  while (rows > 1 && bytes(rows, s.threads, s.groups) > limit)
    --rows;
  // Whole 16-byte column runs per chunk where the launch takes them (up
  // when one chunk then holds the longest segment, the registers carry it
  // and it fits); elsewhere, the plain kernel included, every row counts
  // (rounding the double 2w = 96 Gram's 6 rows down to 4 made it 7 to 9%
  // slower on the H200).
  constexpr int per = scalars_per_16_bytes<Scalar>();
  if (column_runs && rows % per != 0) {
    const int up = rows_in_whole_runs<Scalar>(rows);
    if (rows >= max_rows && up <= carried && bytes(up, s.threads, s.groups) <= limit)
      rows = up;
    else if (rows > per)
      rows = rows / per * per;
  }
  s.chunk_rows = carried >= 1 && bytes(rows, s.threads, s.groups) <= limit ? rows : 0;
  s.scratch_scalars =
      pipelined_gram_scratch_scalars<Scalar>(w, std::max(1, s.chunk_rows), s.threads, s.groups);
  s.scratch = scratch_bytes_for<ExecSpace, Scalar>(s.scratch_scalars);
  return s;
}

/// The Gram teams. Pipelined (GPU backends, one thread per tile and row
/// group): gram_plate_team_pipelined, whose teams write B itself for a
/// task of one plate (no partial, nothing left for the cross-plate sum);
/// otherwise gram_plate_team_in_memory.
template <class ExecSpace, class Scalar, bool Pipelined, int ItemCols = gemm_tile,
          bool ColumnRuns = false>
struct PairGramFunctor {
  using Member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using ScratchVector = TeamScratch<ExecSpace, Scalar>;
  const BlockPairTask<Scalar>* tasks;
  const PlateSegment* segments;
  const int* team_begin;
  const int* partial_begin;
  const int* mask;  // may be null
  Scalar* partial;
  Scalar* B;  // task t: column-major (2w) x (2w) at B + t (2w)^2
  int w, chunk_rows, groups;
  std::size_t scratch_scalars;  // as the launch sized the scratch

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    ScratchVector Xv(member.team_scratch(0), scratch_scalars);
    Scalar* const X = align16(Xv.data());
    constexpr int tile_size = gemm_tile * gemm_tile;
    const std::size_t plate_size = std::size_t(gram_upper_tiles(w)) * tile_size;
    for (int s = team_begin[member.league_rank()]; s < team_begin[member.league_rank() + 1]; ++s) {
      const PlateSegment seg = segments[s];
      const BlockPairTask<Scalar> task = tasks[seg.task];
      if (mask != nullptr && mask[task.matrix] != 0)
        continue;  // a converged matrix: nothing to compute (seed 002 Design-4)
      Scalar* const out = partial + seg.partial * plate_size;
      if constexpr (Pipelined) {
        Scalar* const X1 = X + std::size_t(gram_chunk_ld<Scalar>(w)) * chunk_rows;
        if (task_is_one_plate(partial_begin, seg.task)) {
          const int n = 2 * w;
          Scalar* const Bt = B + std::size_t(seg.task) * std::size_t(n) * std::size_t(n);
          gram_plate_team_pipelined<ItemCols, ColumnRuns>(
              member, task, seg, w, chunk_rows, groups, X, X1,
              [&](const int P, const int Q, const int e, const Scalar v) {
                const int a = gemm_tile * P + e / gemm_tile;
                const int b = gemm_tile * Q + e % gemm_tile;
                Bt[a + n * b] = v;
                Bt[b + n * a] = v;
              });
        } else {
          gram_plate_team_pipelined<ItemCols, ColumnRuns>(
              member, task, seg, w, chunk_rows, groups, X, X1,
              [&](const int P, const int Q, const int e, const Scalar v) {
                out[gram_tile_index(P, Q) * tile_size + e] = v;
              });
        }
      } else {
        gram_plate_team_in_memory(member, task, seg, w, chunk_rows, X, out);
      }
    }
  }
};

/// Where the Gram of each task of a launch_pair_gram_plates lives: entry
/// (a, b) of task t is B's (the pipelined Gram teams wrote the Grams of
/// one-plate tasks there) or the sum of its plates' partial tiles, plates in
/// a fixed order (the same sum run to run).
template <class Scalar>
struct GramPlateSums {
  const int* partial_begin;
  const Scalar* partial;
  const Scalar* B;  // task t: column-major (2w) x (2w) at B + t (2w)^2
  int w;
  bool single_plates_written = false;  // the Gram teams wrote B of one-plate tasks

  /// Whether a task of `plates` plates has its Gram in B.
  KOKKOS_INLINE_FUNCTION bool gram_in_B(int plates) const {
    return single_plates_written && plates == 1;
  }
  KOKKOS_INLINE_FUNCTION bool in_B(int t) const {
    return gram_in_B(task_plate_count(partial_begin, t));
  }

  /// The Gram of one task, its plate range read once (task()).
  struct TaskGram {
    const Scalar* B;       // the task's B where its Gram is there, else null
    const Scalar* plates;  // its first plate's upper tiles
    std::size_t plate_size;
    int plates_count, n;

    KOKKOS_INLINE_FUNCTION Scalar operator()(int a, int b) const {
      if (B != nullptr)
        return B[std::size_t(a) + std::size_t(n) * std::size_t(b)];
      if (a / gemm_tile > b / gemm_tile) {
        const int tmp = a;
        a = b;
        b = tmp;
      }
      const int P = a / gemm_tile, Q = b / gemm_tile;
      const std::size_t at = std::size_t(gram_tile_index(P, Q)) * gemm_tile * gemm_tile +
                             std::size_t((a - P * gemm_tile) * gemm_tile + (b - Q * gemm_tile));
      Scalar sum = 0;
      for (int p = 0; p < plates_count; ++p)
        sum += plates[std::size_t(p) * plate_size + at];
      return sum;
    }
  };

  /// Task t's Gram, for a reader of many of its entries (the W-cycle's EVD
  /// teams): the task's plate range (two loads) is read once, where each
  /// entry read through operator() reads it again.
  KOKKOS_INLINE_FUNCTION TaskGram task(int t) const {
    const int p0 = partial_begin[t], p1 = partial_begin[t + 1];
    const int n = 2 * w;
    const std::size_t plate_size = std::size_t(gram_upper_tiles(w)) * gemm_tile * gemm_tile;
    return TaskGram{
        gram_in_B(p1 - p0) ? B + std::size_t(t) * std::size_t(n) * std::size_t(n) : nullptr,
        partial != nullptr ? partial + std::size_t(p0) * plate_size : nullptr, plate_size, p1 - p0,
        n};
  }

  KOKKOS_INLINE_FUNCTION Scalar operator()(int t, int a, int b) const { return task(t)(a, b); }
};

template <class ExecSpace, class Scalar>
struct PairGramReduceFunctor {
  const BlockPairTask<Scalar>* tasks;
  const int* mask;
  GramPlateSums<Scalar> sums;
  Scalar* B;

  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t e) const {
    const int n = 2 * sums.w;
    const std::size_t nn = std::size_t(n) * n;
    const int t = int(e / nn);
    const int idx = int(e - std::size_t(t) * nn);
    if (mask != nullptr && mask[tasks[t].matrix] != 0)
      return;
    if (sums.in_B(t))
      return;
    B[e] = sums(t, idx % n, idx / n);
  }
};

/// The Gram items of a GPU launch: narrow (4 x 4 tiles) or wide
/// (gram_wide_item_cols); automatic takes wide from w = gram_wide_min_w.
/// Tests ask for both (the same Gram up to rounding). A wide request falls
/// back to narrow where the type has no wide item, 2w is not a multiple of
/// its width, or its team would pass the launch bounds.
enum class GramItems { automatic, narrow, wide };

/// The plates of the Gram B_t = [A_i A_j]^T [A_i A_j] of every task of a
/// level, one launch: the returned GramPlateSums reads each Gram where it
/// is (the W-cycle's Gram EVD sums the plates as it loads them).
/// `partial` holds tailored_gram_partial_size(work) scalars; B holds (2w)^2
/// per task. Masked tasks (mask[task.matrix] != 0; mask may be null) are
/// skipped.
template <class ExecSpace, class Scalar>
GramPlateSums<Scalar> launch_pair_gram_plates(const ExecSpace& exec,
                                              const TailoredGemmWork<ExecSpace>& work,
                                              const BlockPairTask<Scalar>* tasks, const int* mask,
                                              Scalar* partial, Scalar* B,
                                              GramItems items_wanted = GramItems::automatic) {
  GramPlateSums<Scalar> sums{work.partial_begin.data(), partial, B, work.w};
  if (work.tasks == 0)
    return sums;
  constexpr const char* fn = "kwsvd::Impl::launch_pair_gram";
  const int w = work.w;
  const auto too_wide = [&]() {
    throw_invalid_argument(fn, "work.w",
                           "= " + std::to_string(w) + ": one row of the pair does not fit the " +
                               "level-0 scratch of " + ExecSpace::name());
  };
  const auto gram_teams = [&](auto pipelined, int chunk, int groups, std::size_t scalars,
                              auto item_cols, auto column_runs) {
    return PairGramFunctor<ExecSpace, Scalar, decltype(pipelined)::value,
                           decltype(item_cols)::value, decltype(column_runs)::value>{
        tasks,
        work.segments.data(),
        work.team_begin.data(),
        work.partial_begin.data(),
        mask,
        partial,
        B,
        w,
        chunk,
        groups,
        scalars};
  };
  bool launched = false;
  const auto launch_pipelined = [&](auto item_cols, auto team_max, auto column_runs) {
    constexpr int ItemCols = decltype(item_cols)::value, TeamMax = decltype(team_max)::value;
    const int groups = work.gram_groups > 0
                           ? work.gram_groups
                           : tailored_gram_groups<ExecSpace, Scalar>(
                                 w, work.team_threads, work.max_segment_rows, ItemCols);
    const PipelinedGramShape shape = pipelined_gram_shape<ExecSpace, Scalar>(
        w, groups, work.max_segment_rows, ItemCols, decltype(column_runs)::value);
    const auto f = gram_teams(std::true_type(), shape.chunk_rows, shape.groups,
                              shape.scratch_scalars, item_cols, column_runs);
    if (shape.chunk_rows > 0 && shape.threads <= tailored_team_size_max<ExecSpace, Scalar, TeamMax>(
                                                     exec, work.teams, shape.scratch, f)) {
      launch_tailored_teams<ExecSpace, Scalar, TeamMax>(exec, "kwsvd::tailored_gram", work.teams,
                                                        shape.threads, shape.scratch, f);
      return true;
    }
    return false;
  };
  if (work.teams > 0 && runs_off_host<ExecSpace>()) {
    constexpr int wide_cols = gram_wide_item_cols<Scalar>();
    const bool wide = wide_cols != gemm_tile && (2 * w) % wide_cols == 0 &&
                      items_wanted != GramItems::narrow &&
                      (items_wanted == GramItems::wide || w >= gram_wide_min_w);
    if constexpr (wide_cols != gemm_tile) {
      if (wide)
        launched =
            launch_pipelined(std::integral_constant<int, wide_cols>(),
                             std::integral_constant<int, gram_wide_team_max>(), std::false_type());
    }
    // Narrow when wide items are not wanted or their team does not fit.
    using NarrowCols = std::integral_constant<int, gemm_tile>;
    using NarrowTeamMax = std::integral_constant<int, tailored_gemm_team_max<Scalar>()>;
    if constexpr (gram_column_runs_wanted<Scalar>(gram_column_runs_min_w)) {
      if (!launched && work.gram_column_runs && gram_column_runs_wanted<Scalar>(w))
        launched = launch_pipelined(NarrowCols(), NarrowTeamMax(), std::true_type());
    }
    if (!launched)
      launched = launch_pipelined(NarrowCols(), NarrowTeamMax(), std::false_type());
  }
  if (work.teams > 0 && !launched) {
    // Host backends, and tile counts past a GPU team: tiles taken in turn.
    const int chunk = tailored_gram_chunk_rows<ExecSpace, Scalar>(w, work.max_segment_rows);
    if (chunk < 1)
      too_wide();
    const std::size_t scalars =
        aligned16_extent<Scalar>(std::size_t(gram_chunk_ld<Scalar>(w)) * std::size_t(chunk));
    const std::size_t scratch = scratch_bytes_for<ExecSpace, Scalar>(scalars);
    const auto f = gram_teams(std::false_type(), chunk, 1, scalars,
                              std::integral_constant<int, gemm_tile>(), std::false_type());
    const int team = std::max(
        1, std::min(gram_upper_tiles(w),
                    tailored_team_size_max<ExecSpace, Scalar>(exec, work.teams, scratch, f)));
    launch_tailored_teams<ExecSpace, Scalar>(exec, "kwsvd::tailored_gram_in_memory", work.teams,
                                             team, scratch, f);
  }
  sums.single_plates_written = launched;
  return sums;
}

/// Gram B_t = [A_i A_j]^T [A_i A_j] of every task of a level into B: the
/// plates' launch, then one for the cross-plate sums. Masked tasks
/// (mask[task.matrix] != 0; mask may be null) are skipped and their B left
/// unchanged.
template <class ExecSpace, class Scalar>
void launch_pair_gram(const ExecSpace& exec, const TailoredGemmWork<ExecSpace>& work,
                      const BlockPairTask<Scalar>* tasks, const int* mask, Scalar* partial,
                      Scalar* B, GramItems items_wanted = GramItems::automatic) {
  const GramPlateSums<Scalar> sums =
      launch_pair_gram_plates(exec, work, tasks, mask, partial, B, items_wanted);
  // The pipelined teams wrote B of every one-plate task: no second launch
  // when that is all of them (a level of pairs no taller than a plate).
  if (work.tasks == 0 || (sums.single_plates_written && work.tasks_not_one_plate == 0))
    return;
  const std::size_t n2 = std::size_t(2 * work.w) * std::size_t(2 * work.w);
  Kokkos::parallel_for("kwsvd::tailored_gram_reduce",
                       Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::size_t>>(
                           exec, 0, std::size_t(work.tasks) * n2),
                       PairGramReduceFunctor<ExecSpace, Scalar>{tasks, mask, sums, B});
}

/// The update teams; ItemCols: the items' output columns (4, or
/// update_wide_item_cols), a kernel of its own so that the narrow one keeps
/// its registers.
template <class ExecSpace, class Scalar, bool JInScratch, int ItemCols>
struct PairUpdateFunctor {
  using Member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using ScratchVector = TeamScratch<ExecSpace, Scalar>;
  using OffsetVector = TeamScratch<ExecSpace, std::ptrdiff_t>;
  const BlockPairTask<Scalar>* tasks;
  const PlateSegment* segments;
  const int* team_begin;
  const int* mask;
  const int* pair_rotates;  // may be null; pair_rotates[p] == 0: J_p = I, nothing to do
  const Scalar* J;          // pair p: column-major (2w) x (2w) at J + p (2w)^2
  int w, chunk_rows;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const int n = 2 * w;
    const std::size_t nn = std::size_t(n) * n;
    // Carved as launch_pair_update sized them.
    ScratchVector Xv(member.team_scratch(0),
                     aligned16_extent<Scalar>(update_chunk_scalars(chunk_rows, w)));
    ScratchVector Jv(member.team_scratch(0), JInScratch ? aligned16_extent<Scalar>(nn) : 0);
    OffsetVector offsets(member.team_scratch(0), std::size_t(n));
    Scalar* const X = align16(Xv.data());
    Scalar* const Js = JInScratch ? align16(Jv.data()) : nullptr;
    for (int s = team_begin[member.league_rank()]; s < team_begin[member.league_rank() + 1]; ++s) {
      const PlateSegment seg = segments[s];
      const BlockPairTask<Scalar> task = tasks[seg.task];
      if ((mask != nullptr && mask[task.matrix] != 0) ||
          (pair_rotates != nullptr && pair_rotates[task.pair] == 0))
        continue;
      const Scalar* Jt = J + std::size_t(task.pair) * nn;
      member.team_barrier();  // the previous segment is done with Js and offsets
      load_update_columns(member, task, w, offsets.data());
      // update_plate_team's first barrier orders these stores before use.
      if constexpr (JInScratch) {
        load_update_rotation(member, Jt, w, Js);
        update_plate_team<true, ItemCols>(member, task, seg, w, chunk_rows, Js, X, offsets.data());
      } else {
        update_plate_team<false, ItemCols>(member, task, seg, w, chunk_rows, Jt, X, offsets.data());
      }
    }
  }
};

/// [A_i A_j] <- [A_i A_j] J_{task.pair} for every task of a level (A's pairs
/// and V's pairs may share one launch), one plate per team; masked tasks are
/// skipped, and so are tasks whose pair p has pair_rotates[p] == 0 (J_p = I:
/// a pair whose EVD found nothing to rotate; pair_rotates may be null). J
/// holds (2w)^2 scalars per pair, column-major. `items`: the width of the
/// teams' work items, chosen from the launch's size (automatic) or forced
/// (tests: both widths give the same product up to rounding); a wide
/// request falls back to narrow where the type has no wide item
/// (update_wide_item_cols) or 2w is not a multiple of its width.
enum class UpdateItems { automatic, narrow, wide };

/// Launches whose segments have at most this many rows (4 row blocks,
/// update_split_row_blocks) read J from memory, not from a copy in scratch:
/// the copy (2w x 2w entries, one barrier) served at most 16 rows a team,
/// and that kernel splits a short chunk's k loop over the lanes its lane
/// runs leave idle (update_chunk_product). The split lives only in that
/// kernel: compiled into the J-in-scratch ones too it spilled there and
/// made 21 of 32 points 0.4 to 2.4% slower (H200). H200, best of two
/// alternating runs against J in scratch: double 100^2 x 1 / x 10 -4.6 /
/// -5.1%, 128^2 x 1 / x 10 -4.1 / -1.9%, float 100^2 x 10 -1.2%, the other
/// 27 points of 16 shapes x 2 types within -3.4 to +0.3%; J from memory
/// without the split gave -1.0% at double 100^2 x 10; the rule at 32 rows
/// was slower than at 16 (float 256^2 x 10 +4.2%).
constexpr int update_j_memory_rows = gemm_tile * update_split_row_blocks;

template <class ExecSpace, class Scalar>
void launch_pair_update(const ExecSpace& exec, const TailoredGemmWork<ExecSpace>& work,
                        const BlockPairTask<Scalar>* tasks, const int* mask, const Scalar* J,
                        const int* pair_rotates = nullptr,
                        UpdateItems items_wanted = UpdateItems::automatic) {
  if (work.tasks == 0 || work.teams == 0)
    return;
  const int w = work.w;
  const std::size_t j_bytes = tailored_update_j_bytes<ExecSpace, Scalar>(w);
  // The task's column offsets (load_update_columns) always take scratch.
  const std::size_t offset_bytes = scratch_bytes_for<ExecSpace, std::ptrdiff_t>(std::size_t(2 * w));
  // J in scratch when a lane run of rows (or the whole segment) still fits
  // beside it; else J is read from memory (cached) and X takes the scratch.
  int chunk = tailored_update_chunk_rows<ExecSpace, Scalar>(w, work.max_segment_rows,
                                                            j_bytes + offset_bytes);
  const bool j_in_scratch =
      chunk >= std::min(gemm_tile * update_lane_blocks, std::max(1, work.max_segment_rows)) &&
      work.max_segment_rows > update_j_memory_rows;
  if (!j_in_scratch)
    chunk = tailored_update_chunk_rows<ExecSpace, Scalar>(w, work.max_segment_rows, offset_bytes);
  if (chunk < 1) {
    throw_invalid_argument("kwsvd::Impl::launch_pair_update", "work.w",
                           "= " + std::to_string(w) + ": one row of the pair does not fit the " +
                               "level-0 scratch of " + ExecSpace::name());
  }
  const std::size_t x_bytes = tailored_update_chunk_bytes<ExecSpace, Scalar>(w, chunk);
  const auto launch = [&](auto j_scratch, auto item_cols, std::size_t scratch) {
    constexpr bool JInScratch = decltype(j_scratch)::value;
    constexpr int ItemCols = decltype(item_cols)::value;
    const PairUpdateFunctor<ExecSpace, Scalar, JInScratch, ItemCols> f{
        tasks, work.segments.data(), work.team_begin.data(), mask, pair_rotates, J, w, chunk};
    // One thread per item of a full chunk; wide items round that up to a
    // multiple of the chunk's rows where the team allows, for
    // load_update_chunk's lean path (whole rows per thread column).
    const int max_team = tailored_team_size_max<ExecSpace, Scalar>(exec, work.teams, scratch, f);
    int team = update_chunk_items(chunk, w, ItemCols);
    const int whole_rows = (team + chunk - 1) / chunk * chunk;
    if (ItemCols != gemm_tile && whole_rows <= max_team)
      team = whole_rows;
    team = std::max(1, std::min(team, max_team));
    launch_tailored_teams<ExecSpace, Scalar>(exec, "kwsvd::tailored_update", work.teams, team,
                                             scratch, f);
  };
  using Narrow = std::integral_constant<int, gemm_tile>;
  if (!j_in_scratch) {
    launch(std::false_type(), Narrow(), x_bytes + offset_bytes);
    return;
  }
  constexpr int wide_cols = update_wide_item_cols<Scalar, true>();
  const std::size_t scratch = x_bytes + j_bytes + offset_bytes;
  // Wide items (update_wide_item_cols) halve a team's threads, so each
  // thread does twice the work: that pays only when the launch's teams
  // would half fill the device anyway (H200, float: Table IV 512^2 x 200,
  // 1600 teams of 128 threads a launch, 3 to 4% faster; wide items in
  // every launch made batches of 10 up to 9% slower, 128^2 x 10).
  const bool fills_device =
      2 * std::size_t(work.teams) * std::size_t(update_chunk_items(chunk, w, wide_cols)) >=
      std::size_t(exec.concurrency());
  const bool wide = wide_cols != gemm_tile && (2 * w) % wide_cols == 0 &&
                    items_wanted != UpdateItems::narrow &&
                    (items_wanted == UpdateItems::wide || fills_device);
  if constexpr (wide_cols != gemm_tile) {
    if (wide) {
      launch(std::true_type(), std::integral_constant<int, wide_cols>(), scratch);
      return;
    }
  }
  launch(std::true_type(), Narrow(), scratch);
}

}  // namespace kwsvd::Impl
