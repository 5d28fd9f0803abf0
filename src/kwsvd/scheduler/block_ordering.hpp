#pragma once
// The parallel ordering of a W-cycle level's column-block pairs: which
// disjoint pairs (i, j) make up each step of a sweep. It is the recursive
// ordering of paper 001 §3 (the pairs across the two halves first, then both
// halves at once, recursively), which the level's pair Gram EVDs also follow
// inside each B_ij (kernels/pair_ordering.hpp). With each pair's eigenvectors
// sorted as well, Table IV's random 512^2 matrices need 11.2 sweeps instead
// of 14.2 in double and 9.0 instead of 12.8 in float (H200;
// perf_tests/notes/wcycle.md, "Block ordering and sorted pairs" and "Inner
// pair order").
//
// Here the recursion goes all the way down for any block count: a half of
// odd size h > 3 is swept by the recursive ordering of h + 1 with a phantom,
// not by the circle method, which paper 001 finds slowest (a half of 3 takes
// the circle on 4: the same three steps, in the device function's order). A
// block count whose halves turn odd high up, 22 (n = 512, w = 24) or 43,
// needed 10 to 12% more sweeps with the circle there (H200: Table IV double
// 512^2 11.2 -> 10.2 sweeps, 316 -> 276 ms; perf_tests/notes/wcycle.md,
// "Recursion through odd halves").

#include <cstddef>
#include <utility>
#include <vector>

#include "kwsvd/kernels/pair_ordering.hpp"

namespace kwsvd::Impl {

/// One step of an ordering: disjoint block pairs (i, j), i < j.
using BlockPairStep = std::vector<std::pair<int, int>>;

/// The n - 1 steps of the circle method on n (even) elements.
inline std::vector<BlockPairStep> circle_ordering(int n) {
  std::vector<BlockPairStep> steps(std::size_t(n - 1));
  for (int s = 0; s < n - 1; ++s)
    for (int k = 0; k < n / 2; ++k) {
      int i, j;
      round_robin_pair(n, s, k, i, j);
      steps[std::size_t(s)].push_back({i, j});
    }
  return steps;
}

/// The n - 1 steps of the recursive ordering of n (even) elements.
inline std::vector<BlockPairStep> recursive_ordering(int n) {
  if (n == 2)
    return {{{0, 1}}};
  std::vector<BlockPairStep> steps;
  const int h = n / 2;
  const int odd = h % 2;
  // Cross pairs (P, h + (P + shift) mod h). An odd half leaves shift 0 out:
  // its pairs are met by the halves' idle elements below.
  for (int shift = odd; shift < h; ++shift) {
    BlockPairStep step;
    for (int P = 0; P < h; ++P)
      step.push_back({P, h + (P + shift) % h});
    steps.push_back(std::move(step));
  }
  // Both halves at once, each by the ordering of h elements, or of h + 1
  // whose last (h) is a phantom: the element it leaves idle in a step has the
  // same place in both halves, so the two idle ones make a shift-0 cross pair.
  // A step lists the idle pair, then the lower half's pairs, then the upper
  // half's, as the device function numbers them.
  for (const BlockPairStep& sub : h == 3 ? circle_ordering(4) : recursive_ordering(h + odd)) {
    BlockPairStep step;
    for (const auto& [a, b] : sub)
      if (b == h)  // a < b, so the phantom is always b
        step.push_back({a, h + a});
    for (const auto& [a, b] : sub)
      if (b < h)
        step.push_back({a, b});
    for (const auto& [a, b] : sub)
      if (b < h)
        step.push_back({h + a, h + b});
    steps.push_back(std::move(step));
  }
  return steps;
}

/// The steps of one sweep over `count` blocks: every pair (i, j), i < j <
/// count, exactly once, count - 1 steps for an even count and count for
/// an odd one (a phantom block, whose pairs are dropped).
inline std::vector<BlockPairStep> block_pair_ordering(int count) {
  std::vector<BlockPairStep> steps;
  if (count < 2)
    return steps;
  for (const BlockPairStep& all : recursive_ordering(count + (count & 1))) {
    BlockPairStep step;
    for (const auto& [i, j] : all)
      if (j < count)
        step.push_back({i, j});
    steps.push_back(std::move(step));
  }
  return steps;
}

}  // namespace kwsvd::Impl
