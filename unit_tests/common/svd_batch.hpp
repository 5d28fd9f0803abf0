#pragma once
// Running one batched SVD entry point on host matrices and checking its
// results against LAPACK with seed 002's metrics: shared by the level-0
// (small_svd) and W-cycle (wcycle) tests.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/kokkos_events.hpp"
#include "common/oracle.hpp"
#include "kwsvd/kwsvd.hpp"

namespace kwsvd::test {

/// One batched call's results, per matrix, as column-major host vectors (a
/// side the call did not compute is empty).
template <class T>
struct BatchResult {
  std::vector<std::vector<T>> s, u, v;
  std::vector<kwsvd::SvdInfo> info;
};

/// A call's outputs (S, U, V, info: Views the host can read) as column-major
/// host vectors per matrix of m x n: all of S's values and U's and V's
/// columns (k = min(m, n), or m and n for full vectors, or the leading r
/// under SvdOptions::rank), none of an empty one.
template <class T, class SView, class UView, class VView, class InfoView>
BatchResult<T> batch_results(const SView& S, const UView& U, const VView& V, const InfoView& info,
                             int m, int n) {
  const int batch = int(S.extent(0)), k = int(S.extent(1));
  const int u_cols = U.size() > 0 ? int(U.extent(2)) : 0,
            v_cols = V.size() > 0 ? int(V.extent(2)) : 0;
  BatchResult<T> r;
  for (int b = 0; b < batch; ++b) {
    std::vector<T> s(k), u(std::size_t(m) * u_cols), v(std::size_t(n) * v_cols);
    for (int l = 0; l < k; ++l)
      s[l] = S(b, l);
    for (int l = 0; l < u_cols; ++l)
      for (int i = 0; i < m; ++i)
        u[i + std::size_t(m) * l] = U(b, i, l);
    for (int l = 0; l < v_cols; ++l)
      for (int j = 0; j < n; ++j)
        v[j + std::size_t(n) * l] = V(b, j, l);
    r.s.push_back(s);
    r.u.push_back(u);
    r.v.push_back(v);
    r.info.push_back(info(b));
  }
  return r;
}

/// Copies mats (all m x n) to the device in Layout, runs
/// call(A, S, U, V, info) with outputs shaped for `options` (U and V thin,
/// or full under SvdOptions::full_matrices; S, U and V of the leading r
/// under SvdOptions::rank, S of all k where `all_values`; U and V empty
/// where options.job does not compute them) and pre-filled with NaN (so an
/// entry never written fails the checks), and brings the results back.
template <class T, class Layout, class Call>
BatchResult<T> run_svd_batch(const std::vector<std::vector<T>>& mats, int m, int n,
                             const Call& call, const kwsvd::SvdOptions& options = {},
                             bool all_values = false) {
  const int batch = int(mats.size()), k = std::min(m, n);
  const int r = int(kwsvd::Impl::output_rank(options, k));
  const bool left = kwsvd::job_writes_u(options.job), right = kwsvd::job_writes_v(options.job);
  auto A = to_device<T, Layout>(mats, m, n);
  Kokkos::View<T***, Layout> U("U", left ? batch : 0, left ? m : 0,
                               left ? (options.full_matrices ? m : r) : 0);
  Kokkos::View<T***, Layout> V("V", right ? batch : 0, right ? n : 0,
                               right ? (options.full_matrices ? n : r) : 0);
  Kokkos::View<T**, Layout> S("S", batch, all_values ? k : r);
  Kokkos::View<kwsvd::SvdInfo*> info("info", batch);
  const T nan = std::numeric_limits<T>::quiet_NaN();
  fill(U, nan);
  fill(V, nan);
  fill(S, nan);
  call(A, S, U, V, info);
  return batch_results<T>(Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), S),
                          Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), U),
                          Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), V),
                          Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info), m, n);
}

/// run_svd_batch through a kwsvd::BatchedSvd planned with `options`.
template <class T, class Layout>
BatchResult<T> run_batched_svd(const std::vector<std::vector<T>>& mats, int m, int n,
                               const kwsvd::SvdOptions& options, bool all_values = false) {
  return run_svd_batch<T, Layout>(
      mats, m, n,
      [&](const auto& A, const auto& S, const auto& U, const auto& V, const auto& info) {
        kwsvd::BatchedSvd<Kokkos::DefaultExecutionSpace, T> svd(Kokkos::DefaultExecutionSpace(),
                                                                long(mats.size()), m, n, options);
        svd.compute(A, S, U, V, info);
      },
      options, all_values);
}

/// A kwsvd::VariableBatchedSvd planned with `options` on mats (matrix b of
/// shapes[b], column-major): through a list of Views in Layout, or where
/// `pointers` through pointer arrays (column-major: Layout must be
/// LayoutLeft). Outputs shaped for the options as run_svd_batch shapes them
/// (S[b] of all k_b values where `all_values`), pre-filled with NaN; the
/// results per matrix as column-major host vectors.
template <class T, class Layout>
BatchResult<T> run_variable_svd(const std::vector<kwsvd::MatrixShape>& shapes,
                                const std::vector<std::vector<T>>& mats,
                                const kwsvd::SvdOptions& options, bool pointers = false,
                                bool all_values = false) {
  using Exec = Kokkos::DefaultExecutionSpace;
  using Matrix = Kokkos::View<T**, Layout>;
  const bool left = kwsvd::job_writes_u(options.job), right = kwsvd::job_writes_v(options.job);
  const T nan = std::numeric_limits<T>::quiet_NaN();
  std::vector<Matrix> A, U, V;
  std::vector<Kokkos::View<T*>> S;
  for (std::size_t b = 0; b < shapes.size(); ++b) {
    const int m = shapes[b].rows, n = shapes[b].cols, k = std::min(m, n);
    const int r = int(kwsvd::Impl::output_rank(options, k));
    A.push_back(Matrix("A", m, n));
    auto h = Kokkos::create_mirror_view(A.back());
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i)
        h(i, j) = mats[b][i + std::size_t(m) * j];
    Kokkos::deep_copy(A.back(), h);
    S.push_back(Kokkos::View<T*>("S", all_values ? k : r));
    fill(S.back(), nan);
    if (left) {
      U.push_back(Matrix("U", m, options.full_matrices ? m : r));
      fill(U.back(), nan);
    }
    if (right) {
      V.push_back(Matrix("V", n, options.full_matrices ? n : r));
      fill(V.back(), nan);
    }
  }
  Kokkos::View<kwsvd::SvdInfo*> info("info", shapes.size());
  kwsvd::VariableBatchedSvd<Exec, T> svd(Exec(), shapes, options);
  if (!pointers) {
    svd.compute(A, S, U, V, info);
  } else {
    std::vector<const T*> a;
    std::vector<T*> s, u, v;
    std::vector<int> lda, ldu, ldv;
    for (std::size_t b = 0; b < shapes.size(); ++b) {
      a.push_back(A[b].data());
      s.push_back(S[b].data());
      lda.push_back(std::max(1, int(A[b].stride(1))));
      if (left) {
        u.push_back(U[b].data());
        ldu.push_back(std::max(1, int(U[b].stride(1))));
      }
      if (right) {
        v.push_back(V[b].data());
        ldv.push_back(std::max(1, int(V[b].stride(1))));
      }
    }
    svd.compute(a.data(), lda.data(), s.data(), left ? u.data() : nullptr,
                left ? ldu.data() : nullptr, right ? v.data() : nullptr,
                right ? ldv.data() : nullptr, info.data());
  }
  BatchResult<T> r;
  const auto host_columns = [](const Matrix& X) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), X);
    std::vector<T> x;
    for (std::size_t j = 0; j < h.extent(1); ++j)
      for (std::size_t i = 0; i < h.extent(0); ++i)
        x.push_back(h(i, j));
    return x;
  };
  auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
  for (std::size_t b = 0; b < shapes.size(); ++b) {
    auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), S[b]);
    r.s.emplace_back(hs.data(), hs.data() + hs.extent(0));
    r.u.push_back(left ? host_columns(U[b]) : std::vector<T>{});
    r.v.push_back(right ? host_columns(V[b]) : std::vector<T>{});
    r.info.push_back(hi(b));
  }
  return r;
}

/// mats (all m x n) as the raw-pointer form reads them: one device array,
/// matrix b column-major from element b * stride with leading dimension lda.
template <class T>
Kokkos::View<T*> to_device_strided(const std::vector<std::vector<T>>& mats, int m, int n, int lda,
                                   long long stride) {
  Kokkos::View<T*> A("A", std::size_t(mats.size()) * std::size_t(stride));
  auto h = Kokkos::create_mirror_view(A);
  for (std::size_t b = 0; b < mats.size(); ++b)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i)
        h((long long)b * stride + i + (long long)lda * j) = mats[b][i + std::size_t(m) * j];
  Kokkos::deep_copy(A, h);
  return A;
}

/// r's outputs with every matrix's values and vector columns placed as a
/// sorted call writes them (descending, ties by position): for checking a
/// call with SvdOptions::sort = false.
template <class T>
BatchResult<T> sorted_by_value(const BatchResult<T>& r, int m, int n) {
  BatchResult<T> sorted = r;
  for (std::size_t b = 0; b < r.s.size(); ++b) {
    const auto& s = r.s[b];
    std::vector<std::size_t> order(s.size());
    for (std::size_t l = 0; l < order.size(); ++l)
      order[l] = l;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t x, std::size_t y) { return s[x] > s[y]; });
    for (std::size_t l = 0; l < order.size(); ++l) {
      sorted.s[b][l] = s[order[l]];
      for (int i = 0; i < m; ++i)
        sorted.u[b][i + std::size_t(m) * l] = r.u[b][i + std::size_t(m) * order[l]];
      for (int j = 0; j < n; ++j)
        sorted.v[b][j + std::size_t(n) * l] = r.v[b][j + std::size_t(n) * order[l]];
    }
  }
  return sorted;
}

/// e1..e4 below 30 u, values descending, converged, finite input.
template <class T>
void expect_accurate(const std::vector<std::vector<T>>& mats, int m, int n, const BatchResult<T>& r,
                     const std::string& what) {
  const double bound = 30 * (std::numeric_limits<T>::epsilon() / 2);
  for (std::size_t b = 0; b < mats.size(); ++b) {
    const auto e = svd_errors(mats[b], m, n, r.s[b], r.u[b], r.v[b]);
    const std::string at =
        what + " matrix " + std::to_string(b) + " " + std::to_string(m) + "x" + std::to_string(n);
    EXPECT_LT(e.e1, bound) << at << ": e1";
    EXPECT_LT(e.e2, bound) << at << ": e2";
    EXPECT_LT(e.e3, bound) << at << ": e3";
    EXPECT_LT(e.e4, bound) << at << ": e4";
    for (std::size_t l = 1; l < r.s[b].size(); ++l)
      ASSERT_GE(r.s[b][l - 1], r.s[b][l]) << at << ": singular values not descending";
    EXPECT_EQ(r.info[b].converged, 1) << at;
    EXPECT_EQ(r.info[b].nonfinite_input, 0) << at;
  }
}

/// The base of the typed SVD tests over ScalarLayoutCases: the case's
/// scalar and layout, a batch's rank-3 View, a call's results and seed
/// 002's bound of 30 u (u the scalar's unit roundoff).
template <class C>
class ScalarLayoutTest : public ::testing::Test {
 public:
  using Scalar = typename C::Scalar;
  using Layout = typename C::Layout;
  using Matrices = Kokkos::View<Scalar***, Layout>;
  using Result = BatchResult<Scalar>;
  static double unit_roundoff() { return std::numeric_limits<Scalar>::epsilon() / 2; }
  static double bound() { return 30 * unit_roundoff(); }
};

/// The message of the kwsvd::invalid_argument that f() throws, or a note
/// that none was thrown (which no expected message contains).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const kwsvd::invalid_argument& e) {
    return e.what();
  }
  return "no kwsvd::invalid_argument thrown";
}

/// `count` matrices of one of seed 002's six test spectra ("random" for
/// entries uniform in [-1, 1]), kappa the condition number, seeded per
/// matrix and shape.
template <class T>
std::vector<std::vector<T>> spectrum_batch(const std::string& name, int m, int n, double kappa,
                                           int count) {
  std::vector<std::vector<T>> mats;
  for (int b = 0; b < count; ++b) {
    const std::uint64_t seed = 100u * b + 7u * m + n;
    mats.push_back(name == "random" ? random_matrix<T>(m, n, seed)
                                    : matrix_with_spectrum<T>(
                                          m, n, spectrum(name, std::min(m, n), kappa, seed), seed));
  }
  return mats;
}

/// A shape the W-cycle tests run: m x n, whether the level-0 kernel may
/// take it (SvdOptions::level0) and the level widths (empty: the engine's).
struct ShapeCase {
  int m, n;
  bool level0;
  std::vector<int> widths;
};

/// Level widths that make a 120 to 150 column matrix recurse to a second
/// level under 32 KB of block scratch: 32, 16 in double, 48, 24 in float.
template <class T>
std::vector<int> two_level_widths() {
  return sizeof(T) == 8 ? std::vector<int>{32, 16} : std::vector<int>{48, 24};
}

/// Three m x n matrices: a random one, a rank-deficient one (a zero column
/// and a repeated one, and the same for two rows when wide, so that the left
/// vectors of zero values are completed) and another random one.
template <class T>
std::vector<std::vector<T>> rank_deficient_batch(int m, int n) {
  std::vector<std::vector<T>> mats = {random_matrix<T>(m, n, 3u * m + n),
                                      random_matrix<T>(m, n, 5u * m + n),
                                      random_matrix<T>(m, n, 7u * m + n)};
  auto& a = mats[1];
  for (int i = 0; i < m; ++i) {
    a[i + std::size_t(m) * 1] = T(0);
    a[i + std::size_t(m) * (n - 1)] = a[i];
  }
  if (m < n)  // wide: the rows are the work matrix's columns
    for (int j = 0; j < n; ++j) {
      a[1 + std::size_t(m) * j] = T(0);
      a[(m - 1) + std::size_t(m) * j] = a[std::size_t(m) * j];
    }
  return mats;
}

/// The most sweeps any matrix of a call took (its info View, brought back).
template <class InfoView>
int most_sweeps(const InfoView& info) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
  int most = 0;
  for (std::size_t b = 0; b < h.extent(0); ++b)
    most = std::max(most, h(b).sweeps);
  return most;
}

/// Calls a handle that has run once already (the first call may set up
/// Kokkos's own buffers) three more times: with vectors, values only, and
/// vectors again, each under a KokkosEventRecorder. Checks that no call
/// allocates and that every matrix converged, then hands each call's events
/// and its info (on the host) to check(events, host_info, vectors).
template <class Svd, class AView, class SView, class UView, class VView, class InfoView,
          class Check>
void expect_reused_calls_allocate_nothing(Svd& svd, const AView& A, const SView& S, const UView& U,
                                          const VView& V, const InfoView& info, Check&& check) {
  for (const bool vectors : {true, false, true}) {
    KokkosEvents events;
    {
      KokkosEventRecorder recorder(events);
      if (vectors)
        svd.compute(A, S, U, V, info);
      else
        svd.compute(A, S, info);
    }
    EXPECT_TRUE(events.allocations.empty())
        << (vectors ? "vectors: " : "values: ") << events.allocation_list();
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
    for (std::size_t b = 0; b < hi.extent(0); ++b)
      EXPECT_EQ(hi(b).converged, 1) << "matrix " << b;
    check(events, hi, vectors);
  }
}

}  // namespace kwsvd::test
