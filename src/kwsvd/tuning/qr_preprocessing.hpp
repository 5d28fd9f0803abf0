#pragma once
// Which shapes BatchedSvd reduces to their triangular factor first under
// QrPreprocessing::automatic (SvdOptions::qr). A sweep of one-sided
// Jacobi costs about M N^2 on an M x N working matrix; after the QR it
// costs N^3. The QR (kernels/householder_qr_team.hpp) runs one team a
// matrix, a reflector at a time, and the product Q [V_R; 0] a team per tile
// of columns, while the W-cycle spreads a tall matrix's rows over many
// teams: so the QR pays for few columns and many rows.
//
// Measured in perf_svd_suite on an H200 (QrPreprocessing::always against
// never, same binary; perf_tests/notes/wcycle.md, "QR preprocessing of tall
// matrices"), double / float:
//   n = 4..24: 10000 x 4 x 100 -84 / -85%, 1000 x 8 x 1000 -77 / -25%,
//     384 x 16 x 1000 -37 / +1%, 500 x 16 -41 / -7%, 1000 x 16 -47 / -40%,
//     480 x 24 x 1000 -47 / -37%, 300 x 16 -2 / +9%, 200 x 16 -12 / +48%;
//   n = 32: 768 x 32 x 100 -31 / -23%, 2001 x 32 x 100 -21 / -30%, 500 x 32
//     x 1000 -13 / +7%, 1000 x 32 x 1000 +3 / +4%, 128 x 32 +9 / +46%;
//   n = 64: 1000 x 64 x 100 +3 / -10%, 2000 x 64 +34 / +23%; n = 100 +19 to
//     +53%; n = 256, 300 +105 to +217% (the one-team QR's N steps).
// Shapes solved by the level-0 kernel as they are stay there: their sweeps
// run in scratch, where the rows cost little.

#include "kwsvd/api/options.hpp"

namespace kwsvd::Impl {

/// Rows per column from which a working matrix is reduced to its factor.
constexpr int qr_preprocessing_min_aspect = 16;
/// Most columns of a working matrix reduced to its factor.
constexpr int qr_preprocessing_max_cols = 32;

/// Whether a batch of m x n matrices, not solved at level 0, is solved
/// through the QR of its working matrix under `options`. SvdOptions::level0
/// = false (every matrix through the W-cycle's blocks, for tests and
/// comparisons) keeps automatic from it.
inline bool uses_qr_preprocessing(const SvdOptions& options, long m, long n) {
  const long rows = m > n ? m : n, cols = m > n ? n : m;
  if (cols < 2 || rows == cols)
    return false;
  if (options.qr == QrPreprocessing::always)
    return true;
  return options.qr == QrPreprocessing::automatic && options.level0 &&
         options.max_workspace_bytes == 0 && cols <= qr_preprocessing_max_cols &&
         rows >= long(qr_preprocessing_min_aspect) * cols;
}

}  // namespace kwsvd::Impl
