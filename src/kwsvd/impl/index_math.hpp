#pragma once
// Index arithmetic for the team kernels' flattened loops.

#include <Kokkos_Macros.hpp>

namespace kwsvd::Impl {

/// q / d for 0 <= q < 2^22 and d > 0 in three cheap instructions instead of
/// an integer division (~20 on GPUs). (q + 1/2) / d lies at least 1 / (2d)
/// from an integer; the float product carries a relative error below 2^-23,
/// i.e. an absolute one below (q + 1/2) / d * 2^-23 < 1 / (2d) while
/// q + 1/2 < 2^22, so truncation gives the exact quotient.
/// Callers keep q in that range (gram_evd_max_n, tailored chunk sizes).
KOKKOS_INLINE_FUNCTION int small_quotient(int q, float inv_d) {
  return int((float(q) + 0.5f) * inv_d);
}

/// q / d for any q >= 0: small_quotient when q < 2^22, else the division.
KOKKOS_INLINE_FUNCTION int quotient(int q, int d, float inv_d) {
  return q < (1 << 22) ? small_quotient(q, inv_d) : q / d;
}

/// Position (P, Q), P <= Q, of upper-triangle block e of a w x w block grid:
/// rows P and w - 1 - P are folded into one row of w + 1 blocks, so the
/// w (w + 1) / 2 blocks map onto a rectangle without a square root.
/// inv_w1 = 1 / (w + 1) as a float (see small_quotient).
KOKKOS_INLINE_FUNCTION void upper_block(int w, float inv_w1, int e, int& P, int& Q) {
  const int folded = w / 2;  // full folded rows
  const int fr = small_quotient(e, inv_w1);
  if (fr < folded) {
    const int k = e - fr * (w + 1);
    if (k < w - fr) {
      P = fr;
      Q = fr + k;
    } else {
      P = w - 1 - fr;
      Q = P + (k - (w - fr));
    }
  } else {  // odd w: the middle row, (w + 1) / 2 blocks
    P = folded;
    Q = P + (e - folded * (w + 1));
  }
}

}  // namespace kwsvd::Impl
