#pragma once
// Whether two arrays an entry point is given share storage. The kernels read
// A (or B) while other teams write S, U, V, info; an output that overlaps the
// input or another output gives wrong results and no error, so the public
// entry points check on the host, from pointers, extents and strides alone
// (the entries are never read).
//
// An array is described as equally spaced records: a batch of matrices is
// one record per matrix, a column-major matrix one record per column. The
// test is exact for two such progressions: in O(1) for one spacing, and
// record by record for different spacings (up to max_records_compared
// records, past which it reports an overlap).

#include <algorithm>
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

/// floor(a / b) for b > 0 (C++ division truncates toward zero).
inline long long floor_quotient(long long a, long long b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/// Whether the byte range [first, first + length) shares a byte with some
/// record of y.
inline bool range_overlaps(std::uintptr_t first, std::size_t length, const StorageRuns& y) {
  if (length == 0 || y.empty() || first + length <= y.first || y.end() <= first)
    return false;
  if (y.count == 1 || y.stride == 0)
    return true;  // y is one record (or its records coincide): the spans meet
  // Record d of y meets the range when d stride > first - y.first - y.length
  // and y.first + d stride < first + length: take the smallest such d above
  // the lower bound and see whether it is below the upper one.
  using Signed = long long;
  const Signed stride = Signed(y.stride);
  const Signed low = Signed(first) - Signed(y.first) - Signed(y.length);
  const Signed d = std::max<Signed>(floor_quotient(low, stride) + 1, 0);
  return d <= Signed(y.count) - 1 && Signed(y.first) + d * stride < Signed(first) + Signed(length);
}

/// Records of one run compared one by one with another run at most: beyond,
/// storage_overlaps reports an overlap without looking further.
constexpr std::size_t max_records_compared = std::size_t(1) << 16;

/// Whether some record of x and some record of y share a byte. Exact for any
/// two runs, except that runs of different spacings whose spans meet over
/// more than max_records_compared records of both are reported as
/// overlapping (the conservative side).
inline bool storage_overlaps(const StorageRuns& x, const StorageRuns& y) {
  if (x.empty() || y.empty() || x.end() <= y.first || y.end() <= x.first)
    return false;
  using Signed = long long;
  if (x.stride == y.stride && x.stride != 0) {
    // Records b of x and d of y meet when -x.length < delta + j stride <
    // y.length with delta = x.first - y.first and j = b - d in
    // [-(y.count - 1), x.count - 1]: take the smallest j above the lower
    // bound and see whether it is below the upper one.
    const Signed stride = Signed(x.stride);
    const Signed delta = Signed(x.first) - Signed(y.first);
    const Signed low = -Signed(x.length) - delta;  // j stride > low
    const Signed j = std::max<Signed>(floor_quotient(low, stride) + 1, -(Signed(y.count) - 1));
    return j <= Signed(x.count) - 1 && delta + j * stride < Signed(y.length);
  }
  // Different spacings: each record of p that lies within q's span against
  // q, p the run with fewer records there.
  const auto within = [](const StorageRuns& p, const StorageRuns& q, Signed& lo, Signed& hi) {
    if (p.count == 1 || p.stride == 0) {
      lo = hi = 0;
      return;
    }
    const Signed stride = Signed(p.stride);
    // The first record ending past q.first, the last beginning before q.end().
    const Signed low = Signed(q.first) - Signed(p.first) - Signed(p.length);  // r stride > low
    lo = std::max<Signed>(floor_quotient(low, stride) + 1, 0);
    hi = std::min<Signed>((Signed(q.end()) - 1 - Signed(p.first)) / stride, Signed(p.count) - 1);
  };
  Signed x_lo, x_hi, y_lo, y_hi;
  within(x, y, x_lo, x_hi);
  within(y, x, y_lo, y_hi);
  const bool x_fewer = x_hi - x_lo <= y_hi - y_lo;
  const StorageRuns& p = x_fewer ? x : y;
  const StorageRuns& q = x_fewer ? y : x;
  const Signed lo = x_fewer ? x_lo : y_lo, hi = x_fewer ? x_hi : y_hi;
  if (hi - lo + 1 > Signed(max_records_compared))
    return true;
  for (Signed r = lo; r <= hi; ++r)
    if (range_overlaps(p.first + std::uintptr_t(r) * p.stride, p.length, q))
      return true;
  return false;
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
