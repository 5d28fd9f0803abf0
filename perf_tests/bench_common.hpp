#pragma once
// Helpers shared by the perf_tests.

#include <benchmark/benchmark.h>

#include <cstdint>

#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>

namespace kwsvd::bench {

/// Fills a View with entries uniform in [-1, 1] (never zeros: they can run
/// faster than real data and hide unwritten outputs).
template <class View>
void fill_random(const View& v, std::uint64_t seed) {
  Kokkos::Random_XorShift64_Pool<typename View::execution_space> pool(seed);
  using Scalar = typename View::non_const_value_type;
  Kokkos::fill_random(v, pool, Scalar(-1), Scalar(1));
  Kokkos::fence();
}

/// Rate counters from per-iteration work.
inline void set_rates(benchmark::State& state, double flops, double bytes) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GB/s"] =
      benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace kwsvd::bench
