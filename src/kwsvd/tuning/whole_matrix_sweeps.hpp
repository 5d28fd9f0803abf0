#pragma once
// Which matrices the W-cycle sweeps whole (the level-0 sweeps on the whole
// working matrix in scratch, V in memory: kernels/wcycle_team.hpp) instead of
// in column blocks, among those whose M x N working matrix fits level-0
// scratch but not beside V. A whole sweep is N - 1 steps of the level-0
// kernel, one launch for all sweeps; a blocked sweep is a few steps of a few
// launches each, which a small batch pays as a chain of launch latencies.
//
// Measured in perf_svd_suite on an H200 (perf_tests/notes/wcycle.md), whole
// against blocked: double 64^2 x 10 1.60 against 2.14 ms (10.1 sweeps of 63
// steps against 7.1 of 3 blocks), x 100 1.62 against 1.89, Table VI's group
// up to 64 columns 2.67 against 4.12; float 100^2 x 200 7.85 against 5.09
// (10.0 sweeps of 99 steps against 7.0). So up to 64 columns.

namespace kwsvd::Impl {

/// Most columns of a working matrix swept whole.
constexpr int whole_matrix_max_cols = 64;

/// Whether a working matrix of `cols` columns (>= 2) whose columns fit
/// level-0 scratch is swept whole.
inline bool sweeps_whole(int cols) {
  return cols >= 2 && cols <= whole_matrix_max_cols;
}

}  // namespace kwsvd::Impl
