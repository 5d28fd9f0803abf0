#pragma once
// The layer below the Views: a matrix as pointer + extents + strides, so that
// LayoutLeft, LayoutRight and LayoutStride batches share one kernel body.

#include <cstddef>

#include <Kokkos_Macros.hpp>

namespace kwsvd::Impl {

/// A strided rows x cols matrix: entry (i, j) at data[i * row_stride + j * col_stride].
template <class Scalar>
struct StridedMatrix {
  Scalar* data = nullptr;
  int rows = 0, cols = 0;
  std::ptrdiff_t row_stride = 0, col_stride = 0;
  KOKKOS_INLINE_FUNCTION Scalar& operator()(int i, int j) const {
    return data[i * row_stride + j * col_stride];
  }
};

/// Matrix b of a rank-3 View (batch, rows, cols).
template <class Scalar, class View>
KOKKOS_INLINE_FUNCTION StridedMatrix<Scalar> matrix_of(const View& v, int b) {
  return {v.data() + b * static_cast<std::ptrdiff_t>(v.stride(0)), static_cast<int>(v.extent(1)),
          static_cast<int>(v.extent(2)), static_cast<std::ptrdiff_t>(v.stride(1)),
          static_cast<std::ptrdiff_t>(v.stride(2))};
}

}  // namespace kwsvd::Impl
