#pragma once
// Where one matrix of a batch lives and where its results go, as pointers and
// strides: the common currency of the uniform form (matrix b found from
// matrix 0 and batch strides) and the variable-size form (one slot per
// matrix, gathered on the host from the caller's Views or pointer arrays).
// Kernels read slots through an accessor, so one kernel body serves both.

#include <cstddef>

#include <Kokkos_Core.hpp>

#include "kwsvd/api/options.hpp"
#include "kwsvd/impl/strided_matrix.hpp"

namespace kwsvd::Impl {

/// Input, outputs and info of one matrix.
template <class Scalar>
struct MatrixSlot {
  StridedMatrix<const Scalar> a;  ///< m x n input (left unchanged)
  Scalar* s = nullptr;            ///< s_count singular values
  std::ptrdiff_t s_stride = 1;
  int s_count = 0;  ///< k = min(m, n), or the leading r < k of them (SvdOptions::rank)
  /// m x k and n x k (data null: not computed); their leading r columns
  /// under SvdOptions::rank, m x m and n x n under full_matrices.
  StridedMatrix<Scalar> u, v;
  SvdInfo* info = nullptr;
};

/// The side of a slot whose columns are its working matrix's left vectors:
/// U, or V for a matrix worked on as its transpose (a wide one).
template <class Scalar>
KOKKOS_INLINE_FUNCTION StridedMatrix<Scalar> working_left_side(const MatrixSlot<Scalar>& slot,
                                                               bool transposed) {
  return transposed ? slot.v : slot.u;
}

/// Whether two slots name the same storage, shapes and strides (host code:
/// a reused handle compares the slots of a call with those it last uploaded).
template <class T>
bool same_matrix(const StridedMatrix<T>& x, const StridedMatrix<T>& y) {
  return x.data == y.data && x.rows == y.rows && x.cols == y.cols && x.row_stride == y.row_stride &&
         x.col_stride == y.col_stride;
}
template <class Scalar>
bool same_slot(const MatrixSlot<Scalar>& x, const MatrixSlot<Scalar>& y) {
  return same_matrix(x.a, y.a) && x.s == y.s && x.s_stride == y.s_stride &&
         x.s_count == y.s_count && same_matrix(x.u, y.u) && same_matrix(x.v, y.v) &&
         x.info == y.info;
}

/// Slots of a uniform batch: matrix b at a fixed batch stride from matrix 0.
template <class Scalar>
struct UniformSlots {
  MatrixSlot<Scalar> first;
  std::ptrdiff_t a_batch = 0, s_batch = 0, u_batch = 0, v_batch = 0;
  std::ptrdiff_t info_batch = 1;  ///< a strided info View's (a column of a 2-D one, say)
  KOKKOS_INLINE_FUNCTION MatrixSlot<Scalar> operator()(int b) const {
    MatrixSlot<Scalar> slot = first;
    slot.a.data += b * a_batch;
    slot.s += b * s_batch;
    if (slot.u.data != nullptr)
      slot.u.data += b * u_batch;
    if (slot.v.data != nullptr)
      slot.v.data += b * v_batch;
    slot.info += b * info_batch;
    return slot;
  }
  /// The slots of the matrices from b on (host or device: only addresses
  /// are computed).
  KOKKOS_INLINE_FUNCTION UniformSlots from(int b) const {
    UniformSlots rest = *this;
    rest.first = (*this)(b);
    return rest;
  }
};

/// Slots of a variable-size batch: a device array, read through a device
/// index list (a group's matrices among the batch's).
template <class Scalar>
struct IndexedSlots {
  const MatrixSlot<Scalar>* slots = nullptr;
  const int* index = nullptr;
  KOKKOS_INLINE_FUNCTION MatrixSlot<Scalar> operator()(int b) const { return slots[index[b]]; }
};

/// info = {0 sweeps, converged, finite} for the matrices of a call that
/// have no singular values: info[b stride] for every b < batch (a uniform
/// batch), or the `count` matrices of `slots` (a variable one).
template <class ExecSpace>
void report_converged(const ExecSpace& exec, SvdInfo* info, std::ptrdiff_t stride,
                      std::size_t batch) {
  Kokkos::parallel_for(
      "kwsvd::batched_svd_empty", Kokkos::RangePolicy<ExecSpace>(exec, 0, batch),
      KOKKOS_LAMBDA(const std::size_t b) {
        info[std::ptrdiff_t(b) * stride] = SvdInfo{0, 1, 0};
      });
}
template <class ExecSpace, class Scalar>
void report_converged(const ExecSpace& exec, const IndexedSlots<Scalar>& slots, int count) {
  if (count == 0)
    return;
  Kokkos::parallel_for(
      "kwsvd::batched_svd_empty", Kokkos::RangePolicy<ExecSpace>(exec, 0, count),
      KOKKOS_LAMBDA(const int t) {
        *slots(t).info = SvdInfo{0, 1, 0};
      });
}

/// The uniform slots of rank-3 Views A, U, V, rank-2 S and rank-1 info; U
/// and V only where `job` computes them.
template <class Scalar, class AView, class SView, class UView, class VView, class InfoView>
UniformSlots<Scalar> uniform_slots(const AView& A, const SView& S, const UView& U, const VView& V,
                                   const InfoView& info, Job job) {
  UniformSlots<Scalar> s;
  s.first.a = matrix_of<const Scalar>(A, 0);
  s.first.s = S.data();
  s.first.s_stride = std::ptrdiff_t(S.stride(1));
  s.first.s_count = int(S.extent(1));
  s.first.info = info.data();
  s.info_batch = std::ptrdiff_t(info.stride(0));
  s.a_batch = std::ptrdiff_t(A.stride(0));
  s.s_batch = std::ptrdiff_t(S.stride(0));
  if (job_writes_u(job)) {
    s.first.u = matrix_of<Scalar>(U, 0);
    s.u_batch = std::ptrdiff_t(U.stride(0));
  }
  if (job_writes_v(job)) {
    s.first.v = matrix_of<Scalar>(V, 0);
    s.v_batch = std::ptrdiff_t(V.stride(0));
  }
  return s;
}

}  // namespace kwsvd::Impl
