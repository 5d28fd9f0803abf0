#pragma once
// Threads per team of the Gram EVD kernel (kernels/gram_evd_team.hpp). A step
// of an n x n EVD has n/2 rotations, n (n + 2) / 8 block updates and n^2 / 2
// row rotations of J, separated by two team barriers, so small n leaves a
// large team idle at every barrier while the rotation parameters (square
// roots and divisions) set the step's latency: more, smaller teams per SM
// hide it. Larger n has the work to fill more threads.

namespace kwsvd::Impl {

/// The batch from which the EVDs of one launch fill an H200 many times over,
/// so that resident teams matter more than each team's latency: smaller
/// teams (gram_evd_team_threads), capped registers with J in registers
/// (gram_evd_register_capped), J's rotation after the block update in float
/// (gram_evd_defers_j_rotation). Measured at batches 1000 and 10000.
constexpr long gram_evd_large_batch = 5000;

/// Fitted by hand to BM_kwsvd_gram_evd_threads of perf_gram_evd (team sizes
/// 32 to 256, n in {16, 32, 48, 64}, batches 1000 and 10000, float and
/// double) on an H200 (perf_tests/results/). Once the batch fills the GPU
/// many times over, n = 16 runs best on one warp per matrix (float n = 32 on
/// two); otherwise 128
/// threads, and 256 for the larger double blocks (whose scratch allows few
/// teams per SM, so each team needs its own parallelism) and for n = 64.
///
/// With J in registers (gram_evd_register_size) every thread holds a row of
/// J, so the team is the fewest whole warps that cover n: more threads add
/// registers without adding J's parallelism.
inline int gram_evd_team_threads(int n, long batch, int scalar_bytes, bool j_in_registers) {
  if (j_in_registers)
    return (n + (n & 1) + 31) / 32 * 32;
  if (n <= 16)
    return batch >= gram_evd_large_batch ? 32 : 128;
  if (n <= 32)
    return scalar_bytes < 8 && batch >= gram_evd_large_batch ? 64 : 128;
  if (n <= 48)
    return scalar_bytes >= 8 ? 256 : 128;
  return 256;
}

/// Threads per team of the W-cycle's Gram EVDs (one inner sweep of a pair's
/// 2w x 2w Gram, J in scratch), or 0 for gram_evd_team_threads's choice.
/// Measured in perf_svd_suite on an H200 (two instances, the Grams' plates
/// summed by the EVD): double n' = 48 (w = 24) on 192 threads against 256,
/// 5 teams an SM instead of 4 (64 registers a thread), Table IV 128^2 10.9
/// -> 10.0 ms, 256^2 45.6 -> 44.5, 512^2 325 -> 318, Fig. 8(b) 512^2 x 100
/// 171 -> 167, 1024^2 x 10 190 -> 184, Table VI's groups to 256 and 512 -4.3
/// and -3.3%, every other point within 1%. (Before those two changes the
/// same trial lost 1.2% at 256^2.) The standalone EVD, run to convergence on
/// batches of 1000 and more, stays on 256.
///
/// n' = 32 (w = 16, the small batches' blocks) and float n' = 48 take 256
/// threads instead of the standalone EVD's 128: a step of a batch too small
/// to fill the device waits on its slowest EVD, and twice the threads
/// shorten each inner step's block update and J rotation. H200, best of two
/// alternating runs (perf_tests/notes/wcycle.md): Fig. 8(b) 128^2 / 256^2 /
/// 512^2 x 10 -6.8 / -5.9 / -2.6% double, -7.4 / -6.6 / -4.8% float;
/// float w = 24: 1024^2 x 10 -8.8%, 128^2 x 100 -7.7%, Table IV 100^2
/// -5.1%, Table VI's group 128 -5.1%. Double n' = 48 stays on 192 (at 256:
/// +2 to +9%, Table IV 128^2 9.81 -> 10.70 ms).
inline int wcycle_gram_evd_team_threads(int n, int scalar_bytes) {
  if (n <= 16 || n > 48)
    return 0;
  return scalar_bytes >= 8 && n > 32 ? 192 : 256;
}

/// Whether a launch of `batch` EVDs with J in scratch defers J's rotation by
/// a step to the next step's rotations, on the threads after the first warp
/// (gram_evd_team), instead of rotating J after the step's block update.
/// That fills phase (a)'s idle threads but leaves J's rows to fewer of
/// them. H200, perf_gram_evd at batch 10000, deferred against not
/// (`-gram_evd-regression-*.json`, gram_evd.md): double n = 16 / 32 / 48
/// -7 / -13 / -16%, float +4 / +12 / +3 / +2% at n = 16 / 32 / 48 / 64 (its
/// n = 32 on 64 threads from batch 5000, so J on one warp); the W-cycle's
/// float launches (tens of EVDs at Fig. 8(b)'s batch 10, a few thousand at
/// most) gain up to 3.6% at batch 10 and are within 1% elsewhere
/// (wcycle.md). So double always defers (known at compile time: one
/// kernel), float below the batch at which gram_evd_team_threads shrinks its
/// teams (two kernels).
constexpr bool gram_evd_always_defers_j_rotation(int scalar_bytes) {
  return scalar_bytes >= 8;
}
inline bool gram_evd_defers_j_rotation(long batch, int scalar_bytes) {
  return gram_evd_always_defers_j_rotation(scalar_bytes) || batch < gram_evd_large_batch;
}

/// Teams per SM that the register cap of the J-in-registers kernel aims at
/// (Kokkos::LaunchBounds, 64 threads a team, 64K registers an SM): J's
/// registers plus 40, n = 64 in double giving 6 teams of 168 registers.
/// Uncapped, ptxas keeps every rotation of a step in flight (237 registers
/// there, 4 teams); the cap spills a little.
constexpr int gram_evd_register_capped_teams(int n_even, int scalar_bytes) {
  const int teams = 65536 / (64 * (n_even * scalar_bytes / 4 + 40));
  return teams > 1 ? teams : 1;
}

/// Whether a GPU batch runs the capped variant. Measured at n = 64 in
/// double (the one size that keeps J in registers on an H200), capped
/// against uncapped: batch 1000 6.14 against 4.77 ms, 10000 41.1 against
/// 43.4, 100000 396 against 427. More resident teams pay once the batch
/// fills the GPU many times over, as for the team sizes above.
inline bool gram_evd_register_capped(long batch) {
  return batch >= gram_evd_large_batch;
}

}  // namespace kwsvd::Impl
