#pragma once
// Team-level parallel two-sided Jacobi EVD of one symmetric matrix resident in
// level-0 scratch (W-cycle paper §II-D and §IV-C): the kernel the W-cycle
// scheduler uses for the 2w x 2w Gram blocks B_ij = A_ij^T A_ij whose A_ij is
// too tall for scratch.
//
// Each step of a sweep takes the n/2 disjoint pairs of a round-robin ordering
// (the same circle method as the one-sided kernel, or the recursive ordering
// of kernels/pair_ordering.hpp: GramEvdControl::recursive_pairs), computes
// all their Givens rotations at once and applies them together, B <- G^T B G
// with G the product of the step's rotations (eq. (7)). Because every row and
// column of G has at most two nonzeros, every entry of the new B depends on
// at most four old ones; the kernel updates B by 2 x 2 blocks (rows of pair
// P, columns of pair Q), so each block is read and written by one thread, in
// place (only the upper triangle is stored during the sweeps), and all
// blocks of the step run in parallel (Fig. 5) instead of row by row. A pair's
// own 2 x 2 block, which no other block reads, is diagonalized by the thread
// that computes its rotation. J <- J G rotates two columns per pair, also in
// parallel, with J in scratch (ScratchEigenvectors) or, where it does not fit
// beside B, in registers (RegisterEigenvectors). Two team barriers per step:
// rotations from the current B, then the update; with J in scratch, J's
// rotation by a step runs during the next step's rotations, on the team's
// threads that phase (a) leaves idle.

#include <cstddef>
#include <type_traits>
#include <utility>

#include "kwsvd/api/options.hpp"
#include "kwsvd/impl/index_math.hpp"
#include "kwsvd/impl/kokkos_compat.hpp"
#include "kwsvd/impl/strided_matrix.hpp"
#include "kwsvd/kernels/gram_team.hpp"
#include "kwsvd/kernels/one_sided_jacobi_team.hpp"
#include "kwsvd/kernels/pair_ordering.hpp"

namespace kwsvd::Impl {

/// Leading dimensions in scratch, chosen against shared-memory bank
/// conflicts (the kernel is bound by shared-memory traffic: Nsight Compute
/// on an H200 at n = 16 in double, batch 10000, saw 84% of the memory
/// pipes busy and 2.7- and 3.2-way conflicts on loads and stores).
///
/// B: n' + 3. A warp's block updates read entries (i, k) whose rows and
/// columns follow the round-robin pairs; an even leading dimension puts
/// many in one bank. Counted over every step of a sweep (32 banks of 4
/// bytes, upper-triangle addresses), n' + 3 needs 184, 1569, 5323, 12534
/// wavefronts in double at n' = 16, 32, 48, 64 against 248, 2035, 6301,
/// 13900 with n' + 1, and 133, 1231, 3785, 9402 in float against 146, 1737,
/// 3742, 10987.
KOKKOS_INLINE_FUNCTION int gram_evd_ld_b(int n_even) {
  return n_even + 3;
}

/// J: below n' = 32, n' + 8 staggers columns across the banks. It was chosen
/// when a warp rotated n'/2 rows of 64 / n' pairs' columns (264 wavefronts
/// per sweep at n' = 16 in double against 480 with n', ideal 240; float 172
/// against 264). ScratchEigenvectors::rotate now gives a warp pieces of
/// several columns, each up to 128 bytes long; where they are shorter the
/// stagger keeps them off each other's banks.
KOKKOS_INLINE_FUNCTION int gram_evd_ld_j(int n_even) {
  return n_even < 32 ? n_even + 8 : n_even;
}

/// Largest n the kernel supports whatever the scratch (see small_quotient).
constexpr int gram_evd_max_n = 2048;

/// Even sizes n' whose eigenvectors the kernel can keep in registers
/// (RegisterEigenvectors): the block widths the W-cycle plans (2w for w in
/// 8, 16, 24, 32).
using GramEvdRegisterSizes = std::integer_sequence<int, 16, 32, 48, 64>;

template <int... Sizes>
constexpr bool is_one_of(int n_even, std::integer_sequence<int, Sizes...>) {
  return ((n_even == Sizes) || ...);
}

inline constexpr bool gram_evd_register_size(int n_even) {
  return is_one_of(n_even, GramEvdRegisterSizes{});
}

/// f(std::integral_constant<int, n_even>()) when n_even is one of
/// GramEvdRegisterSizes, else f(std::integral_constant<int, 0>()): the
/// compile-time size of RegisterEigenvectors from a run-time one.
template <class F, int First, int... Rest>
void with_gram_evd_register_size(int n_even, const F& f,
                                 std::integer_sequence<int, First, Rest...>) {
  if (n_even == First)
    f(std::integral_constant<int, First>());
  else if constexpr (sizeof...(Rest) > 0)
    with_gram_evd_register_size(n_even, f, std::integer_sequence<int, Rest...>());
  else
    f(std::integral_constant<int, 0>());
}
template <class F>
void with_gram_evd_register_size(int n_even, const F& f) {
  with_gram_evd_register_size(n_even, f, GramEvdRegisterSizes());
}

/// Off-diagonal 2 x 2 blocks of the upper triangle of an n' x n' matrix,
/// one per pair of pairs: the items of a step's update of B.
KOKKOS_INLINE_FUNCTION int gram_evd_offdiagonal_blocks(int n_even) {
  const int w = n_even / 2;
  return w * (w - 1) / 2;
}

/// Flags of one team (GramEvdScratch::rotated).
constexpr int gram_evd_flag_count = 5;

/// Ints of one team's scratch: two steps' pairs (one packed int each), the
/// flags and the table of off-diagonal blocks (one packed int per block; at
/// least n' of them, reused for the eigenvalues' ranks at the end).
KOKKOS_INLINE_FUNCTION std::size_t gram_evd_int_count(int n_even) {
  const int blocks = gram_evd_offdiagonal_blocks(n_even);
  return std::size_t(n_even) + gram_evd_flag_count + std::size_t(blocks > n_even ? blocks : n_even);
}

/// Steps of rotations (c and s, n' / 2 pairs a step) that one team's
/// scratch holds: two with J in scratch, whose rotation by a step runs
/// during the next one (gram_evd_team, GramEvdScratch::step_buffers); one
/// with J in registers, whose B nearly fills scratch, where every 1 KB more
/// can cost a resident team.
KOKKOS_INLINE_FUNCTION constexpr int gram_evd_rotation_steps(bool j_in_scratch) {
  return j_in_scratch ? 2 : 1;
}

/// Scratch one team needs for an n x n EVD: B (n' x n', leading dimension
/// gram_evd_ld_b), J (n' x n', gram_evd_ld_j) unless it lives in registers, n' = n rounded up to
/// even (odd n gets a decoupled zero row and column); the rotations' c and s
/// (gram_evd_rotation_steps of n' / 2 each) and the ints of gram_evd_int_count.
template <class ExecSpace, class Scalar>
std::size_t gram_evd_scratch_bytes(int n, bool j_in_scratch) {
  const std::size_t ne = std::size_t(n + (n & 1));
  return scratch_bytes_for<ExecSpace, Scalar>(ne * std::size_t(gram_evd_ld_b(int(ne)))) +
         (j_in_scratch
              ? scratch_bytes_for<ExecSpace, Scalar>(ne * std::size_t(gram_evd_ld_j(int(ne))))
              : 0) +
         2 * scratch_bytes_for<ExecSpace, Scalar>(
                 std::size_t(gram_evd_rotation_steps(j_in_scratch)) * (ne / 2)) +
         scratch_bytes_for<ExecSpace, int>(gram_evd_int_count(int(ne)));
}

/// Whether the EVD of an n x n matrix keeps J in registers: only where J
/// does not fit scratch beside B (n = 64 in double on a GPU's 40 KB; from 48
/// on in double and at 64 in float on the host backends' 32 KB) and n' is a
/// register size. J in scratch is faster wherever it fits (H200, b = 10000:
/// n = 48 in double 15.9 ms against 21.6 with J in registers, n = 16 0.79
/// against 0.92): a thread per row of J takes 100 to 240 registers, which
/// leaves few teams per SM to hide the latency of each step.
template <class ExecSpace, class Scalar>
bool gram_evd_j_in_registers(int n, std::size_t limit) {
  const int ne = n + (n & 1);
  return gram_evd_register_size(ne) && gram_evd_scratch_bytes<ExecSpace, Scalar>(n, true) > limit;
}

/// The scratch of the variant batched_gram_evd runs for n.
template <class ExecSpace, class Scalar>
std::size_t gram_evd_scratch_bytes(int n) {
  const bool in_registers = gram_evd_j_in_registers<ExecSpace, Scalar>(
      n, std::size_t(team_scratch_bytes_max<ExecSpace>()));
  return gram_evd_scratch_bytes<ExecSpace, Scalar>(n, !in_registers);
}

/// Work arrays of one team, carved from level-0 scratch by the caller.
template <class Scalar>
struct GramEvdScratch {
  Scalar* B;  // n' x n', column-major, leading dimension gram_evd_ld_b(n')
  Scalar* J;  // n' x n', leading dimension gram_evd_ld_j(n') (null when J is in registers)
  Scalar* c;  // per pair, two steps: global step g's at (g & 1) n'/2 (step_buffers)
  Scalar* s;
  int* pair_ij;  // per pair: the step's i | j << 16, i < j (two steps, as c and s)
  int* rotated;  // 5 flags: [0, 1] a rotation, [2, 3] a large one (see GramEvdStop),
                 // [4] a rotation that is not small (GramEvdControl::small_off2;
                 // fixed sweeps only)
  int* blocks;   // w (w - 1) / 2 off-diagonal upper blocks: P | Q << 16, P < Q, built
                 // once per matrix; at the end the ranks of the eigenvalues (n' entries)

  /// Points pair_ij, rotated and blocks into `ints`, gram_evd_int_count(n')
  /// of them.
  KOKKOS_INLINE_FUNCTION void set_ints(int* ints, int n_even) {
    pair_ij = ints;
    rotated = ints + n_even;
    blocks = rotated + gram_evd_flag_count;
  }

  /// This scratch with c, s and pair_ij at global step g's half.
  KOKKOS_INLINE_FUNCTION GramEvdScratch step_buffers(int g, int n_even) const {
    GramEvdScratch at = *this;
    const int offset = (g & 1) * (n_even / 2);
    at.c += offset;
    at.s += offset;
    at.pair_ij += offset;
    return at;
  }
};

/// Where one team's results go (memory the caller owns).
template <class Scalar>
struct GramEvdOutput {
  Scalar* lambda;  // n eigenvalues, stride lambda_stride
  std::ptrdiff_t lambda_stride;
  StridedMatrix<Scalar> J;  // n x n eigenvectors (columns)
  SvdInfo* info;
};

/// Settings the kernel needs (the launcher resolves defaults).
template <class Scalar>
struct GramEvdControl {
  Scalar tol;        // relative threshold: rotate when |b_ij| > tol sqrt(|b_ii b_jj|)
  int max_sweeps;    // sweeps allowed when running to convergence
  int fixed_sweeps;  // > 0: run exactly this many sweeps (fewer if nothing is left to rotate)
  EigenOrder order;
  bool positive_semidefinite;  // no absolute floor (EvdOptions)
  // Columns whose diagonal ends exactly zero keep their place and the order
  // applies to the others only (the W-cycle's pairs: a narrow block's
  // missing columns, zero in B, are never rotated and must stay missing).
  bool zero_columns_stay = false;
  // positive_semidefinite: diagonal entries at most this (before the
  // kernel's scaling) are left alone, as zero columns; 0 leaves only exact
  // zeros. The W-cycle's pairs, Grams of its scaled working matrix, pass
  // negligible_squared_norm (numerically zero columns).
  Scalar negligible_diagonal = 0;
  // The steps' pairs: the circle method (round_robin_pair), or the
  // recursive ordering (recursive_pair: cross pairs of the two halves
  // first), which the W-cycle's pair Grams [A_i A_j]^T [A_i A_j] use. Only J
  // in scratch follows the latter (J in registers needs the circle's ring).
  bool recursive_pairs = false;
  // > 0 (with fixed_sweeps > 0): flag (GramEvdScratch::rotated[4]) a
  // rotation that is not small in the sense of LAPACK dgesvj's stopping
  // test, b_ij^2 > small_off2 |b_ii b_jj| or s^2 > small_sin2 (the W-cycle:
  // scheduler/wcycle.hpp).
  Scalar small_off2 = 0;
  Scalar small_sin2 = 0;
  // Vector lanes of the team's threads (the launch's): with J in scratch,
  // the rotation of J by a step runs during the next step's rotations, on
  // the threads after the first warp's (gram_evd_team).
  int vector_lanes = 1;
};

/// f(q) for q in [0, count), spread over the team's threads from
/// `first_thread` on (all of them when first_thread is 0), `lanes` vector
/// lanes each, q = (thread - first_thread) lanes + lane first: the layout of
/// TeamVectorRange over the threads left. With every thread taking part it
/// is TeamVectorRange itself; otherwise each thread finds its rank from the
/// member instead of a thread range over the whole team, whose extra loop
/// and test cost every thread instructions at every step (H200, one W-cycle
/// EVD launch at float n' = 64: 185.9 M -> 183.3 M instructions, 289 -> 282
/// us).
template <class Member, class F>
KOKKOS_INLINE_FUNCTION void for_team_items_from(const Member& member, int first_thread, int lanes,
                                                int count, const F& f) {
  if (first_thread == 0) {
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, count), f);
    return;
  }
  const int t = member.team_rank() - first_thread;
  if (t < 0)
    return;
  const int stride = (member.team_size() - first_thread) * lanes;
  Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, lanes), [&](const int lane) {
    for (int q = t * lanes + lane; q < count; q += stride)
      f(q);
  });
}

/// How a run to convergence finds that it has converged; every rule gives
/// the same B and J (a step that rotates nothing changes nothing), they
/// differ in the steps they run and the work they add to each.
/// - sweep: a sweep without rotations (n' - 1 steps rotating nothing).
/// - quiet_steps: n' - 1 steps in a row without rotations, also across a
///   sweep's end (round_robin_pair's steps are cyclic): on average half a
///   sweep sooner, for a flag read and cleared every step.
/// - sweep_then_pass: sweep, and after a sweep whose rotations were all
///   small (|b_ij| < sqrt(tol) sqrt(b_ii b_jj), so by the quadratic
///   convergence of cyclic Jacobi the next sweep usually finds nothing) one
///   pass over every pair instead of that sweep.
/// Chosen by gram_evd_stop from H200 measurements.
enum class GramEvdStop { sweep, quiet_steps, sweep_then_pass };

/// J in level-0 scratch, any n: J <- J G rotates the two columns of every
/// pair in place. DeferRotation: J's rotation by a step runs during the next
/// step's rotations (gram_evd_team; tuning: gram_evd_defers_j_rotation).
template <class Scalar, bool DeferRotation = true>
struct ScratchEigenvectors {
  static constexpr bool in_registers = false;
  static constexpr bool defers_rotation = DeferRotation;
  Scalar* J;  // n' x n', leading dimension gram_evd_ld_j(n')

  /// Most items per pair in rotate: 128 bytes of a column, which a GPU's
  /// consecutive lanes (half a warp in double, a warp in float) read from
  /// all 32 banks once.
  static constexpr int log2_items_per_pair_max = sizeof(Scalar) > 4 ? 4 : 5;

  template <class Member>
  KOKKOS_INLINE_FUNCTION void set_identity(const Member& member, int ne) const {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, ne), [&](const int col) {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, ne), [&](const int row) {
        J[row + std::size_t(gram_evd_ld_j(ne)) * col] = row == col ? Scalar(1) : Scalar(0);
      });
    });
  }

  /// After the step's rotations are in ws (no barrier needed before B's
  /// update: J and B are disjoint). Consecutive items take one pair, as
  /// many as the largest power of two up to n'/2 (and 128 bytes), item r
  /// rows r, r + items, ...: the pair's c, s, i, j are one broadcast load
  /// for all of them, the pair and row come from a shift and a mask, and each
  /// item has at least two rows to rotate. Before, items ran over pairs x
  /// n'/2 rows (rows r and r + n'/2 each, the pair from a float quotient):
  /// 46 instructions per item on an H200 at n' = 48 in double, where an item
  /// now takes three rows. The W-cycle got 0.5 to 4% faster (Table IV double
  /// 512^2 355 -> 350 ms, float 100^2 5.68 -> 5.45).
  template <class Member>
  KOKKOS_INLINE_FUNCTION void rotate(const Member& member, int ne, int /*step*/,
                                     const GramEvdScratch<Scalar>& ws, int first_thread,
                                     int lanes) const {
    // log2 of the items per pair, by selects: a loop here cost every thread
    // its iterations at every step, and the count kept in a register across
    // the steps made double's n' = 48 slower (64 registers).
    const int half = ne / 2;
    int shift = half >= 16 ? 4 : half >= 8 ? 3 : half >= 4 ? 2 : half >= 2 ? 1 : 0;
    if (log2_items_per_pair_max > 4 && half >= 32)
      shift = 5;
    const int items = 1 << shift;
    const std::size_t ld = std::size_t(gram_evd_ld_j(ne));
    // Rows r and r2 of pair P's two columns (ji, jj) by its rotation (c, s),
    // both loaded before either is stored (the columns may alias as far as
    // the compiler knows).
    const auto rotate_rows = [](Scalar* ji, Scalar* jj, Scalar c, Scalar s, int r, int r2) {
      const Scalar x0 = ji[r], y0 = jj[r], x1 = ji[r2], y1 = jj[r2];
      ji[r] = c * x0 - s * y0;
      jj[r] = s * x0 + c * y0;
      ji[r2] = c * x1 - s * y1;
      jj[r2] = s * x1 + c * y1;
    };
    const int count = half << shift;
    if (ne == 2 * items) {
      // Exactly two rows an item, without a loop: one with a run-time trip
      // count left float's n' = 64 (the same items as before) 3 to 7% slower
      // in the W-cycle.
      for_team_items_from(member, first_thread, lanes, count, [&](const int q) {
        const int P = q >> shift;
        const Scalar sp = ws.s[P];
        if (sp == Scalar(0))
          return;
        const int ij = ws.pair_ij[P], r = q & (items - 1);
        rotate_rows(J + ld * (ij & 0xffff), J + ld * (ij >> 16), ws.c[P], sp, r, r + items);
      });
      return;
    }
    for_team_items_from(member, first_thread, lanes, count, [&](const int q) {
      const int P = q >> shift;
      const Scalar sp = ws.s[P];
      if (sp == Scalar(0))
        return;
      const Scalar cp = ws.c[P];
      const int ij = ws.pair_ij[P];
      Scalar* const ji = J + ld * (ij & 0xffff);
      Scalar* const jj = J + ld * (ij >> 16);
      int r = q & (items - 1);
      for (; r + items < ne; r += 2 * items)
        rotate_rows(ji, jj, cp, sp, r, r + items);
      if (r < ne) {  // an odd count of rows: the last one alone
        const Scalar x = ji[r], y = jj[r];
        ji[r] = cp * x - sp * y;
        jj[r] = sp * x + cp * y;
      }
    });
  }

  /// out(r, rank[c]) = J(r, c) for r, c < n, each column brought to unit
  /// norm (unit_norm_corrections: the accumulated rotations' drift in norm
  /// does not reach A and V). `work`: unit_norm_work_scalars(n) + n scalars
  /// of scratch.
  template <class Member>
  KOKKOS_INLINE_FUNCTION void write(const Member& member, int ne, int n, const int* rank,
                                    const StridedMatrix<Scalar>& out, Scalar* work) const {
    const std::size_t ldj = std::size_t(gram_evd_ld_j(ne));
    Scalar* const factors = work + unit_norm_work_scalars(n);
    unit_norm_corrections(
        member, n, [&](const int r, const int c) { return J[r + ldj * c]; }, work, factors);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, n), [&](const int c) {
      const int rc = rank[c];
      const Scalar* const jc = J + ldj * c;
      const Scalar f = factors[c];
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, n),
                           [&](const int r) { out(r, rc) = jc[r] + f * jc[r]; });
    });
  }
};

/// J in registers for a compile-time n' = NE (gram_evd_register_size):
/// thread t of a team of T owns rows t, t + T, ... (Rows of them; one on a
/// GPU, whose teams have at least NE threads, all NE on the host backends,
/// whose teams have one thread; rows past NE stay zero). Each step's pairs
/// must sit in fixed register slots for the indices to be compile-time
/// constants, so the columns travel round the circle of round_robin_pair:
/// slot p < NE - 1 holds column (step + p) mod (NE - 1), slot NE - 1 column
/// NE - 1. Pair 0 of the step is then slots (0, NE - 1) and pair k > 0 slots
/// (k, NE - 1 - k), and a step ends with one shift of the ring; after whole
/// sweeps every column is back in its own slot. Against J in scratch (four
/// shared accesses per row and rotation, plus the rotation's parameters) a
/// rotation costs two broadcast loads of (c, s) per warp, and J's n'^2
/// scalars leave scratch: more teams per SM, and n = 64 fits in double.
template <class Scalar, int NE, int Rows>
struct RegisterEigenvectors {
  static_assert(NE >= 8 && NE % 2 == 0 && Rows >= 1, "an even size of at least 8");
  static constexpr int ring = NE - 1;
  static constexpr bool in_registers = true;
  static constexpr bool defers_rotation = false;
  Scalar v[Rows][NE];

  template <class Member>
  KOKKOS_INLINE_FUNCTION void set_identity(const Member& member, int /*ne*/) {
    const int t = member.team_rank(), T = member.team_size();
    KWSVD_UNROLL
    for (int q = 0; q < Rows; ++q) {
      KWSVD_UNROLL
      for (int k = 0; k < NE; ++k)
        v[q][k] = k == t + q * T ? Scalar(1) : Scalar(0);
    }
  }

  template <class Member>
  KOKKOS_INLINE_FUNCTION void rotate(const Member& /*member*/, int /*ne*/, int step,
                                     const GramEvdScratch<Scalar>& ws, int /*first_thread*/,
                                     int /*lanes*/) {
    KWSVD_UNROLL
    for (int k = 0; k < NE / 2; ++k) {
      const Scalar s = ws.s[k];
      if (s == Scalar(0))
        continue;  // the same k for every thread: no divergence
      const Scalar c = ws.c[k];
      // The rotation acts on columns (i, j), i < j (round_robin_pair); slot
      // k holds column a, slot NE - 1 - k column b. When a > b the roles of
      // the slots swap, which is the same rotation with -s.
      bool ordered = true;
      if (k > 0) {
        int a = step + k, b = step - k;
        a -= a >= ring ? ring : 0;
        b += b < 0 ? ring : 0;
        ordered = a < b;
      }
      const Scalar sk = ordered ? s : -s;
      KWSVD_UNROLL
      for (int q = 0; q < Rows; ++q) {
        const Scalar x = v[q][k], y = v[q][NE - 1 - k];
        v[q][k] = c * x - sk * y;
        v[q][NE - 1 - k] = sk * x + c * y;
      }
    }
    // Next step: slot p takes the column of slot p + 1 (mod NE - 1).
    KWSVD_UNROLL
    for (int q = 0; q < Rows; ++q) {
      const Scalar first = v[q][0];
      KWSVD_UNROLL
      for (int p = 0; p + 1 < ring; ++p)
        v[q][p] = v[q][p + 1];
      v[q][ring - 1] = first;
    }
  }

  /// After whole sweeps only, when slot k holds column k (gram_evd_stop).
  /// Each thread holds rows, so the columns' corrections to unit norm
  /// (unit_norm_corrections) come from `out` once the team has written it,
  /// and each thread then corrects its rows there, reading back what it
  /// wrote: J's registers are dead after the first write. (Kept live for a
  /// second write from registers, they doubled the kernel's spill loads at
  /// n = 64 in double, 388 -> 748 bytes, and cost 14% at batch 10000.)
  /// `work`: unit_norm_work_scalars(n) + n scalars of scratch.
  template <class Member>
  KOKKOS_INLINE_FUNCTION void write(const Member& member, int /*ne*/, int n, const int* rank,
                                    const StridedMatrix<Scalar>& out, Scalar* work) const {
    const int t = member.team_rank(), T = member.team_size();
    Scalar* const factors = work + unit_norm_work_scalars(n);
    KWSVD_UNROLL
    for (int q = 0; q < Rows; ++q) {
      const int row = t + q * T;
      if (row < n) {
        KWSVD_UNROLL
        for (int k = 0; k < NE; ++k)
          if (k < n)
            out(row, rank[k]) = v[q][k];
      }
    }
    // A team barrier makes the team's writes to memory visible to the team.
    member.team_barrier();
    unit_norm_corrections(
        member, n, [&](const int r, const int c) { return out(r, c); }, work, factors);
    for (int q = 0; q < Rows; ++q) {
      const int row = t + q * T;
      if (row < n) {
        for (int c = 0; c < n; ++c) {
          const Scalar x = out(row, c);
          out(row, c) = x + factors[c] * x;
        }
      }
    }
  }
};

/// The rule of GramEvdStop for a scalar type and eigenvector holder, from
/// H200 measurements (ms at n = 16, batch 10000 / 1000). Double with J in
/// scratch: quiet_steps 0.64 / 0.118 against sweep 0.69 / 0.121 and
/// sweep_then_pass 0.68 / 0.114. Float: sweep_then_pass 0.329 / 0.074
/// against quiet_steps 0.346 / 0.084, and faster at every float point (4 to
/// 11%). J in registers (n = 64 in double, batch 10000): sweep 32.3 against
/// quiet_steps 35.3 and sweep_then_pass 37.7; the count and the pass cost
/// registers there. (RegisterEigenvectors also relies on whole sweeps: its
/// columns are back in their slots only then.)
template <class Scalar, class Eigenvectors>
KOKKOS_INLINE_FUNCTION constexpr GramEvdStop gram_evd_stop() {
  if (Eigenvectors::in_registers)
    return GramEvdStop::sweep;
  return std::is_same<Scalar, double>::value ? GramEvdStop::quiet_steps
                                             : GramEvdStop::sweep_then_pass;
}

/// Entries of the upper triangle that one item of gram_evd_team's load
/// (UpperTriangleItems) reads before it stores any: four in float, two in
/// double, whose kernel sits at its register cap (64 a thread, from the
/// launch bounds of four teams of 256): with four, ptxas spilled the sweep
/// count inside the step loop (a load and two stores every step; H200,
/// double 120^2 x 10: the W-cycle's EVD launch 52.0 -> 53.3 us against the
/// previous load), with two it spills nothing there (that call 3.1% faster
/// than with four).
template <class Scalar>
KOKKOS_INLINE_FUNCTION constexpr int gram_evd_load_batch() {
  return sizeof(Scalar) > 4 ? 2 : 4;
}

/// The upper triangle of an ne x ne matrix (column-major, leading dimension
/// ldb) as one flat range of items over every lane of the team, each item
/// Batch entries e = q, q + items, ... (upper_block) whose reads it issues
/// before any store: the walk of gram_evd_team's load (gram_evd_load_batch
/// entries an item) and of its scaling (one: its reads are of scratch, and
/// with the load's batches the lanes' last round left many idle, which made
/// whole calls 0.2 to 1.1% slower on an H200).
template <class Scalar, int Batch>
struct UpperTriangleItems {
  static constexpr int batch = Batch;
  int ne, count, items;
  float inv_ne1;
  std::size_t ldb;

  KOKKOS_INLINE_FUNCTION UpperTriangleItems(int ne_, std::size_t ldb_)
      : ne(ne_),
        count(triangle_size(ne_)),
        items((triangle_size(ne_) + batch - 1) / batch),
        inv_ne1(1.0f / float(ne_ + 1)),
        ldb(ldb_) {}

  /// Item q's entries: x[k] = reader(row, col, offset) of entry k, at[k] its
  /// offset in the matrix (row + ldb col), or x[k] = 0 and at[k] = -1 past
  /// the triangle's end; every read issued before the caller's stores.
  template <class Reader>
  KOKKOS_INLINE_FUNCTION void read_item(int q, const Reader& reader, Scalar (&x)[batch],
                                        int (&at)[batch]) const {
    KWSVD_UNROLL
    for (int k = 0; k < batch; ++k) {
      const int e = q + k * items;
      int row = 0, col = 0;
      if (e < count)
        upper_block(ne, inv_ne1, e, row, col);
      at[k] = e < count ? row + int(ldb) * col : -1;
      x[k] = e < count ? reader(row, col, at[k]) : Scalar(0);
    }
  }
};

/// B(r, c) = entry(r, c) for r <= c < ne (column-major, leading dimension
/// ldb), returning the largest magnitude_or_inf of the entries (the load and
/// the NaN/Inf scan in one pass). The upper triangle is UpperTriangleItems'
/// flat range over every lane of the team, each item's reads issued before
/// it stores any, so that the reads of a costly entry (the W-cycle's sum of
/// a Gram's plates, in global memory) overlap instead of each waiting for
/// the store before it. Before, a thread per column and its vector lanes
/// over the rows left the last columns' lanes c / lanes reads in turn, each
/// after the previous store (H200, ncu, double 128^2 x 10: the load took
/// about 30% of the stall samples of an EVD launch with nothing to rotate).
/// With the ranks' reductions below, such a launch went 12.8 -> 12.2 us
/// there and 16.7 -> 14.4 us at 100^2 x 1, and whole float calls 2 to 5%
/// faster (perf_tests/notes/wcycle.md, "The Gram EVD's prologue and
/// epilogue").
template <class Member, class Scalar, class Entry>
KOKKOS_INLINE_FUNCTION Scalar load_upper_with_max_magnitude(const Member& member, int ne,
                                                            const Entry& entry, Scalar* B,
                                                            std::size_t ldb) {
  constexpr int batch = gram_evd_load_batch<Scalar>();
  const UpperTriangleItems<Scalar, batch> upper(ne, ldb);
  Scalar amax = 0;
  Kokkos::parallel_reduce(
      Kokkos::TeamVectorRange(member, upper.items),
      [&](const int q, Scalar& lane_max) {
        Scalar x[batch];
        int at[batch];
        upper.read_item(
            q, [&](const int row, const int col, int) { return entry(row, col); }, x, at);
        KWSVD_UNROLL
        for (int k = 0; k < batch; ++k) {
          if (at[k] < 0)
            continue;
          B[at[k]] = x[k];
          const Scalar ax = magnitude_or_inf(x[k]);
          if (ax > lane_max)
            lane_max = ax;
        }
      },
      Kokkos::Max<Scalar>(amax));
  return amax;
}

/// B(r, c) *= scale for r <= c < ne (the matrix load_upper_with_max_magnitude
/// stored), an entry an item.
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void scale_upper(const Member& member, int ne, Scalar scale, Scalar* B,
                                        std::size_t ldb) {
  const UpperTriangleItems<Scalar, 1> upper(ne, ldb);
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, upper.items), [&](const int e) {
    Scalar x[1];
    int at[1];
    upper.read_item(
        e, [&](int, int, const int offset) { return B[offset]; }, x, at);
    B[at[0]] = x[0] * scale;
  });
}

/// The EVD B = J diag(lambda) J^T of the team's symmetric matrix A (upper
/// triangle read: A(row, col), row <= col; a StridedMatrix or any accessor,
/// such as the W-cycle's sum of a Gram's plates), J accumulated in `vecs`
/// (ScratchEigenvectors or RegisterEigenvectors). Collective over the team.
template <class Member, class Source, class Scalar, class Eigenvectors>
KOKKOS_INLINE_FUNCTION void gram_evd_team(const Member& member, const Source& A, int n,
                                          const GramEvdScratch<Scalar>& ws,
                                          const GramEvdOutput<Scalar>& out,
                                          const GramEvdControl<Scalar>& ctl, Eigenvectors& vecs) {
  const int ne = n + (n & 1);
  const int w = ne / 2;
  const std::size_t ldb = std::size_t(gram_evd_ld_b(ne));  // B
  Scalar* const B = ws.B;

  // 1. Load the upper triangle (odd n: zero last column), J = I, and the
  //    largest magnitude (non-finite counts as Inf). The sweeps read B's
  //    upper triangle only.
  const Scalar amax = load_upper_with_max_magnitude(
      member, ne,
      [&](const int row, const int col) { return row < n && col < n ? A(row, col) : Scalar(0); }, B,
      ldb);
  vecs.set_identity(member, ne);

  if (!(amax < scalar_limits<Scalar>::infinity())) {
    poison_values(member, out.lambda, n, out.lambda_stride);
    poison_matrix(member, out.J);
    write_info(member, out.info, 0, false, true);
    return;
  }

  // 2. Exact power-of-two scaling (undone on lambda): keeps b_ii b_jj and the
  //    tangent's squares in range whatever the scale of the input.
  const Scalar scale = power_of_two_scale(amax);
  member.team_barrier();
  scale_upper(member, ne, scale, B, ldb);
  // The table of off-diagonal blocks: one scratch load per block and step
  // instead of the index arithmetic of upper_block. Block (P, Q), P < Q, is
  // block (P, Q - 1) of the upper triangle of a (w - 1) x (w - 1) grid.
  const int nblocks = gram_evd_offdiagonal_blocks(ne);
  const float inv_w = 1.0f / float(w > 0 ? w : 1);
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, nblocks), [&](const int e) {
    int P, Q;
    upper_block(w - 1, inv_w, e, P, Q);
    ws.blocks[e] = P | ((Q + 1) << 16);
  });
  Kokkos::single(Kokkos::PerTeam(member), [&]() {
    for (int f = 0; f < gram_evd_flag_count; ++f)
      ws.rotated[f] = 0;
  });
  member.team_barrier();

  // Rotate pair (i, j) when |b_ij| > tol sqrt(|b_ii b_jj|): the relative test
  // that gives a Gram (positive semidefinite) matrix eigenvalues with high
  // relative accuracy; below the absolute floor u max|b| an entry is rounding
  // noise for any symmetric matrix, which keeps indefinite inputs (whose
  // diagonal may tend to 0) from rotating forever.
  // Gram inputs (positive_semidefinite) drop that floor, which would hide
  // the coupling of columns far smaller than the largest, and leave alone
  // only zero columns: exact zeros, or in the W-cycle those numerically zero
  // in its working matrix (GramEvdControl::negligible_diagonal; a narrow
  // block's missing ones among them). A column tiny next to the block's
  // largest is still rotated: B's entries are products of its columns, each
  // to a relative u, so its cosines are as accurate as any column's. A
  // rank-deficient matrix's null space is such columns (singular values near
  // u ||A||); a threshold relative to the block's largest column would fall
  // inside that cluster, rotate its columns in some blocks and not in
  // others, and the sweeps would not converge (perf_tests/notes/wcycle.md,
  // "Rank-deficient matrices").
  const Scalar floor =
      ctl.positive_semidefinite ? Scalar(0) : scalar_limits<Scalar>::epsilon / 2 * amax * scale;
  const bool psd = ctl.positive_semidefinite;
  const Scalar zero_column = ctl.negligible_diagonal * scale;
  const Scalar tiny = scalar_limits<Scalar>::min_normal;
  // A diagonal entry that rounding left negative (a null-space column of a
  // rank-deficient Gram) is a column like any other: excluding it left its
  // coupling to the large columns in place (standalone, double, the Gram of a
  // random 3 x 5 matrix: |b_ij| = 1.4e-9 between eigenvalues 0.22 and
  // -1.1e-16, so ||B J - J Lambda|| = 1.4e-9 ||B||). The W-cycle's threshold
  // (zero_column > 0) keeps its own rule: its next sweep recomputes the Gram.
  const auto nonzero_column = [&](const Scalar d) {
    return d > zero_column || (zero_column == Scalar(0) && d < Scalar(0));
  };
  const auto needs_rotation = [&](const Scalar bii, const Scalar bjj, const Scalar bij) {
    const Scalar abs_b = kmath::fabs(bij);
    const Scalar didj = kmath::fabs(bii * bjj);
    return abs_b > floor && (!psd || (nonzero_column(bii) && nonzero_column(bjj))) &&
           (didj > tiny
                ? abs_b * abs_b > ctl.tol * ctl.tol * didj
                : abs_b > ctl.tol * kmath::sqrt(kmath::fabs(bii)) * kmath::sqrt(kmath::fabs(bjj)));
  };
  // Whether any pair needs a rotation: one pass over every pair, one
  // barrier. *mark must be 0; the pass sets it to 1 if so. With
  // ctl.small_off2 > 0 it also sets rotated[4] if a pair that needs one is
  // not small: b_ij^2 > small_off2 |b_ii b_jj|, or a sine that may pass
  // small_sin2 (|s| <= |t| <= 2 |b_ij| / |b_jj - b_ii|). The sweep's own
  // rotations see these entries changed by the sweep's earlier ones, by
  // products of such small terms, and the test is kept out of its loop,
  // where two more live values made the double kernel spill.
  const auto rotation_needed = [&](int* const mark) {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, ne), [&](const int i) {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, ne), [&](const int j) {
        if (j <= i)
          return;
        const Scalar bii = B[i + ldb * i], bjj = B[j + ldb * j], bij = B[i + ldb * j];
        if (!needs_rotation(bii, bjj, bij))
          return;
        *mark = 1;  // every writer stores the same value
        if (ctl.small_off2 > Scalar(0)) {
          const Scalar gap = bjj - bii;
          if (bij * bij > ctl.small_off2 * kmath::fabs(bii * bjj) ||
              Scalar(4) * bij * bij > ctl.small_sin2 * gap * gap)
            ws.rotated[4] = 1;  // not small (every writer stores 1)
        }
      });
    });
    member.team_barrier();
    return *mark != 0;
  };
  // In fixed-sweep mode (the W-cycle's inner solve), first that pass: an
  // input with nothing to rotate returns J = I after sweeps = 0 instead of a
  // sweep of ne - 1 steps. In the W-cycle these are the Grams of pairs that
  // have converged, most pairs of the late sweeps. Run to convergence,
  // inputs nearly always rotate, so the pass is left out. rotated[1] is free
  // here: the first step clears it.
  const bool nothing_to_rotate = ctl.fixed_sweeps > 0 && !rotation_needed(ws.rotated + 1);
  const int sweep_limit = ctl.fixed_sweeps > 0 ? ctl.fixed_sweeps : ctl.max_sweeps;
  int sweeps = 0;
  constexpr GramEvdStop stop = gram_evd_stop<Scalar, Eigenvectors>();
  constexpr bool mid_sweep = stop == GramEvdStop::quiet_steps;
  static_assert(!(mid_sweep && Eigenvectors::in_registers),
                "J in registers is in column order only after whole sweeps");
  int quiet = 0;  // quiet_steps: steps in a row without rotations
  bool converged = ne < 2 || nothing_to_rotate;
  // With J in scratch, J <- J G of step g runs during step g + 1's phase
  // (a), whose rotations take the first lanes (one warp on a GPU: 32 lanes
  // per w <= 32) while the rest of the team would wait at its barrier; the
  // first warp's threads then rotate no J (on a wider wavefront its other
  // lanes rotate some: still correct). Teams of fewer than twice those
  // threads (the host's single thread) rotate J on all of them. Step g's c,
  // s and pairs stay in their half of the buffers until then
  // (GramEvdScratch::step_buffers).
  // J in registers is every thread's own rows: rotated in phase (b), as is
  // J in scratch that does not defer (Eigenvectors::defers_rotation).
  constexpr bool defer_j = Eigenvectors::defers_rotation;
  const int lanes = ctl.vector_lanes;
  constexpr int lane_group = 32;  // lanes that run in lockstep: an NVIDIA warp
  const int phase_a_lanes = (w + lane_group - 1) / lane_group * lane_group;
  const int phase_a_threads = (phase_a_lanes + lanes - 1) / lanes;
  const int j_first_thread = member.team_size() >= 2 * phase_a_threads ? phase_a_threads : 0;
  int pending = -1;  // the step whose J rotation is pending, or -1
  int g = 0;
  for (; !converged && sweeps < sweep_limit;) {
    const int sweep_parity = sweeps & 1;
    ++sweeps;
    for (int step = 0; step < ne - 1; ++step, ++g) {
      // Pairs that rotate raise the flag of the step (mid_sweep) or sweep (a
      // benign race: every writer stores 1). Flags alternate by parity: the
      // next one is cleared after the first barrier of this step (of the
      // sweep's first step), when every thread has read it as the previous.
      const int parity = mid_sweep ? (g & 1) : sweep_parity;
      int* const flag = ws.rotated + parity;
      const GramEvdScratch<Scalar> now = defer_j ? ws.step_buffers(g, ne) : ws;
      // (a) The step's rotations, one pair per team lane, so that a single
      //     warp pays for the square roots (§II-D: the 2 x 2 symmetric
      //     eigenproblem; the rotation is the one-sided kernel's,
      //     jacobi_rotation).
      //     The same thread diagonalizes the pair's own block, which no
      //     other block reads: the update of eq. (6) (b_ii - t b_ij,
      //     b_jj + t b_ij) avoids cancellation.
      Kokkos::parallel_for(Kokkos::TeamVectorRange(member, w), [&](const int P) {
        int i, j;
        if (!Eigenvectors::in_registers && ctl.recursive_pairs)
          recursive_pair(ne, step, P, i, j);
        else
          round_robin_pair(ne, step, P, i, j);
        Scalar& bii = B[i + ldb * i];
        Scalar& bjj = B[j + ldb * j];
        Scalar& bij = B[i + ldb * j];
        const Scalar dii = bii, djj = bjj, dij = bij;
        Scalar c = 1, s = 0;
        if (needs_rotation(dii, djj, dij)) {
          const JacobiRotation<Scalar> rot = jacobi_rotation(dii, djj, dij);
          const Scalar t = rot.t;
          c = rot.c;
          s = rot.s;
          bii = dii - t * dij;
          bjj = djj + t * dij;
          bij = 0;
          *flag = 1;  // every writer stores the same value
          if (stop == GramEvdStop::sweep_then_pass && dij * dij > ctl.tol * kmath::fabs(dii * djj))
            ws.rotated[2 + sweep_parity] = 1;  // a large rotation
        }
        now.pair_ij[P] = i | (j << 16);
        now.c[P] = c;
        now.s[P] = s;
      });
      if constexpr (defer_j) {
        if (pending >= 0)
          vecs.rotate(member, ne, pending, ws.step_buffers(g - 1, ne), j_first_thread, lanes);
        pending = -1;
      }
      member.team_barrier();
      if constexpr (mid_sweep) {
        quiet = *flag != 0 ? 0 : quiet + 1;
        if (quiet == ne - 1) {
          converged = true;  // this step rotates nothing: B and J stay as they are
          break;
        }
      }
      if (mid_sweep || step == 0) {
        Kokkos::single(Kokkos::PerTeam(member), [&]() {
          ws.rotated[parity ^ 1] = 0;
          if (stop == GramEvdStop::sweep_then_pass)
            ws.rotated[2 + (sweep_parity ^ 1)] = 0;
        });
      }
      // (b) B <- G^T B G by off-diagonal 2 x 2 blocks (eq. (7)), all at
      //     once. Only the upper triangle is kept (U(a, b) = B(min, max)):
      //     half the stores, and every block reads and writes its four
      //     entries there.
      Kokkos::parallel_for(Kokkos::TeamVectorRange(member, nblocks), [&](const int e) {
        const int PQ = ws.blocks[e];
        const int P = PQ & 0xffff, Q = PQ >> 16;
        const int ij = now.pair_ij[P];
        const int i = ij & 0xffff, j = ij >> 16;
        const Scalar cp = now.c[P], sp = now.s[P];
        const Scalar cq = now.c[Q], sq = now.s[Q];
        if (sp == Scalar(0) && sq == Scalar(0))
          return;  // neither pair rotated: the block is unchanged
        const int kl = now.pair_ij[Q];
        const int k = kl & 0xffff, l = kl >> 16;
        auto upper = [&](const int a, const int b) -> Scalar& {
          return a < b ? B[a + ldb * b] : B[b + ldb * a];
        };
        Scalar& bik = upper(i, k);
        Scalar& bil = upper(i, l);
        Scalar& bjk = upper(j, k);
        Scalar& bjl = upper(j, l);
        // X = B({i,j},{k,l}); Y = X G_Q; Z = G_P^T Y, G = [c s; -s c].
        const Scalar xik = bik, xil = bil, xjk = bjk, xjl = bjl;
        const Scalar yik = cq * xik - sq * xil, yil = sq * xik + cq * xil;
        const Scalar yjk = cq * xjk - sq * xjl, yjl = sq * xjk + cq * xjl;
        bik = cp * yik - sp * yjk;
        bjk = sp * yik + cp * yjk;
        bil = cp * yil - sp * yjl;
        bjl = sp * yil + cp * yjl;
      });
      // ... and J <- J G: now (no barrier between: the two touch disjoint
      // arrays), or deferred to the next phase (a).
      if constexpr (defer_j)
        pending = step;
      else
        vecs.rotate(member, ne, step, now, 0, lanes);
      member.team_barrier();
    }
    if constexpr (!mid_sweep)
      converged = ws.rotated[sweep_parity] == 0;
    if constexpr (stop == GramEvdStop::sweep_then_pass) {
      // The next sweep's flag, cleared at this sweep's first step, marks the
      // pass; if the pass finds a pair, that sweep rotates it or one before.
      if (!converged && ws.rotated[2 + sweep_parity] == 0 && sweeps < sweep_limit)
        converged = !rotation_needed(ws.rotated + (sweep_parity ^ 1));
    }
  }

  if constexpr (defer_j) {
    if (pending >= 0) {  // the last step's J <- J G
      vecs.rotate(member, ne, pending, ws.step_buffers(g - 1, ne), 0, lanes);
      member.team_barrier();
    }
  }

  // 3. lambda = diag(B) (unscaled) and J, in the requested order: column c
  //    goes to rank[c], its place among the columns by the outputs' rule
  //    (sorts_before, ties by index; ascending is descending on -d). With
  //    zero_columns_stay, a column whose diagonal is exactly zero keeps its
  //    place and the others fill the remaining slots in order: the rank-th
  //    of those that move (0-based) is movers[rank]. Each column's two
  //    counts are one reduction over the vector lanes of a team thread;
  //    before, one lane per column ran both loops over the n columns in turn
  //    (ncu, H200, double 128^2 x 10: about 20% of the stall samples of an
  //    EVD launch with nothing to rotate). The block table is done with (the
  //    last step ended in a barrier): it takes the ranks, and the steps'
  //    pairs the movers.
  const Scalar unscale = Scalar(1) / scale;
  int* const rank = ws.blocks;
  int* const movers = ws.pair_ij;
  const bool stays = ctl.zero_columns_stay;
  const bool descending = ctl.order == EigenOrder::descending;
  const auto moves = [&](const Scalar d) { return !(stays && d == Scalar(0)); };
  if (ctl.order != EigenOrder::unsorted) {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, n), [&](const int c) {
      const Scalar dc = B[c + ldb * c];
      // The moving columns sorted before c (low 16 bits; n <= gram_evd_max_n)
      // and those before it in index order (high bits).
      int counts = 0;
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(member, n),
          [&](const int l, int& acc) {
            const Scalar dl = B[l + ldb * l];
            if (!moves(dl))
              return;
            const bool before =
                descending ? sorts_before(dl, l, dc, c) : sorts_before(-dl, l, -dc, c);
            acc += (before ? 1 : 0) + (l < c ? 1 << 16 : 0);
          },
          counts);
      Kokkos::single(Kokkos::PerThread(member), [&]() {
        rank[c] = moves(dc) ? counts & 0xffff : c;
        if (stays && moves(dc))
          movers[counts >> 16] = c;
      });
    });
    member.team_barrier();
  }
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, n), [&](const int c) {
    const Scalar dc = B[c + ldb * c];
    int rc = c;
    if (ctl.order != EigenOrder::unsorted)
      rc = stays && moves(dc) ? movers[rank[c]] : rank[c];
    rank[c] = rc;
    out.lambda[rc * out.lambda_stride] = dc * unscale;
  });
  member.team_barrier();
  // B is done with (the ranks are in): it is the work of J's corrections to
  // unit norm (unit_norm_work_scalars(n) + n <= n' (n' + 3) scalars).
  vecs.write(member, ne, n, rank, out.J, B);
  write_info(member, out.info, sweeps, converged, false);
}

}  // namespace kwsvd::Impl
