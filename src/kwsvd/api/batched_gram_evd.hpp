#pragma once
// kwsvd::batched_gram_evd: eigenvalues and eigenvectors of every symmetric
// matrix of a batch whose EVD fits in one team's level-0 scratch, one team per
// matrix (the W-cycle's EVD of Gram blocks, §IV-C).

#include <limits>
#include <string>
#include <type_traits>

#include "kwsvd/api/errors.hpp"
#include "kwsvd/api/options.hpp"
#include "kwsvd/impl/matrix_slot.hpp"
#include "kwsvd/kernels/gram_evd_team.hpp"
#include "kwsvd/tuning/gram_evd_team_threads.hpp"

namespace kwsvd {

/// True when an n x n EVD fits in the run-time level-0 team scratch of
/// ExecSpace, i.e. batched_gram_evd accepts it.
template <class Scalar, class ExecSpace = Kokkos::DefaultExecutionSpace>
bool gram_evd_fits(int n) {
  if (n < 0 || n > Impl::gram_evd_max_n)
    return false;
  return Impl::gram_evd_scratch_bytes<ExecSpace, Scalar>(n) <=
         std::size_t(Impl::team_scratch_bytes_max<ExecSpace>());
}

namespace Impl {

/// Hooks around each matrix's EVD in BatchedGramEvdFunctor: skip(b) leaves
/// matrix b alone (its info says converged after 0 sweeps; lambda and J are
/// not written); done(b, rotated, large) runs on one thread once matrix b is
/// finished, skipped or not, with whether its J differs from I and whether
/// one of its rotations was not small, where `reports` is true.
/// batched_gram_evd skips nothing and reports nothing; the W-cycle's hooks
/// (scheduler/wcycle.hpp) skip the pairs of converged matrices and mark the
/// pairs that rotate, two launches a step fewer. Hooks with a member
/// gram_source(b) supply matrix b's entries in place of B: an accessor
/// whose (row, col), row <= col, is the entry; the W-cycle's sum the plates
/// of its Grams (one launch a step fewer again). Hooks with members small_off2 and small_sin2 set
/// GramEvdControl's, which define `large` (the W-cycle's stopping test);
/// without them `large` is false.
struct GramEvdNoHooks {
  static constexpr bool reports = false;
  KOKKOS_INLINE_FUNCTION bool skip(int /*b*/) const { return false; }
  KOKKOS_INLINE_FUNCTION void done(int /*b*/, bool /*rotated*/, bool /*large*/) const {}
};

/// Whether Hooks supplies the matrices' entries (gram_source).
template <class Hooks, class = void>
struct hooks_supply_entries : std::false_type {};
template <class Hooks>
struct hooks_supply_entries<Hooks, std::void_t<decltype(&Hooks::gram_source)>> : std::true_type {};

/// Whether Hooks bounds small rotations (small_off2, small_sin2).
template <class Hooks, class = void>
struct hooks_bound_small_rotations : std::false_type {};
template <class Hooks>
struct hooks_bound_small_rotations<Hooks, std::void_t<decltype(&Hooks::small_off2)>>
    : std::true_type {};

// Pointers and strides only, like the SVD closure (see batched_small_svd.hpp).
// RegisterN > 0: n' = RegisterN and J in registers (RegisterEigenvectors);
// 0: J in scratch, its rotation deferred where DeferJ
// (ScratchEigenvectors). Hooks: GramEvdNoHooks or the caller's.
template <class ExecSpace, class Scalar, int RegisterN, class Hooks = GramEvdNoHooks,
          bool DeferJ = true>
struct BatchedGramEvdFunctor {
  using Member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  template <class T>
  using ScratchVector = TeamScratch<ExecSpace, T>;
  // A GPU team has a thread per row; a host team has one thread, which owns
  // them all.
  static constexpr int register_rows = runs_off_host<ExecSpace>() ? 1 : RegisterN;
  StridedMatrix<const Scalar> B;  // matrix 0; matrix b starts b_batch_stride later
  std::ptrdiff_t b_batch_stride;
  Scalar* lambda;
  std::ptrdiff_t lambda_batch_stride, lambda_stride;
  StridedMatrix<Scalar> J;
  std::ptrdiff_t j_batch_stride;
  SvdInfo* info;
  std::ptrdiff_t info_stride;  // info is any rank-1 View (a column of a 2-D one, say)
  int n;
  GramEvdControl<Scalar> control;
  Hooks hooks;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const int b = member.league_rank();
    if constexpr (hooks_supply_entries<Hooks>::value) {
      // The hooks' accessor is made before the skip test, so that its own
      // reads (the W-cycle's: the pair's plate range) go out with the skip
      // test's instead of after them: both are the launch's first reads of
      // memory, which every team waits for.
      solve_matrix(member, b, hooks.gram_source(b));
    } else {
      StridedMatrix<const Scalar> a = B;
      a.data += b * b_batch_stride;
      solve_matrix(member, b, a);
    }
  }

  /// Matrix b's EVD, its upper triangle read from source(row, col).
  template <class Source>
  KOKKOS_INLINE_FUNCTION void solve_matrix(const Member& member, const int b,
                                           const Source& source) const {
    if (hooks.skip(b)) {
      write_info(member, info + b * info_stride, 0, true, false);
      if constexpr (Hooks::reports)
        Kokkos::single(Kokkos::PerTeam(member), [&]() { hooks.done(b, false, false); });
      return;
    }
    const std::size_t ne = std::size_t(n + (n & 1)), pairs = ne / 2;
    // Carved exactly as gram_evd_scratch_bytes sized them.
    ScratchVector<Scalar> Bs(member.team_scratch(0),
                             ne * std::size_t(Impl::gram_evd_ld_b(int(ne))));
    ScratchVector<Scalar> Js(member.team_scratch(0),
                             RegisterN > 0 ? 0 : ne * std::size_t(Impl::gram_evd_ld_j(int(ne))));
    const std::size_t rotations = Impl::gram_evd_rotation_steps(RegisterN == 0) * pairs;
    ScratchVector<Scalar> c(member.team_scratch(0), rotations);
    ScratchVector<Scalar> s(member.team_scratch(0), rotations);
    ScratchVector<int> ints(member.team_scratch(0), Impl::gram_evd_int_count(int(ne)));
    StridedMatrix<Scalar> j = J;
    j.data += b * j_batch_stride;
    GramEvdScratch<Scalar> ws{Bs.data(), Js.data(), c.data(), s.data(), nullptr, nullptr, nullptr};
    ws.set_ints(ints.data(), int(ne));
    const GramEvdOutput<Scalar> out{lambda + b * lambda_batch_stride, lambda_stride, j,
                                    info + b * info_stride};
    if constexpr (RegisterN > 0) {
      RegisterEigenvectors<Scalar, RegisterN, register_rows> vecs;
      gram_evd_team(member, source, n, ws, out, control, vecs);
    } else {
      ScratchEigenvectors<Scalar, DeferJ> vecs{Js.data()};
      gram_evd_team(member, source, n, ws, out, control, vecs);
    }
    if constexpr (Hooks::reports) {
      // J = I exactly when the EVD converged without a rotating sweep (a
      // step that rotates nothing changes nothing). The barrier makes the
      // info written by one thread visible to the one that reads it.
      member.team_barrier();
      Kokkos::single(Kokkos::PerTeam(member), [&]() {
        const SvdInfo& done_info = info[b * info_stride];
        hooks.done(b, !(done_info.converged == 1 && done_info.sweeps <= 1), ws.rotated[4] != 0);
      });
    }
  }
};

/// Launches `functor` with Policy = TeamPolicy<ExecSpace, Bounds>: teams of
/// `wanted` threads (times `lanes` vector lanes), clamped to what the backend
/// allows, and at least `least` of them.
template <class Bounds, class ExecSpace, class Functor>
void launch_gram_evd_teams(const ExecSpace& exec, const Functor& functor, int batch, int wanted,
                           int lanes, int least, std::size_t scratch) {
  using Policy = Kokkos::TeamPolicy<ExecSpace, Bounds>;
  Policy probe(exec, batch, 1, lanes);
  probe.set_scratch_size(0, Kokkos::PerTeam(static_cast<int>(scratch)));
  const int team_max = probe.team_size_max(functor, Kokkos::ParallelForTag());
  const int team = wanted < team_max ? wanted : team_max;
  if (team < least) {
    throw_invalid_argument("kwsvd::batched_gram_evd", "n",
                           "needs " + std::to_string(least) +
                               " threads per team, the backend allows " + std::to_string(team_max));
  }
  Policy policy(exec, batch, team, lanes);
  policy.set_scratch_size(0, Kokkos::PerTeam(static_cast<int>(scratch)));
  Kokkos::parallel_for("kwsvd::batched_gram_evd", policy, functor);
}

/// One launch of BatchedGramEvdFunctor<ExecSpace, Scalar, RegisterN, Hooks, DeferJ>.
/// `threads`: the team size asked for.
template <int RegisterN, class ExecSpace, class Scalar, class Hooks, bool DeferJ>
void launch_gram_evd(
    const ExecSpace& exec,
    const BatchedGramEvdFunctor<ExecSpace, Scalar, RegisterN, Hooks, DeferJ>& functor, int batch,
    int threads) {
  const std::size_t scratch =
      Impl::gram_evd_scratch_bytes<ExecSpace, Scalar>(functor.n, RegisterN == 0);
  if constexpr (RegisterN == 0) {
    // Vector lanes only serve the column loops that load and store the
    // matrix; every per-step loop is spread over all threads of the team.
    int lanes = 8;
    while (lanes > 1 && (lanes > Impl::vector_length_max<ExecSpace>() || lanes > threads))
      lanes /= 2;
    // At most 256 threads, and registers capped for 4 such teams (64 per
    // thread): the kernel is bound by shared-memory traffic and latency, so
    // resident teams matter more than registers (74 uncapped in double).
    auto with_lanes = functor;
    with_lanes.control.vector_lanes = lanes;
    launch_gram_evd_teams<Kokkos::LaunchBounds<256, 4>>(exec, with_lanes, batch, threads / lanes,
                                                        lanes, 1, scratch);
  } else if constexpr (!runs_off_host<ExecSpace>()) {
    // The host's team has one thread, which owns every row of J.
    launch_gram_evd_teams<Kokkos::LaunchBounds<64, 1>>(exec, functor, batch, 1, 1, 1, scratch);
  } else {
    // A thread per row of J (at least RegisterN threads, 64 at most). No
    // vector lanes: the code between the team's loops runs on each lane.
    // Registers capped or not by the batch (gram_evd_register_capped).
    const int least = (RegisterN + 31) / 32 * 32;
    const int wanted = threads > least ? threads : least;
    constexpr int capped = gram_evd_register_capped_teams(RegisterN, int(sizeof(Scalar)));
    if (gram_evd_register_capped(batch)) {
      launch_gram_evd_teams<Kokkos::LaunchBounds<64, capped>>(exec, functor, batch, wanted, 1,
                                                              RegisterN, scratch);
    } else {
      launch_gram_evd_teams<Kokkos::LaunchBounds<64, 1>>(exec, functor, batch, wanted, 1, RegisterN,
                                                         scratch);
    }
  }
}

/// batched_gram_evd with hooks around each matrix's EVD (GramEvdNoHooks
/// describes them; the W-cycle passes its own, which skip the pairs of
/// matrices that have converged, whose Grams it did not recompute, and mark
/// the pairs that rotate). The hooks' memory must be reachable from `exec`.
/// zero_columns_stay: columns whose eigenvalue is exactly zero keep their
/// place, and options.order applies to the others (the W-cycle's pairs,
/// whose narrow blocks' missing columns are zero in B); also, B being the
/// Gram of a working matrix scaled to entries below 1, diagonal entries
/// below negligible_squared_norm are numerically zero columns, left alone.
/// recursive_pairs: steps in the recursive ordering instead of the circle
/// method (GramEvdControl::recursive_pairs).
template <class ExecSpace, class BView, class LambdaView, class JView, class InfoView, class Hooks>
void batched_gram_evd_hooked(const ExecSpace& exec, const BView& B, const LambdaView& lambda,
                             const JView& J, const InfoView& info, const EvdOptions& options,
                             const Hooks& hooks, bool zero_columns_stay = false,
                             bool recursive_pairs = false) {
  using Scalar = typename LambdaView::non_const_value_type;
  static_assert(Kokkos::is_view<BView>::value && BView::rank == 3,
                "kwsvd::batched_gram_evd: B must be a rank-3 View (batch, n, n)");
  static_assert(Kokkos::is_view<LambdaView>::value && LambdaView::rank == 2,
                "kwsvd::batched_gram_evd: lambda must be a rank-2 View (batch, n)");
  static_assert(Kokkos::is_view<JView>::value && JView::rank == 3,
                "kwsvd::batched_gram_evd: J must be a rank-3 View (batch, n, n)");
  static_assert(Kokkos::is_view<InfoView>::value && InfoView::rank == 1 &&
                    std::is_same<typename InfoView::value_type, EvdInfo>::value,
                "kwsvd::batched_gram_evd: info must be a rank-1 View of kwsvd::EvdInfo");
  static_assert(std::is_floating_point<Scalar>::value,
                "kwsvd::batched_gram_evd: the scalar type must be float or double");
  static_assert(std::is_same<typename BView::non_const_value_type, Scalar>::value &&
                    std::is_same<typename LambdaView::value_type, Scalar>::value &&
                    std::is_same<typename JView::value_type, Scalar>::value,
                "kwsvd::batched_gram_evd: B, lambda and J must share one scalar type and "
                "lambda, J must not be const");
  static_assert(
      Kokkos::SpaceAccessibility<ExecSpace, typename BView::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<ExecSpace, typename LambdaView::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<ExecSpace, typename JView::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<ExecSpace, typename InfoView::memory_space>::accessible,
      "kwsvd::batched_gram_evd: every View must be in a memory space the execution space can "
      "access");

  constexpr const char* fn = "kwsvd::batched_gram_evd";
  const std::size_t batch = B.extent(0), n = B.extent(1);
  if (B.extent(2) != n) {
    throw_invalid_argument(
        fn, "B",
        "must hold square matrices, got extents " + Impl::format_extents({batch, n, B.extent(2)}));
  }
  if (batch > std::size_t(1) << 30 || n > std::size_t(Impl::gram_evd_max_n)) {
    throw_invalid_argument(
        fn, "B",
        "is too large: extents " + Impl::format_extents({batch, n, n}) +
            "; at most 2^30 matrices of n <= " + std::to_string(Impl::gram_evd_max_n) +
            " (check kwsvd::gram_evd_fits first)");
  }
  require_extents(fn, "lambda", {lambda.extent(0), lambda.extent(1)}, {batch, n},
                  "(batch, n) with batch, n taken from B");
  require_extents(fn, "J", {J.extent(0), J.extent(1), J.extent(2)}, {batch, n, n},
                  "(batch, n, n) with batch, n taken from B");
  require_extents(fn, "info", {info.extent(0)}, {batch}, "(batch) with batch taken from B");
  require_jacobi_options<Scalar>(fn, options.tolerance, options.max_sweeps);
  if (options.team_threads < 0 || options.team_threads > 1024) {
    throw_invalid_argument(fn, "options.team_threads",
                           "must be 0 (tuned) or a thread count up to 1024, got " +
                               std::to_string(options.team_threads));
  }
  if (options.sweeps < 0) {
    throw_invalid_argument(fn, "options.sweeps",
                           "must be 0 (run to convergence) or a positive sweep count, got " +
                               std::to_string(options.sweeps));
  }
  if (batch == 0)
    return;
  if (n == 0) {  // nothing to decompose: report success, as the SVD does
    Impl::report_converged(exec, info.data(), std::ptrdiff_t(info.stride(0)), batch);
    return;
  }
  if (!gram_evd_fits<Scalar, ExecSpace>(int(n))) {
    throw_invalid_argument(
        fn, "B",
        "has n = " + std::to_string(n) + ", whose working set (" +
            std::to_string(Impl::gram_evd_scratch_bytes<ExecSpace, Scalar>(int(n))) +
            " bytes) exceeds the " + std::to_string(Impl::team_scratch_bytes_max<ExecSpace>()) +
            " bytes of level-0 team scratch of " + ExecSpace::name() +
            "; check kwsvd::gram_evd_fits first");
  }

  const Scalar tol = Impl::resolved_tolerance<Scalar>(options.tolerance);
  const bool in_registers = Impl::gram_evd_j_in_registers<ExecSpace, Scalar>(
      int(n), std::size_t(Impl::team_scratch_bytes_max<ExecSpace>()));
  const int threads =
      options.team_threads > 0
          ? options.team_threads
          : Impl::gram_evd_team_threads(int(n), long(batch), int(sizeof(Scalar)), in_registers);
  Impl::GramEvdControl<Scalar> control{
      tol,
      options.max_sweeps,
      options.sweeps,
      options.order,
      options.positive_semidefinite,
      zero_columns_stay,
      zero_columns_stay ? Impl::negligible_squared_norm<Scalar>() : Scalar(0),
      recursive_pairs};
  if constexpr (Impl::hooks_bound_small_rotations<Hooks>::value) {
    control.small_off2 = hooks.small_off2;
    control.small_sin2 = hooks.small_sin2;
  }
  Impl::with_gram_evd_register_size(in_registers ? int(n + (n & 1)) : 0, [&](auto size) {
    constexpr int register_n = decltype(size)::value;
    const auto launch = [&](auto defer) {
      const Impl::BatchedGramEvdFunctor<ExecSpace, Scalar, register_n, Hooks,
                                        decltype(defer)::value>
          functor{Impl::matrix_of<const Scalar>(B, 0),
                  std::ptrdiff_t(B.stride(0)),
                  lambda.data(),
                  std::ptrdiff_t(lambda.stride(0)),
                  std::ptrdiff_t(lambda.stride(1)),
                  Impl::matrix_of<Scalar>(J, 0),
                  std::ptrdiff_t(J.stride(0)),
                  info.data(),
                  std::ptrdiff_t(info.stride(0)),
                  int(n),
                  control,
                  hooks};
      Impl::launch_gram_evd(exec, functor, int(batch), threads);
    };
    // A kernel that does not defer J's rotation exists only for the types
    // whose choice depends on the batch (gram_evd_defers_j_rotation).
    if constexpr (register_n == 0 &&
                  !Impl::gram_evd_always_defers_j_rotation(int(sizeof(Scalar)))) {
      if (!Impl::gram_evd_defers_j_rotation(long(batch), int(sizeof(Scalar)))) {
        launch(std::false_type{});
        return;
      }
    }
    launch(std::true_type{});
  });
}

}  // namespace Impl

/// Eigen-decomposition B(b) = J(b) diag(lambda(b)) J(b)^T of every symmetric
/// matrix of a batch by the parallel two-sided Jacobi method (W-cycle paper
/// §IV-C), one team per matrix with B and J in level-0 team scratch (J in
/// registers, a row per thread, where it does not fit beside B: n = 64 in
/// double on a GPU).
///
/// B: rank-3 View (batch, n, n), float or double, any layout; only its upper
/// triangle is read and it is left unchanged (lambda, J and info must not
/// share storage with B or with each other).
/// lambda: (batch, n) eigenvalues in options.order (descending by default).
/// J: (batch, n, n) orthonormal eigenvectors, column l for lambda(b, l).
/// info: (batch) kwsvd::EvdInfo: sweeps, converged, non-finite input (such a
/// matrix gets NaN outputs; the others are unaffected).
/// Every View must be accessible from `exec`; the call is asynchronous.
///
/// Throws kwsvd::invalid_argument naming the argument when extents, options or
/// the size are unusable; gram_evd_fits<Scalar, ExecSpace>(n) tells
/// beforehand whether n fits the run-time scratch limit.
template <class ExecSpace, class BView, class LambdaView, class JView, class InfoView>
void batched_gram_evd(const ExecSpace& exec, const BView& B, const LambdaView& lambda,
                      const JView& J, const InfoView& info, const EvdOptions& options = {}) {
  // Checked here, not in the hooked form the W-cycle calls with its own
  // buffers at every step.
  Impl::require_disjoint_storage("kwsvd::batched_gram_evd", {{"B", Impl::batch_storage_runs(B)}},
                                 {{"lambda", Impl::batch_storage_runs(lambda)},
                                  {"J", Impl::batch_storage_runs(J)},
                                  {"info", Impl::batch_storage_runs(info)}});
  Impl::batched_gram_evd_hooked(exec, B, lambda, J, info, options, Impl::GramEvdNoHooks{});
}

}  // namespace kwsvd
