// The Gram plan is a pure host function of (m, n, scalar size, scratch limit).

#include <gtest/gtest.h>

#include "kwsvd/kernels/gram_team.hpp"

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using kwsvd::Impl::plan_gram_team;
using kwsvd::Impl::scratch_bytes_for;
using kwsvd::Impl::triangle_size;

TEST(GramPlan, HoldsWholeMatrixWhenItFits) {
  const auto plan = plan_gram_team<Exec, double>(32, 8, 40936);
  ASSERT_TRUE(plan.fits);
  EXPECT_EQ(plan.chunk_rows, 32);
  EXPECT_LE(plan.scratch_bytes, 40936u);
}

TEST(GramPlan, ChunksTallMatricesWithinTheLimit) {
  for (std::size_t limit : {4096u, 40936u, 49152u}) {
    for (int n : {1, 4, 16, 24}) {
      const auto plan = plan_gram_team<Exec, double>(100000, n, limit);
      ASSERT_TRUE(plan.fits) << "n " << n << " limit " << limit;
      EXPECT_LE(plan.scratch_bytes, limit);
      EXPECT_GE(plan.chunk_rows, 1);
      // One more row would not fit: the plan uses the scratch it is given.
      const std::size_t one_more =
          scratch_bytes_for<Exec, double>(triangle_size(n)) +
          scratch_bytes_for<Exec, double>(std::size_t(plan.chunk_rows + 1) * n);
      EXPECT_GT(one_more, limit);
    }
  }
}

TEST(GramPlan, FloatFitsTwiceTheRowsOfDouble) {
  const auto d = plan_gram_team<Exec, double>(100000, 16, 40936);
  const auto f = plan_gram_team<Exec, float>(100000, 16, 40936);
  EXPECT_GE(f.chunk_rows, 2 * d.chunk_rows - 1);
}

TEST(GramPlan, ReportsColumnsThatCannotFit) {
  EXPECT_FALSE((plan_gram_team<Exec, double>(10, 100, 40936).fits));  // 5050 doubles > 40 KB
  EXPECT_TRUE((plan_gram_team<Exec, double>(10, 90, 40936).fits));
  EXPECT_FALSE((plan_gram_team<Exec, double>(10, -1, 40936).fits));
}

TEST(GramPlan, TriangleIndexEnumeratesUpperTriangleOnce) {
  for (int n : {1, 2, 7, 64, 181}) {
    std::vector<int> seen(std::size_t(n) * n, 0);
    for (int p = 0; p < triangle_size(n); ++p) {
      int i = -1, j = -1;
      kwsvd::Impl::triangle_index(p, i, j);
      ASSERT_LE(0, i);
      ASSERT_LE(i, j);
      ASSERT_LT(j, n);
      ++seen[i + std::size_t(n) * j];
    }
    for (int j = 0; j < n; ++j)
      for (int i = 0; i <= j; ++i)
        EXPECT_EQ(seen[i + std::size_t(n) * j], 1);
  }
}

}  // namespace
