#pragma once
// The parallel ordering of a W-cycle level's column-block pairs: which
// disjoint pairs (i, j) make up each step of a sweep.
//
// Paper 001 §3 and §6 (Fig. 6.1) find the block-recursive strategies that
// first take the pairs far from the diagonal and end with the neighbours
// (its reverse R and C strategies, step-equivalent to Mantharam and
// Eberlein's BR for power-of-two orders) 14-21% faster than the others,
// and Brent and Luk's round robin the slowest. Ours is that recursion for
// any even count n: the n/2 x n/2 pairs across the two halves first (cyclic
// shifts), then both halves at once, recursively. A half of odd size h is
// swept by the circle method with a phantom block, whose idle block in each
// of its h steps meets the idle block of the other half at the same
// position; the cross shifts then need only h - 1 steps, so a sweep keeps
// n - 1 steps. With each pair's eigenvectors sorted as well, Table IV's
// random 512^2 matrices need 12.0 sweeps instead of 14.2 in double and 9.8
// instead of 12.8 in float (H200; perf_tests/notes/wcycle.md, "Block
// ordering and sorted pairs").

#include <utility>
#include <vector>

#include "kwsvd/kernels/one_sided_jacobi_team.hpp"

namespace kwsvd::Impl {

/// One step of an ordering: disjoint block pairs (i, j), i < j.
using BlockPairStep = std::vector<std::pair<int, int>>;

/// Appends to `steps` the steps of the recursive ordering of the blocks
/// `ids` (an even count), ids[k] < ids[k + 1].
inline void append_recursive_steps(const std::vector<int>& ids, std::vector<BlockPairStep>& steps) {
  const int n = int(ids.size());
  if (n == 2) {
    steps.push_back({{ids[0], ids[1]}});
    return;
  }
  const int h = n / 2;
  const std::vector<int> low(ids.begin(), ids.begin() + h), high(ids.begin() + h, ids.end());
  // Cross pairs (low[k], high[(k + s) mod h]); shift 0 is left to the halves'
  // idle blocks when h is odd.
  for (int s = h % 2; s < h; ++s) {
    BlockPairStep step;
    for (int k = 0; k < h; ++k)
      step.push_back({low[std::size_t(k)], high[std::size_t((k + s) % h)]});
    steps.push_back(std::move(step));
  }
  if (h % 2 == 0) {  // both halves recursively, side by side
    std::vector<BlockPairStep> a, b;
    append_recursive_steps(low, a);
    append_recursive_steps(high, b);
    for (std::size_t t = 0; t < a.size(); ++t) {
      a[t].insert(a[t].end(), b[t].begin(), b[t].end());
      steps.push_back(std::move(a[t]));
    }
    return;
  }
  for (int s = 0; s < h; ++s) {  // circle method on h + 1 with a phantom
    BlockPairStep step;
    for (int k = 0; k < (h + 1) / 2; ++k) {
      int i, j;
      round_robin_pair(h + 1, s, k, i, j);
      if (j < h) {
        step.push_back({low[std::size_t(i)], low[std::size_t(j)]});
        step.push_back({high[std::size_t(i)], high[std::size_t(j)]});
      } else {
        step.push_back({low[std::size_t(i)], high[std::size_t(i)]});  // both idle
      }
    }
    steps.push_back(std::move(step));
  }
}

/// The steps of one sweep over `count` blocks: every pair (i, j), i < j <
/// count, exactly once, count - 1 steps for an even count and count for
/// an odd one (a phantom block, whose pairs are dropped).
inline std::vector<BlockPairStep> block_pair_ordering(int count) {
  std::vector<BlockPairStep> steps;
  if (count < 2)
    return steps;
  const int even = count + (count & 1);
  std::vector<int> ids(std::size_t(even), 0);
  for (int k = 0; k < even; ++k)
    ids[std::size_t(k)] = k;
  append_recursive_steps(ids, steps);
  for (auto& step : steps) {
    BlockPairStep kept;
    for (const auto& p : step)
      if (p.second < count)
        kept.push_back(p);
    step = std::move(kept);
  }
  return steps;
}

}  // namespace kwsvd::Impl
