// SvdOptions::rank: the r leading singular triplets only (gesvdaStridedBatched's
// rank), S of r values (or all k in the View forms), U m x r, V n x r. The
// SVD is still computed whole, so what a ranked call writes must be the
// untruncated call's leading values and columns to the bit, including the
// completed columns of zero values that fall among the leading r; nothing
// past them may be written (the outputs are sized exactly: in LayoutRight a
// write past the r columns lands on the next row's entries and fails the
// comparison). Every entry point: BatchedSvd (level 0, swept whole, W-cycle at one
// and two levels), the raw-pointer form, batched_small_svd, values only, and
// VariableBatchedSvd's Views and pointer arrays.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/oracle.hpp"
#include "common/svd_batch.hpp"
#include "kwsvd/kwsvd.hpp"

namespace {

using kwsvd::Job;
using kwsvd::test::error_of;
using kwsvd::test::random_matrix;
using Exec = Kokkos::DefaultExecutionSpace;

template <class C>
class Rank : public kwsvd::test::ScalarLayoutTest<C> {
 public:
  using typename kwsvd::test::ScalarLayoutTest<C>::Scalar;
  using typename kwsvd::test::ScalarLayoutTest<C>::Result;

  // The leading `count` of an m x k matrix's columns, column-major.
  static std::vector<Scalar> leading(const std::vector<Scalar>& x, int rows, int count) {
    return x.empty() ? x : std::vector<Scalar>(x.begin(), x.begin() + std::size_t(rows) * count);
  }

  // ranked (r = output_rank(options, k)) against whole (the same options
  // without rank): the leading values (all k where `all_values`), columns
  // and info to the bit.
  static void expect_leading(const Result& whole, const Result& ranked, int m, int n, int r,
                             bool all_values, const std::string& at) {
    ASSERT_EQ(ranked.s.size(), whole.s.size()) << at;
    for (std::size_t b = 0; b < whole.s.size(); ++b) {
      const std::string mat = at + " matrix " + std::to_string(b);
      const int k = int(whole.s[b].size());
      EXPECT_EQ(ranked.s[b], all_values ? whole.s[b]
                                        : std::vector<Scalar>(whole.s[b].begin(),
                                                              whole.s[b].begin() + std::min(r, k)))
          << mat << ": values";
      EXPECT_EQ(ranked.u[b], leading(whole.u[b], m, std::min(r, k))) << mat << ": U";
      EXPECT_EQ(ranked.v[b], leading(whole.v[b], n, std::min(r, k))) << mat << ": V";
      EXPECT_EQ(ranked.info[b].sweeps, whole.info[b].sweeps) << mat;
      EXPECT_EQ(ranked.info[b].converged, whole.info[b].converged) << mat;
      EXPECT_EQ(ranked.info[b].nonfinite_input, whole.info[b].nonfinite_input) << mat;
    }
  }

  // A random m x n matrix with every fourth column (row, when wide) zero:
  // ceil(k / 4) exact zero values, whose columns are completed, by
  // reflectors or Gram-Schmidt as their count and k choose.
  static std::vector<Scalar> zero_every_fourth(int m, int n) {
    auto a = random_matrix<Scalar>(m, n, 11u * m + n);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i)
        if ((m >= n ? j : i) % 4 == 0)
          a[i + std::size_t(m) * j] = Scalar(0);
    return a;
  }

  // rank_deficient_batch (a zero and a repeated column) and
  // zero_every_fourth.
  static std::vector<std::vector<Scalar>> batch(int m, int n) {
    auto mats = kwsvd::test::rank_deficient_batch<Scalar>(m, n);
    mats.push_back(zero_every_fourth(m, n));
    return mats;
  }
};

using Cases = kwsvd::test::ScalarLayoutCases;
TYPED_TEST_SUITE(Rank, Cases);

// Tall and wide through the level-0 kernel, swept whole and through the
// W-cycle's blocks at one level and at two, with each job; ranks of one
// column, about half, all but one (a zero value's completed column among
// the leading ones), all and more than all (every column: the thin call).
// 60 x 8 at rank 7 completes one column of zero_every_fourth's two in the
// way chosen for both (reflectors; by the one column written alone it would
// be Gram-Schmidt, other bits).
TYPED_TEST(Rank, LeadingTripletsAreTheWholeCallsToTheBit) {
  using T = typename TestFixture::Scalar;
  using L = typename TestFixture::Layout;
  const std::vector<kwsvd::test::ShapeCase> cases = {
      {20, 12, true, {}},
      {12, 20, true, {}},
      {40, 3, true, {}},
      {70, 40, true, {}},
      {90, 40, false, {}},
      {40, 90, false, {}},
      {100, 64, false, {}},
      {60, 8, false, {}},
      {150, 120, false, kwsvd::test::two_level_widths<T>()}};
  for (const auto& c : cases) {
    const auto mats = TestFixture::batch(c.m, c.n);
    const int k = std::min(c.m, c.n);
    for (const Job job :
         {Job::values_and_vectors, Job::values_and_left_vectors, Job::values_and_right_vectors}) {
      kwsvd::SvdOptions options;
      options.job = job;
      options.level0 = c.level0;
      options.block_scratch_bytes = 32768;
      options.level_widths = std::vector<int>(c.widths);
      const auto whole = kwsvd::test::run_batched_svd<T, L>(mats, c.m, c.n, options);
      for (const int rank : {1, k / 2, k - 1, k, k + 3}) {
        options.rank = rank;
        const std::string at = std::to_string(c.m) + " x " + std::to_string(c.n) + " job " +
                               kwsvd::Impl::job_name(job) + " rank " + std::to_string(rank) +
                               (c.level0 ? "" : " blocks");
        TestFixture::expect_leading(whole,
                                    kwsvd::test::run_batched_svd<T, L>(mats, c.m, c.n, options),
                                    c.m, c.n, rank, false, at);
        if (job == Job::values_and_vectors && rank == k / 2)  // S of all k values
          TestFixture::expect_leading(
              whole, kwsvd::test::run_batched_svd<T, L>(mats, c.m, c.n, options, true), c.m, c.n,
              rank, true, at + " all values");
      }
    }
  }
}

// Values only under a rank, batched_small_svd, and the raw-pointer form
// (padded leading dimensions, batch strides of r columns) write what
// BatchedSvd does.
TYPED_TEST(Rank, ValuesOnlySmallSvdAndRawPointersMatchTheHandle) {
  using T = typename TestFixture::Scalar;
  using L = typename TestFixture::Layout;
  // Plain ints, not structured bindings: the lambdas below capture them
  // (capturing a binding is C++20; nvcc warns in C++17).
  for (const auto& shape :
       {std::pair<int, int>{24, 10}, std::pair<int, int>{10, 24}, std::pair<int, int>{90, 40}}) {
    const int m = shape.first, n = shape.second;
    const auto mats = TestFixture::batch(m, n);
    const int batch = int(mats.size()), r = 4;
    kwsvd::SvdOptions options;
    options.rank = r;
    const std::string at = std::to_string(m) + " x " + std::to_string(n);
    const auto handle = kwsvd::test::run_batched_svd<T, L>(mats, m, n, options);
    // Values only: the leading r of a values-only call (which may take
    // another path than a call with vectors, so other bits).
    kwsvd::SvdOptions values_only;
    values_only.job = Job::values;
    const auto values = [&](const kwsvd::SvdOptions& o) {
      return kwsvd::test::run_svd_batch<T, L>(
          mats, m, n,
          [&](const auto& A, const auto& S, const auto&, const auto&, const auto& info) {
            kwsvd::batched_svd(Exec(), A, S, info, o);
          },
          o);
    };
    const auto all = values(values_only);
    values_only.rank = r;
    const auto ranked = values(values_only);
    for (int b = 0; b < batch; ++b)
      EXPECT_EQ(ranked.s[b], std::vector<T>(all.s[b].begin(), all.s[b].begin() + r))
          << at << ": values only";
    if (kwsvd::small_svd_fits<T, Exec>(m, n)) {
      const auto small = kwsvd::test::run_svd_batch<T, L>(
          mats, m, n,
          [&](const auto& A, const auto& S, const auto& U, const auto& V, const auto& info) {
            kwsvd::batched_small_svd(Exec(), A, S, U, V, info, options);
          },
          options);
      EXPECT_EQ(small.s, handle.s) << at;
      EXPECT_EQ(small.u, handle.u) << at;
      EXPECT_EQ(small.v, handle.v) << at;
    }
    if (!std::is_same<L, Kokkos::LayoutLeft>::value)
      continue;
    // U m x r with ldu = m + 3, V n x r with ldv = n + 1, S r values a matrix.
    const int lda = m + 2, ldu = m + 3, ldv = n + 1;
    const long long strideA = (long long)lda * n + 5, strideU = (long long)ldu * r,
                    strideV = (long long)ldv * r + 2;
    auto A = kwsvd::test::to_device_strided(mats, m, n, lda, strideA);
    Kokkos::View<T*> S("S", std::size_t(batch) * r), U("U", std::size_t(batch * strideU)),
        V("V", std::size_t(batch * strideV));
    Kokkos::View<kwsvd::SvdInfo*> info("info", batch);
    kwsvd::batched_svd(Exec(), batch, m, n, A.data(), lda, strideA, S.data(), r, U.data(), ldu,
                       strideU, V.data(), ldv, strideV, info.data(), options);
    auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), S);
    auto hu = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), U);
    auto hv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), V);
    for (int b = 0; b < batch; ++b) {
      for (int j = 0; j < r; ++j) {
        ASSERT_EQ(hs(std::size_t(b) * r + j), handle.s[b][j]) << at << " S " << j;
        for (int i = 0; i < m; ++i)
          ASSERT_EQ(hu(b * strideU + i + (long long)ldu * j), handle.u[b][i + std::size_t(m) * j])
              << at << " U(" << i << ", " << j << ")";
        for (int i = 0; i < n; ++i)
          ASSERT_EQ(hv(b * strideV + i + (long long)ldv * j), handle.v[b][i + std::size_t(n) * j])
              << at << " V(" << i << ", " << j << ")";
      }
    }
    // A batch stride below r columns is refused, naming the option.
    const auto msg = error_of([&] {
      kwsvd::batched_svd(Exec(), batch, m, n, A.data(), lda, strideA, S.data(), r, U.data(), ldu,
                         (long long)ldu * r - 1, V.data(), ldv, strideV, info.data(), options);
    });
    EXPECT_NE(msg.find("strideU"), std::string::npos) << msg;
    EXPECT_NE(msg.find("options.rank"), std::string::npos) << msg;
  }
}

// A rank that cannot hold and outputs not shaped for it are refused, naming
// the option and the expected shape.
TYPED_TEST(Rank, BadRanksAndShapesAreRefusedNamingTheOption) {
  using T = typename TestFixture::Scalar;
  using Mats = typename TestFixture::Matrices;
  const int m = 30, n = 20, batch = 2, r = 5;
  Mats A("A", batch, m, n), thinU("U", batch, m, n), U("U", batch, m, r), V("V", batch, n, r);
  Kokkos::View<T**> S("S", batch, r), wrongS("S", batch, r + 1);
  Kokkos::View<kwsvd::SvdInfo*> info("info", batch), one_info("info", 1);
  const auto refused = [&](const kwsvd::SvdOptions& options, const auto& u, const auto& s) {
    return error_of([&] { kwsvd::batched_svd(Exec(), A, s, u, V, info, options); });
  };
  kwsvd::SvdOptions options;
  options.rank = -1;
  std::string msg = refused(options, U, S);
  EXPECT_NE(msg.find("options.rank"), std::string::npos) << msg;
  options.rank = r;
  options.sort = false;
  msg = refused(options, U, S);
  EXPECT_NE(msg.find("options.sort"), std::string::npos) << msg;
  options.sort = true;
  options.full_matrices = true;
  msg = refused(options, U, S);
  EXPECT_NE(msg.find("full_matrices"), std::string::npos) << msg;
  options.full_matrices = false;
  msg = refused(options, thinU, S);
  EXPECT_NE(msg.find("argument 'U'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(batch, m, 5)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("options.rank"), std::string::npos) << msg;
  msg = refused(options, U, wrongS);
  EXPECT_NE(msg.find("argument 'S'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(batch, 5)"), std::string::npos) << msg;
  EXPECT_EQ(refused(options, U, S), "no kwsvd::invalid_argument thrown");
  // The variable batch names the matrix.
  kwsvd::VariableBatchedSvd<Exec, T> svd(Exec(), {{m, n}}, options);
  std::vector<Kokkos::View<T**>> a = {Kokkos::View<T**>("A", m, n)},
                                 u = {Kokkos::View<T**>("U", m, n)},
                                 v = {Kokkos::View<T**>("V", n, r)};
  std::vector<Kokkos::View<T*>> s = {Kokkos::View<T*>("S", r)};
  msg = error_of([&] { svd.compute(a, s, u, v, one_info); });
  EXPECT_NE(msg.find("U[0]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("options.rank"), std::string::npos) << msg;
}

// A NaN matrix's r values and columns are NaN and it is reported; its
// neighbours keep their bits.
TYPED_TEST(Rank, NonFiniteInputPoisonsOnlyItsOwnLeadingOutputs) {
  using T = typename TestFixture::Scalar;
  using L = typename TestFixture::Layout;
  for (const bool level0 : {true, false}) {
    const int m = 30, n = 12;
    const auto clean_mats = TestFixture::batch(m, n);
    auto mats = clean_mats;
    mats[1][5] = std::numeric_limits<T>::quiet_NaN();
    kwsvd::SvdOptions options;
    options.level0 = level0;
    options.rank = 3;
    const auto clean = kwsvd::test::run_batched_svd<T, L>(clean_mats, m, n, options);
    const auto r = kwsvd::test::run_batched_svd<T, L>(mats, m, n, options);
    EXPECT_EQ(r.info[1].nonfinite_input, 1);
    for (const auto* x : {&r.s[1], &r.u[1], &r.v[1]})
      for (const T e : *x)
        ASSERT_TRUE(std::isnan(double(e))) << level0;
    for (std::size_t b : {std::size_t(0), std::size_t(2), std::size_t(3)}) {
      EXPECT_EQ(r.s[b], clean.s[b]) << level0 << " " << b;
      EXPECT_EQ(r.u[b], clean.u[b]) << level0 << " " << b;
      EXPECT_EQ(r.v[b], clean.v[b]) << level0 << " " << b;
    }
  }
}

// A variable batch (level-0, block-rotation, empty and narrower-than-rank
// matrices, tall and wide) through a list of Views and through pointer
// arrays: each matrix keeps min(rank, k_b) triplets, the whole call's.
TYPED_TEST(Rank, VariableBatchKeepsEachMatrixsLeadingTriplets) {
  using T = typename TestFixture::Scalar;
  using L = typename TestFixture::Layout;
  const std::vector<kwsvd::MatrixShape> shapes = {{20, 12}, {12, 20}, {90, 40}, {40, 90},
                                                  {6, 0},   {33, 33}, {2, 1},   {150, 70}};
  std::vector<std::vector<T>> mats;
  for (std::size_t b = 0; b < shapes.size(); ++b)
    mats.push_back(random_matrix<T>(shapes[b].rows, shapes[b].cols, 61u + b));
  // Zero values among the leading ones (block rotations; level 0).
  mats[2] = TestFixture::zero_every_fourth(90, 40);
  mats[7] = TestFixture::zero_every_fourth(150, 70);
  mats[6] = std::vector<T>(2, T(0));
  kwsvd::SvdOptions options;
  const auto whole = kwsvd::test::run_variable_svd<T, L>(shapes, mats, options);
  options.rank = 7;
  for (const bool pointers : {false, true}) {
    if (pointers && !std::is_same<L, Kokkos::LayoutLeft>::value)
      continue;  // the pointer arrays are column-major
    for (const bool all_values : {false, true}) {
      if (pointers && all_values)
        continue;  // the pointer form writes r_b values
      const auto ranked =
          kwsvd::test::run_variable_svd<T, L>(shapes, mats, options, pointers, all_values);
      for (std::size_t b = 0; b < shapes.size(); ++b) {
        const int m = shapes[b].rows, n = shapes[b].cols;
        typename TestFixture::Result one_whole, one_ranked;
        for (auto* r : {&one_whole, &one_ranked}) {
          const auto& from = r == &one_whole ? whole : ranked;
          r->s.push_back(from.s[b]);
          r->u.push_back(from.u[b]);
          r->v.push_back(from.v[b]);
          r->info.push_back(from.info[b]);
        }
        TestFixture::expect_leading(one_whole, one_ranked, m, n, options.rank, all_values,
                                    std::to_string(m) + " x " + std::to_string(n) +
                                        (pointers ? " pointers" : " views") +
                                        (all_values ? " all values" : ""));
      }
    }
  }
}

}  // namespace
