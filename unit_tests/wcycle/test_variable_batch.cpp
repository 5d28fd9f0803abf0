// Variable-size batches (kwsvd::VariableBatchedSvd, the list-of-Views and
// pointer-array forms of kwsvd::batched_svd): one call mixing empty, tiny,
// level-0, wide, tall-skinny and block-rotation shapes, each matrix checked
// against LAPACKE with seed 002's metrics e1..e4 (< 30 u).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "common/kokkos_events.hpp"
#include "common/oracle.hpp"
#include "common/svd_batch.hpp"
#include "kwsvd/kwsvd.hpp"

namespace {

using kwsvd::test::error_of;

using kwsvd::MatrixShape;
using kwsvd::test::matrix_with_spectrum;
using kwsvd::test::random_matrix;
using kwsvd::test::spectrum;
using Exec = Kokkos::DefaultExecutionSpace;

template <class C>
class VariableBatch : public ::testing::Test {
 public:
  using Scalar = typename C::Scalar;
  using Layout = typename C::Layout;
  using Matrix = Kokkos::View<Scalar**, Layout>;
  using Values = Kokkos::View<Scalar*>;

  // Shapes from 1 x 1 to block-rotation sizes, tall and wide, two empty;
  // 96 x 40 (double) and 120 x 64 fit level-0 scratch without V only, so
  // that the W-cycle sweeps them whole beside the blocked 130 x 70.
  static std::vector<MatrixShape> shapes() {
    return {{1, 1},    {2, 2}, {7, 3},   {3, 9},  {24, 20},  {0, 5},   {96, 40}, {40, 96},
            {150, 17}, {6, 0}, {200, 1}, {1, 37}, {130, 70}, {33, 33}, {120, 64}};
  }

  static std::vector<std::vector<Scalar>> matrices(const std::vector<MatrixShape>& shapes) {
    std::vector<std::vector<Scalar>> mats;
    for (std::size_t b = 0; b < shapes.size(); ++b) {
      const int m = shapes[b].rows, n = shapes[b].cols, k = std::min(m, n);
      // Some with seed 002 spectra, kappa as in the uniform tests (the block
      // path's Gram EVD keeps U orthogonal up to about u^-0.7).
      const double kappa = sizeof(Scalar) == 8 ? 1e10 : 1e5;
      if (b % 3 == 1 && k > 1)
        mats.push_back(matrix_with_spectrum<Scalar>(
            m, n, spectrum(b % 2 ? "geo" : "arith", k, kappa, 40 + b), 70 + b));
      else
        mats.push_back(random_matrix<Scalar>(m, n, 90 + 7 * b));
    }
    return mats;
  }

  static Matrix device_matrix(const std::vector<Scalar>& a, int m, int n, const char* label) {
    Matrix A(std::string(label), m, n);
    auto h = Kokkos::create_mirror_view(A);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i)
        h(i, j) = a[i + std::size_t(m) * j];
    Kokkos::deep_copy(A, h);
    return A;
  }

  // One call's Views: A[b] holding matrix b, S[b], U[b], V[b] and info.
  struct Views {
    std::vector<Matrix> A, U, V;
    std::vector<Values> S;
    Kokkos::View<kwsvd::SvdInfo*> info;
    // Outputs to NaN, so that a call must write every one of them.
    void clear_outputs() const {
      const Scalar nan = std::numeric_limits<Scalar>::quiet_NaN();
      for (std::size_t b = 0; b < S.size(); ++b) {
        kwsvd::test::fill(U[b], nan);
        kwsvd::test::fill(V[b], nan);
        kwsvd::test::fill(S[b], nan);
      }
    }
  };

  static Views make_views(const std::vector<MatrixShape>& shapes,
                          const std::vector<std::vector<Scalar>>& mats) {
    Views v;
    for (std::size_t b = 0; b < shapes.size(); ++b) {
      const int m = shapes[b].rows, n = shapes[b].cols, k = std::min(m, n);
      v.A.push_back(device_matrix(mats[b], m, n, "A"));
      v.U.emplace_back("U", m, k);
      v.V.emplace_back("V", n, k);
      v.S.emplace_back("S", k);
    }
    v.info = Kokkos::View<kwsvd::SvdInfo*>("info", shapes.size());
    return v;
  }

  // Views form through one handle; results pre-filled with NaN.
  static kwsvd::test::BatchResult<Scalar> run(
      const std::vector<MatrixShape>& shapes, const std::vector<std::vector<Scalar>>& mats,
      const kwsvd::SvdOptions& options, kwsvd::VariableBatchedSvd<Exec, Scalar>* handle = nullptr) {
    const Views v = make_views(shapes, mats);
    v.clear_outputs();
    if (handle != nullptr)
      handle->compute(v.A, v.S, v.U, v.V, v.info);
    else
      kwsvd::batched_svd(Exec(), v.A, v.S, v.U, v.V, v.info, options);
    return results(shapes, v);
  }

  // The results of a call, column-major on the host.
  static kwsvd::test::BatchResult<Scalar> results(const std::vector<MatrixShape>& shapes,
                                                  const Views& views) {
    const auto& S = views.S;
    const auto& U = views.U;
    const auto& V = views.V;
    const auto& info = views.info;
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
    kwsvd::test::BatchResult<Scalar> r;
    for (std::size_t b = 0; b < shapes.size(); ++b) {
      const int m = shapes[b].rows, n = shapes[b].cols, k = std::min(m, n);
      auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), S[b]);
      auto hu = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), U[b]);
      auto hv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), V[b]);
      std::vector<Scalar> s(std::size_t(k), Scalar(0)), u(std::size_t(m) * k, Scalar(0)),
          v(std::size_t(n) * k, Scalar(0));
      for (int l = 0; l < k; ++l) {
        s[l] = hs(l);
        for (int i = 0; i < m; ++i)
          u[i + std::size_t(m) * l] = hu(i, l);
        for (int j = 0; j < n; ++j)
          v[j + std::size_t(n) * l] = hv(j, l);
      }
      r.s.push_back(s);
      r.u.push_back(u);
      r.v.push_back(v);
      r.info.push_back(hi(b));
    }
    return r;
  }

  static void expect_accurate(const std::vector<MatrixShape>& shapes,
                              const std::vector<std::vector<Scalar>>& mats,
                              const kwsvd::test::BatchResult<Scalar>& r, const std::string& what) {
    for (std::size_t b = 0; b < shapes.size(); ++b) {
      const int m = shapes[b].rows, n = shapes[b].cols;
      if (std::min(m, n) == 0) {
        EXPECT_EQ(r.info[b].converged, 1) << what << " empty matrix " << b;
        continue;
      }
      kwsvd::test::expect_accurate<Scalar>({mats[b]}, m, n,
                                           {{r.s[b]}, {r.u[b]}, {r.v[b]}, {r.info[b]}},
                                           what + " [" + std::to_string(b) + "]");
    }
  }
};

using Cases = kwsvd::test::ScalarLayoutCases;
TYPED_TEST_SUITE(VariableBatch, Cases);

TYPED_TEST(VariableBatch, MixedShapesInOneCallMeetSeed002Thresholds) {
  using T = typename TestFixture::Scalar;
  const auto shapes = TestFixture::shapes();
  const auto mats = TestFixture::matrices(shapes);
  kwsvd::VariableBatchedSvd<Exec, T> svd(Exec(), shapes);
  EXPECT_GT(svd.level0_count(), 0);
  EXPECT_GT(svd.block_count(), 0);
  EXPECT_GT(svd.plan_summary().whole_matrices, 0);
  EXPECT_GT(svd.plan_summary().gram_evds, 0);
  // 130 x 70 has 130 rows: its working columns are padded to 16 bytes, so
  // its Grams and those of the matrices after it take the column runs.
  EXPECT_EQ(svd.plan_summary().gram_column_run_pairs, svd.plan_summary().gram_evds);
  EXPECT_EQ(svd.empty_count(), 2);
  EXPECT_EQ(svd.level0_count() + svd.block_count() + svd.empty_count(), int(shapes.size()));
  TestFixture::expect_accurate(shapes, mats, TestFixture::run(shapes, mats, {}, &svd), "mixed");
}

// SvdOptions::sort = false: the values and vectors of a sorted call to the
// bit, each matrix's placed in the order its iteration left them (level-0
// classes, whole-matrix sweeps and blocks alike; Wcycle's
// UnsortedOutputsKeepTheColumnsOrder checks the order itself).
TYPED_TEST(VariableBatch, UnsortedOutputsAreTheSortedOnesPlacedDifferently) {
  const auto shapes = TestFixture::shapes();
  const auto mats = TestFixture::matrices(shapes);
  const auto sorted = TestFixture::run(shapes, mats, {});
  kwsvd::SvdOptions options;
  options.sort = false;
  const auto unsorted = TestFixture::run(shapes, mats, options);
  int placed_differently = 0;
  for (std::size_t b = 0; b < shapes.size(); ++b) {
    const int m = shapes[b].rows, n = shapes[b].cols;
    const auto one = kwsvd::test::sorted_by_value<typename TestFixture::Scalar>(
        {{unsorted.s[b]}, {unsorted.u[b]}, {unsorted.v[b]}, {unsorted.info[b]}}, m, n);
    EXPECT_EQ(one.s[0], sorted.s[b]) << "matrix " << b;
    EXPECT_EQ(one.u[0], sorted.u[b]) << "matrix " << b;
    EXPECT_EQ(one.v[0], sorted.v[b]) << "matrix " << b;
    EXPECT_EQ(unsorted.info[b].sweeps, sorted.info[b].sweeps) << "matrix " << b;
    placed_differently += unsorted.s[b] != sorted.s[b] ? 1 : 0;
  }
  EXPECT_GT(placed_differently, 0);
}

// The level-0 matrices of a mixed batch are launched by size class (larger
// extent up to 32, then the power of two that bounds it), each launch sized
// for its own largest matrix.
TYPED_TEST(VariableBatch, Level0SizeClassesLaunchOnTheirOwn) {
  using T = typename TestFixture::Scalar;
  const std::vector<MatrixShape> shapes = {{1, 1},   {3, 2},   {2, 7},   {8, 5}, {12, 16},
                                           {20, 31}, {32, 32}, {40, 33}, {5, 5}, {44, 40},
                                           {16, 1},  {100, 3}, {0, 3}};
  const auto mats = TestFixture::matrices(shapes);
  kwsvd::VariableBatchedSvd<Exec, T> svd(Exec(), shapes);
  EXPECT_EQ(svd.level0_count(), 12);
  EXPECT_EQ(svd.level0_launches(), 3);  // up to 32, 64 and 128
  EXPECT_EQ(svd.block_count(), 0);
  TestFixture::expect_accurate(shapes, mats, TestFixture::run(shapes, mats, {}, &svd),
                               "size classes");
  // On 4 lanes a class up to 32 rows compiles its row loop for 8 row
  // blocks, every matrix padded to 32 rows with zeros; 40 to 100 rows take
  // the general loop.
  kwsvd::SvdOptions four;
  four.lanes_per_pair = 4;
  const auto plan = kwsvd::Impl::plan_slotted_small_svd<Exec, T>({{1, 1}, {3, 2}, {32, 32}}, four);
  EXPECT_EQ(plan.rows_per_lane, 8);
  for (const auto& shape : plan.shapes) {
    EXPECT_EQ(shape.rows_per_lane, 8);
    EXPECT_GE(shape.ld_w, 32);
    EXPECT_GE(shape.ld_v, 32);
  }
  EXPECT_EQ((kwsvd::Impl::plan_slotted_small_svd<Exec, T>({{3, 2}, {100, 3}}, four).rows_per_lane),
            0);
  kwsvd::VariableBatchedSvd<Exec, T> svd_four(Exec(), shapes, four);
  TestFixture::expect_accurate(shapes, mats, TestFixture::run(shapes, mats, four, &svd_four),
                               "size classes, 4 lanes");
  EXPECT_EQ(kwsvd::Impl::level0_size_class({1, 1}), 32);
  EXPECT_EQ(kwsvd::Impl::level0_size_class({32, 7}), 32);
  EXPECT_EQ(kwsvd::Impl::level0_size_class({3, 33}), 64);
  EXPECT_EQ(kwsvd::Impl::level0_size_class({65, 2}), 128);
}

TYPED_TEST(VariableBatch, EveryShapeThroughBlockRotations) {
  // Matrices narrower than two level blocks (1 to 20 columns) rotate blocks
  // of half their columns inside the level's 2w Gram.
  const auto shapes = TestFixture::shapes();
  const auto mats = TestFixture::matrices(shapes);
  kwsvd::SvdOptions options;
  options.level0 = false;
  TestFixture::expect_accurate(shapes, mats, TestFixture::run(shapes, mats, options), "blocks");
}

TYPED_TEST(VariableBatch, ThreeGroupsAndThreeLevelsInOneCall) {
  // Planned for 32 KB of scratch with widths {64, 32, 16} (double) or {96,
  // 48, 24} (float): in one call, every matrix recurses to level 3, where the
  // pairs of the shorter ones are solved in scratch and the tallest one's by
  // the Gram EVD (Algorithm 2, Fig. 4).
  using T = typename TestFixture::Scalar;
  const std::vector<MatrixShape> shapes = {{31, 28}, {70, 60}, {100, 90}, {260, 130}, {9, 40}};
  const auto mats = TestFixture::matrices(shapes);
  kwsvd::SvdOptions options;
  options.level0 = false;
  options.block_scratch_bytes = 32768;
  options.pair_svd = true;
  options.level_widths =
      sizeof(T) == 8 ? std::vector<int>{64, 32, 16} : std::vector<int>{96, 48, 24};
  kwsvd::VariableBatchedSvd<Exec, T> svd(Exec(), shapes, options);
  const auto summary = svd.plan_summary();
  EXPECT_EQ(summary.levels, 3);
  EXPECT_GT(summary.pair_svds, 0);
  EXPECT_GT(summary.gram_evds, 0);
  EXPECT_EQ(summary.widths, options.level_widths);
  TestFixture::expect_accurate(shapes, mats, TestFixture::run(shapes, mats, options, &svd),
                               "three groups");
}

TYPED_TEST(VariableBatch, UniformBatchAgreesWithTheUniformForm) {
  using T = typename TestFixture::Scalar;
  using L = typename TestFixture::Layout;
  const int batch = 3, m = 64, n = 48;
  std::vector<std::vector<T>> mats;
  for (int b = 0; b < batch; ++b)
    mats.push_back(random_matrix<T>(m, n, 300 + b));
  kwsvd::SvdOptions options;
  options.level0 = false;
  const auto uniform = kwsvd::test::run_svd_batch<T, L>(
      mats, m, n,
      [&](const auto& A, const auto& S, const auto& U, const auto& V, const auto& info) {
        kwsvd::batched_svd(Exec(), A, S, U, V, info, options);
      });
  const std::vector<MatrixShape> shapes(batch, MatrixShape{m, n});
  const auto variable = TestFixture::run(shapes, mats, options);
  for (int b = 0; b < batch; ++b)
    for (int l = 0; l < n; ++l)
      EXPECT_EQ(uniform.s[b][l], variable.s[b][l]) << b << " " << l;
}

// Several instances (SvdOptions::instances: alternate matrices swept on
// streams of their own on a GPU; one after the other on one instance on the
// host) give every matrix the same steps as one: the same results to the
// bit.
TYPED_TEST(VariableBatch, SeveralInstancesGiveTheResultsOfOne) {
  using T = typename TestFixture::Scalar;
  const auto shapes = TestFixture::shapes();
  const auto mats = TestFixture::matrices(shapes);
  kwsvd::SvdOptions one;
  one.level0 = false;
  one.instances = 1;
  kwsvd::VariableBatchedSvd<Exec, T> svd_one(Exec(), shapes, one);
  EXPECT_EQ(svd_one.plan_summary().instances, 1);
  const auto r1 = TestFixture::run(shapes, mats, one, &svd_one);
  for (const int instances : {2, 3, 4}) {
    SCOPED_TRACE(instances);
    kwsvd::SvdOptions several = one;
    several.instances = instances;
    kwsvd::VariableBatchedSvd<Exec, T> svd(Exec(), shapes, several);
    EXPECT_EQ(svd.plan_summary().instances, instances);
    EXPECT_EQ(svd_one.plan_summary().gram_evds, svd.plan_summary().gram_evds);
    const auto r = TestFixture::run(shapes, mats, several, &svd);
    for (std::size_t b = 0; b < shapes.size(); ++b) {
      EXPECT_EQ(r1.info[b].sweeps, r.info[b].sweeps) << b;
      EXPECT_EQ(r1.info[b].converged, r.info[b].converged) << b;
      EXPECT_EQ(r1.s[b], r.s[b]) << b;
      EXPECT_EQ(r1.u[b], r.u[b]) << b;
      EXPECT_EQ(r1.v[b], r.v[b]) << b;
    }
    TestFixture::expect_accurate(shapes, mats, r, "several instances");
  }
  kwsvd::SvdOptions bad = one;
  bad.instances = 5;
  const std::string w = error_of([&] { kwsvd::VariableBatchedSvd<Exec, T>(Exec(), shapes, bad); });
  EXPECT_NE(w.find("'options.instances'"), std::string::npos) << w;
  EXPECT_NE(w.find("0 (automatic) or 1 to 4, got 5"), std::string::npos) << w;
}

TYPED_TEST(VariableBatch, PointerArraysMatchTheViewsForm) {
  using T = typename TestFixture::Scalar;
  const auto shapes = TestFixture::shapes();
  const auto mats = TestFixture::matrices(shapes);
  const auto ref = TestFixture::run(shapes, mats, {});
  const int batch = int(shapes.size());
  std::vector<int> m(batch), n(batch), lda(batch), ldu(batch), ldv(batch);
  std::vector<Kokkos::View<T*>> A, S, U, V;
  for (int b = 0; b < batch; ++b) {
    m[b] = shapes[b].rows;
    n[b] = shapes[b].cols;
    const int k = std::min(m[b], n[b]);
    lda[b] = m[b] + 2;
    ldu[b] = m[b] + 1;
    ldv[b] = std::max(1, n[b]);
    A.emplace_back("A", std::size_t(lda[b]) * n[b]);
    S.emplace_back("S", k);
    U.emplace_back("U", std::size_t(ldu[b]) * k);
    V.emplace_back("V", std::size_t(ldv[b]) * k);
    auto h = Kokkos::create_mirror_view(A.back());
    for (int j = 0; j < n[b]; ++j)
      for (int i = 0; i < m[b]; ++i)
        h(i + std::size_t(lda[b]) * j) = mats[b][i + std::size_t(m[b]) * j];
    Kokkos::deep_copy(A.back(), h);
  }
  std::vector<const T*> a_ptr;
  std::vector<T*> s_ptr, u_ptr, v_ptr;
  for (int b = 0; b < batch; ++b) {
    a_ptr.push_back(A[b].data());
    s_ptr.push_back(S[b].data());
    u_ptr.push_back(U[b].data());
    v_ptr.push_back(V[b].data());
  }
  Kokkos::View<kwsvd::SvdInfo*> info("info", batch);
  kwsvd::batched_svd(Exec(), batch, m.data(), n.data(), a_ptr.data(), lda.data(), s_ptr.data(),
                     u_ptr.data(), ldu.data(), v_ptr.data(), ldv.data(), info.data());
  for (int b = 0; b < batch; ++b) {
    auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), S[b]);
    auto hu = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), U[b]);
    const int k = std::min(m[b], n[b]);
    for (int l = 0; l < k; ++l) {
      EXPECT_EQ(hs(l), ref.s[b][l]) << b << " " << l;
      EXPECT_EQ(hu(std::size_t(ldu[b]) * l), ref.u[b][std::size_t(m[b]) * l]) << b << " " << l;
    }
  }
  // Values only: U, ldu, V, ldv null.
  kwsvd::batched_svd(Exec(), batch, m.data(), n.data(), a_ptr.data(), lda.data(), s_ptr.data(),
                     static_cast<T* const*>(nullptr), nullptr, static_cast<T* const*>(nullptr),
                     nullptr, info.data());
  for (int b = 0; b < batch; ++b) {
    auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), S[b]);
    for (int l = 0; l < std::min(m[b], n[b]); ++l)
      EXPECT_NEAR(double(hs(l)), double(ref.s[b][l]),
                  100 * std::numeric_limits<T>::epsilon() * double(ref.s[b][0]));
  }
}

// The one-sided jobs on a mixed batch: U alone and V alone, the other side
// an empty list (Views) or null (pointer arrays, whose form gives the Views
// form's bits). Every non-empty matrix's side is orthonormal and holds
// singular vectors, its values those of the full call (a matrix may take
// another path than in the full call: tall ones that fit level-0 scratch
// without V only go to the level-0 kernel when V is not kept).
TYPED_TEST(VariableBatch, OneSidedJobsGiveSingularVectorsOfOneSide) {
  using T = typename TestFixture::Scalar;
  const auto shapes = TestFixture::shapes();
  const auto mats = TestFixture::matrices(shapes);
  const auto full = TestFixture::run(shapes, mats, {});
  const double u = std::numeric_limits<T>::epsilon() / 2;
  const int batch = int(shapes.size());
  for (const kwsvd::Job job :
       {kwsvd::Job::values_and_left_vectors, kwsvd::Job::values_and_right_vectors}) {
    const bool left = job == kwsvd::Job::values_and_left_vectors;
    const std::string what = left ? "left" : "right";
    kwsvd::SvdOptions options;
    options.job = job;
    kwsvd::VariableBatchedSvd<Exec, T> svd(Exec(), shapes, options);
    const auto views = TestFixture::make_views(shapes, mats);
    views.clear_outputs();
    const std::vector<typename TestFixture::Matrix> none;
    if (left)
      svd.compute(views.A, views.S, views.U, none, views.info);
    else
      svd.compute(views.A, views.S, none, views.V, views.info);
    const auto r = TestFixture::results(shapes, views);
    for (int b = 0; b < batch; ++b) {
      const int m = shapes[std::size_t(b)].rows, n = shapes[std::size_t(b)].cols;
      const std::size_t k = std::size_t(std::min(m, n));
      const std::string at =
          what + " [" + std::to_string(b) + "] " + std::to_string(m) + " x " + std::to_string(n);
      EXPECT_EQ(r.info[std::size_t(b)].converged, 1) << at;
      if (k == 0)
        continue;
      const auto& x = left ? r.u[std::size_t(b)] : r.v[std::size_t(b)];
      const auto e =
          kwsvd::test::side_errors(mats[std::size_t(b)], m, n, r.s[std::size_t(b)], x, left);
      EXPECT_LT(e.orthogonality, 30 * u) << at;
      EXPECT_LT(e.eigen, 30 * u) << at;
      for (std::size_t l = 0; l < k; ++l)
        EXPECT_NEAR(double(r.s[std::size_t(b)][l]), double(full.s[std::size_t(b)][l]),
                    120 * u * double(full.s[std::size_t(b)][0]))
            << at << " value " << l;
    }
    // The side not computed is refused where given.
    std::string w = error_of([&] { svd.compute(views.A, views.S, views.U, views.V, views.info); });
    EXPECT_NE(w.find(left ? "argument 'V' must be empty" : "argument 'U' must be empty"),
              std::string::npos)
        << w;
    if (!std::is_same<typename TestFixture::Layout, Kokkos::LayoutLeft>::value)
      continue;  // the pointer arrays are column-major: LayoutLeft's A
    // The pointer arrays, the side not computed null: the Views form's bits.
    std::vector<const T*> a_ptr;
    std::vector<T*> s_ptr, x_ptr;
    std::vector<int> lda, ldx;
    std::vector<Kokkos::View<T*>> S, X;
    for (int b = 0; b < batch; ++b) {
      const int m = shapes[std::size_t(b)].rows, n = shapes[std::size_t(b)].cols;
      const int k = std::min(m, n), rows = left ? m : n;
      a_ptr.push_back(views.A[std::size_t(b)].data());
      lda.push_back(std::max(1, m));
      S.emplace_back("S", k);
      X.emplace_back("X", std::size_t(std::max(1, rows)) * k);
      s_ptr.push_back(S.back().data());
      x_ptr.push_back(X.back().data());
      ldx.push_back(std::max(1, rows));
    }
    Kokkos::View<kwsvd::SvdInfo*> info("info", batch);
    T* const* no = nullptr;
    if (left)
      svd.compute(a_ptr.data(), lda.data(), s_ptr.data(), x_ptr.data(), ldx.data(), no, nullptr,
                  info.data());
    else
      svd.compute(a_ptr.data(), lda.data(), s_ptr.data(), no, nullptr, x_ptr.data(), ldx.data(),
                  info.data());
    for (int b = 0; b < batch; ++b) {
      const int m = shapes[std::size_t(b)].rows, n = shapes[std::size_t(b)].cols;
      const int k = std::min(m, n), rows = left ? m : n;
      auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), S[std::size_t(b)]);
      auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), X[std::size_t(b)]);
      const auto& x = left ? r.u[std::size_t(b)] : r.v[std::size_t(b)];
      for (int l = 0; l < k; ++l) {
        ASSERT_EQ(hs(l), r.s[std::size_t(b)][std::size_t(l)]) << what << " " << b;
        for (int i = 0; i < rows; ++i)
          ASSERT_EQ(hx(i + std::size_t(rows) * l), x[i + std::size_t(rows) * l])
              << what << " " << b;
      }
    }
    // The pointers of the side not computed are refused where given.
    w = error_of([&] {
      svd.compute(a_ptr.data(), lda.data(), s_ptr.data(), x_ptr.data(), ldx.data(), x_ptr.data(),
                  ldx.data(), info.data());
    });
    EXPECT_NE(w.find(left ? "'V, ldv' must be null" : "'U, ldu' must be null"), std::string::npos)
        << w;
  }
}

// workspace_bytes() is what the handle's constructor allocated in the
// execution space's memory, to the byte, and planned_workspace_bytes() gives
// the same number beforehand without allocating: a batch of level-0 size
// classes, matrices swept whole, blocked ones and empty ones; values only;
// an empty batch. The slots and the W-cycle's working copies are part of it.
TYPED_TEST(VariableBatch, WorkspaceBytesAreWhatTheHandleAllocates) {
  using T = typename TestFixture::Scalar;
  const std::string memory = Exec::memory_space::name();
  kwsvd::SvdOptions values;
  values.job = kwsvd::Job::values;
  const auto shapes = TestFixture::shapes();
  struct Case {
    std::vector<MatrixShape> shapes;
    kwsvd::SvdOptions options;
    const char* what;
  };
  for (const Case& c : {Case{shapes, {}, "mixed"}, Case{shapes, values, "values only"},
                        Case{{}, {}, "empty batch"}}) {
    SCOPED_TRACE(c.what);
    kwsvd::test::KokkosEvents planning, construction;
    std::size_t planned = 0, held = 0;
    {
      kwsvd::test::KokkosEventRecorder recorder(planning);
      planned =
          kwsvd::VariableBatchedSvd<Exec, T>::planned_workspace_bytes(Exec(), c.shapes, c.options);
    }
    EXPECT_TRUE(planning.allocations.empty()) << planning.allocation_list();
    EXPECT_TRUE(planning.copies.empty());
    std::size_t working = 0;  // the W-cycle's copies of its matrices (and V)
    {
      kwsvd::test::KokkosEventRecorder recorder(construction);
      kwsvd::VariableBatchedSvd<Exec, T> svd(Exec(), c.shapes, c.options);
      held = svd.workspace_bytes();
      EXPECT_EQ(svd.level0_count() > 0, !c.shapes.empty());
      EXPECT_EQ(svd.block_count() > 0, !c.shapes.empty());
    }
    EXPECT_EQ(planned, held);
    EXPECT_EQ(construction.bytes_allocated(memory, "kwsvd::"), held)
        << construction.allocation_list();
    if (c.shapes.empty()) {
      EXPECT_EQ(held, 0u);
      continue;
    }
    for (const auto& a : construction.allocations)
      if (a.label == "kwsvd::W" || a.label == "kwsvd::V")
        working += a.bytes;
    EXPECT_GE(held, working + c.shapes.size() * sizeof(kwsvd::Impl::MatrixSlot<T>));
    EXPECT_GT(working, std::size_t(130 * 70) * sizeof(T));
  }
  const std::string e = error_of([] {
    kwsvd::VariableBatchedSvd<Exec, T>::planned_workspace_bytes(Exec(), {{3, 4}, {-1, 2}});
  });
  EXPECT_NE(e.find("kwsvd::VariableBatchedSvd::planned_workspace_bytes"), std::string::npos) << e;
  EXPECT_NE(e.find("shapes[1]"), std::string::npos) << e;
}

// Under SvdOptions::max_workspace_bytes the block-rotation matrices of a
// variable batch are swept in rounds of consecutive matrices whose plans
// share one workspace for their per-call state. The handle holds at most the
// limit (what Kokkos saw allocated, and what the query plans); each round's
// matrices get, to the bit, the results of a call on them alone (the shared
// workspace is cleared before each round), and a reused handle the same
// again, allocating nothing. A limit below the slots, or below what rounds
// with the smallest shared workspace take, is refused, naming the option and
// that size, which is then taken; a limit the whole batch fits is one round,
// the unlimited call's.
TYPED_TEST(VariableBatch, WorkspaceLimitSweepsRoundsThatShareOneWorkspace) {
  using T = typename TestFixture::Scalar;
  using Svd = kwsvd::VariableBatchedSvd<Exec, T>;
  const std::string memory = Exec::memory_space::name();
  const auto shapes = TestFixture::shapes();
  const auto mats = TestFixture::matrices(shapes);
  kwsvd::SvdOptions unlimited;
  unlimited.level0 = false;  // every non-empty matrix through the W-cycle
  std::vector<MatrixShape> block_shapes;
  std::vector<std::vector<T>> block_mats;
  std::vector<std::size_t> block_of;  // batch index of each block-rotation matrix
  for (std::size_t b = 0; b < shapes.size(); ++b)
    if (shapes[b].rows > 0 && shapes[b].cols > 0) {
      block_shapes.push_back(shapes[b]);
      block_mats.push_back(mats[b]);
      block_of.push_back(b);
    }
  const std::size_t whole = Svd::planned_workspace_bytes(Exec(), shapes, unlimited);
  // Within the limit, to the byte as allocated and as planned.
  const auto held_within = [&](const kwsvd::SvdOptions& o, const char* what) {
    SCOPED_TRACE(what);
    kwsvd::test::KokkosEvents construction;
    std::size_t held = 0;
    {
      kwsvd::test::KokkosEventRecorder recorder(construction);
      Svd svd(Exec(), shapes, o);
      held = svd.workspace_bytes();
    }
    EXPECT_LE(held, o.max_workspace_bytes);
    EXPECT_EQ(held, Svd::planned_workspace_bytes(Exec(), shapes, o));
    EXPECT_EQ(construction.bytes_allocated(memory, "kwsvd::"), held)
        << construction.allocation_list();
  };
  // Each round's results are those of a call on its matrices alone.
  const auto expect_rounds_alone = [&](Svd& svd, const char* what) {
    SCOPED_TRACE(what);
    const auto counts = svd.matrices_per_round();
    ASSERT_EQ(int(counts.size()), svd.rounds());
    int begin = 0;
    for (const int count : counts) {
      ASSERT_GE(count, 1);
      begin += count;
    }
    ASSERT_EQ(begin, int(block_shapes.size()));
    const auto limited = TestFixture::run(shapes, mats, unlimited, &svd);
    TestFixture::expect_accurate(shapes, mats, limited, what);
    const auto again = TestFixture::run(shapes, mats, unlimited, &svd);
    begin = 0;
    for (const int count : counts) {
      const std::vector<MatrixShape> round_shapes(block_shapes.begin() + begin,
                                                  block_shapes.begin() + begin + count);
      const std::vector<std::vector<T>> round_mats(block_mats.begin() + begin,
                                                   block_mats.begin() + begin + count);
      const auto alone = TestFixture::run(round_shapes, round_mats, unlimited);
      for (int k = 0; k < count; ++k) {
        const std::size_t b = block_of[std::size_t(begin + k)];
        EXPECT_EQ(alone.info[k].sweeps, limited.info[b].sweeps) << b;
        EXPECT_EQ(alone.s[k], limited.s[b]) << b;
        EXPECT_EQ(alone.u[k], limited.u[b]) << b;
        EXPECT_EQ(alone.v[k], limited.v[b]) << b;
        EXPECT_EQ(again.s[b], limited.s[b]) << b;
        EXPECT_EQ(again.u[b], limited.u[b]) << b;
      }
      begin += count;
    }
  };

  kwsvd::SvdOptions half = unlimited;
  half.max_workspace_bytes = whole / 2;
  held_within(half, "half");
  int half_rounds = 0;
  {
    Svd svd(Exec(), shapes, half);
    half_rounds = svd.rounds();
    EXPECT_GE(half_rounds, 2);
    expect_rounds_alone(svd, "half");
    // A reused handle allocates nothing and reads back one small value a
    // sweep of each round.
    const auto views = TestFixture::make_views(shapes, mats);
    svd.compute(views.A, views.S, views.U, views.V, views.info);
    kwsvd::test::KokkosEvents events;
    {
      kwsvd::test::KokkosEventRecorder recorder(events);
      svd.compute(views.A, views.S, views.U, views.V, views.info);
    }
    EXPECT_TRUE(events.allocations.empty()) << events.allocation_list();
    EXPECT_LE(events.device_to_host_copies(), half_rounds * kwsvd::test::most_sweeps(views.info));
  }

  // Below the slots alone, or below what rounds with the smallest shared
  // workspace need: refused, naming the option and that size.
  kwsvd::SvdOptions tiny = unlimited;
  tiny.max_workspace_bytes = 1000;
  const std::string slots = error_of([&] { Svd(Exec(), shapes, tiny); });
  EXPECT_NE(slots.find("options.max_workspace_bytes"), std::string::npos) << slots;
  EXPECT_NE(slots.find("that the batch's slots and lists take, got 1 kB (1000 bytes)"),
            std::string::npos)
      << slots;
  tiny.max_workspace_bytes = 4000;
  const std::string e = error_of([&] { Svd(Exec(), shapes, tiny); });
  EXPECT_NE(e.find("kwsvd::VariableBatchedSvd"), std::string::npos) << e;
  EXPECT_NE(e.find("options.max_workspace_bytes"), std::string::npos) << e;
  EXPECT_NE(e.find("with the smallest shared workspace"), std::string::npos) << e;
  EXPECT_NE(e.find("got 4 kB (4000 bytes)"), std::string::npos) << e;
  const std::size_t open = e.find(" bytes) that rounds");
  ASSERT_NE(open, std::string::npos) << e;
  const std::size_t from = e.rfind('(', open) + 1;
  const std::size_t least = std::stoull(e.substr(from, open - from));
  EXPECT_LT(least, whole);
  kwsvd::SvdOptions tight = unlimited;
  tight.max_workspace_bytes = least;
  held_within(tight, "tight");
  {
    Svd svd(Exec(), shapes, tight);
    EXPECT_GT(svd.rounds(), half_rounds);
    expect_rounds_alone(svd, "tight");
  }

  // A limit the whole batch fits: one round, the unlimited call's.
  kwsvd::SvdOptions roomy = unlimited;
  roomy.max_workspace_bytes = whole;
  Svd svd(Exec(), shapes, roomy);
  EXPECT_EQ(svd.rounds(), 1);
  EXPECT_EQ(svd.workspace_bytes(), whole);
  const auto one = TestFixture::run(shapes, mats, roomy, &svd);
  const auto free = TestFixture::run(shapes, mats, unlimited);
  for (std::size_t b = 0; b < shapes.size(); ++b) {
    EXPECT_EQ(one.s[b], free.s[b]) << b;
    EXPECT_EQ(one.u[b], free.u[b]) << b;
  }
}

// Random variable batches under random workspace limits: 2 to 9 matrices of
// random shapes (some empty, some tall or wide), random instances and
// scratch, a limit of 45 to 90% of their unlimited workspace. An accepted
// limit must hold the handle within it and give every matrix seed 002's
// thresholds; a refused one must name the option. Fixed seed.
TYPED_TEST(VariableBatch, RandomBatchesUnderWorkspaceLimits) {
  using T = typename TestFixture::Scalar;
  using Svd = kwsvd::VariableBatchedSvd<Exec, T>;
  std::mt19937_64 rng(20261128u + sizeof(T));
  const auto pick = [&](std::initializer_list<int> v) { return *(v.begin() + rng() % v.size()); };
  for (int trial = 0; trial < 15; ++trial) {
    const int batch = 2 + int(rng() % 8);
    std::vector<MatrixShape> shapes;
    for (int b = 0; b < batch; ++b)
      shapes.push_back({pick({0, 1, 7, 33, 64, 97, 130, 200}), pick({1, 16, 33, 48, 65, 97, 150})});
    const auto mats = TestFixture::matrices(shapes);
    kwsvd::SvdOptions o;
    o.level0 = rng() % 4 == 0;
    o.instances = pick({0, 1, 2});
    o.block_scratch_bytes = pick({0, 40936, 16384});
    const double fraction = double(pick({45, 60, 75, 90})) / 100;
    o.max_workspace_bytes =
        std::size_t(fraction * double(Svd::planned_workspace_bytes(Exec(), shapes, o)));
    std::string text;
    for (const auto& s : shapes)
      text += std::to_string(s.rows) + "x" + std::to_string(s.cols) + " ";
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + text + ", level0 " +
                 std::to_string(o.level0) + ", instances " + std::to_string(o.instances) +
                 ", scratch " + std::to_string(o.block_scratch_bytes) + ", limit " +
                 std::to_string(o.max_workspace_bytes));
    std::unique_ptr<Svd> svd;
    try {
      svd = std::make_unique<Svd>(Exec(), shapes, o);
    } catch (const kwsvd::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("options.max_workspace_bytes"), std::string::npos)
          << e.what();
      continue;
    }
    EXPECT_LE(svd->workspace_bytes(), o.max_workspace_bytes);
    TestFixture::expect_accurate(shapes, mats, TestFixture::run(shapes, mats, o, svd.get()),
                                 "limited");
  }
}

// A reused handle allocates nothing after its first call, in the Views form
// and the pointer-array form, and a call reads back at most one small value
// per sweep of its block rotations (issue 6, items 3 and 4) and waits for
// the device only around those reads.
TYPED_TEST(VariableBatch, ReusedHandleAllocatesNothingAndReadsBackOnceASweep) {
  using T = typename TestFixture::Scalar;
  const auto shapes = TestFixture::shapes();
  const auto mats = TestFixture::matrices(shapes);
  const int batch = int(shapes.size());
  const auto views = TestFixture::make_views(shapes, mats);
  const auto &A = views.A, &U = views.U, &V = views.V;
  const auto& S = views.S;
  const auto& info = views.info;
  std::vector<const T*> a_ptr;
  std::vector<T*> s_ptr, u_ptr, v_ptr;
  std::vector<int> lda, ldu, ldv;
  for (int b = 0; b < batch; ++b) {
    const int m = shapes[b].rows, n = shapes[b].cols;
    // The pointer form reads each View's storage as a column-major m_b x n_b
    // matrix (for LayoutRight another matrix of that shape): any matrix does
    // for this test.
    a_ptr.push_back(A[b].data());
    s_ptr.push_back(S[b].data());
    u_ptr.push_back(U[b].data());
    v_ptr.push_back(V[b].data());
    lda.push_back(std::max(1, m));
    ldu.push_back(std::max(1, m));
    ldv.push_back(std::max(1, n));
  }
  kwsvd::VariableBatchedSvd<Exec, T> svd(Exec(), shapes);
  ASSERT_GT(svd.plan_summary().launch_steps, 0);
  svd.compute(A, S, U, V, info);  // the first call may set up Kokkos's own buffers
  std::string previous = "views";
  for (const char* form : {"views", "values", "pointers", "views", "views"}) {
    SCOPED_TRACE(form);
    // The same call again: the device still holds its slots.
    const bool same_slots = previous == form;
    previous = form;
    kwsvd::test::KokkosEvents events;
    {
      kwsvd::test::KokkosEventRecorder recorder(events);
      const std::string f = form;
      if (f == "views")
        svd.compute(A, S, U, V, info);
      else if (f == "values")
        svd.compute(A, S, info);
      else
        svd.compute(a_ptr.data(), lda.data(), s_ptr.data(), u_ptr.data(), ldu.data(), v_ptr.data(),
                    ldv.data(), info.data());
    }
    EXPECT_TRUE(events.allocations.empty()) << events.allocation_list();
    const int sweeps = kwsvd::test::most_sweeps(info);
    EXPECT_GT(sweeps, 0);
    EXPECT_LE(events.device_to_host_copies(), sweeps);
    // The slots go to the device once a call where they changed (on host
    // backends a copy of their View onto itself, into host memory), not at
    // all where they did not.
    const std::string slots = "kwsvd::slots";
    EXPECT_LE(events.copies_into(slots), same_slots ? 0 : 1);
    EXPECT_LE(events.copies_into_host(slots), sweeps);
    EXPECT_LE(events.largest_copy_into_host(slots), 64u);
    EXPECT_LE(int(events.copies.size()), sweeps + 1);
    // Waits: the previous call's slot upload where the slots changed, the
    // start of the parts' streams, then one per part and sweep for the read.
    const int waits = (same_slots ? 1 : 2) + svd.plan_summary().instances * sweeps;
    EXPECT_LE(int(events.fences.size()), waits) << events.fence_list();
  }
}

// A handle reused on two sets of Views alternately (both alive, so their
// storage differs), the second time with the first set's contents replaced:
// the slots reach the device only when they change (see the test above), and
// every call solves the matrices its Views hold then.
TYPED_TEST(VariableBatch, ReusedHandleSolvesWhatItsViewsHoldAtEachCall) {
  using T = typename TestFixture::Scalar;
  const auto shapes = TestFixture::shapes();
  const auto first = TestFixture::matrices(shapes);
  std::vector<std::vector<T>> second;
  for (std::size_t b = 0; b < shapes.size(); ++b)
    second.push_back(random_matrix<T>(shapes[b].rows, shapes[b].cols, 500 + int(b)));
  kwsvd::VariableBatchedSvd<Exec, T> svd(Exec(), shapes);
  const auto x = TestFixture::make_views(shapes, first),
             y = TestFixture::make_views(shapes, second);
  const auto solve = [&](const typename TestFixture::Views& views,
                         const std::vector<std::vector<T>>& mats, const char* what) {
    views.clear_outputs();  // so that a repeated call must write them again
    svd.compute(views.A, views.S, views.U, views.V, views.info);
    TestFixture::expect_accurate(shapes, mats, TestFixture::results(shapes, views), what);
  };
  solve(x, first, "first set");
  solve(x, first, "first set again");
  solve(y, second, "second set");
  for (std::size_t b = 0; b < shapes.size(); ++b)
    Kokkos::deep_copy(x.A[b],
                      TestFixture::device_matrix(second[b], shapes[b].rows, shapes[b].cols, "A2"));
  solve(x, second, "first set, new contents");
  solve(x, second, "first set, new contents again");
}

TYPED_TEST(VariableBatch, NonFiniteMatrixLeavesOthersExact) {
  using T = typename TestFixture::Scalar;
  const auto shapes = TestFixture::shapes();
  auto mats = TestFixture::matrices(shapes);
  mats[6][11] = std::numeric_limits<T>::infinity();  // a block-rotation matrix
  mats[4][3] = std::numeric_limits<T>::quiet_NaN();  // a level-0 matrix
  const auto r = TestFixture::run(shapes, mats, {});
  for (std::size_t b : {std::size_t(4), std::size_t(6)}) {
    EXPECT_EQ(r.info[b].nonfinite_input, 1) << b;
    EXPECT_EQ(r.info[b].converged, 0) << b;
    EXPECT_TRUE(std::isnan(double(r.s[b][0]))) << b;
  }
  std::vector<MatrixShape> rest_shapes;
  std::vector<std::vector<T>> rest;
  kwsvd::test::BatchResult<T> rest_r;
  for (std::size_t b = 0; b < shapes.size(); ++b) {
    if (b == 4 || b == 6)
      continue;
    rest_shapes.push_back(shapes[b]);
    rest.push_back(mats[b]);
    rest_r.s.push_back(r.s[b]);
    rest_r.u.push_back(r.u[b]);
    rest_r.v.push_back(r.v[b]);
    rest_r.info.push_back(r.info[b]);
  }
  TestFixture::expect_accurate(rest_shapes, rest, rest_r, "others");
}

// Outputs that share storage with an input or another output are refused,
// naming both, within a matrix and across matrices; outputs stacked as row
// blocks of one LayoutLeft array (their columns interleave, no entry is
// shared) are accepted and solved by the same handle afterwards.
TYPED_TEST(VariableBatch, SharedStorageIsRefusedAndStackedOutputsAccepted) {
  using T = typename TestFixture::Scalar;
  using M = typename TestFixture::Matrix;
  using Vals = typename TestFixture::Values;
  const std::vector<MatrixShape> shapes = {{12, 9}, {12, 9}, {130, 70}, {0, 4}, {40, 33}};
  const auto mats = TestFixture::matrices(shapes);
  kwsvd::VariableBatchedSvd<Exec, T> svd(Exec(), shapes);
  const auto v = TestFixture::make_views(shapes, mats);
  const auto refused = [&](const typename TestFixture::Views& x, const char* one,
                           const char* other) {
    const std::string w = error_of([&] { svd.compute(x.A, x.S, x.U, x.V, x.info); });
    EXPECT_NE(w.find("shares storage"), std::string::npos) << w;
    EXPECT_NE(w.find(std::string("'") + one + "'"), std::string::npos) << w;
    EXPECT_NE(w.find(std::string("'") + other + "'"), std::string::npos) << w;
  };
  auto bad = v;
  bad.U[1] = v.U[0];
  refused(bad, "U[1]", "U[0]");
  bad = v;
  bad.V[2] = M(const_cast<T*>(v.A[2].data()), 70, 70);
  refused(bad, "V[2]", "A[2]");
  bad = v;
  bad.S[4] = Vals(const_cast<T*>(v.A[0].data()), 33);
  refused(bad, "S[4]", "A[0]");
  // The pointer-array form: U[0] on A[0].
  std::vector<const T*> a_ptr;
  std::vector<T*> s_ptr, u_ptr, v_ptr;
  std::vector<int> lda, ldv;
  for (std::size_t b = 0; b < shapes.size(); ++b) {
    a_ptr.push_back(v.A[b].data());
    s_ptr.push_back(v.S[b].data());
    u_ptr.push_back(v.U[b].data());
    v_ptr.push_back(v.V[b].data());
    lda.push_back(std::max(1, shapes[b].rows));
    ldv.push_back(std::max(1, shapes[b].cols));
  }
  u_ptr[0] = const_cast<T*>(v.A[0].data());
  const std::string w = error_of([&] {
    svd.compute(a_ptr.data(), lda.data(), s_ptr.data(), u_ptr.data(), lda.data(), v_ptr.data(),
                ldv.data(), v.info.data());
  });
  EXPECT_NE(w.find("argument 'U[0]' shares storage with 'A[0]'"), std::string::npos) << w;

  // S, U and V of every matrix as row blocks of three LayoutLeft arrays.
  using Stacked = Kokkos::View<T**, Kokkos::LayoutStride>;
  using Stacked1 = Kokkos::View<T*, Kokkos::LayoutStride>;
  int rows_u = 0, rows_v = 0, count_s = 0;
  for (const auto& s : shapes) {
    rows_u += s.rows;
    rows_v += s.cols;
    count_s += std::min(s.rows, s.cols);
  }
  Kokkos::View<T**, Kokkos::LayoutLeft> U_all("U_all", rows_u, 70), V_all("V_all", rows_v, 70);
  Kokkos::View<T*> S_all("S_all", count_s);
  std::vector<Stacked> U, V;
  std::vector<Stacked1> S;
  std::vector<int> u0, v0, s0;
  for (const auto& s : shapes) {
    const int k = std::min(s.rows, s.cols);
    u0.push_back(u0.empty() ? 0 : u0.back() + shapes[u0.size() - 1].rows);
    v0.push_back(v0.empty() ? 0 : v0.back() + shapes[v0.size() - 1].cols);
    s0.push_back(s0.empty() ? 0
                            : s0.back() +
                                  std::min(shapes[s0.size() - 1].rows, shapes[s0.size() - 1].cols));
    U.push_back(Kokkos::subview(U_all, std::pair<int, int>(u0.back(), u0.back() + s.rows),
                                std::pair<int, int>(0, k)));
    V.push_back(Kokkos::subview(V_all, std::pair<int, int>(v0.back(), v0.back() + s.cols),
                                std::pair<int, int>(0, k)));
    S.push_back(Kokkos::subview(S_all, std::pair<int, int>(s0.back(), s0.back() + k)));
  }
  svd.compute(v.A, S, U, V, v.info);
  auto hu = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), U_all);
  auto hv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), V_all);
  auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), S_all);
  auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v.info);
  kwsvd::test::BatchResult<T> r;
  for (std::size_t b = 0; b < shapes.size(); ++b) {
    const int m = shapes[b].rows, n = shapes[b].cols, k = std::min(m, n);
    std::vector<T> sb(std::size_t(k), T(0)), ub(std::size_t(m) * k, T(0)),
        vb(std::size_t(n) * k, T(0));
    for (int l = 0; l < k; ++l) {
      sb[std::size_t(l)] = hs(s0[b] + l);
      for (int i = 0; i < m; ++i)
        ub[i + std::size_t(m) * l] = hu(u0[b] + i, l);
      for (int j = 0; j < n; ++j)
        vb[j + std::size_t(n) * l] = hv(v0[b] + j, l);
    }
    r.s.push_back(sb);
    r.u.push_back(ub);
    r.v.push_back(vb);
    r.info.push_back(hi(b));
  }
  TestFixture::expect_accurate(shapes, mats, r, "stacked outputs");
}

// info may be any rank-1 View: a column of a 2-D one gets each matrix's
// info (level 0, block rotations, empty) and nothing else.
TYPED_TEST(VariableBatch, InfoMayBeAColumnOfATwoDimensionalView) {
  const std::vector<MatrixShape> shapes = {{12, 9}, {130, 70}, {0, 4}, {40, 33}};
  const auto mats = TestFixture::matrices(shapes);
  const auto v = TestFixture::make_views(shapes, mats);
  const int batch = int(shapes.size());
  Kokkos::View<kwsvd::SvdInfo**, Kokkos::LayoutRight> info2("info2", batch, 2);
  kwsvd::test::fill(info2, kwsvd::SvdInfo{-1, -1, -1});
  const auto info = Kokkos::subview(info2, Kokkos::ALL, 0);
  kwsvd::batched_svd(Exec(), v.A, v.S, v.U, v.V, info);
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info2);
  for (int b = 0; b < batch; ++b) {
    EXPECT_EQ(h(b, 1).sweeps, -1) << "column 1 written at " << b;
    EXPECT_EQ(h(b, 0).converged, 1) << "matrix " << b;
    EXPECT_EQ(h(b, 0).sweeps > 0, shapes[std::size_t(b)].rows > 0) << "matrix " << b;
  }
}

TYPED_TEST(VariableBatch, ErrorsNameTheArgumentAndTheExpectedShape) {
  using T = typename TestFixture::Scalar;
  using M = typename TestFixture::Matrix;
  using Vals = typename TestFixture::Values;
  const std::vector<MatrixShape> shapes = {{5, 4}, {60, 50}};
  kwsvd::VariableBatchedSvd<Exec, T> svd(Exec(), shapes);
  std::vector<M> A = {M("A0", 5, 4), M("A1", 60, 49)};
  std::vector<Vals> S = {Vals("S0", 4), Vals("S1", 50)};
  Kokkos::View<kwsvd::SvdInfo*> info("info", 2);
  std::string w = error_of([&] { svd.compute(A, S, info); });
  EXPECT_NE(w.find("'A[1]'"), std::string::npos) << w;
  EXPECT_NE(w.find("(60, 50)"), std::string::npos) << w;
  A.pop_back();
  w = error_of([&] { svd.compute(A, S, info); });
  EXPECT_NE(w.find("one View per matrix (2)"), std::string::npos) << w;
  w = error_of([&] { kwsvd::VariableBatchedSvd<Exec, T>(Exec(), {{3, -1}}); });
  EXPECT_NE(w.find("'shapes[0]'"), std::string::npos) << w;
  const int m[] = {5}, n[] = {4}, lda[] = {4};
  Kokkos::View<T*> a("a", 20), s("s", 4);
  const T* a_ptr[] = {a.data()};
  T* s_ptr[] = {s.data()};
  w = error_of([&] {
    kwsvd::batched_svd(Exec(), 1, m, n, a_ptr, lda, s_ptr, static_cast<T* const*>(nullptr), nullptr,
                       static_cast<T* const*>(nullptr), nullptr, info.data());
  });
  EXPECT_NE(w.find("'lda[0]'"), std::string::npos) << w;
  EXPECT_NE(w.find("at least max(1, m_b) = 5"), std::string::npos) << w;
}

}  // namespace
