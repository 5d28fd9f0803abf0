#pragma once
// The W-cycle scheduler (W-cycle paper §III, Algorithm 2) for the matrices of
// a batch (any mix of shapes) that do not fit the level-0 SVD kernel.
//
// What is here: level 1 of the W-cycle with the Gram-EVD group. Each matrix
// (transposed when wide) is split into column blocks of width w, chosen by
// the tailoring auto-tuning engine (tuning/tailoring_plan.hpp) among the
// widths whose 2w x 2w Gram EVD fits level-0 scratch (a matrix with fewer
// than 2w columns uses half its columns). A sweep runs the longest matrix's
// n/w - 1 round-robin steps, each matrix taking part in its own; each step is, for the whole batch,
// one launch of the tailored Gram of every block pair, one of the batched Gram EVD (one inner
// sweep, seed 002 Design-2), one marking which matrices rotated, and one fused update of A's and
// V's blocks. A matrix converges when a whole sweep rotates none of its pairs (the EVD's relative
// test is exactly the one-sided criterion |a_i^T a_j| > tol ||a_i|| ||a_j|| on the columns); from
// then on it is masked out of the GEMMs (seed 002 Design-4). One small
// device-to-host read per sweep (the count of active matrices) ends the loop.
//
// Not yet here (see the issue tracker): the SVD-in-scratch group for pairs
// that fit the level-0 kernel and the recursion to level 2 and beyond (every
// w chosen fits the EVD, so level 1 suffices for any size, at the cost of a
// narrower w than the W-cycle would use), and compaction of converged
// matrices out of the EVD launch.

#include <algorithm>
#include <string>
#include <vector>

#include "kwsvd/api/batched_gram_evd.hpp"
#include "kwsvd/api/options.hpp"
#include "kwsvd/impl/matrix_slot.hpp"
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

/// The block width and tailoring plan of a level whose working matrices
/// (M >= N each) have these shapes: the engine's choice among widths whose
/// Gram EVD fits, never wider than half the columns of the widest matrix
/// (rounded up to even, at least 2). Narrower matrices use narrower blocks
/// (wcycle_block_width).
template <class ExecSpace, class Scalar>
TailoringPlan plan_wcycle_level(const std::vector<MatrixShape>& shapes) {
  int max_rows = 1, max_cols = 1;
  for (const auto& s : shapes) {
    max_rows = std::max(max_rows, s.rows);
    max_cols = std::max(max_cols, s.cols);
  }
  const int w_max = widest_evd_block<ExecSpace, Scalar>();
  const int half = std::max(2, ((max_cols + 1) / 2 + 1) / 2 * 2);
  std::vector<TailoringPlan> candidates;
  for (const auto& p : tailoring_candidates(max_rows, w_max))
    if (p.w <= half)
      candidates.push_back(p);
  if (candidates.empty())
    return {std::min(half, std::max(w_max, 2)), max_rows, 256};
  return choose_tailoring_plan(candidates, shapes,
                               active_tuning_parameters(runs_off_host<ExecSpace>()).tlp_threshold);
}

/// The block width of one working matrix with N columns at a level of width
/// w: w, or half its columns when that is narrower, so that every matrix of
/// two or more columns has at least two blocks to rotate. The pair's Gram is
/// still 2w x 2w, its missing columns zero (BlockPairTask).
inline int wcycle_block_width(int w, int N) {
  return std::max(1, std::min(w, (N + 1) / 2));
}

/// Round-robin steps of one sweep over N columns in blocks of width w.
inline int wcycle_steps(int N, int w) {
  const int blocks = (N + w - 1) / w, even = blocks + (blocks & 1);
  return blocks > 1 ? even - 1 : 0;
}

/// Where one working matrix lives in the solver's buffers.
struct WorkGeometry {
  std::size_t w_offset = 0, v_offset = 0;  ///< W: M x N, V: N x N, column-major
  int rows = 0, cols = 0;                  ///< M >= N
  int transpose = 0;                       ///< W = A^T (the input is wide)
};

/// Device state and plan of the block-rotation matrices of one batch (any
/// mix of shapes, each at least one row and one column); run() allocates
/// nothing.
template <class ExecSpace, class Scalar>
class WcycleLevelSolver {
 public:
  using memory_space = typename ExecSpace::memory_space;
  template <class T>
  using Vec = Kokkos::View<T*, memory_space>;
  using Stride3 = Kokkos::View<Scalar***, Kokkos::LayoutStride, memory_space>;

  WcycleLevelSolver() = default;

  /// `shapes` are the input shapes (m x n, wide ones transposed inside).
  WcycleLevelSolver(const std::vector<MatrixShape>& shapes, const SvdOptions& options)
      : batch_(int(shapes.size())), options_(options) {
    std::vector<WorkGeometry> geometry(shapes.size());
    std::vector<MatrixShape> work(shapes.size());
    std::size_t w_size = 0, v_size = 0;
    for (std::size_t b = 0; b < shapes.size(); ++b) {
      auto& g = geometry[b];
      g.transpose = shapes[b].rows < shapes[b].cols ? 1 : 0;
      g.rows = std::max(shapes[b].rows, shapes[b].cols);
      g.cols = std::min(shapes[b].rows, shapes[b].cols);
      g.w_offset = w_size;
      g.v_offset = v_size;
      w_size += std::size_t(g.rows) * g.cols;
      v_size += std::size_t(g.cols) * g.cols;
      work[b] = {g.rows, g.cols};
      max_cols_ = std::max(max_cols_, g.cols);
    }
    plan_ = plan_wcycle_level<ExecSpace, Scalar>(work);
    w_ = plan_.w;
    for (const auto& g : geometry)
      steps_ = std::max(steps_, wcycle_steps(g.cols, wcycle_block_width(w_, g.cols)));
    // Working matrices, one after the other, each column-major.
    W_ = Vec<Scalar>("kwsvd::W", std::max<std::size_t>(w_size, 1));
    V_ = Vec<Scalar>("kwsvd::V", std::max<std::size_t>(v_size, 1));
    geometry_ = copy_to_device<memory_space>(geometry, "kwsvd::geometry");
    scale_ = Vec<Scalar>("kwsvd::scale", batch_);
    state_ = Vec<int>("kwsvd::state", 4 * std::size_t(batch_));
    const std::size_t nn = std::size_t(2 * w_) * std::size_t(2 * w_);
    std::size_t pairs_max = 0, partial = 0;
    for (int step = 0; step < steps_; ++step) {
      std::vector<BlockPairTask<Scalar>> tasks;
      std::vector<int> rows;
      for (int b = 0; b < batch_; ++b) {
        const auto& g = geometry[std::size_t(b)];
        const int wb = wcycle_block_width(w_, g.cols);
        if (step < wcycle_steps(g.cols, wb))
          append_step_pairs(tasks, W_.data() + g.w_offset, g.rows, g.cols, wb, step, b);
        rows.resize(tasks.size(), g.rows);
      }
      const std::size_t pairs = tasks.size();
      for (int b = 0; b < batch_; ++b) {  // V's pairs: the same rotations as A's
        const auto& g = geometry[std::size_t(b)];
        const int wb = wcycle_block_width(w_, g.cols);
        if (step < wcycle_steps(g.cols, wb))
          append_step_pairs(tasks, V_.data() + g.v_offset, g.cols, g.cols, wb, step, b);
        rows.resize(tasks.size(), g.cols);
      }
      // V's task of a pair shares the rotation J of A's task of that pair.
      for (auto& t : tasks)
        t.pair = t.pair < int(pairs) ? t.pair : t.pair - int(pairs);
      tasks_.push_back(copy_to_device<memory_space>(tasks, "kwsvd::tasks"));
      const std::vector<int> a_rows(rows.begin(), rows.begin() + std::ptrdiff_t(pairs));
      gram_work_.push_back(make_tailored_gemm_work<ExecSpace>(a_rows, plan_));
      update_work_.push_back(make_tailored_gemm_work<ExecSpace>(rows, plan_));
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

  /// The SVD of every matrix b, read from and written to slots(b) (an
  /// accessor: UniformSlots or IndexedSlots); `vectors`: U and V too.
  template <class Slots>
  void run(const ExecSpace& exec, const Slots& slots, bool vectors) {
    Scalar* W = W_.data();
    Scalar* Vw = V_.data();
    const WorkGeometry* geometry = geometry_.data();
    Scalar* scale = scale_.data();
    int* mask = state_.data();                 // 1: done (converged or non-finite)
    int* rotated = state_.data() + batch_;     // some pair rotated this sweep
    int* sweeps = state_.data() + 2 * batch_;  // sweeps performed
    int* nonfinite = state_.data() + 3 * batch_;
    using Policy = Kokkos::TeamPolicy<ExecSpace>;
    using Member = typename Policy::member_type;
    int lanes = std::min(8, vector_length_max<ExecSpace>());

    // 1. Load (transpose, scale, NaN scan), V = I, state reset.
    Kokkos::parallel_for(
        "kwsvd::wcycle_load", Policy(exec, batch_, Kokkos::AUTO, lanes),
        KOKKOS_LAMBDA(const Member& member) {
          const int b = member.league_rank();
          const WorkGeometry g = geometry[b];
          Scalar s = 1;
          const bool finite =
              wcycle_load_team(member, slots(b).a, g.transpose != 0, W + g.w_offset,
                               std::size_t(g.rows), Vw + g.v_offset, std::size_t(g.cols), s);
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
        if (pairs == 0)
          continue;
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
    if (steps_ == 0) {  // single columns only: nothing to rotate
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
    using ScratchVector = Kokkos::View<Scalar*, typename ExecSpace::scratch_memory_space,
                                       Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    Policy finish(exec, batch_, Kokkos::AUTO, lanes);
    finish.set_scratch_size(0, Kokkos::PerTeam(int(ScratchVector::shmem_size(max_cols_))));
    Kokkos::parallel_for(
        "kwsvd::wcycle_finish", finish, KOKKOS_LAMBDA(const Member& member) {
          const int b = member.league_rank();
          const WorkGeometry g = geometry[b];
          const MatrixSlot<Scalar> slot = slots(b);
          ScratchVector norms(member.team_scratch(0), g.cols);
          wcycle_finish_team(member, W + g.w_offset, std::size_t(g.rows), Vw + g.v_offset,
                             std::size_t(g.cols), g.rows, g.cols, scale[b], g.transpose != 0,
                             nonfinite[b] != 0, norms.data(), slot.s, slot.s_stride, slot.u, slot.v,
                             vectors);
          Kokkos::single(Kokkos::PerTeam(member), [&]() {
            slot.info->sweeps = sweeps[b];
            slot.info->nonfinite_input = nonfinite[b];
            slot.info->converged = nonfinite[b] == 0 && mask[b] == 1 ? 1 : 0;
          });
        });
  }

 private:
  int batch_ = 0, max_cols_ = 0, w_ = 0, steps_ = 0;
  SvdOptions options_;
  TailoringPlan plan_;
  Vec<Scalar> W_, V_, scale_, partial_, B_, J_;
  Vec<WorkGeometry> geometry_;
  Vec<int> state_;
  Kokkos::View<Scalar**, Kokkos::LayoutRight, memory_space> lambda_;
  Vec<EvdInfo> evd_info_;
  std::vector<Vec<BlockPairTask<Scalar>>> tasks_;
  std::vector<TailoredGemmWork<ExecSpace>> gram_work_, update_work_;
};

}  // namespace kwsvd::Impl
