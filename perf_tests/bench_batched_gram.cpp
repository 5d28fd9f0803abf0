// Batched Gram B = A^T A: kwsvd::batched_gram against cuBLAS
// gemmStridedBatched (CUDA builds) on the same device-resident data.
//
// Nominal work per matrix: m n (n + 1) flops (the upper triangle's dot
// products, as ?syrk counts them); memory: A read once, B written once.
// Timing: wall clock around the call plus a fence (device-complete), median of
// the repetitions Google Benchmark chooses.

#include <cmath>

#include "bench_common.hpp"
#include "kwsvd/kwsvd.hpp"

#ifdef KWSVD_HAVE_CUDA_BASELINES
#include <cublas_v2.h>
#endif

namespace {

template <class T>
void gram_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "n", "batch"});
  for (int batch : {1000, 10000})
    for (int mn : {8, 16, 32})
      b->Args({mn, mn, batch});
  b->Args({32, 8, 1000});
  b->Args({256, 16, 1000});
  b->Args({1024, 32, 1000});
  b->UseRealTime();
}

template <class T>
void BM_kwsvd_batched_gram(benchmark::State& state) {
  const int m = int(state.range(0)), n = int(state.range(1)), batch = int(state.range(2));
  Kokkos::View<T***, Kokkos::LayoutRight> A("A", batch, m, n);
  Kokkos::View<T***, Kokkos::LayoutRight> B("B", batch, n, n);
  kwsvd::bench::fill_random(A, 1234);
  for (auto _ : state) {
    kwsvd::batched_gram(A, B);
    Kokkos::fence();
  }
  kwsvd::bench::set_rates(state, double(batch) * m * n * (n + 1),
                          double(batch) * (double(m) * n + double(n) * n) * sizeof(T));
}
BENCHMARK_TEMPLATE(BM_kwsvd_batched_gram, double)->Apply(gram_args<double>);
BENCHMARK_TEMPLATE(BM_kwsvd_batched_gram, float)->Apply(gram_args<float>);

#ifdef KWSVD_HAVE_CUDA_BASELINES
cublasStatus_t gemm_strided_batched(cublasHandle_t h, int n, int m, const double* x, double* c,
                                    int batch) {
  const double one = 1, zero = 0;
  return cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, n, n, m, &one, x, n, long(m) * n, x,
                                   n, long(m) * n, &zero, c, n, long(n) * n, batch);
}
cublasStatus_t gemm_strided_batched(cublasHandle_t h, int n, int m, const float* x, float* c,
                                    int batch) {
  const float one = 1, zero = 0;
  return cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, n, n, m, &one, x, n, long(m) * n, x,
                                   n, long(m) * n, &zero, c, n, long(n) * n, batch);
}

// Each matrix of a LayoutRight (batch, m, n) View is row-major, i.e. the
// column-major n x m matrix X = A^T with leading dimension n: A^T A = X X^T.
template <class T>
void BM_cublas_gemmStridedBatched_gram(benchmark::State& state) {
  const int m = int(state.range(0)), n = int(state.range(1)), batch = int(state.range(2));
  Kokkos::View<T***, Kokkos::LayoutRight> A("A", batch, m, n);
  Kokkos::View<T***, Kokkos::LayoutRight> B("B", batch, n, n), Bk("Bk", batch, n, n);
  kwsvd::bench::fill_random(A, 1234);
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    state.SkipWithError("cublasCreate failed");
    return;
  }
  cublasSetStream(handle, Kokkos::DefaultExecutionSpace().cuda_stream());
  for (auto _ : state) {
    if (gemm_strided_batched(handle, n, m, A.data(), B.data(), batch) != CUBLAS_STATUS_SUCCESS) {
      state.SkipWithError("cublas gemmStridedBatched failed");
      break;
    }
    Kokkos::fence();
  }
  cublasDestroy(handle);
  // Same data, same answer: record the largest difference to kwsvd's result.
  kwsvd::batched_gram(A, Bk);
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), B);
  auto hk = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), Bk);
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < hb.span(); ++i) {
    diff = std::fmax(diff, std::abs(double(hb.data()[i]) - double(hk.data()[i])));
    scale = std::fmax(scale, std::abs(double(hb.data()[i])));
  }
  state.counters["max_rel_diff_vs_kwsvd"] = scale > 0 ? diff / scale : diff;
  kwsvd::bench::set_rates(state, double(batch) * m * n * (n + 1),
                          double(batch) * (double(m) * n + double(n) * n) * sizeof(T));
}
BENCHMARK_TEMPLATE(BM_cublas_gemmStridedBatched_gram, double)->Apply(gram_args<double>);
BENCHMARK_TEMPLATE(BM_cublas_gemmStridedBatched_gram, float)->Apply(gram_args<float>);
#endif

}  // namespace
