#pragma once
// Team-level one-sided Jacobi SVD of one matrix resident in level-0 scratch
// (W-cycle paper §II-C and §IV-B; level 0 of the W-cycle).
//
// The team copies its matrix into scratch (transposed when m < n, so the work
// matrix W is M x N with M = max(m, n) >= N = min(m, n)), orthogonalizes the
// columns of W by plane rotations applied from the right, accumulates the
// rotations in V (N x N), and writes sigma_k = ||w_k||, U = W diag(1/sigma),
// V. The matrix is read once and the outputs written once.
//
// Parallel ordering: round-robin (circle method). With N' = N rounded up to
// even, each of the N'-1 steps of a sweep pairs every column exactly once, so
// the N'/2 rotations of a step touch disjoint columns and run concurrently;
// for odd N the column paired with the phantom index N idles for that step.
// One team thread per pair, `lanes` vector lanes per pair over the rows.

#include <cstddef>
#include <limits>

#include "kwsvd/api/options.hpp"
#include "kwsvd/impl/kokkos_compat.hpp"
#include "kwsvd/kernels/gram_team.hpp"

namespace kwsvd::Impl {

/// Columns (i, j), i < j, of pair k at step s of a round-robin sweep over
/// n_even columns (circle method: n_even - 1 rotates around the others).
KOKKOS_INLINE_FUNCTION void round_robin_pair(int n_even, int step, int k, int& i, int& j) {
  const int r = n_even - 1;
  int a, b;
  if (k == 0) {
    a = step;
    b = r;
  } else {
    a = (step + k) % r;
    b = (step - k + r) % r;
  }
  i = a < b ? a : b;
  j = a < b ? b : a;
}

/// Rotation (c, s) that makes columns i and j orthogonal, from their squared
/// norms d_i, d_j and inner product g (eq. (3)-(4), written as in Golub & Van
/// Loan §8.5.2): zeta = (d_j - d_i) / (2 g), t = sign(zeta) / (|zeta| +
/// hypot(1, zeta)), so |t| <= 1 and nothing squares zeta (no overflow).
/// The rotation maps [a_i a_j] to [c a_i - s a_j, s a_i + c a_j].
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar jacobi_tangent(Scalar d_i, Scalar d_j, Scalar g) {
  const Scalar zeta = (d_j - d_i) / (Scalar(2) * g);
  const Scalar t = Scalar(1) / (kmath::fabs(zeta) + kmath::hypot(Scalar(1), zeta));
  return zeta < Scalar(0) ? -t : t;
}

/// Power of two p with |amax| * p in [0.5, 1) (p = 1 for 0 or non-finite
/// amax), capped so p itself stays finite. Scaling by p is exact and keeps the
/// squared column norms away from overflow and underflow.
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar power_of_two_scale(Scalar amax) {
  if (!(amax > Scalar(0)) || !kmath::isfinite(amax)) return Scalar(1);
  constexpr int max_exp = std::numeric_limits<Scalar>::max_exponent;
  Scalar p = 1, x = amax;
  int e = 0;
  while (x >= Scalar(1)) {
    x *= Scalar(0.5);
    p *= Scalar(0.5);
  }
  while (x < Scalar(0.5) && e < max_exp - 2) {
    x *= Scalar(2);
    p *= Scalar(2);
    ++e;
  }
  return p;
}

/// Scratch layout of one team: W (M x N, column-major, leading dimension M),
/// V (N x N, only with vectors), and the N squared column norms.
struct OneSidedJacobiShape {
  int m = 0, n = 0;  // the input matrix
  int rows = 0;      // M = max(m, n): rows of the work matrix W
  int cols = 0;      // N = min(m, n): columns of W
  bool transposed = false;  // W = A^T (m < n)
  bool vectors = true;

  OneSidedJacobiShape() = default;
  KOKKOS_INLINE_FUNCTION OneSidedJacobiShape(int m_, int n_, bool vectors_)
      : m(m_), n(n_), rows(m_ >= n_ ? m_ : n_), cols(m_ >= n_ ? n_ : m_),
        transposed(m_ < n_), vectors(vectors_) {}
};

/// Level-0 scratch bytes one team needs for an m x n SVD.
template <class ExecSpace, class Scalar>
std::size_t one_sided_jacobi_scratch_bytes(int m, int n, bool vectors) {
  const OneSidedJacobiShape s(m, n, vectors);
  return scratch_bytes_for<ExecSpace, Scalar>(std::size_t(s.rows) * s.cols) +
         (vectors ? scratch_bytes_for<ExecSpace, Scalar>(std::size_t(s.cols) * s.cols) : 0) +
         scratch_bytes_for<ExecSpace, Scalar>(std::size_t(s.cols));
}

/// The W-cycle paper's rule for vector lanes per column pair (§IV-B-1):
/// beta = gcd(m*, 32) for the largest row count m*, lanes = max(4, beta).
inline int lanes_per_pair_rule(int max_rows) {
  int a = max_rows > 0 ? max_rows : 1, b = 32;
  while (b != 0) {
    const int r = a % b;
    a = b;
    b = r;
  }
  return a > 4 ? a : 4;
}

/// Work arrays of one team, carved from level-0 scratch by the caller.
template <class Scalar>
struct OneSidedJacobiScratch {
  Scalar* W;     // rows x cols
  Scalar* V;     // cols x cols (nullptr without vectors)
  Scalar* norm2; // cols
};

/// Results of one team's SVD, written to memory the caller owns.
template <class Scalar>
struct OneSidedJacobiOutput {
  Scalar* S;                  // min(m, n) values, stride s_stride
  std::ptrdiff_t s_stride;
  StridedMatrix<Scalar> U;    // m x k (ignored without vectors)
  StridedMatrix<Scalar> V;    // n x k (ignored without vectors)
  SvdInfo* info;
};

/// The whole SVD of the team's matrix A (m x n). Collective over the team.
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void one_sided_jacobi_team(const Member& member,
                                                  const StridedMatrix<const Scalar>& A,
                                                  const OneSidedJacobiShape& shape,
                                                  const OneSidedJacobiScratch<Scalar>& ws,
                                                  const OneSidedJacobiOutput<Scalar>& out,
                                                  Scalar tol, int max_sweeps) {
  const int M = shape.rows, N = shape.cols;
  Scalar* const W = ws.W;
  Scalar* const V = ws.V;
  Scalar* const d = ws.norm2;

  // 1. Load (transposing when m < n), find the largest magnitude and count
  //    non-finite entries.
  Scalar amax = 0;
  int nonfinite = 0;
  Kokkos::parallel_reduce(
      Kokkos::TeamThreadRange(member, N),
      [&](const int c, Scalar& team_max) {
        Scalar col_max = 0;
        Kokkos::parallel_reduce(
            Kokkos::ThreadVectorRange(member, M),
            [&](const int r, Scalar& lane_max) {
              const Scalar x = shape.transposed ? A(c, r) : A(r, c);
              W[r + std::size_t(M) * c] = x;
              const Scalar ax = kmath::fabs(x);
              // NaN compares false: it leaves lane_max alone and is counted below.
              if (ax > lane_max) lane_max = ax;
            },
            Kokkos::Max<Scalar>(col_max));
        if (col_max > team_max) team_max = col_max;
      },
      Kokkos::Max<Scalar>(amax));
  Kokkos::parallel_reduce(
      Kokkos::TeamThreadRange(member, N),
      [&](const int c, int& count) {
        int col_count = 0;
        Kokkos::parallel_reduce(
            Kokkos::ThreadVectorRange(member, M),
            [&](const int r, int& lane_count) {
              lane_count += kmath::isfinite(W[r + std::size_t(M) * c]) ? 0 : 1;
            },
            col_count);
        count += col_count;  // every vector lane holds the same col_count
      },
      nonfinite);

  const int k = N;
  if (nonfinite > 0) {
    // Report and poison this matrix's outputs; the other teams are unaffected.
    const Scalar nan = quiet_nan<Scalar>();
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k),
                         [&](const int c) { out.S[c * out.s_stride] = nan; });
    if (shape.vectors) {
      Kokkos::parallel_for(Kokkos::TeamVectorRange(member, shape.m * k),
                           [&](const int e) { out.U(e % shape.m, e / shape.m) = nan; });
      Kokkos::parallel_for(Kokkos::TeamVectorRange(member, shape.n * k),
                           [&](const int e) { out.V(e % shape.n, e / shape.n) = nan; });
    }
    Kokkos::single(Kokkos::PerTeam(member), [&]() {
      out.info->sweeps = 0;
      out.info->converged = 0;
      out.info->nonfinite_input = 1;
    });
    return;
  }

  // 2. Exact power-of-two scaling (undone on sigma at the end), V = I.
  const Scalar scale = power_of_two_scale(amax);
  member.team_barrier();
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, M * N),
                       [&](const int e) { W[e] *= scale; });
  if (shape.vectors) {
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, N * N),
                         [&](const int e) { V[e] = (e % N == e / N) ? Scalar(1) : Scalar(0); });
  }
  member.team_barrier();

  // Exact squared column norms. Inner-product caching (§IV-B-2, eq. 6) updates
  // them by formula after each rotation; recomputing them here at the start of
  // every sweep bounds the drift of the cached values to one sweep's worth of
  // rotations, and the final sigma always come from exact norms.
  auto exact_norms = [&]() {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, N), [&](const int c) {
      const Scalar* w = W + std::size_t(M) * c;
      Scalar sum = 0;
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(member, M), [&](const int r, Scalar& acc) { acc += w[r] * w[r]; },
          sum);
      Kokkos::single(Kokkos::PerThread(member), [&]() { d[c] = sum; });
    });
    member.team_barrier();
  };

  // 3. Sweeps of round-robin steps until a sweep rotates nothing.
  const int n_even = N + (N & 1);
  const int npairs = n_even / 2;
  int sweeps = 0;
  bool converged = N < 2;
  while (!converged && sweeps < max_sweeps) {
    ++sweeps;
    exact_norms();
    int rotations = 0;
    for (int step = 0; step < n_even - 1; ++step) {
      int step_rotations = 0;
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(member, npairs),
          [&](const int pair, int& count) {
            int i, j;
            round_robin_pair(n_even, step, pair, i, j);
            if (j >= N) return;  // the phantom column of odd N
            Scalar* wi = W + std::size_t(M) * i;
            Scalar* wj = W + std::size_t(M) * j;
            // Read before the lanes' reduction, which orders them before the
            // norm update below.
            const Scalar di = d[i], dj = d[j];
            // Only a_i^T a_j is computed: the norms are cached (eq. 6).
            Scalar g = 0;
            Kokkos::parallel_reduce(
                Kokkos::ThreadVectorRange(member, M),
                [&](const int r, Scalar& acc) { acc += wi[r] * wj[r]; }, g);
            if (!(kmath::fabs(g) > tol * kmath::sqrt(di) * kmath::sqrt(dj))) return;
            const Scalar t = jacobi_tangent(di, dj, g);
            const Scalar c = Scalar(1) / kmath::sqrt(Scalar(1) + t * t);
            const Scalar s = t * c;
            Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, M), [&](const int r) {
              const Scalar x = wi[r], y = wj[r];
              wi[r] = c * x - s * y;
              wj[r] = s * x + c * y;
            });
            if (shape.vectors) {
              Scalar* vi = V + std::size_t(N) * i;
              Scalar* vj = V + std::size_t(N) * j;
              Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, N), [&](const int r) {
                const Scalar x = vi[r], y = vj[r];
                vi[r] = c * x - s * y;
                vj[r] = s * x + c * y;
              });
            }
            // eq. (6) with the orthogonality condition folded in: the updated
            // squared norms are d_i - t g and d_j + t g (no cancellation).
            Kokkos::single(Kokkos::PerThread(member), [&]() {
              d[i] = di - t * g;
              d[j] = dj + t * g;
            });
            count += 1;  // on every vector lane, as Kokkos team reductions expect
          },
          step_rotations);
      member.team_barrier();
      rotations += step_rotations;
    }
    converged = rotations == 0;
  }
  exact_norms();

  // 4. sigma_c = ||w_c||; rank of column c in descending order (ties by index).
  const Scalar unscale = Scalar(1) / scale;
  auto rank_of = [&](const int c) {
    int rank = 0;
    for (int l = 0; l < N; ++l) rank += (d[l] > d[c] || (d[l] == d[c] && l < c)) ? 1 : 0;
    return rank;
  };
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, N), [&](const int c) {
    out.S[rank_of(c) * out.s_stride] = kmath::sqrt(d[c]) * unscale;
  });

  if (shape.vectors) {
    // Normalize: W becomes the left singular vectors of the work matrix.
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, M * N), [&](const int e) {
      const Scalar sigma = kmath::sqrt(d[e / M]);
      if (sigma > Scalar(0)) W[e] /= sigma;
    });
    member.team_barrier();
    // Columns with sigma = 0 (exact rank deficiency) get an orthonormal
    // completion: e_r for the row r least covered by the columns kept so far,
    // made orthogonal to them by two Gram-Schmidt passes. Rare, so done by one
    // thread rather than complicating the common path.
    Kokkos::single(Kokkos::PerTeam(member), [&]() {
      for (int c = 0; c < N; ++c) {
        if (d[c] > Scalar(0)) continue;
        auto kept = [&](int l) { return l != c && (d[l] > Scalar(0) || l < c); };
        int best_row = 0;
        Scalar best_cover = 2;
        for (int r = 0; r < M; ++r) {
          Scalar cover = 0;
          for (int l = 0; l < N; ++l)
            if (kept(l)) cover += W[r + std::size_t(M) * l] * W[r + std::size_t(M) * l];
          if (cover < best_cover) {
            best_cover = cover;
            best_row = r;
          }
        }
        Scalar* x = W + std::size_t(M) * c;
        for (int r = 0; r < M; ++r) x[r] = r == best_row ? Scalar(1) : Scalar(0);
        for (int pass = 0; pass < 2; ++pass) {
          for (int l = 0; l < N; ++l) {
            if (!kept(l)) continue;
            const Scalar* u = W + std::size_t(M) * l;
            Scalar dot = 0;
            for (int r = 0; r < M; ++r) dot += u[r] * x[r];
            for (int r = 0; r < M; ++r) x[r] -= dot * u[r];
          }
        }
        Scalar nrm2 = 0;
        for (int r = 0; r < M; ++r) nrm2 += x[r] * x[r];
        const Scalar inv = Scalar(1) / kmath::sqrt(nrm2);
        for (int r = 0; r < M; ++r) x[r] *= inv;
      }
    });
    member.team_barrier();
    // W holds U (or V when transposed), V holds V (or U), both M x N / N x N.
    const StridedMatrix<Scalar>& long_side = shape.transposed ? out.V : out.U;
    const StridedMatrix<Scalar>& short_side = shape.transposed ? out.U : out.V;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, N), [&](const int c) {
      const int rank = rank_of(c);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, M), [&](const int r) {
        long_side(r, rank) = W[r + std::size_t(M) * c];
      });
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, N), [&](const int r) {
        short_side(r, rank) = V[r + std::size_t(N) * c];
      });
    });
  }
  Kokkos::single(Kokkos::PerTeam(member), [&]() {
    out.info->sweeps = sweeps;
    out.info->converged = converged ? 1 : 0;
    out.info->nonfinite_input = 0;
  });
}

}  // namespace kwsvd::Impl
