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
inline int lanes_per_pair_measured(int max_rows, long batch) {
  if (batch <= 400 && max_rows > 8)
    return 16;
  if (max_rows <= 32)
    return 4;
  return max_rows <= 256 ? 8 : 16;
}

}  // namespace kwsvd::Impl
