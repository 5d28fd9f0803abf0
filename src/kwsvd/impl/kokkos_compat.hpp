#pragma once
// The few Kokkos names that moved between the oldest supported Kokkos (3.4.01,
// Debian's Trilinos 13.2) and current 4.x/5.x. Everything else kwsvd uses is
// spelled the same in both.

#include <limits>

#include <Kokkos_Core.hpp>

namespace kwsvd::Impl {

// Math functions lived in Kokkos::Experimental until Kokkos 3.7.
#if KOKKOS_VERSION >= 30700
namespace kmath = ::Kokkos;
#else
namespace kmath = ::Kokkos::Experimental;
#endif

// A quiet NaN usable in device code (Kokkos' numeric traits gained quiet_NaN
// in 3.6; before that std::numeric_limits, fine on the host backends).
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar quiet_nan() {
#if KOKKOS_VERSION >= 30600
  return Kokkos::Experimental::quiet_NaN<Scalar>::value;
#else
  return std::numeric_limits<Scalar>::quiet_NaN();
#endif
}

// Level-0 team scratch a team may request on ExecSpace, read at run time
// (about 40 KB on CUDA; never hard-coded).
template <class ExecSpace>
inline int team_scratch_bytes_max() {
  return Kokkos::TeamPolicy<ExecSpace>::scratch_size_max(0);
}

// Longest vector (ThreadVectorRange) length ExecSpace supports.
template <class ExecSpace>
inline int vector_length_max() {
  return Kokkos::TeamPolicy<ExecSpace>::vector_length_max();
}

}  // namespace kwsvd::Impl
