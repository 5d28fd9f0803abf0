#pragma once
// The GEMMs of one W-cycle sweep of a batch of square matrices under one
// tailoring plan: all column-block pairs of every matrix (the pairs of the
// n/w - 1 round-robin steps), Gram then fused update of A. Per sweep the
// work is the same for every w (2 m n^2 flops per GEMM per matrix), so times
// compare plans directly. Shared by perf_tailored_gemm (the Table V-like
// plan table) and kwsvd-calibrate (the TLP threshold).

#include <algorithm>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "kwsvd/scheduler/wcycle.hpp"

namespace kwsvd::bench {

/// Device data of one sweep: batch column-major n x n matrices, the tasks of
/// every step of one sweep and the per-step plate layouts.
template <class T>
struct SweepGemms {
  using Exec = Kokkos::DefaultExecutionSpace;
  Kokkos::View<T*> A;  // batch column-major n x n matrices, one after the other
  int batch = 0, n = 0;
  kwsvd::TailoringPlan plan;
  int steps = 0;
  std::vector<Kokkos::View<kwsvd::Impl::BlockPairTask<T>*>> step_tasks;
  std::vector<kwsvd::Impl::TailoredGemmWork<Exec>> step_work;
  Kokkos::View<T*> partial, B, J;

  SweepGemms(int batch_, int n_, const kwsvd::TailoringPlan& p) : batch(batch_), n(n_), plan(p) {
    A = Kokkos::View<T*>("A", std::size_t(batch) * n * n);
    fill_random(A, 77);
    const int w = plan.w, blocks = (n + w - 1) / w, even = blocks + (blocks & 1);
    steps = even - 1;
    std::size_t partial_size = 0, pairs_max = 0;
    for (int step = 0; step < steps; ++step) {
      std::vector<kwsvd::Impl::BlockPairTask<T>> tasks;
      for (int b = 0; b < batch; ++b)
        kwsvd::Impl::append_step_pairs(tasks, A.data() + std::size_t(b) * n * n, n, n, w, step, b);
      step_tasks.push_back(kwsvd::Impl::copy_to_device<Exec::memory_space>(tasks, "tasks"));
      std::vector<int> rows(tasks.size(), n);
      step_work.push_back(kwsvd::Impl::make_tailored_gemm_work<Exec>(rows, plan));
      step_work.back().gram_column_runs = kwsvd::Impl::most_rows_allow_column_runs(tasks);
      partial_size =
          std::max(partial_size, kwsvd::Impl::tailored_gram_partial_size(step_work.back()));
      pairs_max = std::max(pairs_max, tasks.size());
    }
    const std::size_t nn = std::size_t(2 * w) * std::size_t(2 * w);
    partial = Kokkos::View<T*>("partial", partial_size);
    B = Kokkos::View<T*>("B", pairs_max * nn);
    // A rotation-like J: the identity (the update's cost does not depend on J).
    J = Kokkos::View<T*>("J", pairs_max * nn);
    auto jh = Kokkos::create_mirror_view(J);
    for (std::size_t e = 0; e < jh.size(); ++e)
      jh(e) = (e % nn) % (2 * w + 1) == 0 ? T(1) : T(0);
    Kokkos::deep_copy(J, jh);
  }

  /// Every step's Gram and update: the GEMM work of one sweep.
  void run() const {
    for (int s = 0; s < steps; ++s) {
      kwsvd::Impl::launch_pair_gram(Exec(), step_work[s], step_tasks[s].data(), nullptr,
                                    partial.data(), B.data());
      kwsvd::Impl::launch_pair_update(Exec(), step_work[s], step_tasks[s].data(), nullptr,
                                      J.data());
    }
  }

  /// Nominal flops of one sweep: Gram and update, 2 m n^2 each per matrix.
  double flops() const { return 4.0 * double(n) * n * n * batch; }
};

/// Median seconds of `reps` timed sweeps after one warm-up.
template <class T>
double time_sweep(const SweepGemms<T>& sweep, int reps) {
  sweep.run();
  Kokkos::fence();
  std::vector<double> t;
  DeviceTimer timer;
  for (int r = 0; r < reps; ++r) {
    timer.start();
    sweep.run();
    t.push_back(timer.stop());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace kwsvd::bench
