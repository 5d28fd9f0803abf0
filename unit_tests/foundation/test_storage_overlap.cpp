// The public entry points refuse outputs that share storage with their input
// or with each other (kwsvd/impl/storage_overlap.hpp): the overlap test on
// equally spaced records, and batched_gram's check.

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "common/svd_batch.hpp"
#include "kwsvd/impl/storage_overlap.hpp"
#include "kwsvd/kwsvd.hpp"

namespace {

using kwsvd::Impl::storage_overlaps;
using kwsvd::Impl::StorageRuns;

// Both orders, which must agree.
bool overlaps(const StorageRuns& x, const StorageRuns& y) {
  const bool xy = storage_overlaps(x, y), yx = storage_overlaps(y, x);
  EXPECT_EQ(xy, yx);
  return xy;
}

TEST(StorageOverlap, RecordsOfOneSpacingAreComparedExactly) {
  struct Case {
    const char* what;
    StorageRuns x, y;  // {first, stride, length, count}, bytes
    bool overlap;
  };
  const Case cases[] = {
      // Records [A | U] of 100 bytes, A 60 and U 40: side by side, U's
      // records ending where the next A begins.
      {"side by side", {1000, 100, 60, 8}, {1060, 100, 40, 8}, false},
      {"A one byte longer", {1000, 100, 61, 8}, {1060, 100, 40, 8}, true},
      {"U one byte earlier", {1000, 100, 60, 8}, {1059, 100, 40, 8}, true},
      {"U one byte longer", {1000, 100, 60, 8}, {1060, 100, 41, 8}, true},
      // Records in each other's gaps, more of them on one side; and one
      // byte into a record.
      {"one A before U's", {1000, 100, 60, 1}, {1060, 100, 40, 8}, false},
      {"U before A's first, one byte in", {1000, 100, 60, 2}, {960, 100, 41, 1}, true},
      {"U in A's gap", {1000, 100, 60, 3}, {1160, 100, 40, 1}, false},
      {"U one byte into A's next", {1000, 100, 60, 3}, {1160, 100, 41, 1}, true},
      {"three U in A's gaps", {1000, 100, 60, 2}, {1060, 100, 40, 3}, false},
      {"A inside U's fourth", {1260, 100, 60, 1}, {1000, 100, 40, 5}, true},
      {"A between U's", {1240, 100, 60, 1}, {1000, 100, 40, 5}, false},
      // Disjoint spans, touching spans, empty arrays.
      {"disjoint spans", {0, 8, 8, 10}, {80, 8, 8, 10}, false},
      {"spans one byte in", {0, 8, 8, 10}, {79, 8, 8, 10}, true},
      {"no bytes", {0, 8, 8, 10}, {0, 8, 0, 10}, false},
      {"no records", {0, 8, 8, 0}, {0, 8, 8, 10}, false},
      // Different spacings whose spans meet: reported (the conservative side).
      {"different spacings", {0, 100, 10, 5}, {50, 120, 10, 2}, true},
  };
  for (const Case& c : cases)
    EXPECT_EQ(overlaps(c.x, c.y), c.overlap) << c.what;
}

TEST(StorageOverlap, ViewsGiveOneRecordPerMatrix) {
  // LayoutLeft (batch, m, n) interleaves its matrices: each record spans
  // almost the whole View; the halves of its columns are still disjoint.
  Kokkos::View<double***, Kokkos::LayoutLeft> X("X", 4, 5, 6);
  const auto left = Kokkos::subview(X, Kokkos::ALL, Kokkos::ALL, std::pair<int, int>(0, 3));
  const auto right = Kokkos::subview(X, Kokkos::ALL, Kokkos::ALL, std::pair<int, int>(3, 6));
  const auto r = kwsvd::Impl::batch_storage_runs(left);
  EXPECT_EQ(r.count, 4u);
  EXPECT_EQ(r.stride, sizeof(double));
  EXPECT_EQ(r.length, (4 * 4 + 2 * 20 + 1) * sizeof(double));
  EXPECT_FALSE(overlaps(r, kwsvd::Impl::batch_storage_runs(right)));
  EXPECT_TRUE(overlaps(r, kwsvd::Impl::batch_storage_runs(X)));
  // A rank-1 View: one entry a record.
  Kokkos::View<kwsvd::SvdInfo*> info("info", 3);
  const auto i = kwsvd::Impl::batch_storage_runs(info);
  EXPECT_EQ(i.count, 3u);
  EXPECT_EQ(i.length, sizeof(kwsvd::SvdInfo));
}

TEST(StorageOverlap, BatchedGramRefusesBOnA) {
  Kokkos::View<double***> A("A", 2, 6, 6);
  const std::string what = kwsvd::test::error_of([&] { kwsvd::batched_gram(A, A); });
  EXPECT_NE(what.find("'B' shares storage with 'A'"), std::string::npos) << what;
}

}  // namespace
