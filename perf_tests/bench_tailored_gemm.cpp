// Tailored batched GEMMs of a W-cycle level (Gram B = X^T X and the update
// X <- X J of m x 2w column-block pairs) against cuBLAS gemmStridedBatched on
// the same device-resident data, and the tailoring-plan table (the W-cycle
// paper's Table V): the GEMMs of one sweep under every candidate plan and
// under the plan the auto-tuning engine picks.
//
// Nominal flops: Gram 2 m (2w)^2 per pair (the full product, as cuBLAS
// computes it), update 2 m (2w)^2 per pair; a sweep of an n x n matrix
// 4 n^3. Times: cudaEvent (CUDA) or fence + clock, manual time.
//
// KWSVD_BENCH_GRAM_GROUPS=g (g > 0) forces the GPU Gram's row groups per
// team (TailoredGemmWork::gram_groups) in BM_kwsvd_tailored_gram, for
// sweeps of the groups rule (tailored_gram_groups); unset or 0: the rule.
// KWSVD_BENCH_PAIR_SHAPES="m:w:batch,m:w:batch,..." replaces the pair
// shapes of the Gram and update benchmarks (cuBLAS's too), for sweeps over
// shapes the default list does not hold.

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "kwsvd/kwsvd.hpp"
#include "tailoring_sweep.hpp"

#ifdef KWSVD_HAVE_CUDA_BASELINES
#include <cublas_v2.h>
#endif

namespace {

using Exec = Kokkos::DefaultExecutionSpace;

// The shapes of KWSVD_BENCH_PAIR_SHAPES; exits on a malformed list rather
// than measure something else than what was asked.
std::vector<std::array<int, 3>> pair_shapes_from_env(const char* list) {
  std::vector<std::array<int, 3>> out;
  std::string bad;
  if (!kwsvd::bench::parse_positive_triples(list, out, bad)) {
    std::fprintf(stderr, "KWSVD_BENCH_PAIR_SHAPES: '%s' is not m:w:batch with positive values\n",
                 bad.c_str());
    std::exit(2);
  }
  return out;
}

// KWSVD_BENCH_GRAM_GROUPS as a count, 0 when unset; exits on anything
// else, as above.
int gram_groups_from_env() {
  const char* value = std::getenv("KWSVD_BENCH_GRAM_GROUPS");
  if (!value)
    return 0;
  std::stringstream in(value);
  int groups = -1;
  if (!(in >> groups) || groups < 0 || !(in >> std::ws).eof()) {
    std::fprintf(stderr, "KWSVD_BENCH_GRAM_GROUPS: '%s' is not a count of 0 or more\n", value);
    std::exit(2);
  }
  return groups;
}

void pair_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "w", "batch"});
  if (const char* list = std::getenv("KWSVD_BENCH_PAIR_SHAPES")) {
    for (const auto& s : pair_shapes_from_env(list))
      b->Args({s[0], s[1], s[2]});
  } else {
    for (int m : {128, 512, 2048})
      for (int w : {8, 16, 24, 32, 48})
        b->Args({m, w, 1000});
    b->Args({256, 16, 100});
    b->Args({256, 16, 10000});
  }
  b->UseManualTime();
}

// A batch of m x 2w pairs, each column-major with leading dimension m and
// stored one after the other: the layout cuBLAS reads.
template <class T>
struct PairBatch {
  Kokkos::View<T*> X;  // pair b: column-major m x 2w at X + b m 2w
  Kokkos::View<kwsvd::Impl::BlockPairTask<T>*> tasks;
  int m, w, batch;
  bool column_runs = false;  // the Gram kernel for the tasks (most_rows_allow_column_runs)
  PairBatch(int m_, int w_, int batch_) : m(m_), w(w_), batch(batch_) {
    X = Kokkos::View<T*>("X", std::size_t(batch) * m * 2 * w);
    kwsvd::bench::fill_random(X, 4321);
    std::vector<kwsvd::Impl::BlockPairTask<T>> h;
    for (int b = 0; b < batch; ++b)  // one pair per matrix: blocks 0 and 1
      kwsvd::Impl::append_step_pairs(h, X.data() + std::size_t(b) * m * 2 * w, m, 2 * w, w, 0, b);
    tasks = kwsvd::Impl::copy_to_device<Exec::memory_space>(h, "tasks");
    column_runs = kwsvd::Impl::most_rows_allow_column_runs(h);
  }
  // The engine's plan for this batch with w fixed: plates of m, m/2, m/4
  // and m/8 rows (Table II's heights), 256 threads, picked by the threshold.
  kwsvd::TailoringPlan plan() const {
    std::vector<kwsvd::TailoringPlan> c;
    for (int div : {1, 2, 4, 8})
      if (m / div >= 8 || div == 1)
        c.push_back({w, m / div, 256});
    const std::vector<kwsvd::MatrixShape> shapes(std::size_t(batch), {m, 2 * w});
    return kwsvd::choose_tailoring_plan(
        c, shapes,
        kwsvd::active_tuning_parameters(kwsvd::Impl::runs_off_host<Exec>()).tlp_threshold);
  }
};

template <class T>
void set_pair_rates(benchmark::State& state, int m, int w, int batch) {
  const double n2 = 2.0 * w;
  kwsvd::bench::set_rates(state, 2.0 * m * n2 * n2 * batch,
                          double(batch) * (double(m) * n2 + n2 * n2) * sizeof(T));
}

template <class T>
void BM_kwsvd_tailored_gram(benchmark::State& state) {
  const int m = int(state.range(0)), w = int(state.range(1)), batch = int(state.range(2));
  PairBatch<T> pb(m, w, batch);
  const auto plan = pb.plan();
  auto work = kwsvd::Impl::make_tailored_gemm_work<Exec>(std::vector<int>(batch, m), plan,
                                                         gram_groups_from_env());
  work.gram_column_runs = pb.column_runs;
  Kokkos::View<T*> partial("partial", kwsvd::Impl::tailored_gram_partial_size(work));
  Kokkos::View<T*> B("B", std::size_t(batch) * 4 * w * w);
  kwsvd::bench::DeviceTimer timer;
  for (auto _ : state) {
    timer.start();
    kwsvd::Impl::launch_pair_gram(Exec(), work, pb.tasks.data(), nullptr, partial.data(), B.data());
    state.SetIterationTime(timer.stop());
  }
  state.counters["delta"] = plan.delta;
  state.counters["teams"] = work.teams;
  set_pair_rates<T>(state, m, w, batch);
}
BENCHMARK_TEMPLATE(BM_kwsvd_tailored_gram, double)->Apply(pair_args);
BENCHMARK_TEMPLATE(BM_kwsvd_tailored_gram, float)->Apply(pair_args);

template <class T>
void BM_kwsvd_tailored_update(benchmark::State& state) {
  const int m = int(state.range(0)), w = int(state.range(1)), batch = int(state.range(2));
  PairBatch<T> pb(m, w, batch);
  const auto plan = pb.plan();
  auto work = kwsvd::Impl::make_tailored_gemm_work<Exec>(std::vector<int>(batch, m), plan);
  Kokkos::View<T*> J("J", std::size_t(batch) * 4 * w * w);
  kwsvd::bench::fill_random(J, 99);
  kwsvd::bench::DeviceTimer timer;
  for (auto _ : state) {
    timer.start();
    kwsvd::Impl::launch_pair_update(Exec(), work, pb.tasks.data(), nullptr, J.data());
    state.SetIterationTime(timer.stop());
  }
  state.counters["delta"] = plan.delta;
  set_pair_rates<T>(state, m, w, batch);
}
BENCHMARK_TEMPLATE(BM_kwsvd_tailored_update, double)->Apply(pair_args);
BENCHMARK_TEMPLATE(BM_kwsvd_tailored_update, float)->Apply(pair_args);

// Table V: one sweep's GEMMs of `batch` n x n matrices under candidate plan
// `plan` (its index in tailoring_candidates), or under the engine's choice
// (plan = -1).
void plan_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "batch", "plan"});
  for (int n : {256, 512})
    for (int plan = -1; plan < 8; ++plan)
      b->Args({n, 100, plan});
  b->Args({1024, 10, -1});
  b->UseManualTime();
}

template <class T>
void BM_kwsvd_tailoring_plan(benchmark::State& state) {
  const int n = int(state.range(0)), batch = int(state.range(1)), index = int(state.range(2));
  const int w_max = kwsvd::Impl::widest_evd_block<Exec, T>();
  const auto candidates = kwsvd::tailoring_candidates(n, w_max);
  if (index >= int(candidates.size())) {
    state.SkipWithError("no such candidate plan for this device");
    return;
  }
  const std::vector<kwsvd::MatrixShape> shapes(std::size_t(batch), {n, n});
  const bool gpu = kwsvd::Impl::runs_off_host<Exec>();
  const auto plan =
      index >= 0 ? candidates[std::size_t(index)]
                 : kwsvd::choose_tailoring_plan(candidates, shapes,
                                                kwsvd::active_tuning_parameters(gpu).tlp_threshold);
  kwsvd::bench::SweepGemms<T> sweep(batch, n, plan);
  kwsvd::bench::DeviceTimer timer;
  for (auto _ : state) {
    timer.start();
    sweep.run();
    state.SetIterationTime(timer.stop());
  }
  state.counters["w"] = plan.w;
  state.counters["delta"] = plan.delta;
  state.counters["T"] = plan.team_threads;
  state.counters["tlp"] = kwsvd::tailoring_tlp(plan, shapes);
  kwsvd::bench::set_rates(state, sweep.flops(), 0);
}
BENCHMARK_TEMPLATE(BM_kwsvd_tailoring_plan, double)->Apply(plan_args);
BENCHMARK_TEMPLATE(BM_kwsvd_tailoring_plan, float)->Apply(plan_args);

#ifdef KWSVD_HAVE_CUDA_BASELINES
cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, int m, int n, int k, const double* a,
                    int lda, long sa, const double* b, int ldb, long sb, double* c, int ldc,
                    long sc, int batch) {
  const double one = 1, zero = 0;
  return cublasDgemmStridedBatched(h, ta, CUBLAS_OP_N, m, n, k, &one, a, lda, sa, b, ldb, sb, &zero,
                                   c, ldc, sc, batch);
}
cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, int m, int n, int k, const float* a,
                    int lda, long sa, const float* b, int ldb, long sb, float* c, int ldc, long sc,
                    int batch) {
  const float one = 1, zero = 0;
  return cublasSgemmStridedBatched(h, ta, CUBLAS_OP_N, m, n, k, &one, a, lda, sa, b, ldb, sb, &zero,
                                   c, ldc, sc, batch);
}

// kind 0: Gram C = X^T X (2w x 2w); kind 1: update C = X J (m x 2w, out of
// place: cuBLAS has no in-place GEMM).
template <class T, int Kind>
void BM_cublas_gemmStridedBatched(benchmark::State& state) {
  const int m = int(state.range(0)), w = int(state.range(1)), batch = int(state.range(2));
  const int n2 = 2 * w;
  PairBatch<T> pb(m, w, batch);
  Kokkos::View<T*> J("J", std::size_t(batch) * n2 * n2);
  kwsvd::bench::fill_random(J, 99);
  Kokkos::View<T*> C("C", std::size_t(batch) * (Kind == 0 ? n2 : m) * n2);
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    state.SkipWithError("cublasCreate failed");
    return;
  }
  cublasSetStream(handle, Exec().cuda_stream());
  const long sx = long(m) * n2;
  auto call = [&]() {
    return Kind == 0 ? gemm(handle, CUBLAS_OP_T, n2, n2, m, pb.X.data(), m, sx, pb.X.data(), m, sx,
                            C.data(), n2, long(n2) * n2, batch)
                     : gemm(handle, CUBLAS_OP_N, m, n2, n2, pb.X.data(), m, sx, J.data(), n2,
                            long(n2) * n2, C.data(), m, sx, batch);
  };
  call();  // warm-up: cuBLAS picks and loads its kernel
  kwsvd::bench::DeviceTimer timer;
  for (auto _ : state) {
    timer.start();
    const auto status = call();
    state.SetIterationTime(timer.stop());
    if (status != CUBLAS_STATUS_SUCCESS) {
      state.SkipWithError("cublas gemmStridedBatched failed");
      break;
    }
  }
  cublasDestroy(handle);
  set_pair_rates<T>(state, m, w, batch);
}
template <class T>
void BM_cublas_gram(benchmark::State& state) {
  BM_cublas_gemmStridedBatched<T, 0>(state);
}
template <class T>
void BM_cublas_update(benchmark::State& state) {
  BM_cublas_gemmStridedBatched<T, 1>(state);
}
BENCHMARK_TEMPLATE(BM_cublas_gram, double)->Apply(pair_args);
BENCHMARK_TEMPLATE(BM_cublas_gram, float)->Apply(pair_args);
BENCHMARK_TEMPLATE(BM_cublas_update, double)->Apply(pair_args);
BENCHMARK_TEMPLATE(BM_cublas_update, float)->Apply(pair_args);
#endif

}  // namespace
