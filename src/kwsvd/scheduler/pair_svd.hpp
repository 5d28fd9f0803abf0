#pragma once
// Host side of the W-cycle's pair-SVD group (kernels/pair_svd_team.hpp):
// whether a pair of blocks fits level-0 scratch, and the launch of every such
// pair of one W-cycle step, one team each. Allocates nothing.

#include <algorithm>
#include <cstddef>

#include "kwsvd/impl/kokkos_compat.hpp"
#include "kwsvd/kernels/pair_svd_team.hpp"

namespace kwsvd::Impl {

/// Bits of a W-cycle matrix's per-sweep rotation flag: some pair rotated,
/// and some rotation was not small (WcycleEvdHooks::small_off2 and
/// small_sin2 in scheduler/wcycle.hpp; the pair SVDs' rotations count as
/// large). A sweep without rotation_large ends the matrix's sweeps.
constexpr int rotation_any = 1, rotation_large = 2;

/// Whether the scheduler solves a pair of blocks of width w with `rows` rows
/// by the pair SVD (the first group) within `limit` bytes of level-0 scratch:
/// the pair and its J must both fit, and w be at least 16. Measured on the
/// H100 (perf_svd_suite, double, --pair-svd=0|1), with J rotated in memory
/// the pair SVD took 26 ms for Table IV's 200 x 100^2 against 14 ms by the
/// Gram EVD, and with w = 8 a team has too few column pairs to hide its
/// per-step barriers (Fig. 8(b) 128^2 x 10: 9.2 ms against 7.5 ms); with both
/// in scratch and w = 16 it wins (64^2 x 100: 2.9 ms against 3.1 ms).
template <class ExecSpace, class Scalar>
bool pair_svd_fits(int rows, int w, std::size_t limit) {
  return w >= 16 && pair_svd_scratch_bytes<ExecSpace, Scalar>(rows, w) <= limit;
}

template <class ExecSpace, class Scalar>
struct PairSvdFunctor {
  using Member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using ScratchVector = TeamScratch<ExecSpace, Scalar>;
  using FlagVector = TeamScratch<ExecSpace, int>;
  const BlockPairTask<Scalar>* tasks;
  const int* mask;  // 1: the matrix is done (seed 002 Design-4)
  int* rotated;     // per matrix: rotation_any | rotation_large when the pair rotated
  int* rotates;     // per pair: 0 when J = I (the update skips it), as the Gram EVD's pairs
  Scalar* J;        // pair p: (2w)^2 at J + p (2w)^2
  int w, max_rows, log2, sweeps;
  Scalar tol;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const BlockPairTask<Scalar> t = tasks[member.league_rank()];
    if (mask[t.matrix] != 0)
      return;  // the whole team leaves together
    const int n = 2 * w;
    const std::size_t nn = std::size_t(n) * n;
    ScratchVector X(member.team_scratch(0), std::size_t(max_rows) * n);
    ScratchVector Js(member.team_scratch(0), nn);
    ScratchVector d(member.team_scratch(0), pair_svd_d_scalars(w));
    FlagVector flags(member.team_scratch(0), 2);
    const bool any =
        pair_svd_team(member, t, w, X.data(), Js.data(), d.data(), flags.data(), log2, tol, sweeps);
    Scalar* const Jt = J + std::size_t(t.pair) * nn;
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, int(nn)),
                         [&](const int e) { Jt[e] = Js[e]; });
    Kokkos::single(Kokkos::PerTeam(member), [&]() {
      rotates[t.pair] = any ? 1 : 0;  // no rotation leaves J = I exactly
      if (any)                        // not measured against the W-cycle's small rotations: large
        rotated[t.matrix] = rotation_any | rotation_large;
    });
  }
};

/// The pair SVDs of one step: `count` tasks (rows at most max_rows, blocks of
/// width w, each fitting as pair_svd_fits checked), J written at each task's
/// `pair` and rotates[pair] set to whether it differs from I. `lanes`
/// vector lanes per column pair (clamped to the backend).
template <class ExecSpace, class Scalar>
void launch_pair_svd(const ExecSpace& exec, const BlockPairTask<Scalar>* tasks, int count,
                     int max_rows, int w, int lanes, const int* mask, int* rotated, int* rotates,
                     Scalar* J, Scalar tol, int sweeps) {
  if (count == 0)
    return;
  while (lanes > 1 && lanes > vector_length_max<ExecSpace>())
    lanes /= 2;
  int log2 = 0;
  while ((1 << (log2 + 1)) <= lanes)
    ++log2;
  const PairSvdFunctor<ExecSpace, Scalar> f{tasks, mask,     rotated, rotates, J,
                                            w,     max_rows, log2,    sweeps,  tol};
  const int scratch = int(pair_svd_scratch_bytes<ExecSpace, Scalar>(max_rows, w));
  Kokkos::TeamPolicy<ExecSpace> probe(exec, count, 1, 1 << log2);
  probe.set_scratch_size(0, Kokkos::PerTeam(scratch));
  const int team_max = probe.team_size_max(f, Kokkos::ParallelForTag());
  // One thread per column pair of the 2w columns.
  Kokkos::TeamPolicy<ExecSpace> policy(exec, count, std::max(1, std::min(w, team_max)), 1 << log2);
  policy.set_scratch_size(0, Kokkos::PerTeam(scratch));
  Kokkos::parallel_for("kwsvd::wcycle_pair_svd", policy, f);
}

}  // namespace kwsvd::Impl
