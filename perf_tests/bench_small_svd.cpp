// Batched SVD of small matrices (m, n <= 32): kwsvd::batched_small_svd (the
// level-0 one-sided Jacobi team kernel) against cuSOLVER gesvdjBatched (CUDA
// builds) on the same device-resident data, both computing S, U and V.
//
// Data: entries uniform in [-1, 1]; each matrix column-major and contiguous
// (cuSOLVER's layout), seen by kwsvd through a LayoutStride View of the same
// memory. Timing: CUDA events around the call alone (gesvdjBatched overwrites
// A, so its input is restored outside the timed region), median over
// repetitions. GFLOP/s uses a fixed nominal count, 22 k^3 per matrix with
// k = min(m, n) (LAPACK's estimate for an SVD with vectors), identical for
// both libraries, so it is a speed ratio, not a measured flop rate. Counters: residual = max ||A -
// U S V^T||_F /
// ||A||_F and orthU = max ||U^T U - I||_F over the first 4 matrices; sweeps =
// mean Jacobi sweeps (kwsvd).

#include <algorithm>
#include <cmath>
#include <vector>

#include "bench_common.hpp"
#include "kwsvd/kwsvd.hpp"
#include "svd_bench_common.hpp"

#ifdef KWSVD_HAVE_CUDA_BASELINES
#include <cusolverDn.h>
#endif

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

#ifdef KWSVD_HAVE_CUDA_BASELINES
cusolverStatus_t gesvdj_batched_buffer(cusolverDnHandle_t h, int m, int n, const double* a,
                                       const double* s, const double* u, const double* v,
                                       int* lwork, gesvdjInfo_t p, int batch) {
  return cusolverDnDgesvdjBatched_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, m, n, a, m, s, u, m, v, n,
                                             lwork, p, batch);
}
cusolverStatus_t gesvdj_batched_buffer(cusolverDnHandle_t h, int m, int n, const float* a,
                                       const float* s, const float* u, const float* v, int* lwork,
                                       gesvdjInfo_t p, int batch) {
  return cusolverDnSgesvdjBatched_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, m, n, a, m, s, u, m, v, n,
                                             lwork, p, batch);
}
cusolverStatus_t gesvdj_batched(cusolverDnHandle_t h, int m, int n, double* a, double* s, double* u,
                                double* v, double* work, int lwork, int* info, gesvdjInfo_t p,
                                int batch) {
  return cusolverDnDgesvdjBatched(h, CUSOLVER_EIG_MODE_VECTOR, m, n, a, m, s, u, m, v, n, work,
                                  lwork, info, p, batch);
}
cusolverStatus_t gesvdj_batched(cusolverDnHandle_t h, int m, int n, float* a, float* s, float* u,
                                float* v, float* work, int lwork, int* info, gesvdjInfo_t p,
                                int batch) {
  return cusolverDnSgesvdjBatched(h, CUSOLVER_EIG_MODE_VECTOR, m, n, a, m, s, u, m, v, n, work,
                                  lwork, info, p, batch);
}

// gesvdjBatched returns min(m, n) values but full U (m x m) and V (n x n).
template <class T>
void BM_cusolver_gesvdjBatched(benchmark::State& state) {
  const int m = int(state.range(0)), n = int(state.range(1)), batch = int(state.range(2));
  const int k = std::min(m, n);
  Batch<T> a_store("A", batch, n, m), a_work("Awork", batch, n, m);
  Batch<T> u_store("U", batch, m, m), v_store("V", batch, n, n);
  kwsvd::bench::fill_random(a_store, 42);  // the same data as kwsvd's benchmark
  Kokkos::View<T**, Kokkos::LayoutRight> S("S", batch, k);
  Kokkos::View<int*> info("info", batch);
  cusolverDnHandle_t handle;
  gesvdjInfo_t params;
  cusolverDnCreate(&handle);
  cusolverDnSetStream(handle, Kokkos::DefaultExecutionSpace().cuda_stream());
  cusolverDnCreateGesvdjInfo(&params);
  int lwork = 0;
  gesvdj_batched_buffer(handle, m, n, a_work.data(), S.data(), u_store.data(), v_store.data(),
                        &lwork, params, batch);
  Kokkos::View<T*> work("work", std::size_t(lwork > 0 ? lwork : 1));
  kwsvd::bench::DeviceTimer timer;
  for (auto _ : state) {
    Kokkos::deep_copy(a_work, a_store);  // gesvdj overwrites its input; not timed
    timer.start();
    const auto status =
        gesvdj_batched(handle, m, n, a_work.data(), S.data(), u_store.data(), v_store.data(),
                       work.data(), lwork, info.data(), params, batch);
    state.SetIterationTime(timer.stop());
    if (status != CUSOLVER_STATUS_SUCCESS) {
      state.SkipWithError("cusolverDn?gesvdjBatched failed");
      break;
    }
  }
  cusolverDnDestroyGesvdjInfo(params);
  cusolverDnDestroy(handle);
  record_accuracy(state, as_matrices(a_store.data(), batch, m, n, m),
                  as_matrices(u_store.data(), batch, m, k, m), S,
                  as_matrices(v_store.data(), batch, n, k, n));
  set_svd_rates<T>(state, m, n, batch);
}
BENCHMARK_TEMPLATE(BM_cusolver_gesvdjBatched, double)->Apply(small_svd_args);
BENCHMARK_TEMPLATE(BM_cusolver_gesvdjBatched, float)->Apply(small_svd_args);
#endif

}  // namespace
