#pragma once
// Team-level completion of orthonormal columns: given the first r0 columns
// of an M x N matrix (N <= M) orthonormal, make columns r0 .. N - 1 an
// orthonormal completion of them. Two callers: the left vectors of zero
// singular values, which the sweeps leave without a direction (the W-cycle's
// finish, scheduler/wcycle.hpp), and SvdOptions::full_matrices, whose U
// (m x m) or V (n x n) has columns beyond min(m, n) that no sweep computes.

#include <cstddef>

#include "kwsvd/impl/index_math.hpp"
#include "kwsvd/impl/kokkos_compat.hpp"
#include "kwsvd/impl/matrix_slot.hpp"
#include "kwsvd/impl/strided_matrix.hpp"
#include "kwsvd/kernels/householder_qr_team.hpp"

namespace kwsvd::Impl {

/// Reflectors per block whose Gram matrix complete_orthonormal_columns uses
/// (a column's coefficients for a block live in a local array of this size).
constexpr int completion_gram_max_columns = 32;

/// Scalars of complete_orthonormal_columns's `gram` for r0 kept columns: a
/// block of at most completion_gram_max_columns reflectors' Gram matrix.
KOKKOS_INLINE_FUNCTION constexpr std::size_t completion_gram_scalars(int r0) {
  const int block = r0 < completion_gram_max_columns ? r0 : completion_gram_max_columns;
  return std::size_t(block) * std::size_t(block);
}

/// Scalars of the compact WY factor of r0 reflectors
/// (prepare_reflector_completion): r0 x r0, T above the diagonal and the
/// reflectors' Gram matrix below it.
KOKKOS_INLINE_FUNCTION constexpr std::size_t completion_wy_scalars(int r0) {
  return std::size_t(r0) * std::size_t(r0);
}

/// Block q of r0 reflectors, counted from the last one (the order they are
/// applied in): reflectors [reflector_block_begin, r0 - q
/// completion_gram_max_columns), the first block the partial one.
KOKKOS_INLINE_FUNCTION constexpr int reflector_block_begin(int r0, int q) {
  const int b0 = r0 - (q + 1) * completion_gram_max_columns;
  return b0 > 0 ? b0 : 0;
}

/// Whether complete_orthonormal_columns completes columns r0 .. N - 1 by
/// reflectors (else by Gram-Schmidt).
KOKKOS_INLINE_FUNCTION constexpr bool completes_by_reflectors(int N, int r0) {
  return 4 * (N - r0) > r0;
}

/// Scalars of complete_orthonormal_columns's `work` for an M x N matrix
/// completed from column r0 (its `tau` takes r0 more).
KOKKOS_INLINE_FUNCTION constexpr std::size_t completion_work_scalars(int M, int N, int r0) {
  return completes_by_reflectors(N, r0) ? std::size_t(M) * std::size_t(r0)
                                        : std::size_t(M) + std::size_t(N);
}

/// use(i, sum of term(i, j) over j < n) for i in [0, count): i over the
/// team's threads, each sum over the thread's vector lanes, use by one lane.
template <class Scalar, class Member, class Term, class Use>
KOKKOS_INLINE_FUNCTION void for_each_lane_sum(const Member& member, int count, int n,
                                              const Term& term, const Use& use) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, count), [&](const int i) {
    Scalar sum = 0;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(member, n), [&](const int j, Scalar& acc) { acc += term(i, j); },
        sum);
    Kokkos::single(Kokkos::PerThread(member), [&]() { use(i, sum); });
  });
}

/// The completion by Gram-Schmidt, for a few columns
/// (complete_orthonormal_columns): columns r0 .. N - 1 of `left` (M x
/// N), in turn, become the unit vector e_r of the row r least covered by the
/// columns so far (the largest distance from their span), made orthogonal to
/// them by two passes of classical Gram-Schmidt and normalized, as the
/// level-0 kernel completes U (one_sided_jacobi_team). `work`: M + N
/// scalars. Each column costs O(M c) work over c columns before it, and a
/// few barriers: quadratic in the count of columns completed.
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void complete_columns_by_gram_schmidt(const Member& member,
                                                             const StridedMatrix<Scalar>& left,
                                                             int M, int N, int r0, Scalar* work) {
  Scalar* const dots = work;       // N: the new column against the ones before it
  Scalar* const cover = work + N;  // M: each row's squared norm over the columns so far
  for_each_lane_sum<Scalar>(
      member, M, r0, [&](const int r, const int l) { return left(r, l) * left(r, l); },
      [&](const int r, const Scalar sum) { cover[r] = sum; });
  member.team_barrier();
  for (int c = r0; c < N; ++c) {
    // Least-covered row (a minimum, which the lanes' copies cannot change).
    using Least = Kokkos::MinLoc<Scalar, int>;
    typename Least::value_type least;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(member, M),
        [&](const int r, typename Least::value_type& acc) {
          if (cover[r] < acc.val) {
            acc.val = cover[r];
            acc.loc = r;
          }
        },
        Least(least));
    const int row = least.loc;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, M), [&](const int r) {
      Kokkos::single(Kokkos::PerThread(member),
                     [&]() { left(r, c) = r == row ? Scalar(1) : Scalar(0); });
    });
    member.team_barrier();
    for (int pass = 0; pass < 2; ++pass) {
      for_each_lane_sum<Scalar>(
          member, c, M, [&](const int l, const int r) { return left(r, l) * left(r, c); },
          [&](const int l, const Scalar dot) { dots[l] = dot; });
      member.team_barrier();
      for_each_lane_sum<Scalar>(
          member, M, c, [&](const int r, const int l) { return dots[l] * left(r, l); },
          [&](const int r, const Scalar projection) { left(r, c) -= projection; });
      member.team_barrier();
    }
    // The squared norm by one thread's lanes (a sum: a team-range reduction
    // would see each vector lane's copy), through dots[0].
    for_each_lane_sum<Scalar>(
        member, 1, M, [&](const int, const int r) { return left(r, c) * left(r, c); },
        [&](const int, const Scalar norm2) { dots[0] = norm2; });
    member.team_barrier();
    const Scalar inv = Scalar(1) / kmath::sqrt(dots[0]);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, M), [&](const int r) {
      Kokkos::single(Kokkos::PerThread(member), [&]() {
        const Scalar x = left(r, c) * inv;
        left(r, c) = x;
        cover[r] += x * x;
      });
    });
    member.team_barrier();
  }
}

/// Per-lane partial sums of up to completion_gram_max_columns dot products,
/// reduced over a thread's vector lanes in one reduction (its += is the
/// join, its value-initialization the identity).
template <class Scalar>
struct CompletionDots {
  Scalar value[completion_gram_max_columns];
  KOKKOS_INLINE_FUNCTION CompletionDots& operator+=(const CompletionDots& other) {
    for (int k = 0; k < completion_gram_max_columns; ++k)
      value[k] += other.value[k];
    return *this;
  }
};

/// The Gram matrix of reflectors b0 .. b1 - 1 of K (M x r0, v_k zero above
/// row k) into `gram` ((b1 - b0)^2 scalars, leading dimension b1 - b0): the
/// entries v_k^T v_l for k < l, at (k, l), the only ones
/// apply_reflector_block reads, spread evenly over the team's threads (the
/// pair from its index once: upper_block), each summed over the rows from
/// b0 + l (v_l is zero above them) on the thread's vector lanes. All nb^2
/// entries as lane sums over every row, each row's term testing its zero
/// from a column pair found by a division, took a fifth of the completion
/// launch's instructions after the level-0 kernel (float 32 x 16 x 10000,
/// Nsight Compute on an H100). Collective over the team; no barrier.
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void reflector_block_gram(const Member& member, int M, const Scalar* K,
                                                 int b0, int b1, Scalar* gram) {
  const int nb = b1 - b0;
  const float inv_nb = 1.0f / float(nb > 0 ? nb : 1);
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, nb * (nb - 1) / 2), [&](const int p) {
    int k, l;  // k < l: (k, l - 1) of the upper triangle of an (nb - 1)^2 grid
    upper_block(nb - 1, inv_nb, p, k, l);
    ++l;
    const Scalar* const vk = K + std::size_t(M) * (b0 + k);
    const Scalar* const vl = K + std::size_t(M) * (b0 + l);
    Scalar dot = 0;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(member, b0 + l, M),
        [&](const int r, Scalar& acc) { acc += vk[r] * vl[r]; }, dot);
    Kokkos::single(Kokkos::PerThread(member), [&]() { gram[k + std::size_t(nb) * l] = dot; });
  });
}

/// Columns j0 .. j1 - 1 of `left` (each j >= r0, the count of reflectors in
/// K) times the block of reflectors H_b0 ... H_{b1 - 1} of K (M x r0, v_k
/// zero above row k) and tau: y becomes y - sum_l c_l v_l with, from l = b1
/// - 1 down, c_k = tau_k (v_k^T y - sum_{k < l < b1} (v_k^T v_l) c_l), from
/// the block's Gram matrix (reflector_block_gram, in `gram`; LAPACK
/// dlarft's T in another form), the coefficients in a local array and one
/// pass over the column, each entry summed in a register and written once.
/// `First`: the block applied first (b1 = r0), which meets y = e_j (j >= r0
/// > k), so v_k^T y = v_k(j) and the column is written whole. A later block
/// takes v_k^T y in one pass over the column, all of its dots reduced over
/// the lanes at once; y is zero above row b1 (each v_l, l >= b1, is), so the
/// dots start there.
template <bool First, class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void apply_reflector_block(const Member& member,
                                                  const StridedMatrix<Scalar>& left, int M, int j0,
                                                  int j1, const Scalar* K, const Scalar* tau,
                                                  const Scalar* gram, int b0, int b1) {
  const int nb = b1 - b0;
  const auto k_at = [&](int r, int c) { return K[r + std::size_t(M) * c]; };
  const auto g_at = [&](int k, int l) { return gram[k + std::size_t(nb) * l]; };
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, j0, j1), [&](const int j) {
    Scalar c[completion_gram_max_columns];  // v_k^T y, then the coefficients, in place
    if constexpr (First) {
      for (int k = 0; k < nb; ++k)
        c[k] = k_at(j, b0 + k);
    } else {
      CompletionDots<Scalar> dots;
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(member, b1, M),
          [&](const int r, CompletionDots<Scalar>& acc) {
            const Scalar y = left(r, j);
            for (int k = 0; k < nb; ++k)
              acc.value[k] += k_at(r, b0 + k) * y;
          },
          dots);
      for (int k = 0; k < nb; ++k)
        c[k] = dots.value[k];
    }
    for (int k = nb - 1; k >= 0; --k) {
      Scalar x = c[k];
      for (int l = k + 1; l < nb; ++l)
        x -= g_at(k, l) * c[l];
      c[k] = tau[b0 + k] * x;
    }
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, First ? 0 : b0, M), [&](const int r) {
      Scalar x = First ? (r == j ? Scalar(1) : Scalar(0)) : left(r, j);
      const int last = r - b0 < nb - 1 ? r - b0 : nb - 1;  // v_l = 0 above l
      for (int l = 0; l <= last; ++l)
        x -= c[l] * k_at(r, b0 + l);
      left(r, j) = x;
    });
  });
}

/// Columns j0 .. j1 - 1 of `left` (j0 >= r0) become Q e_j, Q = H_0 ...
/// H_{r0 - 1} the reflectors in K and tau (householder_reflectors), applied
/// in blocks of completion_gram_max_columns, the last block first
/// (reflector_block_begin, apply_reflector_block), instead of a reduction
/// and a read-modify-write pass of the column per reflector (full U of 500 x
/// 16 double x 1000 on an H100: 61.6 ms by reflectors applied in turn, the
/// thin SVD 1.7 ms; 1000 x 64 x 100: 257 ms in turn, 72 ms by blocks, one
/// team per matrix). Each block's Gram matrix goes to `gram`
/// (completion_gram_max_columns^2 scalars; reflector_block_gram). With r0 <=
/// completion_gram_max_columns this is the one block applied to e_j, and only `SeveralBlocks`
/// compiles the later blocks, whose dots' lane reduction takes registers that the one-block shapes
/// pay for in occupancy (full U of 100 x 16 double x 1000 after the level-0 kernel, H100: 0.60 ms
/// without it compiled in, 0.76 with).
template <bool SeveralBlocks, class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void apply_reflector_blocks_to_unit_vectors(
    const Member& member, const StridedMatrix<Scalar>& left, int M, int j0, int j1, int r0,
    const Scalar* K, const Scalar* tau, Scalar* gram) {
  const int first_b0 = SeveralBlocks ? reflector_block_begin(r0, 0) : 0;
  // With no kept columns (r0 = 0) the block is empty and Q e_j = e_j.
  reflector_block_gram(member, M, K, first_b0, r0, gram);
  member.team_barrier();
  apply_reflector_block<true>(member, left, M, j0, j1, K, tau, gram, first_b0, r0);
  if constexpr (SeveralBlocks) {
    for (int q = 1, b1 = first_b0; b1 > 0; ++q) {
      const int b0 = reflector_block_begin(r0, q);
      member.team_barrier();  // this block's Gram matrix takes `gram`
      reflector_block_gram(member, M, K, b0, b1, gram);
      member.team_barrier();
      apply_reflector_block<false>(member, left, M, j0, j1, K, tau, gram, b0, b1);
      b1 = b0;
    }
  }
}

/// The Householder QR of the kept columns left(:, 0 .. r0 - 1) (M x r0) =
/// Q R, Q = H_0 ... H_{r0 - 1}: K (M r0 scalars) the reflectors v_k (zero
/// above row k, v_k(k) = 1; R above the diagonal, which the readers of K
/// never touch), tau (r0) their factors, H_k = I - tau_k v_k v_k^T
/// (householder_qr_steps). O(M r0^2), one reflector at a time. Collective
/// over the team; ends with a barrier.
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void householder_reflectors(const Member& member,
                                                   const StridedMatrix<Scalar>& left, int M, int r0,
                                                   Scalar* K, Scalar* tau) {
  const auto k_at = [&](int r, int c) -> Scalar& { return K[r + std::size_t(M) * c]; };
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, r0), [&](const int c) {
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, M),
                         [&](const int r) { k_at(r, c) = left(r, c); });
  });
  member.team_barrier();
  householder_qr_steps(member, K, std::size_t(M), M, r0, tau, static_cast<Scalar*>(nullptr));
}

/// A completion by reflectors spread over several teams per matrix, first
/// part, by one team: the reflectors of the kept columns left(:, 0 .. r0 -
/// 1) (householder_reflectors, into K and tau) and their compact WY form Q =
/// H_0 ... H_{r0 - 1} = I - V T V^T (LAPACK dlarft, forward and columnwise:
/// T(k, k) = tau_k, T(0 .. k - 1, k) = -tau_k T(0 .. k - 1, 0 .. k - 1)
/// V(:, 0 .. k - 1)^T v_k), into `wy` (completion_wy_scalars(r0), column-major
/// r0 x r0): T on and above the diagonal, the Gram matrix's entries v_l^T v_k
/// (l < k) at (k, l) below it, which the recurrence reads. The second part
/// (complete_columns_from_reflectors) then takes any range of the columns
/// past r0 on any team. O(M r0^2) for the Gram matrix and O(r0^3) for T, one
/// column after another. Collective over the team.
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void prepare_reflector_completion(const Member& member,
                                                         const StridedMatrix<Scalar>& left, int M,
                                                         int r0, Scalar* K, Scalar* tau,
                                                         Scalar* wy) {
  householder_reflectors(member, left, M, r0, K, tau);
  compact_wy_factor(member, K, std::size_t(M), M, r0, tau, wy);
}

/// The most reflectors per pass of complete_columns_from_reflectors over its
/// columns (its `w` takes this many times Tile scalars, fewer where the
/// scratch holds fewer).
constexpr int completion_wy_chunk_max = 128;

/// The second part of a completion by reflectors spread over teams
/// (prepare_reflector_completion gave K and `wy`): columns j0 .. j1 - 1 of
/// `left` (j0 >= r0, at most Tile of them) become Q e_j = e_j - V T V(j,
/// :)^T, a product of V (M x r0) and W = T V(j0 .. j1 - 1, :)^T (r0 x Tile)
/// as a GEMM tile: each row of the columns summed in registers by one thread
/// or lane, W's rows read from team scratch (`w`, chunk Tile scalars) in
/// passes of `chunk` reflectors, the columns read back after the first pass.
/// Instead of applying the reflectors to each column in turn, block by
/// block (apply_reflector_blocks_to_unit_vectors), which keeps a column's
/// coefficients in local memory: full U of double 1000 x 64 x 100 on an
/// H100 took 72 ms that way, one team per matrix, and takes 8.4 ms (the thin
/// SVD 3.9 ms) with the preparation. Collective over the team.
template <int Tile, class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void complete_columns_from_reflectors(const Member& member,
                                                             const StridedMatrix<Scalar>& left,
                                                             int M, int j0, int j1, int r0,
                                                             const Scalar* K, const Scalar* wy,
                                                             Scalar* w, int chunk) {
  const int nc = j1 - j0;
  const auto k_at = [&](int r, int c) { return K[r + std::size_t(M) * c]; };
  // With no kept columns (r0 = 0) one pass writes e_j.
  for (int l0 = 0; l0 < r0 || l0 == 0; l0 += chunk) {
    const int l1 = l0 + chunk < r0 ? l0 + chunk : r0;
    if (l0 > 0)
      member.team_barrier();  // the previous pass's rows of W are read
    // W(l, j) = sum over l' >= l of T(l, l') V(j0 + j, l'); zero past nc.
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, (l1 - l0) * Tile), [&](const int p) {
      const int j = p % Tile, l = l0 + p / Tile;
      Scalar sum = 0;
      if (j < nc)
        for (int q = l; q < r0; ++q)
          sum += wy[l + std::size_t(r0) * q] * k_at(j0 + j, q);
      w[p] = sum;
    });
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, M), [&](const int r) {
      Scalar acc[Tile];
      for (int j = 0; j < Tile; ++j)
        acc[j] = j >= nc   ? Scalar(0)
                 : l0 == 0 ? (r == j0 + j ? Scalar(1) : Scalar(0))
                           : left(r, j0 + j);
      const int top = r + 1 < l1 ? r + 1 : l1;  // v_l(r) = 0 for l > r
      for (int l = l0; l < top; ++l) {
        const Scalar v = k_at(r, l);
        const Scalar* wl = w + std::size_t(l - l0) * Tile;
        for (int j = 0; j < Tile; ++j)
          acc[j] -= v * wl[j];
      }
      for (int j = 0; j < Tile; ++j)
        if (j < nc)
          left(r, j0 + j) = acc[j];
    });
  }
}

/// The completion by reflectors of one matrix on one team, as GEMM tiles
/// (a level-0 full side: SvdOptions::full_matrices after the level-0
/// kernel): the reflectors and their compact WY factor
/// (prepare_reflector_completion, into K, tau and `wy`), then columns r0 ..
/// N - 1 of `left` Tile at a time (complete_columns_from_reflectors, W's rows
/// in `w`, passes of `chunk` reflectors): each row's Tile sums stay in
/// registers, where complete_columns_by_reflectors gives each column a team
/// thread whose coefficients sit in a local array, read at every update.
/// `K`: M r0 scalars, `tau`: r0, `wy`: completion_wy_scalars(r0), `w`:
/// chunk Tile. Collective over the team.
template <int Tile, class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void complete_columns_by_compact_wy(const Member& member,
                                                           const StridedMatrix<Scalar>& left, int M,
                                                           int N, int r0, Scalar* K, Scalar* tau,
                                                           Scalar* wy, Scalar* w, int chunk) {
  prepare_reflector_completion(member, left, M, r0, K, tau, wy);
  for (int j0 = r0; j0 < N; j0 += Tile) {
    if (j0 > r0)
      member.team_barrier();  // the previous tile's rows of W are read
    complete_columns_from_reflectors<Tile>(member, left, M, j0, j0 + Tile < N ? j0 + Tile : N, r0,
                                           K, wy, w, chunk);
  }
}

/// The completion by reflectors, for many columns
/// (complete_orthonormal_columns): the Householder QR of the kept columns K = left(:, 0 .. r0 - 1)
/// = Q R gives Q, whose columns r0 .. N - 1 are orthonormal and orthogonal to K's span; column j of
/// `left` becomes Q e_j, the reflectors applied to e_j in reverse order, every column on its own
/// team thread. `K`: M r0 scalars (the reflectors), `tau`: r0 (their factors).
/// O(M r0^2) for the QR, one reflector at a time, and O(M r0) per column:
/// nothing for a zero matrix (Q = I), and no sequence of dependent columns.
/// `gram`: completion_gram_max_columns^2 scalars for a block of reflectors'
/// Gram matrix, which makes the columns cheaper
/// (apply_reflector_blocks_to_unit_vectors; without `SeveralBlocks` only
/// where r0 <= completion_gram_max_columns), or null.
template <bool SeveralBlocks, class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void complete_columns_by_reflectors(const Member& member,
                                                           const StridedMatrix<Scalar>& left, int M,
                                                           int N, int r0, Scalar* K, Scalar* tau,
                                                           Scalar* gram) {
  householder_reflectors(member, left, M, r0, K, tau);
  const auto k_at = [&](int r, int c) { return K[r + std::size_t(M) * c]; };
  if (gram != nullptr && (SeveralBlocks || r0 <= completion_gram_max_columns)) {
    apply_reflector_blocks_to_unit_vectors<SeveralBlocks>(member, left, M, r0, N, r0, K, tau, gram);
    return;
  }
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, r0, N), [&](const int j) {
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, M),
                         [&](const int r) { left(r, j) = r == j ? Scalar(1) : Scalar(0); });
    for (int k = r0 - 1; k >= 0; --k) {
      Scalar dot = 0;
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(member, k, M),
          [&](const int r, Scalar& acc) { acc += k_at(r, k) * left(r, j); }, dot);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, k, M),
                           [&](const int r) { left(r, j) -= tau[k] * dot * k_at(r, k); });
    }
  });
}

/// Makes columns r0 .. N - 1 of `left` (M x N, N <= M, whose columns 0 ..
/// r0 - 1 are orthonormal) an orthonormal completion of the columns before
/// them (only those before left.cols: SvdOptions::rank's leading columns,
/// each as the completion of all N would make it). Two uses: the working
/// matrix's left vectors of zero singular values
/// (exactly, or numerically: resolved_squared_norm), which the finishes
/// leave zero, so that U stays orthonormal for a rank-deficient matrix (a
/// zero or repeated column, a zero matrix), as LAPACK's gesvd keeps it; and
/// the columns past min(m, n) of SvdOptions::full_matrices. A few columns
/// next to many kept ones go by Gram-Schmidt, one after another; more (over
/// a quarter of the kept columns' count, where that costs more than a QR of
/// the kept columns) by reflectors, all at once: a 1024^2 zero matrix took
/// 3.2 s on an H100 by Gram-Schmidt alone. `work`: M r0 scalars for the
/// reflectors, M + N for Gram-Schmidt (completion_work_scalars); `tau`: r0;
/// `gram`: completion_gram_max_columns^2 scalars or null
/// (complete_columns_by_reflectors; `SeveralBlocks` false: used only where
/// r0 <= completion_gram_max_columns, for kernels that never complete from
/// more kept columns). Collective over the team.
template <bool SeveralBlocks = true, class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void complete_orthonormal_columns(const Member& member,
                                                         const StridedMatrix<Scalar>& left, int M,
                                                         int N, int r0, Scalar* work, Scalar* tau,
                                                         Scalar* gram = nullptr) {
  // The way is chosen for all N columns, so that a `left` of fewer
  // (SvdOptions::rank: the leading ones only) gets their bits; each column
  // depends only on the ones before it.
  const int end = N < left.cols ? N : left.cols;
  if (completes_by_reflectors(N, r0))
    complete_columns_by_reflectors<SeveralBlocks>(member, left, M, end, r0, work, tau, gram);
  else
    complete_columns_by_gram_schmidt(member, left, M, end, r0, work);
}

}  // namespace kwsvd::Impl
