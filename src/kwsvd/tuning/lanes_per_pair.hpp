#pragma once
// How many vector lanes orthogonalize one column pair in the level-0 SVD
// kernel: the W-cycle paper's alpha x warp, alpha in {1, 1/2, 1/4, 1/8}
// (§IV-B-1), which proposes two methods. Both are here; the caller's
// SvdOptions::lanes_rule picks one and SvdOptions::lanes_per_pair overrides both.

namespace kwsvd::Impl {

/// The paper's first method: beta = gcd(m*, 32) for the largest row count m*,
/// lanes = max(4, beta).
inline int lanes_per_pair_rule(int max_rows) {
  int a = max_rows > 0 ? max_rows : 1, b = 32;
  while (b != 0) {
    const int r = a % b;
    a = b;
    b = r;
  }
  return a > 4 ? a : 4;
}

/// The paper's second method: a decision tree on the largest row count m*
/// and the batch size, fitted by hand to the lanes sweep of perf_small_svd
/// (BM_kwsvd_small_svd_lanes, m = n in {8, 16, 24, 32}, batches 100, 1000,
/// 10000, float and double) on an H200 (perf_tests/results/). Four lanes win
/// once the batch fills the GPU: fewer lanes per pair amortize the rotation
/// parameters (square roots and divisions every lane repeats) over more rows.
/// When the batch leaves most SMs idle (100 matrices), each step's latency
/// decides and 16 lanes, which shorten the row loops, win above 8 rows.
/// Taller work matrices at large batches take more lanes: four lanes leave
/// each lane 9 to 150 rows, past the compiled row loop's 8 blocks. H200,
/// batch 1000, lanes forced (4 / 8 / 16 / 32, ms, best of two; seed 002's
/// classes, perf_tests/notes/small_svd.md): float 64^2 3.83 / 2.94 / 5.40 /
/// 8.92; m x 16 for m = 100: double 0.424 / 0.357 / 0.457 / 0.582, float
/// 0.339 / 0.278 / 0.291 / 0.390; m = 200: double 1.173 / 0.804 / 0.678 /
/// 0.848, float 0.550 / 0.398 / 0.497 / 0.511; float m = 500: 2.054 / 1.227
/// / 0.825 / 0.902. So 8 lanes up to 256 rows (double m = 200 is 16% off
/// its best there) and 16 beyond.
///
/// Above 32 rows the small-batch branch also needs few pairs: a team is
/// `pairs` x lanes threads (the widest matrix's column pairs), and 16 lanes
/// make teams so large that few fit an SM, so that 200 to 400 matrices of
/// 20 pairs or more already take two or more waves. 16 lanes only where
/// batch x pairs <= 3200; else the large-batch lanes. H200, batches 200 and
/// 400, 16 lanes against 8 (ms, best of two, perf_tests/notes/small_svd.md,
/// "Lanes at batches of 200 to 400"): double 48^2 x 200 (4800) 1.311 ->
/// 0.678, x 400 2.485 -> 0.944; double 40^2 x 200 (4000) 0.662 -> 0.570;
/// double 64 x 32 x 400 (6400) 0.734 -> 0.491; but 64 x 32 x 200 (3200)
/// 0.392 -> 0.410 and 100 x 16 x 400 (3200) 0.224 -> 0.299. pairs = 0
/// (not known: the W-cycle's pair SVDs, which are opt-in and not measured)
/// keeps 16.
///
/// Taller matrices keep 16 lanes up to batch x pairs <= 4800: above 72 rows
/// 8 lanes leave each lane more than nine row blocks, past the compiled and
/// bounded row loops, and the general loop costs more than the larger
/// teams. H200, 16 lanes against 8 (ms, best of two; small_svd.md, "Tall
/// matrices at batches of 200 to 400"): float 96 x 24 x 400 (4800) 0.337 ->
/// 0.277, 128 x 24 x 400 (4800) 0.394 -> 0.325, 144 x 36 x 200 (3600) 0.730
/// -> 0.510; double 96 x 24 x 400 0.463 -> 0.396, 200 x 20 x 400 (4000)
/// 0.574 -> 0.510; but at 6000 8 lanes win: double 80 x 30 x 400 0.641 ->
/// 0.804, 100 x 40 x 300 1.188 -> 1.557.
///
/// Four lanes at large batches assume pairs enough to fill a warp: a team
/// of `pairs` x lanes threads takes whole warps, so a matrix of four pairs
/// or fewer (8 columns or fewer) on four lanes leaves half a warp or more
/// idle, with every multiprocessor at its limit of resident teams. Such
/// matrices take twice the lanes while that still fits one warp (the 32
/// threads of the GPU the rule was fitted on) and the rows give the lanes
/// work: 1 pair up to 32 lanes, 2 pairs 16, 3 or 4 pairs 8. H200, batch
/// 10000, the rule's 4 lanes against its widened choice (ms, best of two;
/// small_svd.md, "Lanes that fill a warp"): double 32 x 2 0.075 -> 0.045,
/// 32 x 4 0.159 -> 0.104, 16 x 4 0.111 -> 0.093, 32 x 8 0.343 -> 0.259,
/// 28 x 7 0.331 -> 0.253, 16 x 8 0.236 -> 0.207, 8 x 8 0.192 -> 0.185,
/// 20 x 5 0.209 -> 0.180; float 32 x 8 0.236 -> 0.182; batch 1000 up to
/// -19% (32 x 2). 4 x 4 and 3 x 3, whose rows a fifth lane would not reach,
/// stay on 4 (wider: +6 to +10%), and so do 5 pairs or more (32 x 10 x
/// 10000 on 8 lanes: +23%).
inline int lanes_per_pair_measured(int max_rows, long batch, int pairs = 0) {
  const long load = batch * pairs;
  if (batch <= 400 && max_rows > 8 &&
      (max_rows <= 32 || load <= 3200 || (max_rows > 72 && load <= 4800)))
    return 16;
  if (max_rows <= 32) {
    constexpr int warp = 32;
    int lanes = 4;
    while (pairs > 0 && 2 * lanes * pairs <= warp && lanes < max_rows)
      lanes *= 2;
    return lanes;
  }
  return max_rows <= 256 ? 8 : 16;
}

}  // namespace kwsvd::Impl
