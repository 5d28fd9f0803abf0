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

}  // namespace kwsvd::Impl
