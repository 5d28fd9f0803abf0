#pragma once
// Helpers shared by the perf_tests.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>

namespace kwsvd::bench {

/// The larger of two accuracy counters, NaN where either is (std::max keeps
/// its first argument against a NaN, which would hide a matrix whose output
/// is NaN behind the others' errors).
inline double worse_of(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::max(a, b);
}

/// Parses "a:b:c,a:b:c,..." (shape lists of the benchmarks' command lines
/// and environment) into triples of positive integers. On a malformed item
/// returns false with that item in `bad`; an empty list parses to none.
inline bool parse_positive_triples(const std::string& list, std::vector<std::array<int, 3>>& out,
                                   std::string& bad) {
  out.clear();
  std::istringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    std::array<int, 3> s{};
    char c1 = 0, c2 = 0;
    std::istringstream fields(item);
    const bool parsed = bool(fields >> s[0] >> c1 >> s[1] >> c2 >> s[2]) && c1 == ':' &&
                        c2 == ':' && (fields >> std::ws).eof();
    if (!parsed || s[0] < 1 || s[1] < 1 || s[2] < 1) {
      bad = item;
      return false;
    }
    out.push_back(s);
  }
  return true;
}

/// Fills a View with entries uniform in [-1, 1] (never zeros: they can run
/// faster than real data and hide unwritten outputs).
template <class View>
void fill_random(const View& v, std::uint64_t seed) {
  Kokkos::Random_XorShift64_Pool<typename View::execution_space> pool(seed);
  using Scalar = typename View::non_const_value_type;
  Kokkos::fill_random(v, pool, Scalar(-1), Scalar(1));
  Kokkos::fence();
}

/// Times device work the way the anchors were measured: CUDA events on the
/// execution space's stream in CUDA builds, a fence and the host clock
/// elsewhere. Use with Benchmark::UseManualTime().
class DeviceTimer {
 public:
  DeviceTimer() {
#ifdef KOKKOS_ENABLE_CUDA
    cudaEventCreate(&start_);
    cudaEventCreate(&stop_);
#endif
  }
  ~DeviceTimer() {
#ifdef KOKKOS_ENABLE_CUDA
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
#endif
  }
  DeviceTimer(const DeviceTimer&) = delete;
  DeviceTimer& operator=(const DeviceTimer&) = delete;

  void start() {
#ifdef KOKKOS_ENABLE_CUDA
    cudaEventRecord(start_, Kokkos::DefaultExecutionSpace().cuda_stream());
#else
    Kokkos::fence();
    t0_ = std::chrono::steady_clock::now();
#endif
  }
  /// Seconds since start(), after the device finished.
  double stop() {
#ifdef KOKKOS_ENABLE_CUDA
    cudaEventRecord(stop_, Kokkos::DefaultExecutionSpace().cuda_stream());
    cudaEventSynchronize(stop_);
    float ms = 0;
    cudaEventElapsedTime(&ms, start_, stop_);
    return ms * 1e-3;
#else
    Kokkos::fence();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
#endif
  }

 private:
#ifdef KOKKOS_ENABLE_CUDA
  cudaEvent_t start_{}, stop_{};
#else
  std::chrono::steady_clock::time_point t0_;
#endif
};

/// Rate counters from per-iteration work.
inline void set_rates(benchmark::State& state, double flops, double bytes) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GB/s"] =
      benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

/// Counters "sweeps" (mean) and "unconverged" from a batch's info View
/// (one device-to-host copy, after the timed loop).
template <class InfoView>
void record_convergence(benchmark::State& state, const InfoView& info) {
  auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
  double sweeps = 0;
  int unconverged = 0;
  for (std::size_t b = 0; b < hi.extent(0); ++b) {
    sweeps += hi(b).sweeps;
    unconverged += hi(b).converged ? 0 : 1;
  }
  state.counters["sweeps"] = hi.extent(0) > 0 ? sweeps / double(hi.extent(0)) : 0.0;
  state.counters["unconverged"] = unconverged;
}

}  // namespace kwsvd::bench
