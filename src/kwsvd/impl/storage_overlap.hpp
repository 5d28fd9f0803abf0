#pragma once
// Whether two arrays an entry point is given share storage. The kernels read
// A (or B) while other teams write S, U, V, info; an output that overlaps the
// input or another output gives wrong results and no error, so the public
// entry points check on the host, from pointers, extents and strides alone
// (the entries are never read).
//
// An array is described as equally spaced records: a batch of matrices is
// one record per matrix, a column-major matrix one record per column. The
// test is exact for two such progressions with the same spacing and
// conservative otherwise (it reports an overlap whenever the whole spans
// meet), so storage that interleaves records of different spacings is
// refused even where no entry is shared.

#include <cstddef>
#include <cstdint>

namespace kwsvd::Impl {

/// `count` records of `length` bytes, record r at first + r * stride.
struct StorageRuns {
  std::uintptr_t first = 0;
  std::size_t stride = 0;  ///< bytes between records
  std::size_t length = 0;  ///< bytes a record covers (0: no storage)
  std::size_t count = 0;
  /// One past the last byte of the last record.
  std::uintptr_t end() const { return first + (count - 1) * stride + length; }
  bool empty() const { return count == 0 || length == 0; }
};

/// The runs of a View with one record per index of its first extent (a
/// batch's matrices, or a matrix's rows): a record covers the entries its
/// other extents reach through their strides (rank 1: one entry).
template <class View>
StorageRuns batch_storage_runs(const View& v) {
  constexpr std::size_t bytes = sizeof(typename View::value_type);
  StorageRuns r;
  r.first = reinterpret_cast<std::uintptr_t>(v.data());
  r.count = v.extent(0);
  r.stride = std::size_t(v.stride(0)) * bytes;
  std::size_t last = 0;  // offset of the record's last entry, in entries
  for (unsigned d = 1; d < View::rank; ++d) {
    if (v.extent(d) == 0)
      return StorageRuns{};
    last += (v.extent(d) - 1) * std::size_t(v.stride(d));
  }
  r.length = (last + 1) * bytes;
  return r;
}

/// Whether some record of x and some record of y share a byte.
inline bool storage_overlaps(const StorageRuns& x, const StorageRuns& y) {
  if (x.empty() || y.empty() || x.end() <= y.first || y.end() <= x.first)
    return false;
  if (x.stride != y.stride || x.stride == 0 || (x.count == 1 && y.count == 1))
    return true;  // the spans meet (exact for single records)
  // Records b of x and d of y meet when -x.length < delta + j stride <
  // y.length with delta = x.first - y.first and j = b - d in
  // [-(y.count - 1), x.count - 1]: take the smallest j above the lower
  // bound and see whether it is below the upper one.
  using Signed = long long;
  const Signed stride = Signed(x.stride);
  const Signed delta = Signed(x.first) - Signed(y.first);
  const Signed low = -Signed(x.length) - delta;  // j stride > low
  const Signed floor_quotient = low >= 0 ? low / stride : -((-low + stride - 1) / stride);
  Signed j = floor_quotient + 1;
  if (j < -(Signed(y.count) - 1))
    j = -(Signed(y.count) - 1);
  return j <= Signed(x.count) - 1 && delta + j * stride < Signed(y.length);
}

/// The columns (or, for a row-major matrix, the rows) of a rows x cols
/// strided matrix as runs; a general strided matrix as one record over its
/// span.
template <class T>
StorageRuns matrix_storage_runs(const T* data, int rows, int cols, std::ptrdiff_t row_stride,
                                std::ptrdiff_t col_stride) {
  StorageRuns r;
  if (data == nullptr || rows <= 0 || cols <= 0)
    return r;
  const std::size_t bytes = sizeof(T);
  r.first = reinterpret_cast<std::uintptr_t>(data);
  if (row_stride == 1 || rows == 1) {  // columns of rows contiguous entries
    r.count = std::size_t(cols);
    r.stride = std::size_t(col_stride) * bytes;
    r.length = std::size_t(rows) * bytes;
  } else if (col_stride == 1 || cols == 1) {  // rows of cols contiguous entries
    r.count = std::size_t(rows);
    r.stride = std::size_t(row_stride) * bytes;
    r.length = std::size_t(cols) * bytes;
  } else {
    r.count = 1;
    r.length = (std::size_t(rows - 1) * std::size_t(row_stride) +
                std::size_t(cols - 1) * std::size_t(col_stride) + 1) *
               bytes;
  }
  return r;
}

}  // namespace kwsvd::Impl
