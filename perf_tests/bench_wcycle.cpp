// kwsvd::batched_svd (the W-cycle scheduler for matrices beyond level-0
// scratch) against cuSOLVER on the same device-resident data: a loop of
// gesvdj calls, one per matrix on one stream (the W-cycle paper's baseline),
// and gesvdaStridedBatched (approximate, the fastest batched cuSOLVER route
// at these sizes). Shapes: the paper's Table IV (200 x {100, 128, 256, 512}),
// Fig. 8(b) sizes 64..1024, 1000 x 512^2, and seed 002's tall n = 16.
//
// Times: cudaEvent (CUDA) or fence + clock, manual time. GFLOP/s by the fixed
// nominal count 22 k^3 per matrix (k = min(m, n)); residual and orthU of the
// first matrices; sweeps per matrix for kwsvd.

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

void wcycle_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "n", "batch"});
  for (int n : {100, 128, 256, 512})  // Table IV
    b->Args({n, n, 200});
  b->Args({64, 64, 1000});  // Fig. 8(b) ends, batches as in the anchors
  b->Args({1024, 1024, 10});
  b->Args({512, 512, 1000});
  b->Args({1000, 16, 1000});  // seed 002's tall shapes
  b->Args({2000, 16, 1000});
  b->UseManualTime();
  b->Iterations(2);
}

template <class T>
void BM_kwsvd_batched_svd(benchmark::State& state) {
  const int m = int(state.range(0)), n = int(state.range(1)), batch = int(state.range(2));
  const int k = std::min(m, n);
  Batch<T> a_store("A", batch, n, m), u_store("U", batch, k, m), v_store("V", batch, k, n);
  kwsvd::bench::fill_random(a_store, 42);
  auto A = as_matrices(a_store.data(), batch, m, n, m);
  auto U = as_matrices(u_store.data(), batch, m, k, m);
  auto V = as_matrices(v_store.data(), batch, n, k, n);
  Kokkos::View<T**, Kokkos::LayoutRight> S("S", batch, k);
  Kokkos::View<kwsvd::SvdInfo*> info("info", batch);
  using Exec = Kokkos::DefaultExecutionSpace;
  kwsvd::BatchedSvd<Exec, T> svd(Exec(), batch, m, n);  // planned once, reused
  kwsvd::bench::DeviceTimer timer;
  for (auto _ : state) {
    timer.start();
    svd.compute(A, S, U, V, info);
    state.SetIterationTime(timer.stop());
  }
  kwsvd::bench::record_convergence(state, info);
  record_accuracy(state, A, U, S, V);
  state.counters["w"] = svd.block_width();
  set_svd_rates<T>(state, m, n, batch);
}
BENCHMARK_TEMPLATE(BM_kwsvd_batched_svd, double)->Apply(wcycle_args);
BENCHMARK_TEMPLATE(BM_kwsvd_batched_svd, float)->Apply(wcycle_args);

#ifdef KWSVD_HAVE_CUDA_BASELINES
// gesvdj, one matrix.
cusolverStatus_t gesvdj_buffer(cusolverDnHandle_t h, int m, int n, const double* a, const double* s,
                               const double* u, const double* v, int* lwork, gesvdjInfo_t p) {
  return cusolverDnDgesvdj_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, 1, m, n, a, m, s, u, m, v, n,
                                      lwork, p);
}
cusolverStatus_t gesvdj_buffer(cusolverDnHandle_t h, int m, int n, const float* a, const float* s,
                               const float* u, const float* v, int* lwork, gesvdjInfo_t p) {
  return cusolverDnSgesvdj_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, 1, m, n, a, m, s, u, m, v, n,
                                      lwork, p);
}
cusolverStatus_t gesvdj(cusolverDnHandle_t h, int m, int n, double* a, double* s, double* u,
                        double* v, double* work, int lwork, int* info, gesvdjInfo_t p) {
  return cusolverDnDgesvdj(h, CUSOLVER_EIG_MODE_VECTOR, 1, m, n, a, m, s, u, m, v, n, work, lwork,
                           info, p);
}
cusolverStatus_t gesvdj(cusolverDnHandle_t h, int m, int n, float* a, float* s, float* u, float* v,
                        float* work, int lwork, int* info, gesvdjInfo_t p) {
  return cusolverDnSgesvdj(h, CUSOLVER_EIG_MODE_VECTOR, 1, m, n, a, m, s, u, m, v, n, work, lwork,
                           info, p);
}

template <class T>
void BM_cusolver_gesvdj_loop(benchmark::State& state) {
  const int m = int(state.range(0)), n = int(state.range(1)), batch = int(state.range(2));
  const int k = std::min(m, n);
  if (double(batch) * m * n * k > 5e10) {
    state.SkipWithError("skipped: a per-matrix gesvdj loop this large takes minutes");
    return;
  }
  Batch<T> a_store("A", batch, n, m), a_work("Awork", batch, n, m);
  Batch<T> u_store("U", batch, k, m), v_store("V", batch, k, n);
  kwsvd::bench::fill_random(a_store, 42);  // the same data as kwsvd's benchmark
  Kokkos::View<T**, Kokkos::LayoutRight> S("S", batch, k);
  Kokkos::View<int*> info("info", batch);
  cusolverDnHandle_t handle;
  gesvdjInfo_t params;
  cusolverDnCreate(&handle);
  cusolverDnSetStream(handle, Kokkos::DefaultExecutionSpace().cuda_stream());
  cusolverDnCreateGesvdjInfo(&params);
  int lwork = 0;
  gesvdj_buffer(handle, m, n, a_work.data(), S.data(), u_store.data(), v_store.data(), &lwork,
                params);
  Kokkos::View<T*> work("work", std::size_t(lwork > 0 ? lwork : 1));
  const std::size_t sa = std::size_t(m) * n, su = std::size_t(m) * k, sv = std::size_t(n) * k;
  auto loop = [&]() {
    cusolverStatus_t status = CUSOLVER_STATUS_SUCCESS;
    for (int b = 0; b < batch && status == CUSOLVER_STATUS_SUCCESS; ++b)
      status = gesvdj(handle, m, n, a_work.data() + b * sa, S.data() + std::size_t(b) * k,
                      u_store.data() + b * su, v_store.data() + b * sv, work.data(), lwork,
                      info.data() + b, params);
    return status;
  };
  kwsvd::bench::DeviceTimer timer;
  for (auto _ : state) {
    Kokkos::deep_copy(a_work, a_store);  // gesvdj overwrites its input; not timed
    timer.start();
    const auto status = loop();
    state.SetIterationTime(timer.stop());
    if (status != CUSOLVER_STATUS_SUCCESS) {
      state.SkipWithError("cusolverDn?gesvdj failed");
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
BENCHMARK_TEMPLATE(BM_cusolver_gesvdj_loop, double)->Apply(wcycle_args);
BENCHMARK_TEMPLATE(BM_cusolver_gesvdj_loop, float)->Apply(wcycle_args);

cusolverStatus_t gesvda_buffer(cusolverDnHandle_t h, int m, int n, const double* a, const double* s,
                               const double* u, const double* v, int* lwork, int batch) {
  const int k = std::min(m, n);
  return cusolverDnDgesvdaStridedBatched_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, k, m, n, a, m,
                                                    long(m) * n, s, k, u, m, long(m) * k, v, n,
                                                    long(n) * k, lwork, batch);
}
cusolverStatus_t gesvda_buffer(cusolverDnHandle_t h, int m, int n, const float* a, const float* s,
                               const float* u, const float* v, int* lwork, int batch) {
  const int k = std::min(m, n);
  return cusolverDnSgesvdaStridedBatched_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, k, m, n, a, m,
                                                    long(m) * n, s, k, u, m, long(m) * k, v, n,
                                                    long(n) * k, lwork, batch);
}
cusolverStatus_t gesvda(cusolverDnHandle_t h, int m, int n, const double* a, double* s, double* u,
                        double* v, double* work, int lwork, int* info, double* resid, int batch) {
  const int k = std::min(m, n);
  return cusolverDnDgesvdaStridedBatched(h, CUSOLVER_EIG_MODE_VECTOR, k, m, n, a, m, long(m) * n, s,
                                         k, u, m, long(m) * k, v, n, long(n) * k, work, lwork, info,
                                         resid, batch);
}
cusolverStatus_t gesvda(cusolverDnHandle_t h, int m, int n, const float* a, float* s, float* u,
                        float* v, float* work, int lwork, int* info, double* resid, int batch) {
  const int k = std::min(m, n);
  return cusolverDnSgesvdaStridedBatched(h, CUSOLVER_EIG_MODE_VECTOR, k, m, n, a, m, long(m) * n, s,
                                         k, u, m, long(m) * k, v, n, long(n) * k, work, lwork, info,
                                         resid, batch);
}

template <class T>
void BM_cusolver_gesvdaStridedBatched(benchmark::State& state) {
  const int m = int(state.range(0)), n = int(state.range(1)), batch = int(state.range(2));
  const int k = std::min(m, n);
  Batch<T> a_store("A", batch, n, m);
  Batch<T> u_store("U", batch, k, m), v_store("V", batch, k, n);
  kwsvd::bench::fill_random(a_store, 42);
  Kokkos::View<T**, Kokkos::LayoutRight> S("S", batch, k);
  Kokkos::View<int*> info("info", batch);
  std::vector<double> resid(static_cast<std::size_t>(batch));
  cusolverDnHandle_t handle;
  cusolverDnCreate(&handle);
  cusolverDnSetStream(handle, Kokkos::DefaultExecutionSpace().cuda_stream());
  int lwork = 0;
  if (gesvda_buffer(handle, m, n, a_store.data(), S.data(), u_store.data(), v_store.data(), &lwork,
                    batch) != CUSOLVER_STATUS_SUCCESS) {
    state.SkipWithError("gesvdaStridedBatched_bufferSize rejected this shape");
    cusolverDnDestroy(handle);
    return;
  }
  Kokkos::View<T*> work("work", std::size_t(lwork > 0 ? lwork : 1));
  kwsvd::bench::DeviceTimer timer;
  for (auto _ : state) {
    timer.start();
    const auto status =
        gesvda(handle, m, n, a_store.data(), S.data(), u_store.data(), v_store.data(), work.data(),
               lwork, info.data(), resid.data(), batch);
    state.SetIterationTime(timer.stop());
    if (status != CUSOLVER_STATUS_SUCCESS) {
      state.SkipWithError("gesvdaStridedBatched failed");
      break;
    }
  }
  cusolverDnDestroy(handle);
  record_accuracy(state, as_matrices(a_store.data(), batch, m, n, m),
                  as_matrices(u_store.data(), batch, m, k, m), S,
                  as_matrices(v_store.data(), batch, n, k, n));
  set_svd_rates<T>(state, m, n, batch);
}
BENCHMARK_TEMPLATE(BM_cusolver_gesvdaStridedBatched, double)->Apply(wcycle_args);
BENCHMARK_TEMPLATE(BM_cusolver_gesvdaStridedBatched, float)->Apply(wcycle_args);
#endif

}  // namespace
