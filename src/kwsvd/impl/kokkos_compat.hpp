#pragma once
// The few Kokkos names that moved between the oldest supported Kokkos (3.4.01,
// Debian's Trilinos 13.2) and current 4.x/5.x. Everything else kwsvd uses is
// spelled the same in both.

#include <cfloat>
#include <cmath>
#include <limits>
#include <vector>

#include <Kokkos_Core.hpp>

// A Kokkos whose View is built on mdspan (the 4.6.99 snapshot this project tests on) marks the
// View's members [[no_unique_address]] in C++20. nvcc from CUDA 12.9 on then lays out a class that
// holds a View and more members one way in device code and another in host code: measured with
// CUDA 13.0, g++ 12 and Kokkos 4.6.99, the member after a View<double*> sits at byte 32 on the
// device and at byte 40 on the host. Every functor with a member after a View, and every
// RangePolicy launch of one (the policy follows the functor), then reads its members at the wrong
// offsets: the kernel writes nothing or writes out of bounds, and no error is reported (Kokkos's
// own deep_copy fills and fill_random included). Kokkos later turned the attribute off for these
// nvcc versions (kokkos/kokkos#8615); with a Kokkos that lacks the fix, this stops the build
// instead of letting kernels corrupt memory. kwsvd's own kernels pass raw pointers, not Views, so
// defining KWSVD_ALLOW_NVCC_NO_UNIQUE_ADDRESS builds it anyway, at the risk of every other kernel
// in the program.
#if defined(__NVCC__) && defined(MDSPAN_IMPL_USE_ATTRIBUTE_NO_UNIQUE_ADDRESS) && \
    !defined(KOKKOS_ENABLE_IMPL_VIEW_LEGACY) && !defined(KWSVD_ALLOW_NVCC_NO_UNIQUE_ADDRESS)
#if MDSPAN_IMPL_USE_ATTRIBUTE_NO_UNIQUE_ADDRESS && \
    (__CUDACC_VER_MAJOR__ * 100 + __CUDACC_VER_MINOR__ >= 1209)
#error \
    "kwsvd: this Kokkos uses [[no_unique_address]] in View under nvcc >= 12.9, which lays out functors holding Views differently on host and device (silent wrong results; kokkos/kokkos#8615). Use a Kokkos with that fix, build Kokkos and your code as C++17, or define KWSVD_ALLOW_NVCC_NO_UNIQUE_ADDRESS to build anyway."
#endif
#endif

namespace kwsvd::Impl {

// Math functions lived in Kokkos::Experimental until Kokkos 3.7.
#if KOKKOS_VERSION >= 30700
namespace kmath = ::Kokkos;
#else
namespace kmath = ::Kokkos::Experimental;
#endif

// 1 / sqrt(x). Kokkos::rsqrt (from Kokkos 4.1) is the GPU backends'
// reciprocal square root, about half the instructions of a square root and a
// division (within 1 ulp in double, 2 in float: CUDA's rsqrt, rsqrtf).
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar reciprocal_sqrt(Scalar x) {
#if KOKKOS_VERSION >= 40100
  return Kokkos::rsqrt(x);
#else
  return Scalar(1) / kmath::sqrt(x);
#endif
}

// a * b + c with one rounding (Kokkos::fma from Kokkos 4.0; before that the
// host backends' std::fma, the only backends this project builds on Kokkos 3).
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar fused_multiply_add(Scalar a, Scalar b, Scalar c) {
#if KOKKOS_VERSION >= 40000
  return Kokkos::fma(a, b, c);
#else
  using std::fma;
  return fma(a, b, c);
#endif
}

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

// Full unrolling of a loop with a compile-time trip count in device code
// (keeps small per-thread arrays in registers). Host compilers decide alone.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define KWSVD_UNROLL _Pragma("unroll")
#else
#define KWSVD_UNROLL
#endif

// Floating-point limits usable in device code. std::numeric_limits's member
// functions are host-only for nvcc without --expt-relaxed-constexpr, and
// Kokkos' numeric traits differ between 3.4 and 4.x; <cfloat> macros are
// plain constants everywhere.
template <class Scalar>
struct scalar_limits;
template <>
struct scalar_limits<double> {
  static constexpr double epsilon = DBL_EPSILON;  // 2^-52
  static constexpr double min_normal = DBL_MIN;
  KOKKOS_INLINE_FUNCTION static double infinity() { return HUGE_VAL; }
};
template <>
struct scalar_limits<float> {
  static constexpr float epsilon = FLT_EPSILON;  // 2^-23
  static constexpr float min_normal = FLT_MIN;
  KOKKOS_INLINE_FUNCTION static float infinity() { return HUGE_VALF; }
};

// A team's unmanaged window of T in ExecSpace's level-0 scratch.
template <class ExecSpace, class T>
using TeamScratch = Kokkos::View<T*, typename ExecSpace::scratch_memory_space,
                                 Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// Level-0 team scratch a team may request on ExecSpace, read at run time
// (about 40 KB on CUDA; never hard-coded).
template <class ExecSpace>
inline int team_scratch_bytes_max() {
  return Kokkos::TeamPolicy<ExecSpace>::scratch_size_max(0);
}

// Whether ExecSpace runs away from the host (a GPU backend): picks the
// GPU or host defaults of the tuning engine.
template <class ExecSpace>
constexpr bool runs_off_host() {
  return !Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;
}

// Whether two independent instances of ExecSpace can be made from one
// (Kokkos::Experimental::partition_space, which Kokkos 3.4 lacks) and are
// worth it: on a GPU backend each is a stream of its own, so that two
// chains of launches overlap. Host backends run one.
template <class ExecSpace>
constexpr bool splits_into_streams() {
#if KOKKOS_VERSION >= 40000
  return runs_off_host<ExecSpace>();
#else
  return false;
#endif
}

// `n` new instances (streams, 2 to 4) on exec's device; for backends where
// splits_into_streams<ExecSpace>() (callers check it first). The variadic
// partition_space of every Kokkos 4 release, equal weights.
template <class ExecSpace>
std::vector<ExecSpace> stream_instances(const ExecSpace& exec, int n) {
#if KOKKOS_VERSION >= 40000
  const auto as_vector = [](const auto& parts) {
    return std::vector<ExecSpace>(parts.begin(), parts.end());
  };
  switch (n) {
    case 2:
      return as_vector(Kokkos::Experimental::partition_space(exec, 1, 1));
    case 3:
      return as_vector(Kokkos::Experimental::partition_space(exec, 1, 1, 1));
    default:
      return as_vector(Kokkos::Experimental::partition_space(exec, 1, 1, 1, 1));
  }
#else
  (void)n;
  return {exec};  // not reached: splits_into_streams is false before Kokkos 4
#endif
}

// Longest vector (ThreadVectorRange) length ExecSpace supports.
template <class ExecSpace>
inline int vector_length_max() {
  return Kokkos::TeamPolicy<ExecSpace>::vector_length_max();
}

}  // namespace kwsvd::Impl
