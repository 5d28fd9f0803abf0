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

#include <cstddef>

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

/// A run of rows of one task that one team processes: a standard plate, or
/// one residual plate among those packed into a team.
struct PlateSegment {
  int task = 0;
  int row_begin = 0;
  int rows = 0;
  int partial = 0;  ///< global slot of this plate's partial Gram
};

/// 4 x 4 tiles: each Gram work item accumulates a 4 x 4 block of B per row,
/// 8 scratch loads for 16 FMAs (the arithmetic intensity of eq. 9).
constexpr int gemm_tile = 4;

template <class Scalar>
struct GramTile {
  Scalar v[gemm_tile * gemm_tile];
  KOKKOS_INLINE_FUNCTION GramTile() {
    for (int k = 0; k < gemm_tile * gemm_tile; ++k)
      v[k] = Scalar(0);
  }
  KOKKOS_INLINE_FUNCTION GramTile& operator+=(const GramTile& o) {
    for (int k = 0; k < gemm_tile * gemm_tile; ++k)
      v[k] += o.v[k];
    return *this;
  }
};

/// Number of 4 x 4 tiles in the upper triangle of a (2w) x (2w) Gram.
KOKKOS_INLINE_FUNCTION constexpr int gram_upper_tiles(int w) {
  return (2 * w / gemm_tile) * (2 * w / gemm_tile + 1) / 2;
}

/// Tile row P <= tile column Q of upper tile p (column by column).
KOKKOS_INLINE_FUNCTION void gram_tile_position(int p, int& P, int& Q) {
  Q = 0;
  while ((Q + 1) * (Q + 2) / 2 <= p)
    ++Q;
  P = p - Q * (Q + 1) / 2;
}

/// Calls f(r, c, col) for every row r < rows and pair column c < 2w of the
/// task (col: the matrix column, -1 for a missing one), walking the matrix
/// along its smaller stride so that neighbouring lanes touch neighbouring
/// memory. The flat index splits by a float reciprocal (index_math.hpp):
/// integer division would cost more than the copy itself.
template <class Member, class Scalar, class F>
KOKKOS_INLINE_FUNCTION void for_pair_entries(const Member& member, const BlockPairTask<Scalar>& t,
                                             int w, int rows, const F& f) {
  const bool rows_fastest = t.row_stride <= t.col_stride;
  const int cols = 2 * w;
  const int d = rows_fastest ? rows : cols;
  const float inv_d = 1.0f / float(d);
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, rows * cols), [&](const int e) {
    const int q = quotient(e, d, inv_d), rem = e - q * d;
    const int r = rows_fastest ? rem : q;
    const int c = rows_fastest ? q : rem;
    f(r, c, t.column(c, w));
  });
}

/// Copies rows [r0, r0 + rows) of the task's 2w columns into scratch X,
/// column-major with leading dimension `rows` (zero for missing columns).
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void load_pair_rows(const Member& member, const BlockPairTask<Scalar>& t,
                                           int w, int r0, int rows, Scalar* X) {
  for_pair_entries(member, t, w, rows, [&](const int r, const int c, const int col) {
    X[r + rows * c] = col >= 0 ? t.data[(r0 + r) * t.row_stride + col * t.col_stride] : Scalar(0);
  });
}

/// The partial Gram of one plate segment: upper 4 x 4 tiles of
/// X^T X over the segment's rows, written to `partial` (gram_upper_tiles(w)
/// tiles of 16, tile-major). Chunks accumulate in a fixed order and the lanes'
/// reduction is a fixed tree, so the result is the same run to run.
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void gram_plate_team(const Member& member, const BlockPairTask<Scalar>& t,
                                            const PlateSegment& seg, int w, int chunk_rows,
                                            Scalar* X, Scalar* partial) {
  const int tiles = gram_upper_tiles(w);
  for (int c0 = 0; c0 < seg.rows; c0 += chunk_rows) {
    const int rows = seg.rows - c0 < chunk_rows ? seg.rows - c0 : chunk_rows;
    member.team_barrier();  // the previous chunk is consumed
    load_pair_rows(member, t, w, seg.row_begin + c0, rows, X);
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, tiles), [&](const int p) {
      int P, Q;
      gram_tile_position(p, P, Q);
      const Scalar* xp = X + rows * (gemm_tile * P);
      const Scalar* xq = X + rows * (gemm_tile * Q);
      GramTile<Scalar> acc;
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(member, rows),
          [&](const int r, GramTile<Scalar>& sum) {
            Scalar a[gemm_tile], b[gemm_tile];
            for (int k = 0; k < gemm_tile; ++k) {
              a[k] = xp[r + rows * k];
              b[k] = xq[r + rows * k];
            }
            for (int i = 0; i < gemm_tile; ++i)
              for (int j = 0; j < gemm_tile; ++j)
                sum.v[i * gemm_tile + j] += a[i] * b[j];
          },
          Kokkos::Sum<GramTile<Scalar>>(acc));
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, gemm_tile * gemm_tile),
                           [&](const int k) {
                             Scalar* out = partial + gemm_tile * gemm_tile * p + k;
                             *out = c0 == 0 ? acc.v[k] : *out + acc.v[k];
                           });
    });
  }
}

/// The fused update of one plate segment: rows of [A_i A_j] <- rows of
/// [A_i A_j] J, J (2w x 2w, column-major, leading dimension 2w) read from
/// `Js` (scratch when it fits, else memory). Each item computes a 4 x 4 block
/// of the output (4 rows, 4 columns) from the rows' 2w inputs: 8 scratch
/// loads per 16 FMAs. Items run row-block-fastest so that the X loads of a
/// warp are contiguous and its J loads are broadcasts.
template <class Member, class Scalar>
KOKKOS_INLINE_FUNCTION void update_plate_team(const Member& member, const BlockPairTask<Scalar>& t,
                                              const PlateSegment& seg, int w, int chunk_rows,
                                              const Scalar* Js, Scalar* X) {
  const int cols = 2 * w, groups = cols / gemm_tile;
  for (int c0 = 0; c0 < seg.rows; c0 += chunk_rows) {
    const int rows = seg.rows - c0 < chunk_rows ? seg.rows - c0 : chunk_rows;
    const int row_blocks = (rows + gemm_tile - 1) / gemm_tile;
    member.team_barrier();  // the previous chunk is written back
    load_pair_rows(member, t, w, seg.row_begin + c0, rows, X);
    member.team_barrier();
    const float inv_blocks = 1.0f / float(row_blocks);
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, row_blocks * groups), [&](const int e) {
      const int g = quotient(e, row_blocks, inv_blocks), rb = e - g * row_blocks;
      // The item's rows are rb + i row_blocks, so that the threads of a warp
      // read consecutive rows (no bank conflicts); rows past the chunk
      // repeat its last row (read, never written).
      int r[gemm_tile];
      for (int i = 0; i < gemm_tile; ++i) {
        const int ri = rb + i * row_blocks;
        r[i] = ri < rows ? ri : rows - 1;
      }
      Scalar out[gemm_tile][gemm_tile] = {};
      const Scalar* jcol = Js + std::size_t(cols) * (gemm_tile * g);
      for (int k = 0; k < cols; ++k) {
        Scalar x[gemm_tile], j[gemm_tile];
        for (int i = 0; i < gemm_tile; ++i) {
          x[i] = X[r[i] + rows * k];
          j[i] = jcol[k + cols * i];
        }
        for (int i = 0; i < gemm_tile; ++i)
          for (int q = 0; q < gemm_tile; ++q)
            out[i][q] += x[i] * j[q];
      }
      for (int q = 0; q < gemm_tile; ++q) {
        const int col = t.column(gemm_tile * g + q, w);
        if (col < 0)
          continue;
        for (int i = 0; i < gemm_tile; ++i)
          if (rb + i * row_blocks < rows) {
            const std::ptrdiff_t row = seg.row_begin + c0 + rb + i * row_blocks;
            t.data[row * t.row_stride + col * t.col_stride] = out[i][q];
          }
      }
    });
  }
}

}  // namespace kwsvd::Impl

namespace Kokkos {
// Identity of the Gram tile under Sum, for the lanes' reduction.
template <class Scalar>
struct reduction_identity<kwsvd::Impl::GramTile<Scalar>> {
  KOKKOS_FORCEINLINE_FUNCTION static kwsvd::Impl::GramTile<Scalar> sum() {
    return kwsvd::Impl::GramTile<Scalar>();
  }
};
}  // namespace Kokkos
