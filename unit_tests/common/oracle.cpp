#include "common/oracle.hpp"

#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>

// Reference BLAS (Fortran symbols; the headerless, always-present interface).
extern "C" {
void ssyrk_(const char* uplo, const char* trans, const int* n, const int* k, const float* alpha,
            const float* a, const int* lda, const float* beta, float* c, const int* ldc,
            std::size_t uplo_len, std::size_t trans_len);
void dsyrk_(const char* uplo, const char* trans, const int* n, const int* k, const double* alpha,
            const double* a, const int* lda, const double* beta, double* c, const int* ldc,
            std::size_t uplo_len, std::size_t trans_len);
}

namespace kwsvd::test {
namespace {

void syrk(int n, int k, const float* a, int lda, float* c) {
  const float one = 1, zero = 0;
  ssyrk_("U", "T", &n, &k, &one, a, &lda, &zero, c, &n, 1, 1);
}
void syrk(int n, int k, const double* a, int lda, double* c) {
  const double one = 1, zero = 0;
  dsyrk_("U", "T", &n, &k, &one, a, &lda, &zero, c, &n, 1, 1);
}
lapack_int gesvd(int m, int n, float* a, float* s, float* superb) {
  return LAPACKE_sgesvd(LAPACK_COL_MAJOR, 'N', 'N', m, n, a, m, s, nullptr, 1, nullptr, 1, superb);
}
lapack_int gesvd(int m, int n, double* a, double* s, double* superb) {
  return LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'N', 'N', m, n, a, m, s, nullptr, 1, nullptr, 1, superb);
}

lapack_int syev(int n, float* a, float* w) {
  return LAPACKE_ssyev(LAPACK_COL_MAJOR, 'N', 'U', n, a, n, w);
}
lapack_int syev(int n, double* a, double* w) {
  return LAPACKE_dsyev(LAPACK_COL_MAJOR, 'N', 'U', n, a, n, w);
}

}  // namespace

template <class T>
std::vector<T> lapack_symmetric_eigenvalues(std::vector<T> a, int n) {
  std::vector<T> w(n);
  if (n == 0)
    return w;
  const lapack_int info = syev(n, a.data(), w.data());
  if (info != 0)
    throw std::runtime_error("LAPACKE syev failed, info " + std::to_string(info));
  return w;
}

template <class T>
std::vector<T> random_matrix(int m, int n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<T> a(std::size_t(m) * n);
  for (auto& x : a)
    x = static_cast<T>(dist(gen));
  return a;
}

template <class T>
std::vector<T> blas_gram(const std::vector<T>& a, int m, int n) {
  std::vector<T> c(std::size_t(n) * n, T(0));
  if (n == 0)
    return c;
  if (m > 0)
    syrk(n, m, a.data(), m, c.data());
  for (int j = 0; j < n; ++j)
    for (int i = j + 1; i < n; ++i)
      c[i + std::size_t(n) * j] = c[j + std::size_t(n) * i];
  return c;
}

template <class T>
std::vector<double> abs_gram(const std::vector<T>& a, int m, int n) {
  std::vector<double> c(std::size_t(n) * n, 0.0);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i)
      for (int r = 0; r < m; ++r)
        c[i + std::size_t(n) * j] += std::abs(double(a[r + std::size_t(m) * i])) *
                                     std::abs(double(a[r + std::size_t(m) * j]));
  return c;
}

template <class T>
std::vector<T> lapack_singular_values(std::vector<T> a, int m, int n) {
  const int k = m < n ? m : n;
  std::vector<T> s(k), superb(k > 1 ? k - 1 : 1);
  if (k == 0)
    return s;
  const lapack_int info = gesvd(m, n, a.data(), s.data(), superb.data());
  if (info != 0)
    throw std::runtime_error("LAPACKE gesvd failed, info " + std::to_string(info));
  return s;
}

std::vector<double> random_orthogonal(int n, std::uint64_t seed) {
  std::vector<double> q = random_matrix<double>(n, n, seed), tau(n > 0 ? n : 1);
  if (n == 0)
    return q;
  if (LAPACKE_dgeqrf(LAPACK_COL_MAJOR, n, n, q.data(), n, tau.data()) != 0 ||
      LAPACKE_dorgqr(LAPACK_COL_MAJOR, n, n, n, q.data(), n, tau.data()) != 0) {
    throw std::runtime_error("LAPACKE dgeqrf/dorgqr failed");
  }
  return q;
}

std::vector<double> spectrum(const std::string& name, int k, double kappa, std::uint64_t seed) {
  std::vector<double> s(k);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int i = 0; i < k; ++i) {
    const double x = k > 1 ? double(i) / (k - 1) : 0.0;  // (i-1)/(n-1), 0-based
    if (name == "arith") {
      s[i] = 1 - x * (1 - 1 / kappa);
    } else if (name == "cluster0") {
      s[i] = i == 0 ? 1 : 1 / kappa;
    } else if (name == "cluster1") {
      s[i] = i < k - 1 ? 1 : 1 / kappa;
    } else if (name == "logrand") {
      s[i] = std::exp(std::log(1 / kappa) * unit(gen));
    } else if (name == "geo") {
      s[i] = std::pow(kappa, -x);
    } else {
      throw std::invalid_argument("unknown spectrum " + name);
    }
  }
  std::sort(s.begin(), s.end(), [](double a, double b) { return a > b; });
  return s;
}

template <class T>
std::vector<T> matrix_with_spectrum(int m, int n, const std::vector<double>& sigma,
                                    std::uint64_t seed) {
  const auto u = random_orthogonal(m, seed), v = random_orthogonal(n, seed + 7777);
  std::vector<T> a(std::size_t(m) * n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double x = 0;
      for (std::size_t l = 0; l < sigma.size(); ++l)
        x += u[i + std::size_t(m) * l] * sigma[l] * v[j + std::size_t(n) * l];
      a[i + std::size_t(m) * j] = static_cast<T>(x);
    }
  return a;
}

namespace {
// ||I - Q^T Q||_1 for a rows x cols column-major Q.
template <class T>
double orthogonality_1(const std::vector<T>& q, int rows, int cols) {
  double worst = 0;
  for (int j = 0; j < cols; ++j) {
    double col = 0;
    for (int i = 0; i < cols; ++i) {
      double dot = 0;
      for (int r = 0; r < rows; ++r)
        dot += double(q[r + std::size_t(rows) * i]) * double(q[r + std::size_t(rows) * j]);
      col += std::abs((i == j ? 1.0 : 0.0) - dot);
    }
    worst = worse_of(worst, col);
  }
  return worst;
}
}  // namespace

template <class T>
SvdErrors svd_errors(const std::vector<T>& a, int m, int n, const std::vector<T>& s,
                     const std::vector<T>& u, const std::vector<T>& v) {
  const int k = std::min(m, n);
  SvdErrors e;
  double res1 = 0, a1 = 0;
  for (int j = 0; j < n; ++j) {
    double rcol = 0, acol = 0;
    for (int i = 0; i < m; ++i) {
      double usv = 0;
      for (int l = 0; l < k; ++l)
        usv += double(u[i + std::size_t(m) * l]) * double(s[l]) * double(v[j + std::size_t(n) * l]);
      rcol += std::abs(double(a[i + std::size_t(m) * j]) - usv);
      acol += std::abs(double(a[i + std::size_t(m) * j]));
    }
    res1 = worse_of(res1, rcol);
    a1 = worse_of(a1, acol);
  }
  e.e1 = a1 > 0 ? res1 / (n * a1) : res1;
  e.e2 = m > 0 ? orthogonality_1(u, m, k) / m : 0;
  e.e3 = n > 0 ? orthogonality_1(v, n, k) / n : 0;
  std::vector<double> ad(a.begin(), a.end());
  const auto ref = lapack_singular_values(ad, m, n);
  double diff = 0, nrm = 0;
  for (int l = 0; l < k; ++l) {
    diff += (double(s[l]) - ref[l]) * (double(s[l]) - ref[l]);
    nrm += ref[l] * ref[l];
  }
  e.e4 = nrm > 0 ? std::sqrt(diff) / (k * std::sqrt(nrm)) : std::sqrt(diff);
  return e;
}

template <class T>
SideErrors side_errors(const std::vector<T>& a, int m, int n, const std::vector<T>& s,
                       const std::vector<T>& x, bool left) {
  const int k = std::min(m, n), rows = left ? m : n, other = left ? n : m;
  SideErrors e;
  if (k == 0)
    return e;
  // P = A^T X (n x k) for U, A X (m x k) for V.
  std::vector<double> p(std::size_t(other) * std::size_t(k), 0.0);
  for (int l = 0; l < k; ++l)
    for (int o = 0; o < other; ++o) {
      double sum = 0;
      for (int r = 0; r < rows; ++r) {
        const double entry =
            left ? double(a[r + std::size_t(m) * o]) : double(a[o + std::size_t(m) * r]);
        sum += entry * double(x[r + std::size_t(rows) * l]);
      }
      p[o + std::size_t(other) * l] = sum;
    }
  const double top = double(s[0]) * double(s[0]);
  for (int j = 0; j < k; ++j) {
    double col = 0;
    for (int i = 0; i < k; ++i) {
      double g = 0;
      for (int o = 0; o < other; ++o)
        g += p[o + std::size_t(other) * i] * p[o + std::size_t(other) * j];
      const double want = i == j ? double(s[std::size_t(i)]) * double(s[std::size_t(i)]) : 0.0;
      col += std::abs(g - want);
    }
    e.eigen = worse_of(e.eigen, col / (k * (top > 0 ? top : 1.0)));
  }
  e.orthogonality = orthogonality_1(x, rows, k) / rows;
  return e;
}

template <class T>
double orthogonality_error(const std::vector<T>& q, int rows, int cols) {
  return rows > 0 ? orthogonality_1(q, rows, cols) / rows : 0;
}

template <class T>
double gamma(int k) {
  const double u = std::numeric_limits<T>::epsilon() / 2;
  return k * u / (1 - k * u);
}

#define KWSVD_TEST_ORACLE_INSTANTIATE(T)                                                     \
  template std::vector<T> random_matrix<T>(int, int, std::uint64_t);                         \
  template std::vector<T> blas_gram<T>(const std::vector<T>&, int, int);                     \
  template std::vector<double> abs_gram<T>(const std::vector<T>&, int, int);                 \
  template std::vector<T> lapack_singular_values<T>(std::vector<T>, int, int);               \
  template std::vector<T> lapack_symmetric_eigenvalues<T>(std::vector<T>, int);              \
  template double gamma<T>(int);                                                             \
  template double orthogonality_error<T>(const std::vector<T>&, int, int);                   \
  template std::vector<T> matrix_with_spectrum<T>(int, int, const std::vector<double>&,      \
                                                  std::uint64_t);                            \
  template SvdErrors svd_errors<T>(const std::vector<T>&, int, int, const std::vector<T>&,   \
                                   const std::vector<T>&, const std::vector<T>&);            \
  template SideErrors side_errors<T>(const std::vector<T>&, int, int, const std::vector<T>&, \
                                     const std::vector<T>&, bool);
KWSVD_TEST_ORACLE_INSTANTIATE(float)
KWSVD_TEST_ORACLE_INSTANTIATE(double)

}  // namespace kwsvd::test
