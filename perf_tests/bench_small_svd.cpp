// Batched SVD of small matrices (m, n <= 32): kwsvd::batched_small_svd (the
// level-0 one-sided Jacobi team kernel) and its lanes-per-pair sweep, the data
// behind Impl::lanes_per_pair_measured. The comparison with cuSOLVER
// gesvdjBatched on the same shapes is perf_svd_suite's fig7 and seed002.
//
// Data: entries uniform in [-1, 1]; each matrix column-major and contiguous,
// seen through a LayoutStride View. Timing: CUDA events around the call
// (fence and clock on host backends). Counters: the suite's nominal GFLOP/s
// (svd_bench_common.hpp), residual, orthU, sweeps.

#include <algorithm>
#include <cmath>
#include <vector>

#include "bench_common.hpp"
#include "kwsvd/kwsvd.hpp"
#include "svd_bench_common.hpp"

namespace {

using kwsvd::bench::as_matrices;
using kwsvd::bench::Batch;
using kwsvd::bench::record_accuracy;
using kwsvd::bench::set_svd_rates;
using kwsvd::bench::Strided;

void small_svd_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "n", "batch"});
  for (int batch : {100, 1000, 10000}) {
    for (int mn : {8, 16, 24, 32})
      b->Args({mn, mn, batch});
    b->Args({32, 16, batch});
    b->Args({16, 32, batch});
    b->Args({32, 8, batch});
  }
  b->UseManualTime();
}

// lanes: vector lanes per column pair (0 = SvdOptions' default rule).
template <class T>
void run_kwsvd_small_svd(benchmark::State& state, int lanes) {
  const int m = int(state.range(0)), n = int(state.range(1)), batch = int(state.range(2));
  const int k = std::min(m, n);
  kwsvd::SvdOptions options;
  options.lanes_per_pair = lanes;
  Batch<T> a_store("A", batch, n, m), u_store("U", batch, k, m), v_store("V", batch, k, n);
  kwsvd::bench::fill_random(a_store, 42);
  auto A = as_matrices(a_store.data(), batch, m, n, m);
  auto U = as_matrices(u_store.data(), batch, m, k, m);
  auto V = as_matrices(v_store.data(), batch, n, k, n);
  Kokkos::View<T**, Kokkos::LayoutRight> S("S", batch, k);
  Kokkos::View<kwsvd::SvdInfo*> info("info", batch);
  kwsvd::bench::DeviceTimer timer;
  for (auto _ : state) {
    timer.start();
    kwsvd::batched_small_svd(Kokkos::DefaultExecutionSpace(), A, S, U, V, info, options);
    state.SetIterationTime(timer.stop());
  }
  kwsvd::bench::record_convergence(state, info);
  record_accuracy(state, A, U, S, V);
  set_svd_rates<T>(state, m, n, batch);
}
template <class T>
void BM_kwsvd_small_svd(benchmark::State& state) {
  run_kwsvd_small_svd<T>(state, 0);
}
template <class T>
void BM_kwsvd_small_svd_lanes(benchmark::State& state) {
  run_kwsvd_small_svd<T>(state, int(state.range(3)));
}
BENCHMARK_TEMPLATE(BM_kwsvd_small_svd, double)->Apply(small_svd_args);
BENCHMARK_TEMPLATE(BM_kwsvd_small_svd, float)->Apply(small_svd_args);

// The alpha x warp choice of §IV-B-1: every lanes-per-pair value for square
// shapes and batches; the data behind Impl::lanes_per_pair_measured.
void lanes_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "n", "batch", "lanes"});
  for (int batch : {100, 1000, 10000})
    for (int mn : {8, 16, 24, 32})
      for (int lanes : {2, 4, 8, 16, 32})
        b->Args({mn, mn, batch, lanes});
  b->UseManualTime();
}
BENCHMARK_TEMPLATE(BM_kwsvd_small_svd_lanes, double)->Apply(lanes_args);
BENCHMARK_TEMPLATE(BM_kwsvd_small_svd_lanes, float)->Apply(lanes_args);

}  // namespace
