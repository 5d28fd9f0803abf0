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
inline int lanes_per_pair_measured(int max_rows, long batch) {
  if (batch <= 400 && max_rows > 8)
    return 16;
  return 4;
}

}  // namespace kwsvd::Impl
