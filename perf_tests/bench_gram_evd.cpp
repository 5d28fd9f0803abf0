// Batched symmetric EVD of Gram matrices: kwsvd::batched_gram_evd (the
// parallel two-sided Jacobi team kernel of the W-cycle, §IV-C) against
// cuSOLVER syevjBatched (CUDA builds) on the same device-resident data, both
// computing eigenvalues and eigenvectors.
//
// Data: B = A^T A for A (2n x n) with entries uniform in [-1, 1] (the Gram
// blocks the W-cycle hands to this kernel), computed once by
// kwsvd::batched_gram; each B column-major and contiguous (cuSOLVER's layout),
// seen by kwsvd through a LayoutStride View. Timing: CUDA events around the
// call alone (syevjBatched overwrites B, so its input is restored outside the
// timed region), median. cuSOLVER runs with its defaults (tolerance = machine
// epsilon on the off-diagonal norm, sorted eigenvalues); kwsvd with its
// defaults (relative tolerance 30 u per pair, sorted). GFLOP/s uses a fixed
// nominal 9 n^3 per matrix (LAPACK's estimate for syev with vectors) for both,
// so it is a speed ratio. Counters: sweeps = kwsvd's mean; orthJ = max
// ||J^T J - I||_F over the first 4 matrices.

#include <algorithm>
#include <cmath>

#include "bench_common.hpp"
#include "kwsvd/kwsvd.hpp"

#ifdef KWSVD_HAVE_CUDA_BASELINES
#include <cusolverDn.h>
#endif

namespace {

template <class T>
using Batch = Kokkos::View<T***, Kokkos::LayoutRight>;  // (batch, cols, rows): column-major
template <class T>
using Strided = Kokkos::View<T***, Kokkos::LayoutStride>;

void gram_evd_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "batch"});
  for (int batch : {1000, 10000, 100000})
    for (int n : {16, 32, 48, 64})
      b->Args({n, batch});
  b->UseManualTime();
}

template <class T>
Strided<T> as_matrices(T* data, int batch, int n) {
  return Strided<T>(data, Kokkos::LayoutStride(batch, std::size_t(n) * n, n, 1, n, n));
}

// Gram matrices of random 2n x n matrices, column-major n x n each.
template <class T>
Batch<T> gram_inputs(int n, int batch) {
  Kokkos::View<T***, Kokkos::LayoutLeft> A("A", batch, 2 * n, n);
  kwsvd::bench::fill_random(A, 42);
  Batch<T> store("B", batch, n, n);
  kwsvd::batched_gram(Kokkos::DefaultExecutionSpace(), A, as_matrices(store.data(), batch, n));
  Kokkos::fence();
  return store;
}

template <class T>
double orthogonality(const Strided<T>& J) {
  const int n = int(J.extent(1)), count = std::min<int>(4, int(J.extent(0)));
  auto j = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), J);
  double worst = 0;
  for (int b = 0; b < count; ++b) {
    double o2 = 0;
    for (int p = 0; p < n; ++p)
      for (int q = 0; q < n; ++q) {
        double dot = 0;
        for (int i = 0; i < n; ++i)
          dot += double(j(b, i, p)) * j(b, i, q);
        o2 += (dot - (p == q)) * (dot - (p == q));
      }
    worst = kwsvd::bench::worse_of(worst, std::sqrt(o2));
  }
  return worst;
}

template <class T>
void set_evd_rates(benchmark::State& state, int n, int batch) {
  kwsvd::bench::set_rates(state, 9.0 * n * n * n * batch,
                          double(batch) * (2.0 * n * n + n) * sizeof(T));
}

// The team-size sweep behind tuning/gram_evd_team_threads.hpp.
void gram_evd_threads_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "batch", "threads"});
  for (int batch : {1000, 10000})
    for (int n : {16, 32, 48, 64})
      for (int threads : {32, 64, 128, 256})
        b->Args({n, batch, threads});
  b->UseManualTime();
}

template <class T>
void run_kwsvd_gram_evd(benchmark::State& state, int n, int batch,
                        const kwsvd::EvdOptions& options) {
  if (!kwsvd::gram_evd_fits<T>(n)) {
    state.SkipWithError("n does not fit the level-0 team scratch of this device (gram_evd_fits)");
    return;
  }
  auto store = gram_inputs<T>(n, batch);
  Batch<T> j_store("J", batch, n, n);
  auto B = as_matrices(store.data(), batch, n);
  auto J = as_matrices(j_store.data(), batch, n);
  Kokkos::View<T**, Kokkos::LayoutRight> lambda("lambda", batch, n);
  Kokkos::View<kwsvd::EvdInfo*> info("info", batch);
  kwsvd::bench::DeviceTimer timer;
  for (auto _ : state) {
    timer.start();
    kwsvd::batched_gram_evd(Kokkos::DefaultExecutionSpace(), B, lambda, J, info, options);
    state.SetIterationTime(timer.stop());
  }
  kwsvd::bench::record_convergence(state, info);
  state.counters["orthJ"] = orthogonality(J);
  set_evd_rates<T>(state, n, batch);
}

template <class T>
void BM_kwsvd_gram_evd(benchmark::State& state) {
  run_kwsvd_gram_evd<T>(state, int(state.range(0)), int(state.range(1)), {});
}
BENCHMARK_TEMPLATE(BM_kwsvd_gram_evd, double)->Apply(gram_evd_args);
BENCHMARK_TEMPLATE(BM_kwsvd_gram_evd, float)->Apply(gram_evd_args);

template <class T>
void BM_kwsvd_gram_evd_threads(benchmark::State& state) {
  kwsvd::EvdOptions options;
  options.team_threads = int(state.range(2));
  run_kwsvd_gram_evd<T>(state, int(state.range(0)), int(state.range(1)), options);
}
BENCHMARK_TEMPLATE(BM_kwsvd_gram_evd_threads, double)->Apply(gram_evd_threads_args);
BENCHMARK_TEMPLATE(BM_kwsvd_gram_evd_threads, float)->Apply(gram_evd_threads_args);

#ifdef KWSVD_HAVE_CUDA_BASELINES
cusolverStatus_t syevj_batched_buffer(cusolverDnHandle_t h, int n, const double* a, const double* w,
                                      int* lwork, syevjInfo_t p, int batch) {
  return cusolverDnDsyevjBatched_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, n,
                                            a, n, w, lwork, p, batch);
}
cusolverStatus_t syevj_batched_buffer(cusolverDnHandle_t h, int n, const float* a, const float* w,
                                      int* lwork, syevjInfo_t p, int batch) {
  return cusolverDnSsyevjBatched_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, n,
                                            a, n, w, lwork, p, batch);
}
cusolverStatus_t syevj_batched(cusolverDnHandle_t h, int n, double* a, double* w, double* work,
                               int lwork, int* info, syevjInfo_t p, int batch) {
  return cusolverDnDsyevjBatched(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, n, a, n, w,
                                 work, lwork, info, p, batch);
}
cusolverStatus_t syevj_batched(cusolverDnHandle_t h, int n, float* a, float* w, float* work,
                               int lwork, int* info, syevjInfo_t p, int batch) {
  return cusolverDnSsyevjBatched(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, n, a, n, w,
                                 work, lwork, info, p, batch);
}

template <class T>
void BM_cusolver_syevjBatched(benchmark::State& state) {
  const int n = int(state.range(0)), batch = int(state.range(1));
  auto store = gram_inputs<T>(n, batch);  // the same data as kwsvd's benchmark
  Batch<T> work_a("Awork", batch, n, n);
  Kokkos::View<T**, Kokkos::LayoutRight> w("w", batch, n);
  Kokkos::View<int*> info("info", batch);
  cusolverDnHandle_t handle;
  syevjInfo_t params;
  cusolverDnCreate(&handle);
  cusolverDnSetStream(handle, Kokkos::DefaultExecutionSpace().cuda_stream());
  cusolverDnCreateSyevjInfo(&params);
  int lwork = 0;
  if (syevj_batched_buffer(handle, n, work_a.data(), w.data(), &lwork, params, batch) !=
      CUSOLVER_STATUS_SUCCESS) {
    state.SkipWithError("cusolverDn?syevjBatched_bufferSize rejected this size");
  } else {
    Kokkos::View<T*> work("work", std::size_t(lwork > 0 ? lwork : 1));
    // One untimed call first: cuSOLVER's first call per size loads kernels.
    Kokkos::deep_copy(work_a, store);
    syevj_batched(handle, n, work_a.data(), w.data(), work.data(), lwork, info.data(), params,
                  batch);
    kwsvd::bench::DeviceTimer timer;
    for (auto _ : state) {
      Kokkos::deep_copy(work_a, store);  // syevj overwrites its input; not timed
      timer.start();
      const auto status = syevj_batched(handle, n, work_a.data(), w.data(), work.data(), lwork,
                                        info.data(), params, batch);
      state.SetIterationTime(timer.stop());
      if (status != CUSOLVER_STATUS_SUCCESS) {
        state.SkipWithError("cusolverDn?syevjBatched failed (it supports n <= 32 only)");
        break;
      }
    }
    if (!state.error_occurred())
      state.counters["orthJ"] = orthogonality(as_matrices(work_a.data(), batch, n));
  }
  cusolverDnDestroySyevjInfo(params);
  cusolverDnDestroy(handle);
  set_evd_rates<T>(state, n, batch);
}
BENCHMARK_TEMPLATE(BM_cusolver_syevjBatched, double)->Apply(gram_evd_args);
BENCHMARK_TEMPLATE(BM_cusolver_syevjBatched, float)->Apply(gram_evd_args);
#endif

}  // namespace
