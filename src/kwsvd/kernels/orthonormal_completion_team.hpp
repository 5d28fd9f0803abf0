#pragma once
// Team-level completion of orthonormal columns: given the first r0 columns
// of an M x N matrix (N <= M) orthonormal, make columns r0 .. N - 1 an
// orthonormal completion of them. Two callers: the left vectors of zero
// singular values, which the sweeps leave without a direction (the W-cycle's
// finish, scheduler/wcycle.hpp), and SvdOptions::full_matrices, whose U
// (m x m) or V (n x n) has columns beyond min(m, n) that no sweep computes.

#include <cstddef>

#include "kwsvd/impl/kokkos_compat.hpp"
#include "kwsvd/impl/matrix_slot.hpp"
#include "kwsvd/impl/strided_matrix.hpp"

namespace kwsvd::Impl {

/// Most kept columns whose reflectors' Gram matrix complete_orthonormal_columns
/// uses (a column's coefficients live in a local array of this size).
constexpr int completion_gram_max_columns = 32;

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

/// The completion by reflectors, for many columns
/// (complete_orthonormal_columns): the Householder QR of the kept columns K = left(:, 0 .. r0 - 1)
/// = Q R gives Q, whose columns r0 .. N - 1 are orthonormal and orthogonal to K's span; column j of
/// `left` becomes Q e_j, the reflectors applied to e_j in reverse order, every column on its own
/// team thread. `K`: M r0 scalars (the reflectors), `tau`: r0 (their factors).
/// O(M r0^2) for the QR, one reflector at a time, and O(M r0) per column:
/// nothing for a zero matrix (Q = I), and no sequence of dependent columns.
/// `gram`: r0^2 scalars for the reflectors' Gram matrix, which makes the
/// columns cheaper where r0 <= completion_gram_max_columns, or null.
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void complete_columns_by_reflectors(const Member& member,
                                                           const StridedMatrix<Scalar>& left, int M,
                                                           int N, int r0, Scalar* K, Scalar* tau,
                                                           Scalar* gram) {
  // K: M x r0, the kept columns, then the reflectors; tau: H_k = I - tau_k v_k v_k^T.
  const auto k_at = [&](int r, int c) -> Scalar& { return K[r + std::size_t(M) * c]; };
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, r0), [&](const int c) {
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, M),
                         [&](const int r) { k_at(r, c) = left(r, c); });
  });
  member.team_barrier();
  for (int k = 0; k < r0; ++k) {
    // v_k = x + sign(x_0) ||x|| e_0 for x = K(k .., k); tau_k = 2 / v_k^T v_k.
    for_each_lane_sum<Scalar>(
        member, 1, M - k, [&](const int, const int r) { return k_at(k + r, k) * k_at(k + r, k); },
        [&](const int, const Scalar alpha2) { tau[k] = alpha2; });
    member.team_barrier();
    const Scalar alpha = kmath::sqrt(tau[k]), x0 = k_at(k, k);
    member.team_barrier();
    Kokkos::single(Kokkos::PerTeam(member), [&]() {
      k_at(k, k) = x0 + (x0 < Scalar(0) ? -alpha : alpha);
      tau[k] = alpha > Scalar(0) ? Scalar(1) / (alpha * (alpha + kmath::fabs(x0))) : Scalar(0);
    });
    member.team_barrier();
    const Scalar t = tau[k];
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k + 1, r0), [&](const int j) {
      Scalar dot = 0;
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(member, k, M),
          [&](const int r, Scalar& acc) { acc += k_at(r, k) * k_at(r, j); }, dot);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, k, M),
                           [&](const int r) { k_at(r, j) -= t * dot * k_at(r, k); });
    });
    member.team_barrier();
  }
  if (gram != nullptr && r0 <= completion_gram_max_columns) {
    // Q e_j = e_j - sum_l c_l v_l, where applying H_k to e_j - sum_{l > k}
    // c_l v_l gives c_k = tau_k (v_k(j) - sum_{l > k} (v_k^T v_l) c_l): with
    // the reflectors' Gram matrix (LAPACK dlarft's T in another form) each
    // column costs r0^2 / 2 scalar steps and one pass over its rows, each
    // row's entry summed in a register and written once, instead of a
    // reduction and a read-modify-write pass of the column per reflector
    // (full U of 500 x 16 double x 1000 on an H100: 61.6 ms by reflectors
    // applied in turn, the thin SVD 1.7 ms).
    const auto g_at = [&](int k, int l) -> Scalar& { return gram[k + std::size_t(r0) * l]; };
    for_each_lane_sum<Scalar>(
        member, r0 * r0, M,
        [&](const int p, const int r) {
          const int k = p % r0, l = p / r0;
          return r >= (k > l ? k : l) ? k_at(r, k) * k_at(r, l) : Scalar(0);
        },
        [&](const int p, const Scalar dot) { g_at(p % r0, p / r0) = dot; });
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, r0, N), [&](const int j) {
      Scalar c[completion_gram_max_columns];
      for (int k = r0 - 1; k >= 0; --k) {
        Scalar x = k_at(j, k);
        for (int l = k + 1; l < r0; ++l)
          x -= g_at(k, l) * c[l];
        c[k] = tau[k] * x;
      }
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, M), [&](const int r) {
        Scalar x = r == j ? Scalar(1) : Scalar(0);
        const int last = r < r0 - 1 ? r : r0 - 1;  // v_l is zero above row l
        for (int l = 0; l <= last; ++l)
          x -= c[l] * k_at(r, l);
        left(r, j) = x;
      });
    });
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
/// `gram`: r0^2 scalars or null (complete_columns_by_reflectors).
/// Collective over the team.
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void complete_orthonormal_columns(const Member& member,
                                                         const StridedMatrix<Scalar>& left, int M,
                                                         int N, int r0, Scalar* work, Scalar* tau,
                                                         Scalar* gram = nullptr) {
  // The way is chosen for all N columns, so that a `left` of fewer
  // (SvdOptions::rank: the leading ones only) gets their bits; each column
  // depends only on the ones before it.
  const int end = N < left.cols ? N : left.cols;
  if (completes_by_reflectors(N, r0))
    complete_columns_by_reflectors(member, left, M, end, r0, work, tau, gram);
  else
    complete_columns_by_gram_schmidt(member, left, M, end, r0, work);
}

}  // namespace kwsvd::Impl
