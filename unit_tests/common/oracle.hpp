#pragma once
// Reference results for the unit tests: LAPACKE and reference BLAS on the host.
// Matrices here are column-major std::vectors (LAPACK's convention).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

namespace kwsvd::test {

/// m x n column-major matrix, entries uniform in [-1, 1], reproducible from seed.
template <class T>
std::vector<T> random_matrix(int m, int n, std::uint64_t seed);

/// A^T A (n x n, column-major, both triangles) by BLAS ?syrk.
template <class T>
std::vector<T> blas_gram(const std::vector<T>& a, int m, int n);

/// |A|^T |A| in double: the scale of the rounding error of any dot-product
/// based Gram (|fl(x.y) - x.y| <= gamma_m |x|.|y|, Higham eq. 3.5).
template <class T>
std::vector<double> abs_gram(const std::vector<T>& a, int m, int n);

/// Singular values (descending) by LAPACKE ?gesvd.
template <class T>
std::vector<T> lapack_singular_values(std::vector<T> a, int m, int n);

/// Eigenvalues (ascending) of a symmetric n x n matrix (upper triangle) by LAPACKE ?syev.
template <class T>
std::vector<T> lapack_symmetric_eigenvalues(std::vector<T> a, int n);

/// gamma_k = k u / (1 - k u), u the unit roundoff of T.
template <class T>
double gamma(int k);

/// n x n orthogonal matrix (column-major, double), Q of the QR of a random
/// matrix (LAPACKE dgeqrf + dorgqr), reproducible from seed.
std::vector<double> random_orthogonal(int n, std::uint64_t seed);

/// The singular value distributions of seed 002 (Table 1): arith, cluster0,
/// cluster1, logrand, geo, with condition number kappa; k values, descending.
std::vector<double> spectrum(const std::string& name, int k, double kappa, std::uint64_t seed);

/// m x n column-major matrix U diag(sigma) V^T with random orthogonal U, V,
/// formed in double and rounded to T.
template <class T>
std::vector<T> matrix_with_spectrum(int m, int n, const std::vector<double>& sigma,
                                    std::uint64_t seed);

/// The larger of two error measures, NaN where either is: std::max(worst,
/// NaN) keeps `worst`, so a measure taken as a running maximum would
/// report a column of NaN as no error at all (a full U whose last column
/// was never written, NaN-filled, passed e2 that way).
inline double worse_of(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::max(a, b);
}

/// Seed 002's accuracy metrics (§10.1), computed in double:
///   e1 = ||A - U S V^T||_1 / (n ||A||_1), e2 = ||I - U^T U||_1 / m,
///   e3 = ||I - V^T V||_1 / n, e4 = ||S - S_ref||_F / (min(m, n) ||S_ref||_F),
/// with S_ref from LAPACKE dgesvd of A (in double).
struct SvdErrors {
  double e1 = 0, e2 = 0, e3 = 0, e4 = 0;
};
template <class T>
SvdErrors svd_errors(const std::vector<T>& a, int m, int n, const std::vector<T>& s,
                     const std::vector<T>& u, const std::vector<T>& v);

/// ||I - Q^T Q||_1 / rows for a rows x cols column-major Q, computed in
/// double: e2's and e3's measure, for any number of columns (a full U is
/// m x m: SvdOptions::full_matrices).
template <class T>
double orthogonality_error(const std::vector<T>& q, int rows, int cols);

/// One side of an SVD computed alone (Job::values_and_left_vectors or
/// values_and_right_vectors), X = U (m x k, `left`) or V (n x k), computed in
/// double: orthogonality = ||I - X^T X||_1 / rows (as e2, e3), and eigen =
/// ||X^T B X - S^2||_1 / (k s_1^2) with B = A A^T for U and A^T A for V (X's
/// columns are B's eigenvectors, S^2 its eigenvalues), k = min(m, n).
struct SideErrors {
  double orthogonality = 0, eigen = 0;
};
template <class T>
SideErrors side_errors(const std::vector<T>& a, int m, int n, const std::vector<T>& s,
                       const std::vector<T>& x, bool left);

/// Sets every entry of a View to `value` through a host mirror, the same on
/// every backend. (Kokkos 4.6.99's deep_copy(View, scalar) once wrote out of
/// bounds for a rank-3 View in CUDA memory: it fills through a flat rank-1
/// View, whose functor nvcc 13 laid out differently from the host while the
/// View used [[no_unique_address]]; see kwsvd/impl/kokkos_compat.hpp.)
template <class View>
void fill(const View& v, typename View::non_const_value_type value) {
  auto h = Kokkos::create_mirror_view(v);
  for (std::size_t i = 0; i < h.span(); ++i)
    h.data()[i] = value;
  Kokkos::deep_copy(v, h);
}

/// Copies a batch of column-major host matrices into a rank-3 View (batch, m, n)
/// of the given layout in the default memory space.
template <class T, class Layout>
Kokkos::View<T***, Layout> to_device(const std::vector<std::vector<T>>& mats, int m, int n) {
  Kokkos::View<T***, Layout> v("A", mats.size(), m, n);
  auto h = Kokkos::create_mirror_view(v);
  for (std::size_t b = 0; b < mats.size(); ++b)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i)
        h(b, i, j) = mats[b][i + std::size_t(m) * j];
  Kokkos::deep_copy(v, h);
  return v;
}

/// A typed test's parameter: scalar type and Kokkos layout of the Views.
template <class T, class L>
struct Case {
  using Scalar = T;
  using Layout = L;
};

/// Every test component runs on these four.
using ScalarLayoutCases =
    ::testing::Types<Case<double, Kokkos::LayoutLeft>, Case<double, Kokkos::LayoutRight>,
                     Case<float, Kokkos::LayoutLeft>, Case<float, Kokkos::LayoutRight>>;

}  // namespace kwsvd::test
