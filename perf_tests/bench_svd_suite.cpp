// perf_svd_suite: every SVD experiment class of the W-cycle paper (§V: Fig. 7,
// Fig. 8(a)/(b), Table IV, Table VI; Table V is perf_tailored_gemm's
// tailoring_plan) and of seed 002 (tiny batch 10000, square to 1000 at batch
// 1000, tall n = 16; with them a mixed batch of small sizes, mixed_small, and
// tall_k, tall and wide with 64 or 100 columns at batch 100), in
// double and float, with the baselines in the same
// binary on the same data:
//   kwsvd                   kwsvd::BatchedSvd (uniform) or the pointer-array
//                           kwsvd::VariableBatchedSvd (mixed sizes)
//   cusolver_gesvdjBatched  CUDA builds, m, n <= 32
//   cusolver_gesvdj_loop    CUDA builds, one gesvdj call per matrix on one
//                           stream (the W-cycle paper's baseline beyond 32)
//   cusolver_gesvda         CUDA builds, gesvdaStridedBatched (m >= n, uniform)
//   lapack_omp              host builds, LAPACK gesvd per matrix on all host
//                           cores (OpenMP)
//
//   perf_svd_suite --suite=<smoke|paper|seed002|full> [--pair-svd=0|1]
//                  [--level-widths=w1,w2,...] [--instances=0..4]
//                  [--lanes-per-pair=0|1|2|4|8|16|32]
//                  [--job=vectors|values|left|right] [--full-matrices=0|1] [--rank=r]
//                  [--level0=0|1] [--max-workspace-mb=X] [--qr=auto|always|never]
//                  [--points=m:n:batch,...]
//                  [benchmark flags]
//
// --pair-svd, --level-widths, --instances, --lanes-per-pair, --level0 and
// --max-workspace-mb (SvdOptions::max_workspace_bytes in units of 10^6
// bytes) set kwsvd's
// SvdOptions (default: pair SVD off, level widths, instances and lanes from
// the tuning engine, level-0 and whole-matrix sweeps on, no workspace
// limit), to compare W-cycle plans; kwsvd entries record the plan's levels,
// pairs per sweep by group, instances, rounds and workspace. --job=values times kwsvd's values-only
// calls, --job=left and right its calls for U alone and V alone
// (Job::values_and_left_vectors, values_and_right_vectors; the baselines
// still compute both); their entries record values_gap = |sum sigma^2 -
// ||A||_F^2| / ||A||_F^2 instead of the residual, and the computed side's
// orthogonality. --full-matrices=1 times kwsvd's calls with full U (m x m)
// and V (n x n), the shapes gesvdjBatched writes (uniform points only: a
// filter keeps it to shapes whose full sides fit, such as Fig. 7's); its
// entries record the thin columns' accuracy as usual and orth_full, the
// first matrix's ||X^T X - I||_F over its full long side. --rank=r times
// kwsvd's calls and gesvdaStridedBatched for the r leading triplets
// (SvdOptions::rank; gesvda's rank), uniform points only; their entries
// record rank, the triplets' residual (sqrt(sum ||A v_l - sigma_l u_l||^2)
// / ||A||_F) and U's and V's orthogonality over the r columns.
// --qr sets SvdOptions::qr (QR preprocessing of non-square matrices; default
// auto), and kwsvd's uniform entries record qr = 1 where a call took it.
// --points=m:n:batch,... replaces the suite's points with uniform batches of
// the sizes given (experiment `custom`), for the sizes a user has, such as
// row counts that are not multiples of 4.
//
// Benchmark names: <experiment>/<implementation>/<scalar>/m:M/n:N/batch:B, or
// .../group:L/batch:B for a mixed-size group whose shapes are drawn
// uniformly in (L/2, L] x (L/2, L] (fixed seed; the paper's Table VI groups
// SuiteSparse matrices by the same bound). Every entry records the time per
// call (manual, device-timed; the mean of the timed calls, with reps, min_ms
// and max_ms for their count and spread), GFLOP/s by the fixed nominal count of
// svd_bench_common.hpp, the batch's max residual and orthogonality (first
// matrices) and, for kwsvd, the mean sweeps. scripts/perf-suite runs a suite
// and makes the report (perf_tests/report/make_report.py).

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "baselines.hpp"
#include "bench_common.hpp"
#include "kwsvd/api/configuration.hpp"
#include "kwsvd/kwsvd.hpp"
#include "svd_bench_common.hpp"

namespace {

using kwsvd::MatrixShape;
using kwsvd::bench::ContiguousBatch;

// One experiment point: a uniform batch or a mixed-size group.
struct Point {
  std::string experiment;
  std::vector<MatrixShape> shapes;
  std::string label;  // m:M/n:N/batch:B or group:L/batch:B
  bool uniform = true;
};

Point uniform_point(const std::string& experiment, int m, int n, int batch) {
  return {experiment, std::vector<MatrixShape>(std::size_t(batch), MatrixShape{m, n}),
          "m:" + std::to_string(m) + "/n:" + std::to_string(n) + "/batch:" + std::to_string(batch),
          true};
}

Point mixed_point(const std::string& experiment, int limit, int batch) {
  std::mt19937 gen(std::uint32_t(1000 + limit));
  std::uniform_int_distribution<int> size(limit / 2 + 1, limit);
  std::vector<MatrixShape> shapes;
  for (int b = 0; b < batch; ++b)
    shapes.push_back({size(gen), size(gen)});
  return {experiment, shapes, "group:" + std::to_string(limit) + "/batch:" + std::to_string(batch),
          false};
}

// A mixed batch of small matrices, shapes uniform in [1, limit]^2, with every
// `every`-th matrix `large` x `large` instead: the level-0 kernel's size
// classes (VariableBatchedSvd launches each on its own, with its own team
// size, lanes and scratch). Label group:L/every:K/batch:B.
Point mixed_small_point(int limit, int every, int large, int batch) {
  std::mt19937 gen(std::uint32_t(2000 + limit));
  std::uniform_int_distribution<int> size(1, limit);
  std::vector<MatrixShape> shapes;
  for (int b = 0; b < batch; ++b)
    shapes.push_back(b % every == every - 1 ? MatrixShape{large, large}
                                            : MatrixShape{size(gen), size(gen)});
  return {"mixed_small", shapes,
          "group:" + std::to_string(limit) + "/every:" + std::to_string(every) +
              "/batch:" + std::to_string(batch),
          false};
}

// The suites. "paper": the W-cycle paper's §V classes; "seed002": seed 002's;
// "full": both; "smoke": a CPU-sized taste of each class (CI).
std::vector<Point> suite_points(const std::string& suite) {
  std::vector<Point> p;
  const bool paper = suite == "paper" || suite == "full";
  const bool seed = suite == "seed002" || suite == "full";
  if (suite == "smoke") {
    p.push_back(uniform_point("fig7", 16, 16, 100));
    p.push_back(uniform_point("fig7", 8, 32, 100));
    p.push_back(uniform_point("fig8b", 64, 64, 4));
    p.push_back(uniform_point("table4", 100, 100, 2));
    p.push_back(mixed_point("table6", 32, 46));
    p.push_back(mixed_point("table6", 64, 12));
    p.push_back(uniform_point("seed002_tall", 200, 16, 20));
    return p;
  }
  if (paper) {
    for (int batch : {100, 1000, 10000})  // Fig. 7: m, n <= 32
      for (auto [m, n] : {std::pair{8, 32}, std::pair{16, 32}, std::pair{32, 32}, std::pair{32, 16},
                          std::pair{32, 8}, std::pair{16, 16}})
        p.push_back(uniform_point("fig7", m, n, batch));
    for (int n : {512, 1024, 2048})  // Fig. 8(a): one matrix
      p.push_back(uniform_point("fig8a", n, n, 1));
    for (int batch : {10, 100})  // Fig. 8(b): 64..1024, several batches
      for (int n : {64, 128, 256, 512, 1024})
        if (batch * double(n) * n * n <= 100 * 512.0 * 512 * 512)
          p.push_back(uniform_point("fig8b", n, n, batch));
    for (int n : {100, 128, 256, 512})  // Table IV
      p.push_back(uniform_point("table4", n, n, 200));
    const int groups[][2] = {{32, 46}, {64, 85}, {128, 156}, {256, 243}, {512, 458}};
    for (const auto& g : groups)  // Table VI's group bounds and counts
      p.push_back(mixed_point("table6", g[0], g[1]));
  }
  if (seed) {
    for (int n : {2, 4, 8, 16, 24, 32})  // tiny, batch 10000
      p.push_back(uniform_point("seed002_tiny", n, n, 10000));
    for (int n : {64, 128, 256, 512, 1000})  // square to 1000, batch 1000
      p.push_back(uniform_point("seed002_square", n, n, 1000));
    for (int m : {100, 200, 500, 1000, 2000})  // tall, n = 16, batch 1000
      p.push_back(uniform_point("seed002_tall", m, 16, 1000));
    // Not seed 002's: its tiny sizes mixed in one batch, 1% of it 64 x 64.
    p.push_back(mixed_small_point(32, 100, 64, 10000));
    // Not seed 002's either: tall and wide with more than 32 columns, batch
    // 100, whose full long side (--full-matrices=1, numpy's default) the
    // completion builds from blocks of reflectors.
    for (auto [m, n] :
         {std::pair{256, 64}, std::pair{500, 100}, std::pair{1000, 64}, std::pair{64, 256}})
      p.push_back(uniform_point("tall_k", m, n, 100));
  }
  return p;
}

// The points of --points=m:n:batch,...; empty (after a message) on a
// malformed list: three positive integers per point, the list non-empty.
std::vector<Point> custom_points(const std::string& list) {
  std::vector<std::array<int, 3>> shapes;
  std::string bad;
  if (!kwsvd::bench::parse_positive_triples(list, shapes, bad)) {
    std::fprintf(stderr, "perf_svd_suite: --points: '%s' is not m:n:batch with positive integers\n",
                 bad.c_str());
    return {};
  }
  std::vector<Point> p;
  for (const auto& s : shapes)
    p.push_back(uniform_point("custom", s[0], s[1], s[2]));
  if (p.empty())
    std::fprintf(stderr, "perf_svd_suite: --points= names no point (m:n:batch,...)\n");
  return p;
}

int max_extent(const std::vector<MatrixShape>& shapes) {
  int e = 0;
  for (const auto& s : shapes)
    e = std::max({e, s.rows, s.cols});
  return e;
}

// Nominal work of a point (svd_bench_common.hpp's count).
double nominal_flops(const std::vector<MatrixShape>& shapes) {
  double f = 0;
  for (const auto& s : shapes)
    f += kwsvd::bench::nominal_svd_flops(s.rows, s.cols);
  return f;
}

// Times `call` within the benchmark's single iteration (Iterations(1): the
// setup above it - allocation, data, handles, the accuracy check - runs once):
// a first call, untimed warm-up unless it took over half a second (first
// launches load kernels lazily; on long calls that is noise), then enough
// timed calls for about 0.2 s, at most 50. The reported time is their mean;
// counters min_ms and max_ms give the fastest and slowest of them, so that a
// baseline whose calls spread (gesvdaStridedBatched's batch-10 calls from
// 256^2 move by up to 72% between processes: perf_tests/notes/wcycle.md) shows
// whether every call or a few were slow. `before` restores an input the call
// overwrites, outside the timing. A failed call is reported as a skip.
template <class Call>
void timed_loop(benchmark::State& state, Call&& call, const std::function<void()>& before = {}) {
  kwsvd::bench::DeviceTimer timer;
  auto timed = [&](double& seconds) {
    if (before)
      before();
    timer.start();
    const bool ok = call();
    seconds = timer.stop();
    return ok;
  };
  for (auto _ : state) {
    double first = 0, total = 0;
    double fastest = std::numeric_limits<double>::infinity(), slowest = 0;
    int reps = 0;
    auto count = [&](double seconds) {
      total += seconds;
      fastest = std::min(fastest, seconds);
      slowest = std::max(slowest, seconds);
      ++reps;
    };
    if (!timed(first)) {
      state.SkipWithError("the call failed");
      return;
    }
    if (first > 0.5) {
      count(first);
    } else {
      const int want = std::clamp(int(0.2 / std::max(first, 1e-6)), 2, 50);
      while (reps < want) {
        double t = 0;
        if (!timed(t)) {
          state.SkipWithError("the call failed");
          return;
        }
        count(t);
      }
    }
    state.SetIterationTime(total / reps);
    state.counters["reps"] = reps;
    state.counters["min_ms"] = fastest * 1e3;
    state.counters["max_ms"] = slowest * 1e3;
  }
}

// What `job` computed: U and V (residual and orthogonality; of the leading
// `rank` triplets of a uniform batch where rank > 0), else the values
// (values_gap) and the one side computed, if any (its orthogonality).
template <class T>
void finish(benchmark::State& state, const ContiguousBatch<T>& data,
            kwsvd::Job job = kwsvd::Job::values_and_vectors, int rank = 0) {
  if (job == kwsvd::Job::values_and_vectors && rank > 0) {
    kwsvd::bench::record_leading_accuracy(state, data, rank);
  } else if (job == kwsvd::Job::values_and_vectors) {
    kwsvd::bench::record_accuracy(state, data);
  } else {
    kwsvd::bench::record_values_gap(state, data);
    if (job != kwsvd::Job::values)
      kwsvd::bench::record_side_orthogonality(state, data,
                                              job == kwsvd::Job::values_and_left_vectors);
  }
  kwsvd::bench::set_rates(state, nominal_flops(data.shapes), data.bytes());
  state.counters["batch"] = double(data.shapes.size());
  state.counters["max_extent"] = max_extent(data.shapes);
}

// SvdOptions of every kwsvd entry (--pair-svd=, --level-widths=, --instances=,
// --lanes-per-pair=, --job=, --level0=).
kwsvd::SvdOptions suite_options;

// Device memory a solver asked for beyond its inputs and outputs: kwsvd's
// workspace_bytes(), cuSOLVER's lwork elements.
void record_workspace(benchmark::State& state, double bytes) {
  state.counters["workspace_MB"] = bytes / 1e6;
}

void record_plan(benchmark::State& state, const kwsvd::WcyclePlanSummary& summary) {
  state.counters["levels"] = summary.levels;
  state.counters["pair_svds_per_sweep"] = double(summary.pair_svds);
  state.counters["gram_evds_per_sweep"] = double(summary.gram_evds);
  state.counters["instances"] = summary.instances;
  state.counters["whole_matrices"] = double(summary.whole_matrices);
  state.counters["gram_column_run_pairs_per_sweep"] = double(summary.gram_column_run_pairs);
}

template <class T>
void run_kwsvd_point(benchmark::State& state, const Point& point);

// An option this point refuses (a workspace limit below one matrix's) skips
// it with kwsvd's message.
template <class T>
void run_kwsvd(benchmark::State& state, const Point& point) {
  try {
    run_kwsvd_point<T>(state, point);
  } catch (const kwsvd::invalid_argument& e) {
    state.SkipWithError(e.what());
  }
}

template <class T>
void run_kwsvd_point(benchmark::State& state, const Point& point) {
  ContiguousBatch<T> data(point.shapes);
  Kokkos::View<kwsvd::SvdInfo*> info("info", point.shapes.size());
  using Exec = Kokkos::DefaultExecutionSpace;
  const kwsvd::Job job = suite_options.job;
  const bool left = kwsvd::job_writes_u(job), right = kwsvd::job_writes_v(job);
  if (point.uniform) {
    const int batch = int(point.shapes.size()), m = point.shapes[0].rows, n = point.shapes[0].cols;
    kwsvd::BatchedSvd<Exec, T> svd(Exec(), batch, m, n, suite_options);  // planned once, reused
    auto A = data.uniform_a(), U = data.uniform_u(), V = data.uniform_v();
    auto S = data.uniform_s();
    using Matrices = decltype(U);
    // Full sides in buffers of their own, their leading columns copied to
    // the batch's U and V after the timing.
    const bool full = suite_options.full_matrices;
    Kokkos::View<T*> full_u, full_v;
    // --rank: the leading r columns a matrix, one matrix's after the other's.
    const int rank = suite_options.rank > 0 ? std::min(suite_options.rank, std::min(m, n)) : 0;
    if (rank > 0) {
      U = kwsvd::bench::as_matrices(data.u.data(), batch, m, rank, m);
      V = kwsvd::bench::as_matrices(data.v.data(), batch, n, rank, n);
    }
    if (full) {
      full_u = Kokkos::View<T*>("full U", std::size_t(batch) * m * m);
      full_v = Kokkos::View<T*>("full V", std::size_t(batch) * n * n);
      U = kwsvd::bench::as_matrices(full_u.data(), batch, m, m, m);
      V = kwsvd::bench::as_matrices(full_v.data(), batch, n, n, n);
    }
    timed_loop(state, [&]() {
      if (left || right)  // the side not computed as an empty View
        svd.compute(A, S, left ? U : Matrices(), right ? V : Matrices(), info);
      else
        svd.compute(A, S, info);
      return true;
    });
    state.counters["w"] = svd.block_width();
    state.counters["qr"] = svd.qr_preprocessed() ? 1 : 0;
    record_plan(state, svd.plan_summary());
    record_workspace(state, double(svd.workspace_bytes()));
    const long round = svd.matrices_per_round();
    state.counters["rounds"] = round > 0 ? double((batch + round - 1) / round) : 0.0;
    if (full) {
      data.take_leading_columns(full_u, full_v);
      const int rows = std::max(m, n);
      const auto x = kwsvd::bench::host_part(m >= n ? full_u : full_v, 0,
                                             std::size_t(rows) * std::size_t(rows));
      if ((m >= n && left) || (m < n && right))
        state.counters["orth_full"] = kwsvd::bench::orthogonality_of(x, rows, rows);
    }
  } else if (suite_options.full_matrices || suite_options.rank > 0) {
    state.SkipWithError("--full-matrices=1 and --rank time uniform points only");
    return;
  } else {
    kwsvd::VariableBatchedSvd<Exec, T> svd(Exec(), point.shapes, suite_options);
    timed_loop(state, [&]() {
      svd.compute(data.a_ptr.data(), data.lda.data(), data.s_ptr.data(),
                  left ? data.u_ptr.data() : nullptr, left ? data.lda.data() : nullptr,
                  right ? data.v_ptr.data() : nullptr, right ? data.ldv.data() : nullptr,
                  info.data());
      return true;
    });
    state.counters["w"] = svd.block_width();
    state.counters["level0_matrices"] = svd.level0_count();
    state.counters["level0_launches"] = svd.level0_launches();
    record_plan(state, svd.plan_summary());
    record_workspace(state, double(svd.workspace_bytes()));
    state.counters["rounds"] = svd.rounds();
  }
  kwsvd::bench::record_convergence(state, info);
  const int k = std::min(point.shapes[0].rows, point.shapes[0].cols);
  finish(state, data, job,
         suite_options.rank > 0 && suite_options.rank < k ? suite_options.rank : 0);
}

#ifdef KWSVD_HAVE_CUDA_BASELINES
using namespace kwsvd::bench;  // the typed cuSOLVER entry points

struct Cusolver {
  cusolverDnHandle_t handle{};
  gesvdjInfo_t params{};
  Cusolver() {
    cusolverDnCreate(&handle);
    cusolverDnSetStream(handle, Kokkos::DefaultExecutionSpace().cuda_stream());
    cusolverDnCreateGesvdjInfo(&params);
  }
  ~Cusolver() {
    cusolverDnDestroyGesvdjInfo(params);
    cusolverDnDestroy(handle);
  }
};

// gesvdjBatched returns min(m, n) values but full U (m x m) and V (n x n):
// those go to scratch, and the accuracy is measured on kwsvd-sized copies.
template <class T>
void run_gesvdj_batched(benchmark::State& state, const Point& point) {
  ContiguousBatch<T> data(point.shapes);
  const int batch = int(point.shapes.size()), m = point.shapes[0].rows, n = point.shapes[0].cols;
  Kokkos::View<T*> work_a("Awork", data.a.extent(0)), full_u("U", std::size_t(batch) * m * m),
      full_v("V", std::size_t(batch) * n * n);
  Kokkos::View<int*> info("info", batch);
  Cusolver cs;
  int lwork = 0;
  gesvdj_batched_buffer(cs.handle, m, n, work_a.data(), data.s.data(), full_u.data(), full_v.data(),
                        &lwork, cs.params, batch);
  Kokkos::View<T*> work("work", std::size_t(std::max(lwork, 1)));
  timed_loop(
      state,
      [&]() {
        return gesvdj_batched(cs.handle, m, n, work_a.data(), data.s.data(), full_u.data(),
                              full_v.data(), work.data(), lwork, info.data(), cs.params,
                              batch) == CUSOLVER_STATUS_SUCCESS;
      },
      [&]() { Kokkos::deep_copy(work_a, data.a); });
  data.take_leading_columns(full_u, full_v);
  finish(state, data);
  record_workspace(state, double(lwork) * sizeof(T));
}

// One gesvdj per matrix (any mix of shapes), one stream.
template <class T>
void run_gesvdj_loop(benchmark::State& state, const Point& point) {
  if (nominal_flops(point.shapes) > 3e12 || max_extent(point.shapes) > 1024) {
    // (one 2048 x 2048 gesvdj ran over 100 s on the H200)
    state.SkipWithError("skipped: a per-matrix gesvdj loop this large takes minutes");
    return;
  }
  ContiguousBatch<T> data(point.shapes);
  Kokkos::View<T*> work_a("Awork", data.a.extent(0));
  Kokkos::View<int*> info("info", point.shapes.size());
  Cusolver cs;
  int lwork = 0;
  for (std::size_t b = 0; b < point.shapes.size(); ++b) {
    int l = 0;
    gesvdj_buffer(cs.handle, point.shapes[b].rows, point.shapes[b].cols, work_a.data(),
                  data.s_ptr[b], data.u_ptr[b], data.v_ptr[b], &l, cs.params);
    lwork = std::max(lwork, l);
  }
  Kokkos::View<T*> work("work", std::size_t(std::max(lwork, 1)));
  timed_loop(
      state,
      [&]() {
        for (std::size_t b = 0; b < point.shapes.size(); ++b) {
          const int m = point.shapes[b].rows, n = point.shapes[b].cols;
          if (gesvdj(cs.handle, m, n, work_a.data() + data.a_offset[b], data.s_ptr[b],
                     data.u_ptr[b], data.v_ptr[b], work.data(), lwork, info.data() + b,
                     cs.params) != CUSOLVER_STATUS_SUCCESS)
            return false;
        }
        return true;
      },
      [&]() { Kokkos::deep_copy(work_a, data.a); });
  finish(state, data);
  record_workspace(state, double(lwork) * sizeof(T));
}

template <class T>
void run_gesvda(benchmark::State& state, const Point& point) {
  if (max_extent(point.shapes) > 1024) {  // one 2048 x 2048 ran over 150 s on the H200
    state.SkipWithError("skipped: gesvdaStridedBatched this large takes minutes");
    return;
  }
  ContiguousBatch<T> data(point.shapes);
  const int batch = int(point.shapes.size()), m = point.shapes[0].rows, n = point.shapes[0].cols;
  Kokkos::View<int*> info("info", batch);
  std::vector<double> resid(std::size_t(batch), 0.0);
  Cusolver cs;
  int lwork = 0;
  // Its rank: --rank's (the leading triplets, as kwsvd's), else all.
  const int k = std::min(m, n), rank = suite_options.rank > 0 ? std::min(suite_options.rank, k) : k;
  if (gesvda_buffer(cs.handle, m, n, rank, data.a.data(), data.s.data(), data.u.data(),
                    data.v.data(), &lwork, batch) != CUSOLVER_STATUS_SUCCESS) {
    state.SkipWithError("gesvdaStridedBatched_bufferSize rejected this shape");
    return;
  }
  Kokkos::View<T*> work("work", std::size_t(std::max(lwork, 1)));
  timed_loop(state, [&]() {
    return gesvda(cs.handle, m, n, rank, data.a.data(), data.s.data(), data.u.data(), data.v.data(),
                  work.data(), lwork, info.data(), resid.data(), batch) == CUSOLVER_STATUS_SUCCESS;
  });
  finish(state, data, kwsvd::Job::values_and_vectors, rank < k ? rank : 0);
  record_workspace(state, double(lwork) * sizeof(T));
}
#endif

#if defined(KWSVD_HAVE_LAPACK_BASELINE)
// LAPACK gesvd per matrix, matrices spread over the host cores. V^T comes
// back; the accuracy check wants V, so it is transposed after timing.
template <class T>
void run_lapack_omp(benchmark::State& state, const Point& point) {
  ContiguousBatch<T> data(point.shapes);
  Kokkos::View<T*> work_a("Awork", data.a.extent(0)), vt("VT", data.v.extent(0));
  const int count = int(point.shapes.size());
  int kmax = 1;
  for (const auto& s : point.shapes)
    kmax = std::max(kmax, std::min(s.rows, s.cols));
  timed_loop(
      state,
      [&]() {
        int failures = 0;
#pragma omp parallel for schedule(dynamic) reduction(+ : failures)
        for (int b = 0; b < count; ++b) {
          std::vector<T> superb(std::size_t(kmax), T(0));
          const int m = point.shapes[std::size_t(b)].rows, n = point.shapes[std::size_t(b)].cols;
          const int k = std::min(m, n);
          failures +=
              kwsvd::bench::lapack_gesvd(
                  m, n, work_a.data() + data.a_offset[std::size_t(b)], std::max(1, m),
                  data.s_ptr[std::size_t(b)], data.u_ptr[std::size_t(b)], std::max(1, m),
                  vt.data() + data.v_offset[std::size_t(b)], std::max(1, k), superb.data()) != 0;
        }
        return failures == 0;
      },
      [&]() { Kokkos::deep_copy(work_a, data.a); });
  data.transpose_v_from(vt);
  finish(state, data);
}
#endif

template <class T>
const char* scalar_name() {
  return sizeof(T) == 8 ? "double" : "float";
}

template <class T>
void register_point(const Point& point) {
  const std::string tail = std::string("/") + scalar_name<T>() + "/" + point.label;
  auto add = [&](const std::string& impl, void (*fn)(benchmark::State&, const Point&)) {
    benchmark::RegisterBenchmark((point.experiment + "/" + impl + tail).c_str(), fn, point)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
  };
  add("kwsvd", run_kwsvd<T>);
#ifdef KWSVD_HAVE_CUDA_BASELINES
  const int extent = max_extent(point.shapes);
  const bool tall = point.uniform && point.shapes[0].rows >= point.shapes[0].cols;
  if (point.uniform && extent <= 32)
    add("cusolver_gesvdjBatched", run_gesvdj_batched<T>);  // the route for these sizes
  else
    add("cusolver_gesvdj_loop", run_gesvdj_loop<T>);
  if (tall && extent > 32)
    add("cusolver_gesvda", run_gesvda<T>);
#endif
#if defined(KWSVD_HAVE_LAPACK_BASELINE)
  if (!kwsvd::Impl::runs_off_host<Kokkos::DefaultExecutionSpace>())
    add("lapack_omp", run_lapack_omp<T>);
#endif
}

std::string device_name() {
#ifdef KOKKOS_ENABLE_CUDA
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
    return prop.name;
#endif
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0)
      return line.substr(line.find(':') + 2) + " (host)";
  return "unknown host";
}

}  // namespace

int main(int argc, char** argv) {
  std::string suite = "paper";
  std::vector<char*> args;
  std::string widths, job = "vectors", points_list;
  bool custom = false;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--suite=", 8) == 0) {
      suite = argv[i] + 8;
    } else if (std::strncmp(argv[i], "--points=", 9) == 0) {
      custom = true;
      points_list = argv[i] + 9;
    } else if (std::strncmp(argv[i], "--level0=", 9) == 0) {
      suite_options.level0 = std::atoi(argv[i] + 9) != 0;
    } else if (std::strncmp(argv[i], "--pair-svd=", 11) == 0) {
      suite_options.pair_svd = std::atoi(argv[i] + 11) != 0;
    } else if (std::strncmp(argv[i], "--instances=", 12) == 0) {
      suite_options.instances = std::atoi(argv[i] + 12);
    } else if (std::strncmp(argv[i], "--max-workspace-mb=", 19) == 0) {
      suite_options.max_workspace_bytes = std::size_t(std::atof(argv[i] + 19) * 1e6);
    } else if (std::strncmp(argv[i], "--qr=", 5) == 0) {
      const std::string qr = argv[i] + 5;
      if (qr != "auto" && qr != "always" && qr != "never") {
        std::fprintf(stderr, "perf_svd_suite: --qr=%s (auto, always, never)\n", qr.c_str());
        return 1;
      }
      suite_options.qr = qr == "always"  ? kwsvd::QrPreprocessing::always
                         : qr == "never" ? kwsvd::QrPreprocessing::never
                                         : kwsvd::QrPreprocessing::automatic;
    } else if (std::strncmp(argv[i], "--lanes-per-pair=", 17) == 0) {
      suite_options.lanes_per_pair = std::atoi(argv[i] + 17);
    } else if (std::strncmp(argv[i], "--job=", 6) == 0) {
      job = argv[i] + 6;
      if (job != "vectors" && job != "values" && job != "left" && job != "right") {
        std::fprintf(stderr, "perf_svd_suite: --job=%s (vectors, values, left, right)\n",
                     job.c_str());
        return 1;
      }
      suite_options.job = job == "values"  ? kwsvd::Job::values
                          : job == "left"  ? kwsvd::Job::values_and_left_vectors
                          : job == "right" ? kwsvd::Job::values_and_right_vectors
                                           : kwsvd::Job::values_and_vectors;
    } else if (std::strncmp(argv[i], "--full-matrices=", 16) == 0) {
      suite_options.full_matrices = std::atoi(argv[i] + 16) != 0;
    } else if (std::strncmp(argv[i], "--rank=", 7) == 0) {
      suite_options.rank = std::atoi(argv[i] + 7);
    } else if (std::strncmp(argv[i], "--level-widths=", 15) == 0) {
      widths = argv[i] + 15;  // comma-separated, e.g. 32,16
      std::istringstream in(widths);
      for (std::string w; std::getline(in, w, ',');)
        suite_options.level_widths.push_back(std::atoi(w.c_str()));
    } else {
      args.push_back(argv[i]);
    }
  }
  if (suite_options.rank > 0 && suite_options.job != kwsvd::Job::values_and_vectors) {
    std::fprintf(stderr, "perf_svd_suite: --rank times calls with U and V (--job=vectors)\n");
    return 1;
  }
  int count = int(args.size());
  Kokkos::ScopeGuard kokkos(count, args.data());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data()))
    return 1;
  const auto points = custom ? custom_points(points_list) : suite_points(suite);
  if (custom && points.empty())
    return 1;
  if (points.empty()) {
    std::fprintf(stderr, "perf_svd_suite: unknown --suite=%s (smoke, paper, seed002, full)\n",
                 suite.c_str());
    return 1;
  }
  for (const auto& p : points) {
    register_point<double>(p);
    register_point<float>(p);
  }
  std::ostringstream config;
  kwsvd::print_configuration(config);
  benchmark::AddCustomContext("kwsvd", config.str());
  benchmark::AddCustomContext("suite", custom ? "points=" + points_list : suite);
  benchmark::AddCustomContext(
      "kwsvd_options", std::string("pair_svd=") + (suite_options.pair_svd ? "1" : "0") +
                           " level_widths=" + (widths.empty() ? "auto" : widths) +
                           " instances=" + std::to_string(suite_options.instances) + " job=" + job +
                           " full_matrices=" + (suite_options.full_matrices ? "1" : "0") +
                           " rank=" + std::to_string(suite_options.rank) + " max_workspace_bytes=" +
                           std::to_string(suite_options.max_workspace_bytes));
  benchmark::AddCustomContext("device", device_name());
  benchmark::AddCustomContext("execution_space", Kokkos::DefaultExecutionSpace::name());
  benchmark::AddCustomContext("nominal_flops", kwsvd::bench::nominal_flops_formula());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
