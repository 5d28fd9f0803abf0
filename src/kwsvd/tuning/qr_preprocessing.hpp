#pragma once
// Which shapes BatchedSvd reduces to their triangular factor first under
// QrPreprocessing::automatic (SvdOptions::qr). A sweep of one-sided
// Jacobi costs about M N^2 on an M x N working matrix; after the QR it
// costs N^3. The QR (kernels/householder_qr_team.hpp) runs a panel of 32
// columns at a time on one team a matrix, a reflector at a time, and the
// panels' trailing updates and the product Q [V_R; 0] as GEMM tiles over
// many teams, while the W-cycle spreads a tall matrix's rows over many
// teams: so the QR pays for many rows per column.
//
// Measured in perf_svd_suite on an H200 (QrPreprocessing::always against
// never, same binary; perf_tests/notes/wcycle.md, "QR preprocessing of tall
// matrices" and "The blocked QR past 32 columns"), double / float:
//   n = 4..24: 10000 x 4 x 100 -84 / -85%, 1000 x 8 x 1000 -77 / -25%,
//     384 x 16 x 1000 -37 / +1%, 500 x 16 -41 / -7%, 1000 x 16 -47 / -40%,
//     480 x 24 x 1000 -47 / -37%, 300 x 16 -2 / +9%, 200 x 16 -12 / +48%;
//   n = 32: 768 x 32 x 100 -31 / -23%, 2001 x 32 x 100 -21 / -30%, 500 x 32
//     x 1000 -13 / +7%, 1000 x 32 x 1000 +3 / +4%, 128 x 32 +9 / +46%;
//   past 32 columns, the blocked QR (panels of 32, the trailing updates and
//   Q as GEMM tiles over many teams): n = 48: 768 x 48 x 1000 -10 / +20%,
//     2000 x 48 x 100 -23 / -26%; n = 64 x 100: 256 rows -5 / -9%, 512 -13
//     / -9%, 1000 -22 / -22%, 2000 -12 / -10%; n = 100 x 100: 200 rows +9 /
//     +19%, 300 +1 / +8%, 500 -8 / -4%, 999 -23 / -13%; 333 x 77 x 500 0 /
//     +13%; n = 128 x 100: 512 rows -2 / +14%, 1000 -16 / +1%; n = 256 x 20:
//     512 to 1024 rows +8 to +17 / +31 to +38%; n = 300: 900 x 50 -5 /
//     +12%, 1000 x 50 -12 / +14%, 2000 x 20 -15 / +10%.
// The factor's sweeps cost about N^3 against M N^2, the QR about M N^2 at
// a lower rate: so it pays from an aspect that grows as the W-cycle gets
// more efficient per row (float more than double; 256 columns at batch 20
// more than 300 at 50). Shapes solved by the level-0 kernel as they are
// stay there: their sweeps run in scratch, where the rows cost little.
//
// The batch size matters too ("The QR's rule and the batch size" in
// wcycle.md; 199 measured shapes and batches, always against never). A
// panel is a reflector at a time on one team a matrix, so its time grows
// with its rows and does not shrink with the batch: a panel of more than
// 320 KiB, or more than one panel, loses at small batches (double 4000 x
// 32 x 1 +102%, 1000 x 64 x 10 +46%, 999 x 100 x 1 +87%, 2000 x 300 x 5
// +66%) and pays from about 100 matrices (1000 x 64 x 100 -20%). With
// hundreds of matrices the W-cycle fills the device on its own: double
// still gains up to 32 rows a column (512 x 64 x 300 -37%, 1000 x 64 x
// 1000 -16%) but loses past them (2000 x 48 x 300 +14%, 2001 x 32 x 1000
// +45%); float's W-cycle is faster per row still, and its QR of more
// than 24 columns loses from about 300 matrices (1000 x 64 x 500 +34%,
// 768 x 32 x 1000 +13%) while gaining at 100 to 200 (1000 x 48 x 100
// -31%). Small panels (at most 320 KiB: double 1000 x 32, 10000 x 4,
// float 2001 x 32) gain from a single matrix (600 x 24 x 1 -48%; the one
// loss measured, double 1000 x 32 x 1, +13 to +16%). A heavy QR of more
// than 2500 rows loses from 100 matrices too, the panel's rows against a
// W-cycle whose plates fill the device, but in double from 128 columns
// ("The heavy QR's rows": qr_heavy_max_rows).
// Against the rule without the batch over those points: the worst
// selected shape +13% instead of +102%, 1 selected loss over 5% instead
// of 63, and the geometric mean of the time ratio -17.8% instead of
// -11.0% (in-sample: the points the constants were read from).

#include "kwsvd/api/options.hpp"

namespace kwsvd::Impl {

/// Columns of a panel of the QR: a working matrix of more columns is
/// factored a panel at a time (the blocked QR), one team per matrix for
/// each panel and many for the update of the columns right of it. One team
/// factoring every column took 2x to 3x the sweeps' time at 256 to 300
/// columns (perf_tests/notes/wcycle.md, "QR preprocessing of tall
/// matrices"). It is also the widest working matrix the rule takes as one
/// panel.
constexpr int qr_panel_cols = 32;
/// Rows per column from which a working matrix of at most qr_panel_cols
/// columns (one panel of the QR) is reduced to its factor.
constexpr int qr_preprocessing_min_aspect = 16;
/// Past qr_panel_cols columns (the blocked QR): the most
/// columns, and the rows per column from which the QR is taken, by scalar
/// type (double 5 x to 300 columns, float 8 x to 128).
template <class Scalar>
constexpr int qr_blocked_max_cols() {
  return sizeof(Scalar) >= 8 ? 300 : 128;
}
template <class Scalar>
constexpr int qr_blocked_min_aspect() {
  return sizeof(Scalar) >= 8 ? 5 : 8;
}

/// The largest single panel (rows x columns of Scalar) that pays at every
/// batch size; the QR of a larger one, or of more than one panel, is heavy.
constexpr long qr_light_panel_max_bytes = 320L * 1024;
/// The fewest matrices from which a heavy QR pays.
constexpr long qr_heavy_min_batch = 100;
/// In double, from this many matrices a heavy QR pays only up to
/// qr_heavy_full_device_max_aspect rows a column.
constexpr long qr_heavy_full_device_batch = 300;
constexpr long qr_heavy_full_device_max_aspect = 32;
/// The most rows of a working matrix whose heavy QR (one team a matrix for
/// each panel, not the tree) pays, but in double from qr_heavy_wide_min_cols
/// columns: the panel's time grows with the rows and the W-cycle's cost a
/// row falls as its plates fill the device.
constexpr long qr_heavy_max_rows = 2500;
constexpr long qr_heavy_wide_min_cols = 128;
/// In float, the QR of more than qr_float_narrow_cols columns pays only up
/// to this many matrices.
constexpr long qr_float_max_batch = 256;
constexpr int qr_float_narrow_cols = 24;

/// Rows of a leaf of the QR tree (TSQR): a working matrix of one panel is
/// cut into leaves of qr_tree_leaf_rows to twice that, each factored by
/// its own team; their N x N factors, stacked, are cut and factored again,
/// until one leaf is left. A leaf's rows are about the factor team's lanes
/// (16 threads of 32), so that a reflector takes a row or two a lane, and a
/// level's rows are at most 1/16 of the level's below. (Leaves of 128 rows
/// were slower at every batch measured but one matrix of 10000 rows or
/// more: more levels, and teams too wide for their rows.)
constexpr int qr_tree_leaf_rows = 512;
/// The fewest leaves (level 0's) and the most matrices for a tree.
constexpr long qr_tree_min_leaves = 4;
constexpr long qr_tree_max_batch = 100;
/// Past one panel: the most columns of a tree's working matrix (a leaf
/// factors all of them on one team), and in float the most matrices and
/// columns and the fewest rows (float's W-cycle takes a tall matrix of a
/// few blocks at small batches in narrow blocks, choose_wcycle_plan, which
/// the tree beats only on the tallest: H200, 10 matrices, tree against no
/// QR, 4000 x 48 -32%, 2500 x 48 -14%, 4000 x 56 -4%, 4000 x 64 +20%; one
/// matrix, 10000 x 48 -28%, 4000 x 48 -5%, 2500 x 48 +28%).
constexpr int qr_tree_max_cols = 64;
constexpr long qr_tree_wide_float_max_batch = 10;
constexpr int qr_tree_wide_float_max_cols = 48;
constexpr long qr_tree_wide_float_min_rows = 4000;

/// Whether the QR of `batch` M x N working matrices of Scalar (M > N) runs
/// as a tree of leaves instead of one team a matrix walking all M rows a
/// reflector at a time (a panel at a time past qr_panel_cols columns): not
/// full_matrices (the tree's Q has no Q e_j columns), qr_tree_min_leaves
/// leaves or more, at most qr_tree_max_batch matrices; one panel, or up to
/// qr_tree_max_cols columns where the N x N factor is solved at level 0
/// while the working matrix would be swept in blocks
/// (`factor_crosses_level0`), in float only up to
/// qr_tree_wide_float_max_batch matrices of qr_tree_wide_float_min_rows rows
/// and qr_tree_wide_float_max_cols columns.
///
/// H200 (perf_tests/notes/wcycle.md, "A QR tree for tall panels" and "The
/// QR tree past one panel"), one panel, tree against one team a matrix,
/// double / float: 4000 x 32 x 1 -59 / -52%, x 100 -43 / -2%; 3000 x 32 x
/// 10 -49 / -33%, x 100 -33 / +20%; 10000 x 16 x 1 -78 / -75%; 2001 x 32 x
/// 10 -25 / -1% (3 leaves, not taken); 1100 x 32 and 1100 x 16 +13 to +39%
/// (2 leaves). Past one panel, against no QR: double 4000 x 48 x 1 / 10 /
/// 100 -11 / -28 / -22%, 10000 x 48 x 10 -41%, 2500 x 48 x 1 +7%; float
/// (against its narrow fallback, choose_wcycle_plan) 4000 x 48 x 1 / 10 -5
/// / -32%, 10000 x 48 x 10 -34%, 4000 x 64 x 10 +20% (not taken); where the
/// factor is not solved at level 0 (double 64 columns) +14 to +74% but for
/// 20000 rows.
template <class Scalar>
inline bool uses_qr_tree(long batch, long M, long N, bool full, bool factor_crosses_level0) {
  if (full || M < qr_tree_min_leaves * long(qr_tree_leaf_rows) || batch > qr_tree_max_batch)
    return false;
  if (N <= qr_panel_cols)
    return true;
  return N <= qr_tree_max_cols && factor_crosses_level0 &&
         (sizeof(Scalar) >= 8 ||
          (batch <= qr_tree_wide_float_max_batch && N <= qr_tree_wide_float_max_cols &&
           M >= qr_tree_wide_float_min_rows));
}

/// Whether a batch of `batch` m x n matrices of Scalar, not solved at level
/// 0, is solved through the QR of its working matrix under `options`.
/// `factor_crosses_level0`: the W-cycle would sweep the working matrix in
/// column blocks while the k x k factor is solved at level 0 (the handle
/// plans both). SvdOptions::level0 = false (every matrix through the
/// W-cycle's blocks, for tests and comparisons) keeps automatic from it.
template <class Scalar>
inline bool uses_qr_preprocessing(const SvdOptions& options, long batch, long m, long n,
                                  bool factor_crosses_level0 = false) {
  const long rows = m > n ? m : n, cols = m > n ? n : m;
  if (cols < 2 || rows == cols)
    return false;
  if (options.qr == QrPreprocessing::always)
    return true;
  if (options.qr != QrPreprocessing::automatic || !options.level0 ||
      options.max_workspace_bytes != 0)
    return false;
  // In double, a matrix of at most qr_light_panel_max_bytes whose factor
  // crosses the level-0 limit pays at any aspect below
  // qr_heavy_full_device_batch matrices (128 x 40 x 100 -53%, 200 x 48 x 100
  // -34%, 300 x 48 x 10 -38%; at 1000 matrices -37% to +8%; wcycle.md,
  // "Small matrices whose factor crosses the level-0 limit").
  if (factor_crosses_level0 && sizeof(Scalar) >= 8 &&
      rows * cols * long(sizeof(Scalar)) <= qr_light_panel_max_bytes &&
      batch < qr_heavy_full_device_batch)
    return true;
  const bool one_panel = cols <= qr_panel_cols;
  if (one_panel ? rows < long(qr_preprocessing_min_aspect) * cols
                : cols > qr_blocked_max_cols<Scalar>() ||
                      rows < long(qr_blocked_min_aspect<Scalar>()) * cols)
    return false;
  const bool light = one_panel && rows * cols * long(sizeof(Scalar)) <= qr_light_panel_max_bytes;
  if (sizeof(Scalar) < 8 && cols > qr_float_narrow_cols && batch > qr_float_max_batch)
    return false;
  // A panel factored as a tree pays at any batch it is used for (double /
  // float against the W-cycle alone: 3000 x 32 x 1 -12 / -16%, 10000 x 32
  // x 10 -57 / -57%, 4000 x 16 x 30 -70 / -66%, 3000 x 32 x 100 -40 / -16%).
  if (light ||
      uses_qr_tree<Scalar>(batch, rows, cols, options.full_matrices, factor_crosses_level0))
    return true;
  if (batch < qr_heavy_min_batch)
    return false;
  // H200, always against never ("The heavy QR's rows" in wcycle.md),
  // double / float: 4000 x 64 x 100 +21 / +19%, 10000 x 64 x 100 +45 /
  // +85%, 10000 x 32 x 200 +57 / +94%, 4000 x 48 x 200 +5 / +33%, against
  // 2500 x 64 x 100 -6 / -7%, 1500 x 96 x 200 -22 / -10%; double's 128
  // columns gain at every row count measured (10000 x 128 x 100 / 200 -3 /
  // -27%, 4000 x 128 x 100 -9%).
  if (rows > qr_heavy_max_rows && (sizeof(Scalar) < 8 || cols < qr_heavy_wide_min_cols))
    return false;
  return sizeof(Scalar) < 8 || batch < qr_heavy_full_device_batch ||
         rows <= qr_heavy_full_device_max_aspect * cols;
}

}  // namespace kwsvd::Impl
