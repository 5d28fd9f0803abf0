#pragma once
// Typed entry points of the vendor baselines the perf_tests compare against,
// so every benchmark calls one name for float and double: cuSOLVER's gesvdj
// (one matrix), gesvdjBatched (m, n <= 32) and gesvdaStridedBatched (CUDA
// builds, KWSVD_HAVE_CUDA_BASELINES), and LAPACK's gesvd for host builds
// (KWSVD_HAVE_LAPACK_BASELINE).

#ifdef KWSVD_HAVE_LAPACK_BASELINE
#include <lapacke.h>

namespace kwsvd::bench {

// Thin SVD (jobu = jobvt = 'S') of one column-major m x n matrix; superb
// holds min(m, n) - 1 scalars.
inline lapack_int lapack_gesvd(int m, int n, double* a, int lda, double* s, double* u, int ldu,
                               double* vt, int ldvt, double* superb) {
  return LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'S', 'S', m, n, a, lda, s, u, ldu, vt, ldvt, superb);
}
inline lapack_int lapack_gesvd(int m, int n, float* a, int lda, float* s, float* u, int ldu,
                               float* vt, int ldvt, float* superb) {
  return LAPACKE_sgesvd(LAPACK_COL_MAJOR, 'S', 'S', m, n, a, lda, s, u, ldu, vt, ldvt, superb);
}

}  // namespace kwsvd::bench
#endif

#ifdef KWSVD_HAVE_CUDA_BASELINES
#include <cusolverDn.h>

#include <algorithm>

namespace kwsvd::bench {

// gesvdj, one matrix.
inline cusolverStatus_t gesvdj_buffer(cusolverDnHandle_t h, int m, int n, const double* a,
                                      const double* s, const double* u, const double* v, int* lwork,
                                      gesvdjInfo_t p) {
  return cusolverDnDgesvdj_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, 1, m, n, a, m, s, u, m, v, n,
                                      lwork, p);
}
inline cusolverStatus_t gesvdj_buffer(cusolverDnHandle_t h, int m, int n, const float* a,
                                      const float* s, const float* u, const float* v, int* lwork,
                                      gesvdjInfo_t p) {
  return cusolverDnSgesvdj_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, 1, m, n, a, m, s, u, m, v, n,
                                      lwork, p);
}
inline cusolverStatus_t gesvdj(cusolverDnHandle_t h, int m, int n, double* a, double* s, double* u,
                               double* v, double* work, int lwork, int* info, gesvdjInfo_t p) {
  return cusolverDnDgesvdj(h, CUSOLVER_EIG_MODE_VECTOR, 1, m, n, a, m, s, u, m, v, n, work, lwork,
                           info, p);
}
inline cusolverStatus_t gesvdj(cusolverDnHandle_t h, int m, int n, float* a, float* s, float* u,
                               float* v, float* work, int lwork, int* info, gesvdjInfo_t p) {
  return cusolverDnSgesvdj(h, CUSOLVER_EIG_MODE_VECTOR, 1, m, n, a, m, s, u, m, v, n, work, lwork,
                           info, p);
}

inline cusolverStatus_t gesvdj_batched_buffer(cusolverDnHandle_t h, int m, int n, const double* a,
                                              const double* s, const double* u, const double* v,
                                              int* lwork, gesvdjInfo_t p, int batch) {
  return cusolverDnDgesvdjBatched_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, m, n, a, m, s, u, m, v, n,
                                             lwork, p, batch);
}
inline cusolverStatus_t gesvdj_batched_buffer(cusolverDnHandle_t h, int m, int n, const float* a,
                                              const float* s, const float* u, const float* v,
                                              int* lwork, gesvdjInfo_t p, int batch) {
  return cusolverDnSgesvdjBatched_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, m, n, a, m, s, u, m, v, n,
                                             lwork, p, batch);
}
inline cusolverStatus_t gesvdj_batched(cusolverDnHandle_t h, int m, int n, double* a, double* s,
                                       double* u, double* v, double* work, int lwork, int* info,
                                       gesvdjInfo_t p, int batch) {
  return cusolverDnDgesvdjBatched(h, CUSOLVER_EIG_MODE_VECTOR, m, n, a, m, s, u, m, v, n, work,
                                  lwork, info, p, batch);
}
inline cusolverStatus_t gesvdj_batched(cusolverDnHandle_t h, int m, int n, float* a, float* s,
                                       float* u, float* v, float* work, int lwork, int* info,
                                       gesvdjInfo_t p, int batch) {
  return cusolverDnSgesvdjBatched(h, CUSOLVER_EIG_MODE_VECTOR, m, n, a, m, s, u, m, v, n, work,
                                  lwork, info, p, batch);
}

// gesvdaStridedBatched's `rank` leading triplets (rank <= min(m, n)): S
// rank values a matrix at a stride of min(m, n), U m x rank and V n x rank,
// each matrix's columns after the previous one's.
inline cusolverStatus_t gesvda_buffer(cusolverDnHandle_t h, int m, int n, int rank, const double* a,
                                      const double* s, const double* u, const double* v, int* lwork,
                                      int batch) {
  const int k = std::min(m, n);
  return cusolverDnDgesvdaStridedBatched_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, rank, m, n, a, m,
                                                    long(m) * n, s, k, u, m, long(m) * rank, v, n,
                                                    long(n) * rank, lwork, batch);
}
inline cusolverStatus_t gesvda_buffer(cusolverDnHandle_t h, int m, int n, int rank, const float* a,
                                      const float* s, const float* u, const float* v, int* lwork,
                                      int batch) {
  const int k = std::min(m, n);
  return cusolverDnSgesvdaStridedBatched_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, rank, m, n, a, m,
                                                    long(m) * n, s, k, u, m, long(m) * rank, v, n,
                                                    long(n) * rank, lwork, batch);
}
inline cusolverStatus_t gesvda(cusolverDnHandle_t h, int m, int n, int rank, const double* a,
                               double* s, double* u, double* v, double* work, int lwork, int* info,
                               double* resid, int batch) {
  const int k = std::min(m, n);
  return cusolverDnDgesvdaStridedBatched(h, CUSOLVER_EIG_MODE_VECTOR, rank, m, n, a, m, long(m) * n,
                                         s, k, u, m, long(m) * rank, v, n, long(n) * rank, work,
                                         lwork, info, resid, batch);
}
inline cusolverStatus_t gesvda(cusolverDnHandle_t h, int m, int n, int rank, const float* a,
                               float* s, float* u, float* v, float* work, int lwork, int* info,
                               double* resid, int batch) {
  const int k = std::min(m, n);
  return cusolverDnSgesvdaStridedBatched(h, CUSOLVER_EIG_MODE_VECTOR, rank, m, n, a, m, long(m) * n,
                                         s, k, u, m, long(m) * rank, v, n, long(n) * rank, work,
                                         lwork, info, resid, batch);
}

}  // namespace kwsvd::bench
#endif
