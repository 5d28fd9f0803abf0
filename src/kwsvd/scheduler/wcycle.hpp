#pragma once
// The W-cycle scheduler (W-cycle paper §III, Algorithm 2) for a uniform
// batch whose matrices do not fit the level-0 SVD kernel.
//
// What is here: level 1 of the W-cycle with the Gram-EVD group. Each matrix
// (transposed when wide) is split into column blocks of width w, chosen by
// the tailoring auto-tuning engine (tuning/tailoring_plan.hpp) among the
// widths whose 2w x 2w Gram EVD fits level-0 scratch. A sweep runs the
// n/w - 1 round-robin steps; each step is, for the whole batch, one launch of
// the tailored Gram of every block pair, one of the batched Gram EVD (one
// inner sweep, seed 002 Design-2), one marking which matrices rotated, and
// one fused update of A's and V's blocks. A matrix converges when a whole
// sweep rotates none of its pairs (the EVD's relative test is exactly the
// one-sided criterion |a_i^T a_j| > tol ||a_i|| ||a_j|| on the columns); from
// then on it is masked out of the GEMMs (seed 002 Design-4). One small
// device-to-host read per sweep (the count of active matrices) ends the loop.
//
// Not yet here (see the issue tracker): the SVD-in-scratch group for pairs
// that fit the level-0 kernel and the recursion to level 2 and beyond (every
// w chosen fits the EVD, so level 1 suffices for any size, at the cost of a
// narrower w than the W-cycle would use), mixed-size batches, and compaction
// of converged matrices out of the EVD launch.

#include <algorithm>
#include <string>
#include <vector>

#include "kwsvd/api/batched_gram_evd.hpp"
#include "kwsvd/api/options.hpp"
#include "kwsvd/kernels/one_sided_jacobi_team.hpp"
#include "kwsvd/kernels/wcycle_team.hpp"
#include "kwsvd/scheduler/tailored_gemm.hpp"
#include "kwsvd/tuning/tailoring_plan.hpp"

namespace kwsvd::Impl {

/// The widest block w (of 48, 32, 24, 16, 8) whose 2w x 2w Gram EVD fits
/// level-0 scratch on ExecSpace; 0 when none does.
template <class ExecSpace, class Scalar>
int widest_evd_block() {
  for (int w : {48, 32, 24, 16, 8})
    if (gram_evd_fits<Scalar, ExecSpace>(2 * w))
      return w;
  return 0;
}

/// The block width and tailoring plan for a batch of M x N working matrices
/// (M >= N): the engine's choice among widths whose Gram EVD fits, never
/// wider than half the columns (rounded up to even, at least 2).
template <class ExecSpace, class Scalar>
TailoringPlan plan_wcycle_level(int batch, int M, int N) {
  const int w_max = widest_evd_block<ExecSpace, Scalar>();
  const int half = std::max(2, ((N + 1) / 2 + 1) / 2 * 2);
  std::vector<TailoringPlan> candidates;
  for (const auto& p : tailoring_candidates(M, w_max))
    if (p.w <= half)
      candidates.push_back(p);
  if (candidates.empty())
    return {std::min(half, std::max(w_max, 2)), std::max(1, M), 256};
  const std::vector<MatrixShape> shapes(std::size_t(batch), {M, N});
  return choose_tailoring_plan(candidates, shapes,
                               active_tuning_parameters(runs_off_host<ExecSpace>()).tlp_threshold);
}

/// Device state and plan of one uniform batch shape; run() allocates nothing.
template <class ExecSpace, class Scalar>
class WcycleLevelSolver {
 public:
  using memory_space = typename ExecSpace::memory_space;
  template <class T>
  using Vec = Kokkos::View<T*, memory_space>;
  using Stride3 = Kokkos::View<Scalar***, Kokkos::LayoutStride, memory_space>;

  WcycleLevelSolver() = default;

  WcycleLevelSolver(int batch, int m, int n, const SvdOptions& options)
      : batch_(batch), options_(options) {
    transpose_ = m < n;
    M_ = std::max(m, n);
    N_ = std::min(m, n);
    plan_ = plan_wcycle_level<ExecSpace, Scalar>(batch, M_, N_);
    w_ = plan_.w;
    const int blocks = (N_ + w_ - 1) / w_, even = blocks + (blocks & 1);
    steps_ = blocks > 1 ? even - 1 : 0;
    // Working matrices, one after the other, each column-major.
    W_ = Vec<Scalar>("kwsvd::W", std::size_t(batch) * M_ * N_);
    V_ = Vec<Scalar>("kwsvd::V", std::size_t(batch) * N_ * N_);
    scale_ = Vec<Scalar>("kwsvd::scale", batch);
    state_ = Vec<int>("kwsvd::state", 4 * std::size_t(batch));
    const std::size_t nn = std::size_t(2 * w_) * std::size_t(2 * w_);
    std::size_t pairs_max = 0, partial = 0;
    for (int step = 0; step < steps_; ++step) {
      std::vector<BlockPairTask<Scalar>> tasks;
      for (int b = 0; b < batch; ++b)
        append_step_pairs(tasks, W_.data() + std::size_t(b) * M_ * N_, M_, N_, w_, step, b);
      const std::size_t pairs = tasks.size();
      for (int b = 0; b < batch; ++b)  // V's pairs: the same rotations as A's
        append_step_pairs(tasks, V_.data() + std::size_t(b) * N_ * N_, N_, N_, w_, step, b);
      for (std::size_t t = pairs; t < tasks.size(); ++t)
        tasks[t].pair -= int(pairs);
      tasks_.push_back(copy_to_device<memory_space>(tasks, "kwsvd::tasks"));
      std::vector<int> a_rows(pairs, M_), all_rows;
      all_rows = a_rows;
      all_rows.insert(all_rows.end(), pairs, N_);
      gram_work_.push_back(make_tailored_gemm_work<ExecSpace>(a_rows, plan_));
      update_work_.push_back(make_tailored_gemm_work<ExecSpace>(all_rows, plan_));
      partial = std::max(partial, tailored_gram_partial_size(gram_work_.back()));
      pairs_max = std::max(pairs_max, pairs);
    }
    partial_ = Vec<Scalar>("kwsvd::partial", std::max<std::size_t>(partial, 1));
    B_ = Vec<Scalar>("kwsvd::B", std::max<std::size_t>(pairs_max * nn, 1));
    J_ = Vec<Scalar>("kwsvd::J", std::max<std::size_t>(pairs_max * nn, 1));
    lambda_ = Kokkos::View<Scalar**, Kokkos::LayoutRight, memory_space>("kwsvd::lambda", pairs_max,
                                                                        std::size_t(2 * w_));
    evd_info_ = Vec<EvdInfo>("kwsvd::evd_info", pairs_max);
  }

  int width() const { return w_; }
  const TailoringPlan& plan() const { return plan_; }

  /// The SVD of every matrix of A into S (batch, k), U (batch, m, k), V
  /// (batch, n, k) (null data: values only) and info.
  template <class AView, class SView, class UView, class VView, class InfoView>
  void run(const ExecSpace& exec, const AView& A, const SView& S, const UView& U, const VView& V,
           const InfoView& info, bool vectors) {
    const int N = N_, M = M_;
    const bool transpose = transpose_;
    Scalar* W = W_.data();
    Scalar* Vw = V_.data();
    const std::size_t ldw = std::size_t(M), ldv = std::size_t(N);
    const std::size_t w_batch = ldw * N, v_batch = ldv * N;
    Scalar* scale = scale_.data();
    int* mask = state_.data();                 // 1: done (converged or non-finite)
    int* rotated = state_.data() + batch_;     // some pair rotated this sweep
    int* sweeps = state_.data() + 2 * batch_;  // sweeps performed
    int* nonfinite = state_.data() + 3 * batch_;
    const auto a0 = matrix_of<const Scalar>(A, 0);
    const std::ptrdiff_t a_batch = A.stride(0);
    using Policy = Kokkos::TeamPolicy<ExecSpace>;
    using Member = typename Policy::member_type;
    int lanes = std::min(8, vector_length_max<ExecSpace>());

    // 1. Load (transpose, scale, NaN scan), V = I, state reset.
    Kokkos::parallel_for(
        "kwsvd::wcycle_load", Policy(exec, batch_, Kokkos::AUTO, lanes),
        KOKKOS_LAMBDA(const Member& member) {
          const int b = member.league_rank();
          StridedMatrix<const Scalar> a = a0;
          a.data += b * a_batch;
          Scalar s = 1;
          const bool finite = wcycle_load_team(member, a, transpose, W + b * w_batch, ldw,
                                               Vw + b * v_batch, ldv, s);
          Kokkos::single(Kokkos::PerTeam(member), [&]() {
            scale[b] = s;
            nonfinite[b] = finite ? 0 : 1;
            mask[b] = finite ? 0 : 1;
            rotated[b] = 0;
            sweeps[b] = 0;
          });
        });

    // 2. Sweeps of level-1 block rotations.
    EvdOptions evd;
    evd.tolerance = options_.tolerance;
    evd.sweeps = 1;
    evd.order = EigenOrder::unsorted;
    evd.positive_semidefinite = true;
    const std::size_t nn = std::size_t(2 * w_) * std::size_t(2 * w_);
    for (int sweep = 0; sweep < options_.max_sweeps && steps_ > 0; ++sweep) {
      for (int step = 0; step < steps_; ++step) {
        const auto& gw = gram_work_[std::size_t(step)];
        const BlockPairTask<Scalar>* tasks = tasks_[std::size_t(step)].data();
        const int pairs = gw.tasks;
        launch_pair_gram(exec, gw, tasks, mask, partial_.data(), B_.data());
        const Kokkos::LayoutStride square(std::size_t(pairs), nn, std::size_t(2 * w_), 1,
                                          std::size_t(2 * w_), std::size_t(2 * w_));
        Stride3 B3(B_.data(), square), J3(J_.data(), square);
        auto lambda = Kokkos::subview(lambda_, std::make_pair(0, pairs), Kokkos::ALL);
        auto einfo = Kokkos::subview(evd_info_, std::make_pair(0, pairs));
        batched_gram_evd(exec, B3, lambda, J3, einfo, evd);
        const EvdInfo* ei = evd_info_.data();
        Kokkos::parallel_for(
            "kwsvd::wcycle_mark", Kokkos::RangePolicy<ExecSpace>(exec, 0, pairs),
            KOKKOS_LAMBDA(const int t) {
              const int b = tasks[t].matrix;
              if (mask[b] == 0 && !(ei[t].converged == 1 && ei[t].sweeps <= 1))
                rotated[b] = 1;  // benign race: every writer stores 1
            });
        launch_pair_update(exec, update_work_[std::size_t(step)], tasks, mask, J_.data());
      }
      int active = 0;
      Kokkos::parallel_reduce(
          "kwsvd::wcycle_converged", Kokkos::RangePolicy<ExecSpace>(exec, 0, batch_),
          KOKKOS_LAMBDA(const int b, int& count) {
            if (mask[b] != 0)
              return;
            ++sweeps[b];
            if (rotated[b] == 0)
              mask[b] = 1;
            else
              ++count;
            rotated[b] = 0;
          },
          active);  // the sweep's one device-to-host read
      if (active == 0)
        break;
    }
    if (steps_ == 0) {  // one block: nothing to rotate
      Kokkos::parallel_for(
          "kwsvd::wcycle_single_block", Kokkos::RangePolicy<ExecSpace>(exec, 0, batch_),
          KOKKOS_LAMBDA(const int b) {
            if (mask[b] == 0) {
              mask[b] = 1;
              sweeps[b] = 1;
            }
          });
    }

    // 3. Sigma, U, V and info.
    using SVal = typename SView::non_const_value_type;
    SVal* s_data = S.data();
    const std::ptrdiff_t s_batch = S.stride(0), s_stride = S.stride(1);
    const auto u0 = vectors ? matrix_of<Scalar>(U, 0) : StridedMatrix<Scalar>{};
    const auto v0 = vectors ? matrix_of<Scalar>(V, 0) : StridedMatrix<Scalar>{};
    const std::ptrdiff_t u_batch = vectors ? U.stride(0) : 0, vo_batch = vectors ? V.stride(0) : 0;
    SvdInfo* info_data = info.data();
    using ScratchVector = Kokkos::View<Scalar*, typename ExecSpace::scratch_memory_space,
                                       Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    Policy finish(exec, batch_, Kokkos::AUTO, lanes);
    finish.set_scratch_size(0, Kokkos::PerTeam(int(ScratchVector::shmem_size(N))));
    Kokkos::parallel_for(
        "kwsvd::wcycle_finish", finish, KOKKOS_LAMBDA(const Member& member) {
          const int b = member.league_rank();
          ScratchVector norms(member.team_scratch(0), N);
          StridedMatrix<Scalar> u = u0, v = v0;
          u.data += b * u_batch;
          v.data += b * vo_batch;
          wcycle_finish_team(member, W + b * w_batch, ldw, Vw + b * v_batch, ldv, M, N, scale[b],
                             transpose, nonfinite[b] != 0, norms.data(), s_data + b * s_batch,
                             s_stride, u, v, vectors);
          Kokkos::single(Kokkos::PerTeam(member), [&]() {
            info_data[b].sweeps = sweeps[b];
            info_data[b].nonfinite_input = nonfinite[b];
            info_data[b].converged = nonfinite[b] == 0 && mask[b] == 1 ? 1 : 0;
          });
        });
  }

 private:
  int batch_ = 0, M_ = 0, N_ = 0, w_ = 0, steps_ = 0;
  bool transpose_ = false;
  SvdOptions options_;
  TailoringPlan plan_;
  Vec<Scalar> W_, V_, scale_, partial_, B_, J_;
  Vec<int> state_;
  Kokkos::View<Scalar**, Kokkos::LayoutRight, memory_space> lambda_;
  Vec<EvdInfo> evd_info_;
  std::vector<Vec<BlockPairTask<Scalar>>> tasks_;
  std::vector<TailoredGemmWork<ExecSpace>> gram_work_, update_work_;
};

}  // namespace kwsvd::Impl
