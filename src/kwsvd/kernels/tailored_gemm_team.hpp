#pragma once
// Team-level bodies of the two batched GEMMs of every W-cycle level (W-cycle
// paper §IV-D, Fig. 6): the Gram B_ij = A_ij^T A_ij of a column-block pair
// and the update [A_i A_j] <- [A_i A_j] J_ij, both tailored: a pair's m rows
// are cut into plates of delta rows and each team works on one plate (or on
// several residual plates packed together, see scheduler/tailored_gemm.hpp),
// so a batch of few tall pairs still fills the GPU.
//
// Both read the two column blocks in place from the matrix through strides
// (LayoutLeft or LayoutRight, no packing copy). A team streams its plate
// through level-0 scratch in chunks of rows, sized on the host from the
// run-time scratch limit. Each team reads its rows of A_i and A_j once; the
// update applies both halves of J to them (seed 002 Design-3, the fused
// update), and a per-matrix mask lets converged matrices skip (Design-4).
//
// Register tiling: every thread owns a 4 x 4 block of the output (4 x 8 for
// the double Gram of w >= 24 and the float update of batches that fill the
// GPU: gram_wide_item_cols, update_wide_item_cols). A Gram thread keeps its
// block of B in registers for the whole plate (one store per plate, no
// per-chunk reduction); an update thread computes 4 rows x 4 columns of
// [A_i A_j] J from X and J in scratch. Tile rows are read with
// 16-byte loads (Packed16). On the H200 this took one sweep's GEMMs of 100
// matrices of 512^2 (double) from 23.1 to 13.3 ms (perf_tests/notes).
//
// On GPUs the Gram is software-pipelined: each thread loads its entries of
// the next chunk into registers before computing on the current one, chunks
// alternate between two scratch buffers (one barrier per chunk), and a
// task of one plate has its B written by the team itself. With chunk rows
// laid out against bank conflicts this took the Gram of 1000 pairs of
// 512 x 48 (double) from 0.278 to 0.170 ms, and one sweep's GEMMs of 100
// matrices of 512^2 to 11.0 ms.

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kwsvd/impl/index_math.hpp"
#include "kwsvd/impl/kokkos_compat.hpp"

namespace kwsvd::Impl {

/// One column-block pair [A_i A_j] of one matrix: entry (r, c) of the matrix
/// is data[r * row_stride + c * col_stride]. Blocks are w columns wide except
/// possibly the last block of a matrix; the pair is treated as m x 2w with
/// the missing columns zero (their Gram rows and columns are zero and the
/// EVD leaves them alone).
template <class Scalar>
struct BlockPairTask {
  Scalar* data = nullptr;
  std::ptrdiff_t row_stride = 0, col_stride = 0;
  int rows = 0;
  int col_i = 0, col_j = 0;      ///< first matrix column of blocks i and j
  int width_i = 0, width_j = 0;  ///< their widths, <= w
  int matrix = 0;                ///< index into the mask
  int pair = 0;                  ///< index of the pair's Gram B and rotation J (A and V share it)

  /// Matrix column of pair column c (0 <= c < 2w), or -1 for a zero column.
  KOKKOS_INLINE_FUNCTION int column(int c, int w) const {
    if (c < w)
      return c < width_i ? col_i + c : -1;
    return c - w < width_j ? col_j + (c - w) : -1;
  }
};

/// A run of rows of one task that one team processes: a standard plate (up
/// to 1.2 delta rows where a short residual joined it), or one residual
/// plate among those packed into a team.
struct PlateSegment {
  int task = 0;
  int row_begin = 0;
  int rows = 0;
  int partial = 0;  ///< global slot of this plate's partial Gram
};

/// 4 x 4 tiles: each Gram work item accumulates a 4 x 4 block of B per row,
/// 8 scratch loads for 16 FMAs (the arithmetic intensity of eq. 9).
constexpr int gemm_tile = 4;

/// A Gram work item's block of B: 4 rows x Cols columns (Cols = 4: one
/// tile; 8: two tiles side by side, gram_item_position).
template <class Scalar, int Cols = gemm_tile>
struct GramTile {
  Scalar v[gemm_tile * Cols];
  KOKKOS_INLINE_FUNCTION GramTile() {
    for (int k = 0; k < gemm_tile * Cols; ++k)
      v[k] = Scalar(0);
  }
};

/// Number of 4 x 4 tiles in the upper triangle of a (2w) x (2w) Gram.
KOKKOS_INLINE_FUNCTION constexpr int gram_upper_tiles(int w) {
  return (2 * w / gemm_tile) * (2 * w / gemm_tile + 1) / 2;
}

/// The largest k >= 0 with k (k + 1) / 2 <= p (p >= 0): the root of
/// 8p + 1 in float, then one step of correction either way for its
/// rounding. A loop over k took up to 2w / 4 steps, and the Gram threads ran
/// it for every entry they stored: at 2w = 96, 16 calls of up to 24 steps
/// against 128 rows of 4 x 4 products of a plate of 128 rows.
KOKKOS_INLINE_FUNCTION int triangular_root(int p) {
  const float x = float(8 * p + 1);
  int k = int((x * reciprocal_sqrt(x) - 1.0f) * 0.5f);
  if ((k + 1) * (k + 2) / 2 <= p)
    ++k;
  if (k * (k + 1) / 2 > p)
    --k;
  return k;
}

/// Tile row P <= tile column Q of upper tile p (column by column).
KOKKOS_INLINE_FUNCTION void gram_tile_position(int p, int& P, int& Q) {
  Q = triangular_root(p);
  P = p - Q * (Q + 1) / 2;
}

/// Upper tile p of tile row P <= tile column Q: gram_tile_position's
/// inverse.
KOKKOS_INLINE_FUNCTION constexpr int gram_tile_index(int P, int Q) {
  return Q * (Q + 1) / 2 + P;
}

/// Gram work items of 4 x item_cols (4 or 8) that cover the upper triangle
/// of a (2w) x (2w) Gram: its upper 4 x 4 tiles, or, for 8, the pairs of
/// tile columns 2q, 2q + 1 with the 2q + 2 tile rows that reach the upper
/// triangle (the item on the diagonal also computes one tile below it).
/// 8 needs 2w to be a multiple of 8.
KOKKOS_INLINE_FUNCTION constexpr int gram_upper_items(int w, int item_cols) {
  return item_cols == gemm_tile ? gram_upper_tiles(w)
                                : (2 * w / item_cols) * (2 * w / item_cols + 1);
}

/// Columns of a wide GPU Gram item: 8 in double, whose 4 x 4 tile row is two
/// 16-byte loads, so a 4 x 8 item reads 6 pieces for 32 FMAs against 4 for
/// 16. Float keeps 4 x 4: on the H200 its 4 x 8 items were slower at every
/// m = 128 and 512 shape of 1000 pairs (+2 to +35%), faster only at
/// 2048 x 48 and 2048 x 96 (-6.7 / -3.3%).
template <class Scalar>
KOKKOS_INLINE_FUNCTION constexpr int gram_wide_item_cols() {
  return sizeof(Scalar) > 4 ? 2 * gemm_tile : gemm_tile;
}

/// Tile row P and first tile column Q of Gram item i (gram_upper_items),
/// column by column.
template <int ItemCols>
KOKKOS_INLINE_FUNCTION void gram_item_position(int i, int& P, int& Q) {
  if constexpr (ItemCols == gemm_tile) {
    gram_tile_position(i, P, Q);
  } else {
    static_assert(ItemCols == 2 * gemm_tile);
    // q (q + 1) <= i < (q + 1) (q + 2): q (q + 1) / 2 <= i / 2.
    const int q = triangular_root(i / 2);
    P = i - q * (q + 1);
    Q = 2 * q;
  }
}

/// The flat order in which a team walks the rows x 2w entries of a task:
/// along the matrix's smaller stride, so that neighbouring lanes touch
/// neighbouring memory. The flat index splits by a float reciprocal
/// (index_math.hpp): integer division would cost more than the copy itself.
struct PairEntryWalk {
  bool rows_fastest;
  int d;  // extent of the fastest index
  float inv_d;
  int total;

  template <class Scalar>
  KOKKOS_INLINE_FUNCTION PairEntryWalk(const BlockPairTask<Scalar>& t, int w, int rows)
      : rows_fastest(t.row_stride <= t.col_stride),
        d(rows_fastest ? rows : 2 * w),
        inv_d(1.0f / float(d)),
        total(rows * 2 * w) {}

  /// Row r and pair column c of flat entry e < total.
  KOKKOS_INLINE_FUNCTION void entry(int e, int& r, int& c) const {
    const int q = quotient(e, d, inv_d), rem = e - q * d;
    r = rows_fastest ? rem : q;
    c = rows_fastest ? q : rem;
  }
};

/// Calls f(r, c, col) for every row r < rows and pair column c < 2w of the
/// task (col: the matrix column, -1 for a missing one), in PairEntryWalk
/// order.
template <class Member, class Scalar, class F>
KOKKOS_INLINE_FUNCTION void for_pair_entries(const Member& member, const BlockPairTask<Scalar>& t,
                                             int w, int rows, const F& f) {
  const PairEntryWalk walk(t, w, rows);
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, walk.total), [&](const int e) {
    int r, c;
    walk.entry(e, r, c);
    f(r, c, t.column(c, w));
  });
}

/// Entries each lane of load_pair_entries has in flight by default: a chunk
/// load is bound by memory latency, and a lane that issued one load at a
/// time (load, store, next) kept a multiprocessor's memory pipe mostly idle.
/// 4 is what the double kernels hold without spilling at their register cap;
/// the float update takes more (update_load_batch).
constexpr int pair_load_batch = 4;

/// Slice b (of `slices`) of a batched copy of `count` entries into scratch
/// X: the lane first loads entries b, b + slices, ... (Batch of them; a
/// warp's loads of one round stay contiguous), then stores them. Loaded and
/// stored one at a time, every load would wait for the previous store (X
/// may alias the source for the compiler): one memory round trip per entry.
/// entry(e, v, dst) loads entry e into v and sets dst to its place in X.
template <int Batch, class Scalar, class Entry>
KOKKOS_INLINE_FUNCTION void copy_slice_to_scratch(int b, int slices, int count, Scalar* X,
                                                  const Entry& entry) {
  Scalar v[Batch];
  int dst[Batch];
  KWSVD_UNROLL
  for (int u = 0; u < Batch; ++u) {
    const int e = b + u * slices;
    dst[u] = -1;
    if (e < count)
      entry(e, v[u], dst[u]);
  }
  KWSVD_UNROLL
  for (int u = 0; u < Batch; ++u)
    if (dst[u] >= 0)
      X[dst[u]] = v[u];
}

/// X[at(r, c)] = entry (r0 + r, c) of the task for r < rows, c < 2w (zero
/// for missing columns), in PairEntryWalk order, Batch entries in flight a
/// lane (copy_slice_to_scratch).
template <int Batch = pair_load_batch, class Member, class Scalar, class Index>
KOKKOS_INLINE_FUNCTION void load_pair_entries(const Member& member, const BlockPairTask<Scalar>& t,
                                              int w, int r0, int rows, Scalar* X, const Index& at) {
  const PairEntryWalk walk(t, w, rows);
  const int slices = (walk.total + Batch - 1) / Batch;
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, slices), [&](const int b) {
    copy_slice_to_scratch<Batch>(b, slices, walk.total, X, [&](const int e, Scalar& v, int& dst) {
      int r, c;
      walk.entry(e, r, c);
      const int col = t.column(c, w);
      dst = at(r, c);
      v = col >= 0 ? t.data[(r0 + r) * t.row_stride + col * t.col_stride] : Scalar(0);
    });
  });
}

/// Copies rows [r0, r0 + rows) of the task's 2w columns into scratch X,
/// column-major with leading dimension `rows` (zero for missing columns).
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void load_pair_rows(const Member& member, const BlockPairTask<Scalar>& t,
                                           int w, int r0, int rows, Scalar* X) {
  load_pair_entries(member, t, w, r0, rows, X,
                    [&](const int r, const int c) { return r + rows * c; });
}

/// 16 bytes of scalars, the widest load a GPU thread issues in one
/// instruction: a tile row of 4 comes in one (float) or two (double) loads
/// instead of four, which halves or quarters the shared-memory instructions
/// of the GEMMs' inner loops.
template <class Scalar>
struct alignas(16) Packed16 {
  Scalar v[16 / sizeof(Scalar)];
};

/// Scalars to request so that a window can start at the next 16-byte
/// boundary (align16) and still hold n.
template <class Scalar>
KOKKOS_INLINE_FUNCTION constexpr std::size_t aligned16_extent(std::size_t n) {
  return n + 16 / sizeof(Scalar);
}

/// p advanced to the next 16-byte boundary. Pointer arithmetic on p itself
/// (not a cast back from an integer), so that the compiler still knows p
/// points into shared memory and emits shared-memory loads.
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar* align16(Scalar* p) {
  const int offset = int((16 - (reinterpret_cast<std::uintptr_t>(p) & 15)) & 15);
  return p + offset / int(sizeof(Scalar));
}

/// out[0..3] = p[0..3], p 16-byte aligned.
template <class Scalar>
KOKKOS_INLINE_FUNCTION void load_tile_row(const Scalar* p, Scalar (&out)[gemm_tile]) {
  constexpr int per = int(16 / sizeof(Scalar));
  const Packed16<Scalar>* q = reinterpret_cast<const Packed16<Scalar>*>(p);
  KWSVD_UNROLL
  for (int h = 0; h < gemm_tile / per; ++h) {
    const Packed16<Scalar> v = q[h];
    KWSVD_UNROLL
    for (int k = 0; k < per; ++k)
      out[h * per + k] = v.v[k];
  }
}

/// 16-byte pieces of a 4-entry tile row: 2 in double, 1 in float.
template <class Scalar>
KOKKOS_INLINE_FUNCTION constexpr int tile_row_pieces() {
  return int(gemm_tile * sizeof(Scalar) / 16);
}

/// Leading dimension of a Gram chunk row in scratch, in scalars: a multiple
/// of 16 bytes (every piece of a tile row aligned) chosen against bank
/// conflicts when a warp stores consecutive rows of one column: 2w + 2 in
/// double (rows 16 bytes apart modulo 32 banks: 4 wavefronts a store
/// instead of 8 with 2w + 4), 2w + 4 in float.
template <class Scalar>
KOKKOS_INLINE_FUNCTION constexpr int gram_chunk_ld(int w) {
  return 2 * w + (sizeof(Scalar) > 4 ? 2 : gemm_tile);
}

/// Where pair column c = 4 P + j sits in a Gram chunk row: piece
/// k = j / (4 / pieces) of every tile row in one contiguous run, tile row P
/// at 16 P bytes within it. A warp's threads load the same piece of
/// different tile rows, so their 16-byte loads fall in consecutive banks
/// (in double, tile rows 32 bytes apart made 2- to 6-way bank conflicts:
/// 5.9 wavefronts a load on the H200). In float a row is in natural order.
template <class Scalar>
KOKKOS_INLINE_FUNCTION int gram_chunk_position(int c, int w) {
  constexpr int pieces = tile_row_pieces<Scalar>(), per = gemm_tile / pieces;
  const int P = c / gemm_tile, j = c - P * gemm_tile;
  return (j / per) * (2 * w / gemm_tile) * per + P * per + (j % per);
}

/// Copies rows [r0, r0 + rows) of the task's 2w columns into scratch X for
/// the Gram: row r at X + r * gram_chunk_ld(w), columns at
/// gram_chunk_position, so a tile row comes in one or two vector loads.
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void load_gram_chunk(const Member& member, const BlockPairTask<Scalar>& t,
                                            int w, int r0, int rows, Scalar* X) {
  const int ld = gram_chunk_ld<Scalar>(w);
  load_pair_entries(member, t, w, r0, rows, X, [&](const int r, const int c) {
    return r * ld + gram_chunk_position<Scalar>(c, w);
  });
}

/// out = tile row P of a Gram chunk row at `row` (laid out by
/// gram_chunk_position): one 16-byte load per piece.
template <class Scalar>
KOKKOS_INLINE_FUNCTION void load_gram_tile_row(const Scalar* row, int w, int P,
                                               Scalar (&out)[gemm_tile]) {
  constexpr int pieces = tile_row_pieces<Scalar>(), per = gemm_tile / pieces;
  const int stride = (2 * w / gemm_tile) * per;
  KWSVD_UNROLL
  for (int k = 0; k < pieces; ++k) {
    const Packed16<Scalar> v =
        *reinterpret_cast<const Packed16<Scalar>*>(row + k * stride + P * per);
    KWSVD_UNROLL
    for (int i = 0; i < per; ++i)
      out[k * per + i] = v.v[i];
  }
}

/// acc += X(rows [r_begin, r_end), tile row P)^T X(same rows, tile rows
/// Q .. Q + Cols / 4 - 1) on a chunk laid out by load_gram_chunk: 16 FMAs
/// per two tile-row loads (Cols = 4), 32 per three (Cols = 8).
template <class Scalar, int Cols>
KOKKOS_INLINE_FUNCTION void gram_tile_rows(const Scalar* X, int w, int P, int Q, int r_begin,
                                           int r_end, GramTile<Scalar, Cols>& acc) {
  constexpr int tiles = Cols / gemm_tile;
  const int ld = gram_chunk_ld<Scalar>(w);
  const Scalar* x = X + r_begin * ld;
  for (int r = r_begin; r < r_end; ++r, x += ld) {
    Scalar a[gemm_tile], b[tiles][gemm_tile];
    load_gram_tile_row(x, w, P, a);
    KWSVD_UNROLL
    for (int h = 0; h < tiles; ++h)
      load_gram_tile_row(x, w, Q + h, b[h]);
    KWSVD_UNROLL
    for (int i = 0; i < gemm_tile; ++i)
      KWSVD_UNROLL
    for (int h = 0; h < tiles; ++h)
      KWSVD_UNROLL
    for (int j = 0; j < gemm_tile; ++j)
      acc.v[i * Cols + h * gemm_tile + j] += a[i] * b[h][j];
  }
}

/// The partial Gram of one plate segment on a host backend, whose teams are
/// small: the team's threads take the upper 4 x 4 tiles in turn, each over
/// all rows of a chunk, and accumulate them in `partial` (the plate's slot:
/// tile p at partial + 16 p).
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void gram_plate_team_in_memory(const Member& member,
                                                      const BlockPairTask<Scalar>& t,
                                                      const PlateSegment& seg, int w,
                                                      int chunk_rows, Scalar* X, Scalar* partial) {
  constexpr int tile_size = gemm_tile * gemm_tile;
  const int tiles = gram_upper_tiles(w);
  for (int c0 = 0; c0 < seg.rows; c0 += chunk_rows) {
    const int rows = seg.rows - c0 < chunk_rows ? seg.rows - c0 : chunk_rows;
    member.team_barrier();  // the previous chunk is consumed
    load_gram_chunk(member, t, w, seg.row_begin + c0, rows, X);
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, tiles), [&](const int p) {
      int P, Q;
      gram_tile_position(p, P, Q);
      GramTile<Scalar> acc;
      gram_tile_rows(X, w, P, Q, 0, rows, acc);
      Scalar* out = partial + std::size_t(p) * tile_size;
      for (int k = 0; k < tile_size; ++k)
        out[k] = c0 == 0 ? acc.v[k] : out[k] + acc.v[k];
    });
  }
}

/// Bytes of a chunk each GPU Gram thread carries from memory to scratch per
/// chunk (4 doubles, 8 floats): enough loads in flight per multiprocessor to
/// cover memory latency, few enough registers to keep several teams per
/// multiprocessor.
constexpr int gram_prefetch_bytes = 32;

/// The same for a thread of wide items (gram_wide_item_cols: 4 x 8, double),
/// whose teams have half the threads: 48 bytes (6 doubles) give its chunks
/// 1.5 times the rows, which its 128 registers hold without spilling
/// (ptxas; 64 bytes spill 36). H200, 1000 pairs, double: w = 24, 32, 48 at
/// m = 512 and 2048 2.7 to 9.0% faster (512 x 64: 242.0 -> 221.5 us), at
/// m = 128 1.6 to 4.3%; float's column-run kernel at 48 bytes was mixed,
/// up to 3.6% slower at w = 32 (perf_tests/notes/tailored_gemm.md).
constexpr int gram_wide_prefetch_bytes = 48;

/// Scalars of a chunk each GPU Gram thread carries: items of item_cols
/// columns (4, or gram_wide_item_cols).
template <class Scalar>
KOKKOS_INLINE_FUNCTION constexpr int gram_prefetch_entries(int item_cols = gemm_tile) {
  return int((item_cols == gemm_tile ? gram_prefetch_bytes : gram_wide_prefetch_bytes) /
             sizeof(Scalar));
}

/// Scalars in one 16-byte load.
template <class Scalar>
KOKKOS_INLINE_FUNCTION constexpr int scalars_per_16_bytes() {
  return int(16 / sizeof(Scalar));
}

/// `rows` rounded up to a whole number of `Bytes`-byte runs of scalars.
template <class Scalar, int Bytes>
KOKKOS_INLINE_FUNCTION constexpr int rows_in_whole_bytes(int rows) {
  constexpr int per = int(Bytes / sizeof(Scalar));
  return (rows + per - 1) / per * per;
}

/// `rows` rounded up to whole 16-byte column runs (a multiple of
/// scalars_per_16_bytes).
template <class Scalar>
KOKKOS_INLINE_FUNCTION constexpr int rows_in_whole_runs(int rows) {
  return rows_in_whole_bytes<Scalar, 16>(rows);
}

/// `rows` rounded up to whole 32-byte sectors, the unit global memory is read
/// in: columns that many scalars apart (from an aligned start) each begin a
/// sector, so a run of rows touches no sector more than its bytes need.
template <class Scalar>
KOKKOS_INLINE_FUNCTION constexpr int rows_in_whole_sectors(int rows) {
  return rows_in_whole_bytes<Scalar, 32>(rows);
}

/// The narrowest blocks whose float Gram moves its chunks in column runs
/// (gram_column_runs_fit). w = 8 was left out while a run's rows sat in
/// order in scratch (16-way bank conflicts in the stores: 512 x 8 +16%,
/// 2048 x 8 +32%); since GramChunkPrefetch::store interleaves them (4-way)
/// runs made w = 8 faster too (H200, 1000 pairs, best of two: 128 / 512 /
/// 2048 x 8 -11 / -14 / -20%).
constexpr int gram_column_runs_min_w = 8;

/// Whether a GPU Gram of blocks of width w moves its chunks in column runs
/// where its segments allow (gram_column_runs_fit): float from
/// gram_column_runs_min_w. The launch picks a kernel with or without them
/// (PairGramFunctor's ColumnRuns), so that the others keep their code and
/// registers. Double's 16-byte runs were as fast as its single entries at
/// most shapes and up to 7% slower at w = 8 and 48 (H200, 1000 pairs).
template <class Scalar>
KOKKOS_INLINE_FUNCTION constexpr bool gram_column_runs_wanted(int w) {
  return sizeof(Scalar) <= 4 && w >= gram_column_runs_min_w;
}

/// Rows that the plate heights of a W-cycle level are multiples of
/// (tailoring_candidates' row_align): a 16-byte run's where the Gram moves
/// column runs, so that every plate starts on a run; 1 (the paper's heights)
/// where it does not.
template <class Scalar>
KOKKOS_INLINE_FUNCTION constexpr int gemm_plate_row_align() {
  return gram_column_runs_wanted<Scalar>(gram_column_runs_min_w) ? scalars_per_16_bytes<Scalar>()
                                                                 : 1;
}

/// Whether task t's matrix lets a Gram load its columns in 16-byte runs:
/// column-major, 16-byte aligned columns, offsets within it that fit an
/// int. The scheduler (host) counts the rows of such tasks to pick the
/// kernel (TailoredGemmWork::gram_column_runs).
template <class Scalar>
KOKKOS_INLINE_FUNCTION bool gram_task_allows_column_runs(const BlockPairTask<Scalar>& t) {
  constexpr int per = scalars_per_16_bytes<Scalar>();
  const int last_i = t.col_i + t.width_i, last_j = t.col_j + t.width_j;
  const std::ptrdiff_t extent =
      t.col_stride * std::ptrdiff_t(last_i > last_j ? last_i : last_j) + t.rows;
  return t.row_stride == 1 && t.col_stride % per == 0 &&
         (reinterpret_cast<std::uintptr_t>(t.data) & 15) == 0 && extent < (std::ptrdiff_t(1) << 31);
}

/// Whether a Gram team of `threads` may move segment `seg` of task t in
/// column runs (GramChunkPrefetch): the task allows them, every run of
/// scalars_per_16_bytes rows starts aligned, and a chunk has few enough
/// runs for the threads' prefetch registers.
template <class Scalar>
KOKKOS_INLINE_FUNCTION bool gram_column_runs_fit(const BlockPairTask<Scalar>& t,
                                                 const PlateSegment& seg, int w, int chunk_rows,
                                                 int threads) {
  constexpr int per = scalars_per_16_bytes<Scalar>();
  const int runs = chunk_rows / per * 2 * w;  // whole runs: checked below
  return gram_task_allows_column_runs(t) && seg.row_begin % per == 0 && chunk_rows % per == 0 &&
         runs <= threads * (gram_prefetch_entries<Scalar>() / per);
}

/// The entries of every Gram chunk that one GPU thread moves from memory to
/// scratch. fetch() only issues the loads into registers; store() writes
/// them to scratch later, after the team has computed on the previous
/// chunk, which hides the memory latency behind that work (software
/// pipelining through registers). Positions are computed once per segment:
/// recomputing them at each use (to save the registers) made the Gram 1.3x
/// to 1.7x slower on the H200. Two ways to share out a chunk:
/// - column runs (ColumnRuns, where gram_column_runs_fit): the chunk is
///   cut into runs of scalars_per_16_bytes rows of one column, each one
///   16-byte load, and thread `rank` owns runs rank + u threads
///   (u < runs), numbered down the columns so that a warp's loads stay
///   contiguous. A float m = 128 Gram spent most of its instructions on
///   the per-entry loads and their addresses (ncu: FFMA 13 to 26% of its
///   instructions). Taking columns side by side instead (fewer bank
///   conflicts in the stores, before store() interleaved the rows) was
///   slower from w = 32 (+5 to +22% at 8 or 16 columns);
/// - entries: thread `rank` owns flat entries rank + u threads
///   (u < gram_prefetch_entries) of a full chunk in PairEntryWalk order, so
///   a warp's loads stay contiguous.
template <class Scalar, bool ColumnRuns, int ItemCols>
struct GramChunkPrefetch {
  static constexpr int entries = gram_prefetch_entries<Scalar>(ItemCols);
  static constexpr int per = scalars_per_16_bytes<Scalar>(), runs = entries / per;
  static_assert(!ColumnRuns || entries % per == 0);
  /// Entries: r | c << 16 of each entry in a full chunk, or -1 past its
  /// end. Column runs: [u] the run's offset from the chunk's first row
  /// (-1 for a missing column, whose run is zeros), [runs + u] its first
  /// row r | c << 16, or -1 past the chunk's end. The way is a template
  /// argument, not a run-time flag, so that a kernel's column-run path
  /// holds only its 2 runs positions (see gram_plate_team_pipelined).
  static constexpr int positions = ColumnRuns ? 2 * runs : entries;
  int rc[positions];
  Scalar v[entries];

  /// ColumnRuns requires gram_column_runs_fit of the segment.
  KOKKOS_INLINE_FUNCTION GramChunkPrefetch(const BlockPairTask<Scalar>& t, int w, int chunk_rows,
                                           int rank, int threads) {
    KWSVD_UNROLL
    for (int u = 0; u < positions; ++u)
      rc[u] = -1;
    if constexpr (ColumnRuns) {
      const int run_rows = chunk_rows / per;  // whole runs (gram_column_runs_fit)
      const float inv_run_rows = 1.0f / float(run_rows);
      KWSVD_UNROLL
      for (int u = 0; u < runs; ++u) {
        const int g = rank + u * threads;
        if (g < run_rows * 2 * w) {
          const int c = small_quotient(g, inv_run_rows), r = (g - c * run_rows) * per;
          const int col = t.column(c, w);
          rc[u] = col >= 0 ? r + col * int(t.col_stride) : -1;
          rc[runs + u] = r | (c << 16);
        }
      }
    } else {
      const PairEntryWalk walk(t, w, chunk_rows);
      KWSVD_UNROLL
      for (int u = 0; u < entries; ++u) {
        const int e = rank + u * threads;
        if (e < walk.total) {
          int r, c;
          walk.entry(e, r, c);
          rc[u] = r | (c << 16);
        }
      }
    }
  }

  /// Loads the entries of the chunk of `rows` rows starting at row `row0`.
  KOKKOS_INLINE_FUNCTION void fetch(const BlockPairTask<Scalar>& t, int w, int row0, int rows) {
    if constexpr (ColumnRuns) {
      KWSVD_UNROLL
      for (int u = 0; u < entries; ++u)
        v[u] = Scalar(0);
      const Scalar* const base = t.data + row0;
      KWSVD_UNROLL
      for (int u = 0; u < runs; ++u) {
        const int r = rc[runs + u] & 0xffff;
        if (rc[runs + u] < 0 || rc[u] < 0)
          continue;
        if (r + per <= rows) {
          const Packed16<Scalar> p = *reinterpret_cast<const Packed16<Scalar>*>(base + rc[u]);
          KWSVD_UNROLL
          for (int k = 0; k < per; ++k)
            v[u * per + k] = p.v[k];
        } else {  // the segment's last rows
          KWSVD_UNROLL
          for (int k = 0; k < per; ++k)
            if (r + k < rows)
              v[u * per + k] = base[rc[u] + k];
        }
      }
    } else {
      KWSVD_UNROLL
      for (int u = 0; u < entries; ++u) {
        v[u] = Scalar(0);
        const int r = rc[u] & 0xffff, col = t.column(rc[u] >> 16, w);
        if (rc[u] >= 0 && r < rows && col >= 0)
          v[u] = t.data[(row0 + r) * t.row_stride + col * t.col_stride];
      }
    }
  }

  /// Writes them to X as load_gram_chunk lays a chunk out (zeros for
  /// missing columns) and returns the rows of X to sum: `rows` for single
  /// entries. Column runs put row k of the q-th run of each column at row
  /// k R + q of X (R runs down a column, rows past `rows` zero, R per rows
  /// returned): a warp's lanes store neighbouring runs of one column, so
  /// they write neighbouring rows of X, 4-way bank conflicts, where rows
  /// in order put them 4 rows apart, 16-way. The Gram sums over rows, in
  /// any fixed order.
  KOKKOS_INLINE_FUNCTION int store(Scalar* X, int w, int rows) const {
    const int ld = gram_chunk_ld<Scalar>(w);
    if constexpr (ColumnRuns) {
      const int run_rows = (rows + per - 1) / per;
      KWSVD_UNROLL
      for (int u = 0; u < runs; ++u) {
        const int q = (rc[runs + u] & 0xffff) / per, c = rc[runs + u] >> 16;
        if (rc[runs + u] < 0 || q >= run_rows)
          continue;
        Scalar* const x = X + q * ld + gram_chunk_position<Scalar>(c, w);
        KWSVD_UNROLL
        for (int k = 0; k < per; ++k)  // fetch left zeros past `rows`
          x[k * run_rows * ld] = v[u * per + k];
      }
      return run_rows * per;
    } else {
      KWSVD_UNROLL
      for (int u = 0; u < entries; ++u) {
        const int r = rc[u] & 0xffff, c = rc[u] >> 16;
        if (rc[u] >= 0 && r < rows)
          X[r * ld + gram_chunk_position<Scalar>(c, w)] = v[u];
      }
      return rows;
    }
  }
};

/// Scalars per thread of the buffer in which a GPU Gram team sums its row
/// groups' tiles: 16 plus one of padding, so that neighbouring threads'
/// stores fall in different banks.
constexpr int gram_group_sum_ld = gemm_tile * gemm_tile + 1;

/// The partial Gram of one plate segment on a GPU. The team has
/// items x groups threads: thread rank owns upper item rank % items
/// (gram_upper_items of ItemCols columns: a 4 x 4 tile, or two side by
/// side, gram_item_position) and row group rank / items (the g-th of
/// `groups` equal runs of every chunk's rows), and keeps its item in
/// registers for the whole plate (no per-chunk reduction). Chunks alternate
/// between scratch buffers X0 and X1, and each thread fetches its entries of
/// chunk k + 1 before computing on chunk k, so one barrier per chunk
/// suffices and the loads overlap the arithmetic. At the end the groups'
/// tiles are summed in group order in scratch (the same result run to run),
/// one tile column of the items at a time, and put(P, Q, e, value) receives
/// entry e (row-major in the 4 x 4 tile) of the plate Gram's upper tile in
/// tile row P <= tile column Q (gram_tile_index). X0 must hold 2 chunks and
/// gram_group_sum_ld x threads scalars when groups > 1; X1 = X0 + one
/// chunk.
template <int ItemCols, bool ColumnRuns, class Member, class Scalar, class Put>
KOKKOS_INLINE_FUNCTION void gram_plate_team_pipelined(const Member& member,
                                                      const BlockPairTask<Scalar>& t,
                                                      const PlateSegment& seg, int w,
                                                      int chunk_rows, int groups, Scalar* X0,
                                                      Scalar* X1, const Put& put) {
  constexpr int tile_size = gemm_tile * gemm_tile, item_tiles = ItemCols / gemm_tile;
  const int items = gram_upper_items(w, ItemCols);
  const int threads = member.team_size(), rank = member.team_rank();
  const int own_i = rank % items, own_g = rank / items;
  int own_P, own_Q;
  gram_item_position<ItemCols>(own_i, own_P, own_Q);
  GramTile<Scalar, ItemCols> own;
  // Rows of the chunk at c0, and this thread's product on a stored chunk
  // X of `stored` rows: its row group's run of them.
  const auto chunk_rows_at = [&](int c0) {
    return seg.rows - c0 < chunk_rows ? seg.rows - c0 : chunk_rows;
  };
  const auto product = [&](const Scalar* X, int stored) {
    const int group_rows = (stored + groups - 1) / groups, r_begin = own_g * group_rows;
    gram_tile_rows(X, w, own_P, own_Q, r_begin,
                   r_begin + group_rows < stored ? r_begin + group_rows : stored, own);
  };
  const auto pipelined_chunks = [&](auto runs) {
    GramChunkPrefetch<Scalar, decltype(runs)::value, ItemCols> prefetch(t, w, chunk_rows, rank,
                                                                        threads);
    prefetch.fetch(t, w, seg.row_begin, chunk_rows_at(0));
    member.team_barrier();  // the previous segment is done with the scratch
    int k = 0;
    for (int c0 = 0; c0 < seg.rows; c0 += chunk_rows, ++k) {
      Scalar* const X = (k & 1) ? X1 : X0;
      // X was last read while computing chunk k - 2, before the previous
      // barrier.
      const int stored = prefetch.store(X, w, chunk_rows_at(c0));
      member.team_barrier();
      const int next = c0 + chunk_rows;
      if (next < seg.rows)
        prefetch.fetch(t, w, seg.row_begin + next, chunk_rows_at(next));
      product(X, stored);
    }
  };
  if (ColumnRuns && !gram_column_runs_fit(t, seg, w, chunk_rows, threads)) {
    // A segment without column runs in the kernel that has them: chunks
    // loaded by the team, no registers carried across the product.
    // Pipelining it as well put both ways' positions in one kernel and made
    // the column-run path spill (ptxas: 100 bytes at 64 registers; 0
    // without this path's prefetch).
    for (int c0 = 0; c0 < seg.rows; c0 += chunk_rows) {
      const int rows = chunk_rows_at(c0);
      member.team_barrier();  // X0 is consumed
      load_gram_chunk(member, t, w, seg.row_begin + c0, rows, X0);
      member.team_barrier();
      product(X0, rows);
    }
  } else {
    pipelined_chunks(std::integral_constant<bool, ColumnRuns>());
  }
  const auto entry = [](int h, int e) {
    return (e / gemm_tile) * ItemCols + h * gemm_tile + e % gemm_tile;
  };
  if (groups == 1) {
    KWSVD_UNROLL
    for (int h = 0; h < item_tiles; ++h)
      if (own_P <= own_Q + h)  // a wide item's tile below the diagonal is not stored
        for (int e = 0; e < tile_size; ++e)
          put(own_P, own_Q + h, e, own.v[entry(h, e)]);
    return;
  }
  KWSVD_UNROLL
  for (int h = 0; h < item_tiles; ++h) {
    // Every chunk is consumed (h = 0), or the previous column's sums are
    // read: X0 becomes the sum buffer.
    member.team_barrier();
    for (int e = 0; e < tile_size; ++e)
      X0[rank * gram_group_sum_ld + e] = own.v[entry(h, e)];
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, items * tile_size), [&](const int i) {
      const int item = i / tile_size, e = i - item * tile_size;
      int P, Q;
      gram_item_position<ItemCols>(item, P, Q);
      if (P > Q + h)
        return;
      Scalar sum = 0;
      for (int g = 0; g < groups; ++g)
        sum += X0[(g * items + item) * gram_group_sum_ld + e];
      put(P, Q + h, e, sum);
    });
  }
}

/// 4-row blocks of an update chunk of `rows` rows (the last one padded).
KOKKOS_INLINE_FUNCTION constexpr int update_row_blocks(int rows) {
  return (rows + gemm_tile - 1) / gemm_tile;
}

/// Whether an update chunk interleaves its rows (update_row_slot): in float
/// an item then reads its 4 rows with one 16-byte load instead of four
/// (H200, 1000 pairs, float 512 x 64: 0.234 -> 0.222 ms; Table IV 512^2
/// 233 -> 227 ms). In double the two 16-byte loads that would take are
/// 32 bytes apart across a warp's lanes, 2-way bank conflicts, and the
/// update got slower (512 x 48: 0.268 -> 0.297 ms; Table IV 512^2 471 ->
/// 509 ms), so double keeps rows in order.
template <class Scalar>
KOKKOS_INLINE_FUNCTION constexpr bool update_rows_interleaved() {
  return sizeof(Scalar) <= 4;
}

/// Where chunk row r sits in an update chunk of `row_blocks` 4-row blocks.
/// Interleaved: rows b, b + B, b + 2B, b + 3B (B = row_blocks), the 4 rows
/// one update item computes, are neighbours (slots 4b..4b+3).
template <class Scalar>
KOKKOS_INLINE_FUNCTION constexpr int update_row_slot(int r, int row_blocks) {
  return update_rows_interleaved<Scalar>() ? gemm_tile * (r % row_blocks) + r / row_blocks : r;
}

/// update_row_slot with the quotient from inv_row_blocks = 1 / row_blocks
/// (small_quotient) instead of an integer division.
template <class Scalar>
KOKKOS_INLINE_FUNCTION int update_row_slot(int r, int row_blocks, float inv_row_blocks) {
  if (!update_rows_interleaved<Scalar>())
    return r;
  const int b = small_quotient(r, inv_row_blocks);
  return gemm_tile * (r - b * row_blocks) + b;
}

/// Scalars of an update chunk buffer for chunks of up to `rows` rows: its
/// leading dimension is 4 x the row blocks.
KOKKOS_INLINE_FUNCTION constexpr std::size_t update_chunk_scalars(int rows, int w) {
  return std::size_t(gemm_tile) * std::size_t(update_row_blocks(rows)) * std::size_t(2 * w);
}

/// Entries of a chunk each thread of load_update_chunk's lean path has in
/// flight: with its positions 16 doubles fit the double kernels' 80
/// registers, which load_pair_entries' did not.
constexpr int column_major_load_batch = 16;

/// offsets[c] = column(c) * col_stride for the task's pair columns c < 2w,
/// -1 for a missing column: where an update chunk's loads and its items'
/// stores find their columns, computed once per plate segment instead of at
/// every entry of every chunk (Nsight Compute, H200, Table IV 256^2 double:
/// the chunk loads and the items' stores, which did, were 28% of the
/// update's instructions). Collective, without a barrier.
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void load_update_columns(const Member& member,
                                                const BlockPairTask<Scalar>& t, int w,
                                                std::ptrdiff_t* offsets) {
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, 2 * w), [&](const int c) {
    const int col = t.column(c, w);
    offsets[c] = col >= 0 ? std::ptrdiff_t(col) * t.col_stride : std::ptrdiff_t(-1);
  });
}

/// Copies rows [r0, r0 + rows) of the task's 2w columns into the update
/// chunk X: row r at update_row_slot(r, row_blocks), column c at ld c
/// (ld = 4 row_blocks), zero for missing columns. A column-major task
/// (every W-cycle task) whose row count divides the team (one thread per
/// team rank, vector length 1) takes a lean path: thread `rank` keeps row
/// rank % rows and walks the columns rank / rows + u (threads / rows), each
/// at its offset from `offsets` (load_update_columns; against the divisions
/// and selects of PairEntryWalk), 16 entries are in flight, and a warp
/// still reads whole runs of a column. On the H200 that, with load_update_rotation's blocks
/// and (float) the interleaved rows, took the update of 1000 pairs of
/// 512 x 48 from 0.307 to 0.246 ms (double) and from 0.195 to 0.162 ms
/// (float), and Table IV's 512^2 from 499 to 461 ms (double) and from 250
/// to 228 ms (float). Other tasks go through load_pair_entries<Batch>.
template <int Batch, class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void load_update_chunk(const Member& member, const BlockPairTask<Scalar>& t,
                                              int w, int r0, int rows, float inv_rows, Scalar* X,
                                              const std::ptrdiff_t* offsets) {
  const int row_blocks = update_row_blocks(rows), ld = gemm_tile * row_blocks;
  // Zeros in the slots of the rows past the chunk's end (rows not a
  // multiple of 4), so that the items read no stale or unset values there.
  const int pad = ld - rows;
  if (pad > 0) {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, pad * 2 * w), [&](const int e) {
      X[update_row_slot<Scalar>(rows + e % pad, row_blocks) + ld * (e / pad)] = Scalar(0);
    });
  }
  // Quotients by rows (inv_rows = 1 / rows) and by the row blocks from
  // float reciprocals (small_quotient): three integer divisions a chunk were
  // 5% of the double update's instructions.
  const int threads = member.team_size(), step = small_quotient(threads, inv_rows);
  if (t.row_stride != 1 || threads != step * rows) {
    load_pair_entries<Batch>(member, t, w, r0, rows, X, [&](const int r, const int c) {
      return update_row_slot<Scalar>(r, row_blocks) + ld * c;
    });
    return;
  }
  const int rank = member.team_rank(), cols = 2 * w, first = small_quotient(rank, inv_rows);
  const int r = rank - first * rows;
  const Scalar* const src = t.data + (r0 + r);
  Scalar* const dst = X + update_row_slot<Scalar>(r, row_blocks, 1.0f / float(row_blocks));
  for (int c0 = first; c0 < cols; c0 += column_major_load_batch * step) {
    Scalar v[column_major_load_batch];
    KWSVD_UNROLL
    for (int u = 0; u < column_major_load_batch; ++u) {
      const int c = c0 + u * step;
      const std::ptrdiff_t offset = c < cols ? offsets[c] : std::ptrdiff_t(-1);
      v[u] = offset >= 0 ? src[offset] : Scalar(0);
    }
    KWSVD_UNROLL
    for (int u = 0; u < column_major_load_batch; ++u) {
      const int c = c0 + u * step;
      if (c < cols)
        dst[ld * c] = v[u];
    }
  }
}

/// Row blocks of one update chunk that the threads of a warp share a column
/// group over: 8 row blocks per group, 4 groups per warp, so that a warp's
/// X loads are 8 consecutive scalars and its J loads 4 consecutive tile rows.
constexpr int update_lane_blocks = 8;

/// Row blocks of the short update chunks whose items split their k loop in
/// two (update_chunk_product): half a lane run, so both halves of an item
/// sit in one run.
constexpr int update_split_row_blocks = update_lane_blocks / 2;

/// Output columns of one wide update item: 8 for float with J in scratch
/// (a 4 x 8 tile: per step of k, one 16-byte load of X and two of J for 32
/// FMAs, where two 4 x 4 items take four: the product is bound by
/// shared-memory wavefronts, a 16-byte load costing four a warp); else 4,
/// the narrow item, the only one. Wide items need 2w to be a multiple of 8.
/// H200, 1000 pairs of 512 x 48: 0.142 -> 0.117 ms. Double would need 64
/// accumulator registers for it, past its 80-register cap with the loads.
/// launch_pair_update picks the width.
template <class Scalar, bool JInScratch>
KOKKOS_INLINE_FUNCTION constexpr int update_wide_item_cols() {
  return sizeof(Scalar) <= 4 && JInScratch ? 2 * gemm_tile : gemm_tile;
}

/// Work items of an update chunk of `rows` rows: 4-row blocks, rounded up to
/// whole lane runs, times the 2w / item_cols column groups.
KOKKOS_INLINE_FUNCTION constexpr int update_chunk_items(int rows, int w, int item_cols) {
  return (update_row_blocks(rows) + update_lane_blocks - 1) / update_lane_blocks *
         update_lane_blocks * (2 * w / item_cols);
}

/// Entries of J each lane of load_update_rotation has in flight: 8 in
/// double, 16 in float. H200, whole calls against one entry at a time, best
/// of two alternating runs, 16 shapes from 100^2 x 1 to 1024^2 x 10: double
/// at 8 -0.3 to -2.8% at 12 of them, +0.2 to +0.9% at 256^2 x 100, 512^2 x
/// 10 and 1024^2; at 16 up to +10% (the 80-register cap). Float at 16 -0.5
/// to -2.8% at 13, +0.0 to +0.5% at 512^2 and 1024^2 x 1; at 8 -1.3 to +2.5%.
template <class Scalar>
KOKKOS_INLINE_FUNCTION constexpr int update_rotation_load_batch() {
  return sizeof(Scalar) <= 4 ? 16 : 8;
}

/// Copies J (2w x 2w, column-major) into scratch Jt transposed (row k of J
/// at Jt + 2w k, 16-byte aligned), so that an update item reads the 4
/// entries of its column group in row k with one or two vector loads.
/// Entries are taken in blocks of 4 rows x 8 columns of J (n = 2w is a
/// multiple of 4): a warp reads 4 consecutive scalars of each of 8 columns
/// (whole 32-byte sectors) and its stores spread over 8 banks. Walking J
/// down its columns, as first written, put a warp's 32 stores 2w scalars
/// apart, all in one bank: 32-way conflicts, 57% of the update's shared
/// store wavefronts (Nsight, H200, 512 x 48 double).
///
/// Each lane first loads update_rotation_load_batch() entries spaced a
/// team-wide slice apart (a warp's loads of one round still in those
/// blocks), then stores them: loaded and stored one at a time, every entry
/// waited for the previous store (Jt may alias J for the compiler), one L2
/// round trip per entry. Nsight Compute, H200, double 100^2 x 10 (540 teams
/// of 72 threads, 18 entries a lane): that copy was 34% of the update's
/// warp samples, 26% at its load. (A helper over the whole team loop,
/// shared with load_pair_entries, changed these kernels' SASS and made every
/// 128^2 shape 0.8 to 1.7% slower on the H200; copy_slice_to_scratch, the
/// slice body alone, compiles to the same cubins as the loop written out.)
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void load_update_rotation(const Member& member, const Scalar* J, int w,
                                                 Scalar* Jt) {
  constexpr int batch = update_rotation_load_batch<Scalar>();
  const int n = 2 * w, nn = n * n, slices = (nn + batch - 1) / batch;
  const float inv_n = 1.0f / float(n);
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, slices), [&](const int b) {
    copy_slice_to_scratch<batch>(b, slices, nn, Jt, [&](const int e, Scalar& v, int& dst) {
      const int kk = e % gemm_tile, rest = e / gemm_tile;
      const int kb = quotient(rest, n, inv_n);
      const int c = rest - kb * n, k = gemm_tile * kb + kk;
      dst = k * n + c;
      v = J[c * n + k];
    });
  });
}

/// Entries each lane of an update chunk load has in flight where it goes
/// through load_pair_entries (tasks that are not column-major, or chunks
/// whose rows do not divide the team; load_update_chunk). Float with J in
/// scratch: 16, all of a lane's entries of a full chunk at once; measured
/// when every update load took that path, it took the update of 1000 pairs
/// of 512 x 48 from 0.198 to 0.180 ms on the H200. Double keeps 4: at 8 or
/// 16 the 80-register cap spills and the update got up to 1.4x slower.
/// Float with J in memory (w = 48) spills at 16 too.
template <class Scalar, bool JInScratch>
KOKKOS_INLINE_FUNCTION constexpr int update_load_batch() {
  return sizeof(Scalar) <= 4 && JInScratch ? 16 : pair_load_batch;
}

/// An int known at compile time (update_plate_team's row blocks, the
/// product's store stride): stride_value of it folds into constant offsets
/// (std::integral_constant's conversion is host-only for nvcc without
/// relaxed constexpr).
template <int N>
struct CompiledInt {
  static constexpr int value = N;
};

KOKKOS_INLINE_FUNCTION constexpr std::ptrdiff_t stride_value(std::ptrdiff_t stride) {
  return stride;
}

template <int N>
KOKKOS_INLINE_FUNCTION constexpr std::ptrdiff_t stride_value(CompiledInt<N>) {
  return N;
}

/// X <- X J on one loaded chunk of `rows` rows (row_blocks 4-row blocks),
/// written to the task's rows [row0, row0 + rows): item (row block b, column
/// group g) computes rows b + i B (i < 4, B the chunk's row blocks; a
/// warp's threads take consecutive rows, so its stores are contiguous) of
/// output columns ItemCols g .. ItemCols g + ItemCols - 1
/// (4, or update_wide_item_cols), found in `offsets` (load_update_columns).
/// RowBlocks > 0: compiled for row_blocks == RowBlocks (update_plate_team
/// compiles the full chunks of tailored_update_chunk_rows: 32 and 64 rows,
/// in float also 96 and 128), so that the X loads take constant offsets
/// from one pointer: in double, whose rows are not interleaved, a run-time
/// leading dimension cost an integer instruction per load. Short chunks
/// with J in memory split each item's k loop in two (below); X then also
/// carries the second halves' partial tiles, so the caller reloads it.
template <int RowBlocks, bool JInScratch, int ItemCols, class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void update_chunk_product(const Member& member,
                                                 const BlockPairTask<Scalar>& t, int w,
                                                 float inv_groups, int row0, int rows,
                                                 int row_blocks_, const Scalar* Js, Scalar* X,
                                                 const std::ptrdiff_t* offsets) {
  static_assert(ItemCols % gemm_tile == 0 && (JInScratch || ItemCols == gemm_tile));
  const int row_blocks = RowBlocks > 0 ? RowBlocks : row_blocks_;
  const int cols = 2 * w, groups = cols / ItemCols;
  using ItemTile = Scalar[gemm_tile][ItemCols];
  // out += the item's product over steps k0 <= k < k1.
  const auto accumulate = [&](const int rb, const int g, const int k0, const int k1,
                              ItemTile& out) {
    // Pointers advanced by one column of X and one row of J a step (no
    // index arithmetic in the loop). Interleaved, the item's rows rb + i B
    // sit at slots 4 rb + i: one tile row, 16-byte aligned (X is). Rows
    // past the chunk's end read zeros and are never written.
    constexpr bool interleaved = update_rows_interleaved<Scalar>();
    const Scalar* xk = X + (interleaved ? gemm_tile * rb : rb) + k0 * (gemm_tile * row_blocks);
    const Scalar* jk = JInScratch ? Js + ItemCols * g + k0 * cols : Js + cols * (ItemCols * g) + k0;
    for (int k = k0; k < k1; ++k, xk += gemm_tile * row_blocks) {
      Scalar x[gemm_tile], j[ItemCols];
      if constexpr (interleaved) {
        load_tile_row(xk, x);
      } else {
        KWSVD_UNROLL
        for (int i = 0; i < gemm_tile; ++i)
          x[i] = xk[i * row_blocks];
      }
      if constexpr (JInScratch) {
        KWSVD_UNROLL
        for (int h = 0; h < ItemCols / gemm_tile; ++h) {
          Scalar jh[gemm_tile];
          load_tile_row(jk + gemm_tile * h, jh);
          KWSVD_UNROLL
          for (int q = 0; q < gemm_tile; ++q)
            j[gemm_tile * h + q] = jh[q];
        }
        jk += cols;
      } else {
        KWSVD_UNROLL
        for (int q = 0; q < gemm_tile; ++q)
          j[q] = jk[cols * q];
        ++jk;
      }
      KWSVD_UNROLL
      for (int i = 0; i < gemm_tile; ++i)
        KWSVD_UNROLL
      for (int q = 0; q < ItemCols; ++q)
        out[i][q] += x[i] * j[q];
    }
  };
  // Writes the item's rows rb + i B of its output columns to the task.
  const auto store = [&](const int rb, const int g, const ItemTile& out) {
    Scalar* const base = t.data + std::ptrdiff_t(row0 + rb) * t.row_stride;
    const bool full = rb + (gemm_tile - 1) * row_blocks < rows;
    // The rows of an output column are row_step apart: RowBlocks in a
    // compiled chunk of a column-major task (constant offsets, no 64-bit
    // products), else row_blocks row strides.
    const auto store_rows = [&](const auto row_step) {
      KWSVD_UNROLL
      for (int q = 0; q < ItemCols; ++q) {
        const std::ptrdiff_t offset = offsets[ItemCols * g + q];
        if (offset < 0)
          continue;
        Scalar* const y = base + offset;
        KWSVD_UNROLL
        for (int i = 0; i < gemm_tile; ++i)
          if (full || rb + i * row_blocks < rows)
            y[i * stride_value(row_step)] = out[i][q];
      }
    };
    if (RowBlocks > 0 && t.row_stride == 1)
      store_rows(CompiledInt<RowBlocks>());
    else
      store_rows(std::ptrdiff_t(row_blocks) * t.row_stride);
  };
  const int items = update_chunk_items(rows, w, ItemCols);
  if constexpr (RowBlocks == 0 && !JInScratch) {
    // A short chunk (at most update_split_row_blocks row blocks: plates of
    // a small batch, e.g. 12 rows) whose items the team covers one a
    // thread: the k loop split in two halves, so that the lanes a lane run
    // leaves idle (update_lane_blocks row blocks a run) take the second
    // half; those partial tiles go through X, which no item reads any more
    // after the barrier (it holds 16 B scalars per column group, one tile of
    // each second-half item). Lane l of a run: row block l % 4, half l / 4.
    // Nsight Compute, H200, double 100^2 x 10 (12-row plates): 5 of every 8
    // items returned at once, and the others ran the whole k loop. Only the
    // J-in-memory kernel has this path (launch_pair_update sends short
    // segments there, update_j_memory_rows): in the J-in-scratch kernels
    // it cost registers and spills, and those got slower.
    if (row_blocks <= update_split_row_blocks && items <= member.team_size()) {
      const int e = member.team_rank();
      const int lane = e % update_lane_blocks, g = e / update_lane_blocks;
      const int rb = lane % update_split_row_blocks, half = lane / update_split_row_blocks;
      const bool active = e < items && rb < row_blocks;
      const int k_half = cols / 2;
      Scalar out[gemm_tile][ItemCols] = {};
      if (active)
        accumulate(rb, g, half * k_half, half == 0 ? k_half : cols, out);
      member.team_barrier();  // every item is done reading X
      // Second-half tiles: entry (i, q) of item (rb, g) at
      // X[(i ItemCols + q) P + g row_blocks + rb], P of them a column, so
      // that a warp's stores and loads are consecutive.
      const int P = groups * row_blocks, slot = g * row_blocks + rb;
      const auto partial = [&](const int i, const int q) -> Scalar& {
        return X[(i * ItemCols + q) * P + slot];
      };
      if (active && half == 1) {
        KWSVD_UNROLL
        for (int i = 0; i < gemm_tile; ++i)
          KWSVD_UNROLL
        for (int q = 0; q < ItemCols; ++q)
          partial(i, q) = out[i][q];
      }
      member.team_barrier();
      if (active && half == 0) {
        KWSVD_UNROLL
        for (int i = 0; i < gemm_tile; ++i)
          KWSVD_UNROLL
        for (int q = 0; q < ItemCols; ++q)
          out[i][q] += partial(i, q);
        store(rb, g, out);
      }
      return;
    }
  }
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, items), [&](const int e) {
    // Lane-fastest: update_lane_blocks consecutive row blocks of one
    // column group, then the next group, then the next lane run
    // (inv_groups = 1 / groups: the quotient from a float reciprocal).
    const int lane = e % update_lane_blocks, run = e / update_lane_blocks;
    const int group_run = small_quotient(run, inv_groups);
    const int g = run - group_run * groups;
    const int rb = group_run * update_lane_blocks + lane;
    if (rb >= row_blocks)
      return;
    Scalar out[gemm_tile][ItemCols] = {};
    accumulate(rb, g, 0, cols, out);
    store(rb, g, out);
  });
}

/// The fused update of one plate segment: rows of [A_i A_j] <- rows of
/// [A_i A_j] J. JInScratch: J was copied by load_update_rotation into Js;
/// otherwise Js is J itself in memory (column-major, read through the
/// cache). `offsets`: the task's columns (load_update_columns, written
/// before the call's first barrier). Each chunk of rows is loaded once into
/// X (load_update_chunk: column-major, leading dimension 4 x its row blocks,
/// rows in update_row_slot order) and both halves of J are applied to it
/// (seed 002 Design-3, update_chunk_product).
template <bool JInScratch, int ItemCols, class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void update_plate_team(const Member& member, const BlockPairTask<Scalar>& t,
                                              const PlateSegment& seg, int w, int chunk_rows,
                                              const Scalar* Js, Scalar* X,
                                              const std::ptrdiff_t* offsets) {
  // Reciprocals for the chunks' quotients, once per segment.
  const float inv_groups = 1.0f / float(2 * w / ItemCols);
  const float inv_chunk_rows = 1.0f / float(chunk_rows);
  for (int c0 = 0; c0 < seg.rows; c0 += chunk_rows) {
    const int rows = seg.rows - c0 < chunk_rows ? seg.rows - c0 : chunk_rows;
    const int row_blocks = update_row_blocks(rows);
    const int row0 = seg.row_begin + c0;
    const float inv_rows = rows == chunk_rows ? inv_chunk_rows : 1.0f / float(rows);
    member.team_barrier();  // the previous chunk is written back
    load_update_chunk<update_load_batch<Scalar, JInScratch>()>(member, t, w, row0, rows, inv_rows,
                                                               X, offsets);
    member.team_barrier();
    const auto product = [&](const auto compiled) {
      update_chunk_product<decltype(compiled)::value, JInScratch, ItemCols>(
          member, t, w, inv_groups, row0, rows, row_blocks, Js, X, offsets);
    };
    // Double compiles the 32- and 64-row chunks only: its 96-row chunks
    // compiled (w = 20 and 22) made Table IV 100^2 and 128^2 3.8 and 8.8%
    // slower on the H200, where float's 96 and 128 rows gained 1 to 2%.
    constexpr bool interleaved = update_rows_interleaved<Scalar>();
    if (row_blocks == 8)
      product(CompiledInt<8>());
    else if (row_blocks == 16)
      product(CompiledInt<16>());
    else if (interleaved && row_blocks == 24)
      product(CompiledInt<(interleaved ? 24 : 0)>());
    else if (interleaved && row_blocks == 32)
      product(CompiledInt<(interleaved ? 32 : 0)>());
    else
      product(CompiledInt<0>());
  }
}

}  // namespace kwsvd::Impl
