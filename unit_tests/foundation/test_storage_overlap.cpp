// The public entry points refuse outputs that share storage with their input
// or with each other (kwsvd/impl/storage_overlap.hpp): the overlap test on
// equally spaced records, and batched_gram's check.

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "common/svd_batch.hpp"
#include "kwsvd/impl/storage_overlap.hpp"
#include "kwsvd/kwsvd.hpp"

namespace {

using kwsvd::Impl::storage_overlaps;
using kwsvd::Impl::StorageRuns;

// A pair of runs ({first, stride, length, count}, bytes) and whether they
// share a byte, checked in both orders, which must agree.
struct OverlapCase {
  const char* what;
  StorageRuns x, y;
  bool overlap;
};
void expect_overlaps(std::initializer_list<OverlapCase> cases) {
  for (const OverlapCase& c : cases) {
    const bool xy = storage_overlaps(c.x, c.y), yx = storage_overlaps(c.y, c.x);
    EXPECT_EQ(xy, c.overlap) << c.what;
    EXPECT_EQ(yx, c.overlap) << c.what << " (y, x)";
  }
}

TEST(StorageOverlap, RecordsOfOneSpacingAreComparedExactly) {
  expect_overlaps({
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
  });
}

TEST(StorageOverlap, RecordsOfDifferentSpacingsAreComparedOneByOne) {
  expect_overlaps({
      // x: [0, 10), [100, 110), ..., [400, 410).
      {"y's records in x's gaps", {0, 100, 10, 5}, {50, 120, 10, 2}, false},
      {"y's first reaches x's second", {0, 100, 10, 5}, {50, 120, 51, 2}, true},
      {"y's second reaches x's third", {0, 100, 10, 5}, {50, 120, 31, 2}, true},
      {"y's second ends at x's third", {0, 100, 10, 5}, {50, 120, 30, 2}, false},
      // A single record (a one-column matrix) against columns.
      {"one record in a gap", {1000, 100, 60, 8}, {1170, 8, 20, 1}, false},
      {"one record into a column", {1000, 100, 60, 8}, {1150, 8, 20, 1}, true},
      // Columns of 8 bytes every 16 and every 32, one set in the other's
      // gaps: exact while the records compared stay within
      // max_records_compared, reported past it (the conservative side).
      {"gaps, few records", {0, 16, 8, 1000}, {8, 32, 8, 500}, false},
      {"gaps, too many records", {0, 16, 8, 200000}, {8, 32, 8, 100000}, true},
  });
}

// A variable batch's arrays: only arrays whose spans meet are compared, and
// among those every pair, or their records merged in address order when the
// group is large.
TEST(StorageOverlap, VariableBatchesAreCheckedAcrossMatrices) {
  using kwsvd::Impl::MatrixStorage;
  const char* const names[] = {"A", "U"};
  const auto check = [&](const std::vector<MatrixStorage>& storage) {
    return kwsvd::test::error_of([&] {
      kwsvd::Impl::require_disjoint_matrix_storage("check", storage, names);
      throw kwsvd::invalid_argument("accepted");
    });
  };
  // Columns of 8-byte entries, leading dimension 100 entries: U[0] rows
  // [0, 10) of columns 0..9, U[1] rows [20, 40) of columns 0..19, U[2] rows
  // [5, 8) of columns 3..5, inside U[0]. U[1] starts between them and reaches
  // furthest, and shares nothing with either: a sweep that compared each
  // span only with its neighbour and the furthest-reaching one missed this.
  const std::size_t ld = 800;
  std::vector<MatrixStorage> storage = {{{0, ld, 80, 10}, 0, 1, true},
                                        {{160, ld, 160, 20}, 1, 1, true},
                                        {{3 * ld + 40, ld, 24, 3}, 2, 1, true}};
  std::string w = check(storage);
  EXPECT_NE(w.find("'U[2]' shares storage with 'U[0]'"), std::string::npos) << w;
  storage[2].runs.first = 3 * ld + 80;  // rows [10, 13): free
  EXPECT_EQ(check(storage), "accepted");
  // 3000 outputs stacked as row blocks of 4 rows and 8 columns (one group,
  // checked record by record), and inputs read twice (allowed).
  const std::size_t blocks = 3000, ld_all = blocks * 4 * 8;
  storage.clear();
  for (std::size_t b = 0; b < blocks; ++b) {
    storage.push_back({{1 << 20, 64, 64, 1}, b, 0, false});  // every A the same
    storage.push_back({{(std::size_t(1) << 30) + 32 * b, ld_all, 32, 8}, b, 1, true});
  }
  EXPECT_EQ(check(storage), "accepted");
  storage[2 * 1500 + 1].runs.first += 8;  // U[1500] one row down, into U[1501]
  w = check(storage);
  EXPECT_NE(w.find("shares storage"), std::string::npos) << w;
  EXPECT_NE(w.find("'U[1500]'"), std::string::npos) << w;
  EXPECT_NE(w.find("'U[1501]'"), std::string::npos) << w;
  storage[2 * 1500 + 1].runs.first -= 8;
  storage[2 * 2999].runs.first = (std::size_t(1) << 30) + 32 * 7 + ld_all * 5;  // A[2999] in U[7]
  w = check(storage);
  EXPECT_NE(w.find("'U[7]' shares storage with 'A[2999]'"), std::string::npos) << w;
  storage[2 * 2999].runs.first = 1 << 20;
  // Every other block takes every other column (twice the spacing): one
  // group of two spacings, checked record by record.
  for (std::size_t b = 1; b < blocks; b += 2)
    storage[2 * b + 1].runs = {(std::size_t(1) << 30) + 32 * b, 2 * ld_all, 32, 4};
  EXPECT_EQ(check(storage), "accepted");
  storage[2 * 2001 + 1].runs.first -= 8;  // U[2001] one row up, into U[2000]
  w = check(storage);
  EXPECT_NE(w.find("'U[2001]' shares storage with 'U[2000]'"), std::string::npos) << w;
  // A few arrays of different spacings: every pair.
  storage = {{{0, 100, 10, 5}, 0, 1, true},
             {{50, 120, 30, 2}, 1, 1, true},
             {{110, 1000, 60, 1}, 2, 0, false}};
  EXPECT_EQ(check(storage), "accepted");
  storage[1].runs.length = 31;  // into U[0]'s third column
  w = check(storage);
  EXPECT_NE(w.find("'U[1]' shares storage with 'U[0]'"), std::string::npos) << w;
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
  expect_overlaps({{"column halves", r, kwsvd::Impl::batch_storage_runs(right), false},
                   {"a half and the whole", r, kwsvd::Impl::batch_storage_runs(X), true}});
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
