#pragma once
// The parallel ordering of a W-cycle level's column-block pairs: which
// disjoint pairs (i, j) make up each step of a sweep. It is the recursive
// ordering of kernels/pair_ordering.hpp (paper 001 §3), which the level's
// pair Gram EVDs also follow inside each B_ij. With each pair's eigenvectors
// sorted as well, Table IV's random 512^2 matrices need 11.2 sweeps instead
// of 14.2 in double and 9.0 instead of 12.8 in float (H200;
// perf_tests/notes/wcycle.md, "Block ordering and sorted pairs" and "Inner
// pair order").

#include <utility>
#include <vector>

#include "kwsvd/kernels/pair_ordering.hpp"

namespace kwsvd::Impl {

/// One step of an ordering: disjoint block pairs (i, j), i < j.
using BlockPairStep = std::vector<std::pair<int, int>>;

/// The steps of one sweep over `count` blocks: every pair (i, j), i < j <
/// count, exactly once, count - 1 steps for an even count and count for
/// an odd one (a phantom block, whose pairs are dropped).
inline std::vector<BlockPairStep> block_pair_ordering(int count) {
  std::vector<BlockPairStep> steps;
  if (count < 2)
    return steps;
  const int even = count + (count & 1);
  for (int s = 0; s < even - 1; ++s) {
    BlockPairStep step;
    for (int P = 0; P < even / 2; ++P) {
      int i, j;
      recursive_pair(even, s, P, i, j);
      if (j < count)
        step.push_back({i, j});
    }
    steps.push_back(std::move(step));
  }
  return steps;
}

}  // namespace kwsvd::Impl
