#include "common/oracle.hpp"

#include <lapacke.h>

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
  return LAPACKE_sgesvd(LAPACK_COL_MAJOR, 'N', 'N', m, n, a, m, s, nullptr, 1, nullptr, 1,
                        superb);
}
lapack_int gesvd(int m, int n, double* a, double* s, double* superb) {
  return LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'N', 'N', m, n, a, m, s, nullptr, 1, nullptr, 1,
                        superb);
}

}  // namespace

template <class T>
std::vector<T> random_matrix(int m, int n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<T> a(std::size_t(m) * n);
  for (auto& x : a) x = static_cast<T>(dist(gen));
  return a;
}

template <class T>
std::vector<T> blas_gram(const std::vector<T>& a, int m, int n) {
  std::vector<T> c(std::size_t(n) * n, T(0));
  if (n == 0) return c;
  if (m > 0) syrk(n, m, a.data(), m, c.data());
  for (int j = 0; j < n; ++j)
    for (int i = j + 1; i < n; ++i) c[i + std::size_t(n) * j] = c[j + std::size_t(n) * i];
  return c;
}

template <class T>
std::vector<double> abs_gram(const std::vector<T>& a, int m, int n) {
  std::vector<double> c(std::size_t(n) * n, 0.0);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i)
      for (int r = 0; r < m; ++r)
        c[i + std::size_t(n) * j] +=
            std::abs(double(a[r + std::size_t(m) * i])) * std::abs(double(a[r + std::size_t(m) * j]));
  return c;
}

template <class T>
std::vector<T> lapack_singular_values(std::vector<T> a, int m, int n) {
  const int k = m < n ? m : n;
  std::vector<T> s(k), superb(k > 1 ? k - 1 : 1);
  if (k == 0) return s;
  const lapack_int info = gesvd(m, n, a.data(), s.data(), superb.data());
  if (info != 0) throw std::runtime_error("LAPACKE gesvd failed, info " + std::to_string(info));
  return s;
}

template <class T>
double gamma(int k) {
  const double u = std::numeric_limits<T>::epsilon() / 2;
  return k * u / (1 - k * u);
}

#define KWSVD_TEST_ORACLE_INSTANTIATE(T)                                              \
  template std::vector<T> random_matrix<T>(int, int, std::uint64_t);                 \
  template std::vector<T> blas_gram<T>(const std::vector<T>&, int, int);              \
  template std::vector<double> abs_gram<T>(const std::vector<T>&, int, int);          \
  template std::vector<T> lapack_singular_values<T>(std::vector<T>, int, int);        \
  template double gamma<T>(int);
KWSVD_TEST_ORACLE_INSTANTIATE(float)
KWSVD_TEST_ORACLE_INSTANTIATE(double)

}  // namespace kwsvd::test
