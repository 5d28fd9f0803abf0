#pragma once
// The tailoring plan of the two batched GEMMs of a W-cycle level and the
// auto-tuning engine that picks it (W-cycle paper §IV-D-2 and -3).
//
// A plan is (w, delta, T): column-block width, plate height and threads per
// team. The performance models rate a plan by its thread-level parallelism
// (eq. 8: f1 = sum_k n_k m_k / (2w delta) * T) and by the arithmetic
// intensity of the Gram (f2 = L * 2w) and of the update (f3 = L * 2w delta /
// (2w + delta)), L the scalars per load. The engine walks the candidates of
// Table II, ordered by increasing TLP and decreasing AI, and takes the first
// whose TLP reaches a per-platform threshold: enough parallelism to fill the
// device, with as much data reuse (and as wide blocks, hence as few sweeps
// of block rotations) as that allows. The threshold is measured once per
// platform by the calibration command (perf_tests/calibrate_tailoring.cpp,
// the paper's inflection-point method) and read from a tuning file.

#include <string>
#include <vector>

namespace kwsvd {

/// One tailoring plan (a row of the paper's Table II).
struct TailoringPlan {
  int w = 0;             ///< column-block width
  int delta = 0;         ///< rows of a standard plate
  int team_threads = 0;  ///< threads per team (T_h)
};

inline bool operator==(const TailoringPlan& a, const TailoringPlan& b) {
  return a.w == b.w && a.delta == b.delta && a.team_threads == b.team_threads;
}

/// Rows and columns of one matrix of a batch.
struct MatrixShape {
  int rows = 0;
  int cols = 0;
};

/// Per-platform parameters of the auto-tuning engine.
struct TuningParameters {
  double tlp_threshold = 0;  ///< f1 a plan must reach (eq. 10)
  std::string device;        ///< what it was measured on
  std::string source;        ///< "built-in default ..." or the tuning file's path
};

/// eq. (8)/(10) f1: threads of both GEMMs over the batch.
double tailoring_tlp(const TailoringPlan& plan, const std::vector<MatrixShape>& shapes);

/// eq. (9)/(10) f2 and f3 with `load_width` scalars per load request.
double tailoring_ai_gram(const TailoringPlan& plan, int load_width);
double tailoring_ai_update(const TailoringPlan& plan, int load_width);

/// The candidates of Table II for the batch's largest row count m*, without
/// widths above w_max (the widest block pair whose rotation the level can
/// compute in scratch): (w_top, m*, 256), (24, m*, 256), (24, m*/2, 256),
/// (16, m*/2, 256), (16, m*/4, 256), (16, m*/8, 256), (8, m*/4, 128),
/// (8, m*/8, 128), w_top the largest of 48, 32, 24 that fits; plate heights
/// are at least 8 rows, duplicates dropped. In order of increasing TLP.
/// Heights below m* are rounded down to multiples of `row_align` (at least
/// 1; throws kwsvd::invalid_argument otherwise), so that every plate starts
/// on such a row: the float Gram moves a segment in 16-byte column runs only
/// from an aligned first row (gram_column_runs_fit), and a height of m* / 2 =
/// 499 left every second plate of 999 rows without them (H200, float 999 x
/// 64 x 100: 2.81 ms against 2.37 at 1001 rows).
std::vector<TailoringPlan> tailoring_candidates(int max_rows, int w_max, int row_align = 1);

/// The engine: the first candidate whose TLP reaches the threshold, else the
/// one with the most parallelism (the last). Throws kwsvd::invalid_argument
/// when there is no candidate.
TailoringPlan choose_tailoring_plan(const std::vector<TailoringPlan>& candidates,
                                    const std::vector<MatrixShape>& shapes, double tlp_threshold);

/// Narrowest block the W-cycle's engine falls back to when no plan reaches
/// the threshold (choose_wcycle_plan).
constexpr int wcycle_fallback_min_w = 16;

/// Where the engine's plan reaches the threshold, the W-cycle still takes the
/// widest candidate when it cuts the widest matrix into at most this many
/// blocks and its own TLP is at least wcycle_widest_tlp_share of the
/// threshold (choose_wcycle_plan).
constexpr int wcycle_widest_max_blocks = 8;
constexpr double wcycle_widest_tlp_share = 0.4;

/// The W-cycle's engine: choose_tailoring_plan, with these exceptions.
///
/// Few blocks: the engine weighs the GEMMs' parallelism only, but a sweep of
/// few blocks is a few steps of few pairs, where halving the pairs (w = 32
/// against 24 in float: 6 pairs of 128 columns instead of 15, each about
/// twice the work) wins although the wider plan's TLP misses the threshold.
/// H200, float, the engine's plan against the widest forced (best of two):
/// Fig. 8(b) 128^2 x 100 4.50 ms (w = 22 after balancing) against 3.38 (w =
/// 32, TLP 51,200), Table VI's group up to 128 6.26 (24) against 4.92 (32,
/// TLP about 45,000), Table IV 100^2 x 200 4.18 (20) against 3.78 (32
/// balanced to 26, TLP 80,000); not with many blocks: Fig. 8(b) 1024^2 x 10
/// 90.9 (24) against 95.1 (32 blocks of 32, TLP 40,960). So the widest
/// candidate is taken where it makes at most wcycle_widest_max_blocks blocks
/// of the widest matrix and reaches wcycle_widest_tlp_share of the threshold.
///
/// No plan reaches the threshold: such a batch cannot fill the device
/// whatever the plan, and a W-cycle step then costs about its chain of
/// launches, whatever its work: w = 8 doubles the steps of w = 16 and saves
/// nothing. So the most parallel plan of width at least
/// wcycle_fallback_min_w is taken (the last candidate when there is none).
/// H200, Fig. 8(b) at batch 10, 128^2: w = 8 (the paper's fallback) 4.94 ms
/// double / 3.92 float, w = 16 3.93 / 2.88, w = 24 4.87 / 3.73, w = 32 6.91
/// / 2.70 (double's 2w = 64 EVD keeps J in registers, slower per pair);
/// 256^2 and 512^2 at batch 10 already reached w = 16
/// (perf_tests/notes/wcycle.md).
///
/// Except for few blocks where the wide EVD's steps cost about what the
/// narrow one's do (`fallback_widest_max_blocks` > 0; the scheduler passes
/// wcycle_fallback_widest_max_blocks): the fewest blocks of an even count
/// that the widest candidate's width allows, where that is at most
/// `fallback_widest_max_blocks`, each as narrow as that count allows (the
/// widest candidate's plates, w = ceil(N / count) rounded up to even, N the
/// batch's most columns; a width none of the candidates may have, so that a
/// caller who fixes the width keeps it: plan_wcycle_level). Such a call is a
/// chain of Jacobi steps, (N / w - 1) outer steps of 2w - 1 inner ones,
/// which fall with w once w passes sqrt(N / 2): at 128 columns 3 x 63 = 189
/// at w = 32 against 7 x 31 = 217 at w = 16. Float's 64 x 64 EVD (J in
/// scratch, 256 threads) takes about
/// the time of the 32 x 32 one a step: H100, Fig. 8(b) float 128^2 x 10,
/// w = 32 2.269 ms against w = 16 2.490 (-8.9%; the H200 above: -6.3%),
/// 256^2 x 10 (8 blocks) 6.032 against 6.085. Double's widest EVD that keeps
/// J in scratch (2w = 48, 192 threads) is slower a step, so that more
/// blocks lose (128^2 x 10 at w = 24, 6 blocks of 22: 4.167 ms against
/// 3.322), but 4 blocks still win (H200, batch 1 / 10 against w = 16: 72^2
/// at w = 18 -34 / -31%, 80^2 at 20 -31 / -30%, 96^2 at 24 -5 / -4%).
/// Only an even count of blocks (an odd one leaves a block out of every
/// step: 3 blocks are 3 steps of one pair, as many as 4 blocks take with two
/// pairs each), so 72 columns make 4 blocks of 18 where the table's widths
/// 24 and 32 make 3. And only for nearly square matrices (rows <
/// wcycle_fallback_widest_max_aspect x columns; the batch's most rows
/// against its most columns): a tall matrix's sweep is its row work, which
/// the narrow plan's pairs spread over more teams. H200, float, w = 16
/// against the widest, batch 1 / 10: 512 x 128 -22 / -22%, 1000 x 96 -51 /
/// -55%, 4000 x 80 -73 / -64%; 112^2 (4 blocks of 28) +40 / +53%, 128^2
/// +10 / +6%, 256 x 112 +13 / +9%, 256 x 128 -12 / -7%; 4 blocks of 18 to
/// 24 against w = 16: 72^2 -34 / -29%, 76^2 -36 / -34%, 80^2 -28 / -29%,
/// 96^2 -17 / -12%, 150 x 96 -35 / -36%, 80 x 120 -22 / -31%
/// (perf_tests/notes/wcycle.md, "The heavy QR's rows; float's narrow
/// fallback for tall matrices" and "Even counts of blocks").
TailoringPlan choose_wcycle_plan(const std::vector<TailoringPlan>& candidates,
                                 const std::vector<MatrixShape>& shapes, double tlp_threshold,
                                 int fallback_widest_max_blocks = 0);

/// Rows per column below which choose_wcycle_plan's fallback may take its
/// few blocks.
constexpr int wcycle_fallback_widest_max_aspect = 2;

/// The W-cycle's fallback_widest_max_blocks (choose_wcycle_plan) for a
/// scalar of `scalar_bytes`: 4 blocks (3 outer steps a sweep), in float and
/// in double (double took none until the forced widths of
/// perf_tests/notes/wcycle.md, "Four blocks below the threshold").
constexpr int wcycle_fallback_widest_max_blocks(int /*scalar_bytes*/) {
  return 4;
}

/// The width of six or eight blocks that the W-cycle takes for a small batch
/// of nearly square matrices instead of the engine's narrow plan (0 where it
/// keeps the engine's): the fewest even count of blocks past
/// choose_wcycle_plan's four, up to eight, whose width, ceil(N / count)
/// rounded up to even (N the batch's most columns), is at most 20 columns in
/// double and 24 in float (scalar_bytes), at most `widest_evd_w` and at
/// least wcycle_fallback_min_w. "Small": even the most parallel candidate is
/// below twice the threshold (10 matrices of 140 columns, whose narrow plan
/// float's row alignment lifts just past the threshold, but not 30);
/// "nearly square": fewer than wcycle_fallback_widest_max_aspect rows a
/// column. Only past four blocks of the widest candidate (97 columns in
/// double, 129 in float), whose range choose_wcycle_plan's four blocks
/// serve. plan_wcycle_level plans that width as a caller's (SvdOptions::
/// level_widths) where the engine's is narrower.
///
/// Why: such a call is a chain of W-cycle steps of one Gram, one EVD and one
/// update launch each, and the engine's w = 16 cuts 129 to 192 columns into
/// 9 to 12 blocks, 9 to 11 steps of 31 EVD steps a sweep; 6 or 8 blocks take
/// 5 or 7 steps of up to 47 or 39 EVD steps, with fewer launches. Double's
/// EVD grows slower with n' past 40 (192 threads at n' = 48), so its blocks
/// stop at 20 columns. H200, against the engine, best of two
/// (perf_tests/notes/wcycle.md, "Six or eight blocks"), batch 1 / 10: double
/// 120^2 in 6 of 20 -8 / -11%, 136^2 to 144^2 in 8 of 18 -5 to -14%, 148^2 to
/// 160^2 in 8 of 20 -1 to -8%; float 132^2 to 144^2 in 6 of 22 or 24 -8 to
/// -19%, 148^2 to 192^2 in 8 of 20 to 24 -2 to -10%. Wider blocks lose: double
/// 128^2 in 6 of 22 +30 / +21%, 176^2 and 192^2 in 8 of 22 and 24 +5 to +10%;
/// float 150^2 to 230^2 in 6 or 8 of 26 to 30 up to +16%.
int wcycle_few_blocks_width(const std::vector<TailoringPlan>& candidates,
                            const std::vector<MatrixShape>& shapes, double tlp_threshold,
                            int widest_evd_w, int scalar_bytes);

/// Built-in parameters: for GPUs the threshold calibrated on an NVIDIA H200
/// (and used for the H100, the same SM count class); for host backends a
/// threshold of 1, which selects the widest, most cache-friendly plan.
TuningParameters default_tuning_parameters(bool gpu);

/// Reads a tuning file ("key = value" lines: tlp_threshold, device; '#'
/// starts a comment). Throws kwsvd::invalid_argument naming the file and the
/// line when it cannot be read, lacks tlp_threshold, or gives one that is not
/// a positive finite number.
TuningParameters read_tuning_file(const std::string& path);

/// Why a tuning file cannot record `device` as its device name ("must not hold
/// '#' or a line break, got '...'": read_tuning_file would cut it there), or
/// "" when it can. write_tuning_file and kwsvd-calibrate's --device check it.
std::string tuning_device_name_problem(const std::string& device);

/// Writes one (what the calibration command produces), with the threshold to
/// all its digits. Throws kwsvd::invalid_argument on I/O errors, on a
/// threshold that is not positive and finite, and on a device name holding
/// '#' or a line break.
void write_tuning_file(const std::string& path, const TuningParameters& parameters,
                       const std::string& comment);

/// The parameters the library uses: the file named by the environment
/// variable KWSVD_TUNING_FILE when set, else the built-in defaults.
TuningParameters active_tuning_parameters(bool gpu);

}  // namespace kwsvd
