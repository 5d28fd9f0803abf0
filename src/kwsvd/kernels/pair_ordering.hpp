#pragma once
// The parallel orderings of n' (even) columns or blocks, pair by pair, for
// device code: the circle method (the level-0 kernel's), and the recursive
// ordering that the W-cycle's pair Gram EVDs walk, as the scheduler's plan
// of block pairs does (scheduler/block_ordering.hpp).
//
// Paper 001 §3 and §6 (Fig. 6.1) find the block-recursive strategies that
// first take the pairs far from the diagonal and end with the neighbours
// (its reverse R and C strategies, step-equivalent to Mantharam and
// Eberlein's BR for power-of-two orders) 14-21% faster than the others,
// and Brent and Luk's round robin the slowest. Ours is that recursion for
// any even n': the n'/2 x n'/2 pairs across the two halves first (cyclic
// shifts), then both halves at once, recursively. A half of odd size h is
// swept by the circle method on h + 1 with a phantom, whose idle element in
// each of its h steps meets the idle element of the other half at the same
// position; the cross shifts then need only h - 1 steps, so a sweep keeps
// n' - 1 steps. (The host's block ordering recurses through odd halves
// larger than 3 too; for n' = 2^k and 3 x 2^k, the Gram EVDs' n' = 2w among
// them, the two are the same.)

#include <Kokkos_Core.hpp>

namespace kwsvd::Impl {

/// Columns (i, j), i < j, of pair k at step s of a round-robin sweep over
/// n_even columns (circle method: n_even - 1 rotates around the others).
/// Written with compares instead of `%`, which costs tens of instructions on
/// a GPU and runs once per pair per step.
KOKKOS_INLINE_FUNCTION void round_robin_pair(int n_even, int step, int k, int& i, int& j) {
  const int r = n_even - 1;
  int a, b;
  if (k == 0) {
    a = step;
    b = r;
  } else {
    a = step + k;  // step, k < r
    if (a >= r)
      a -= r;
    b = step - k;
    if (b < 0)
      b += r;
  }
  i = a < b ? a : b;
  j = a < b ? b : a;
}

/// Pair P (0 <= P < n'/2) of step `step` (0 <= step < n' - 1) of the
/// recursive ordering of n' = n_even elements: (i, j), i < j. No memory and
/// no division: at most log2(n') halvings, each a few compares.
KOKKOS_INLINE_FUNCTION void recursive_pair(int n_even, int step, int P, int& i, int& j) {
  int base = 0, n = n_even;
  while (n > 2) {
    const int h = n / 2;
    if (h % 2 == 0) {
      if (step < h) {  // cross pairs (P, h + (P + step) mod h)
        const int q = P + step;
        i = base + P;
        j = base + h + (q >= h ? q - h : q);
        return;
      }
      // Both halves side by side: the first h/2 pairs are the lower half's.
      step -= h;
      if (P >= h / 2) {
        P -= h / 2;
        base += h;
      }
      n = h;
      continue;
    }
    if (step < h - 1) {  // cross shifts 1 .. h - 1 (shift 0: the idle pairs)
      const int q = P + step + 1;
      i = base + P;
      j = base + h + (q >= h ? q - h : q);
      return;
    }
    // Circle method on h + 1 in both halves; its pair 0 holds the phantom,
    // so P = 0 pairs the two halves' idle elements.
    step -= h - 1;
    const int half_pairs = (h - 1) / 2;
    if (P == 0) {
      i = base + step;
      j = base + h + step;
      return;
    }
    const bool upper = P > half_pairs;
    int a, b;
    round_robin_pair(h + 1, step, upper ? P - half_pairs : P, a, b);
    i = base + (upper ? h : 0) + a;
    j = base + (upper ? h : 0) + b;
    return;
  }
  i = base;
  j = base + 1;
}

}  // namespace kwsvd::Impl
