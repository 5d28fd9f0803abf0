// kwsvd::batched_gram_evd (the parallel two-sided Jacobi EVD team kernel)
// against LAPACKE ?syev: eigenvalues, residual ||B J - J Lambda||, orthogonality.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/oracle.hpp"
#include "common/svd_batch.hpp"
#include "kwsvd/kernels/pair_ordering.hpp"
#include "kwsvd/kwsvd.hpp"

namespace {

using Exec = Kokkos::DefaultExecutionSpace;

using kwsvd::test::Case;

template <class T>
struct EvdResult {
  std::vector<std::vector<T>> lambda, J;  // per matrix; J column-major n x n
  std::vector<kwsvd::EvdInfo> info;
};

// Symmetric n x n column-major from a random matrix: (X + X^T) / 2.
template <class T>
std::vector<T> random_symmetric(int n, std::uint64_t seed) {
  const auto x = kwsvd::test::random_matrix<double>(n, n, seed);
  std::vector<T> b(std::size_t(n) * n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i)
      b[i + std::size_t(n) * j] = T((x[i + std::size_t(n) * j] + x[j + std::size_t(n) * i]) / 2);
  return b;
}

// Q diag(d) Q^T with a random orthogonal Q (computed in double).
template <class T>
std::vector<T> symmetric_with_eigenvalues(const std::vector<double>& d, std::uint64_t seed) {
  const int n = int(d.size());
  const auto q = kwsvd::test::random_orthogonal(n, seed);
  std::vector<T> b(std::size_t(n) * n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      double sum = 0;
      for (int l = 0; l < n; ++l)
        sum += q[i + std::size_t(n) * l] * d[l] * q[j + std::size_t(n) * l];
      b[i + std::size_t(n) * j] = T(sum);
    }
  return b;
}

// A^T A of a random m x n matrix A (computed in double, both triangles).
template <class T>
std::vector<T> random_gram(int m, int n, std::uint64_t seed) {
  const auto a = kwsvd::test::random_matrix<double>(m, n, seed);
  const auto g = kwsvd::test::blas_gram(a, m, n);  // the upper triangle
  std::vector<T> b(g.begin(), g.end());
  for (int j = 0; j < n; ++j)
    for (int i = j + 1; i < n; ++i)
      b[i + std::size_t(n) * j] = b[j + std::size_t(n) * i];
  return b;
}

template <class C>
class GramEvd : public ::testing::Test {
 public:
  using TestScalar = typename C::Scalar;
  using TestLayout = typename C::Layout;

  static double u() { return std::numeric_limits<TestScalar>::epsilon() / 2; }

  // Hooks: batched_gram_evd_hooked's (no skips, no reports by default).
  template <class Hooks = kwsvd::Impl::GramEvdNoHooks>
  EvdResult<TestScalar> run(const std::vector<std::vector<TestScalar>>& mats, int n,
                            kwsvd::EvdOptions opt = {}, bool zero_columns_stay = false,
                            bool recursive_pairs = false, const Hooks& hooks = Hooks{}) {
    const int batch = int(mats.size());
    auto B = kwsvd::test::to_device<TestScalar, TestLayout>(mats, n, n);
    Kokkos::View<TestScalar**, TestLayout> lambda("lambda", batch, n);
    Kokkos::View<TestScalar***, TestLayout> J("J", batch, n, n);
    Kokkos::View<kwsvd::EvdInfo*> info("info", batch);
    const TestScalar nan = std::numeric_limits<TestScalar>::quiet_NaN();
    kwsvd::test::fill(lambda, nan);
    kwsvd::test::fill(J, nan);
    kwsvd::Impl::batched_gram_evd_hooked(Exec(), B, lambda, J, info, opt, hooks, zero_columns_stay,
                                         recursive_pairs);
    auto hl = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), lambda);
    auto hj = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), J);
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
    auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), B);
    EvdResult<TestScalar> r;
    for (int b = 0; b < batch; ++b) {
      std::vector<TestScalar> l(n), j(std::size_t(n) * n);
      for (int c = 0; c < n; ++c) {
        l[c] = hl(b, c);
        for (int i = 0; i < n; ++i)
          j[i + std::size_t(n) * c] = hj(b, i, c);
      }
      for (int c = 0; c < n; ++c)
        for (int i = 0; i < n; ++i) {
          const TestScalar x = hb(b, i, c), y = mats[b][i + std::size_t(n) * c];
          EXPECT_TRUE(x == y || (std::isnan(x) && std::isnan(y))) << "B was modified";
        }
      r.lambda.push_back(l);
      r.J.push_back(j);
      r.info.push_back(hi(b));
    }
    return r;
  }

  // Eigenvalues against syev, residual and orthogonality, all relative to
  // ||B||_F and bounded by c n u (two-sided Jacobi is backward stable).
  void expect_accurate(const std::vector<TestScalar>& a, int n,
                       const std::vector<TestScalar>& lambda, const std::vector<TestScalar>& J,
                       kwsvd::EigenOrder order, const std::string& what) {
    double nrm = 0;
    for (TestScalar x : a)
      nrm += double(x) * x;
    nrm = std::sqrt(nrm);
    const double bound = 20.0 * n * u() * (nrm > 0 ? nrm : 1);
    auto ref = kwsvd::test::lapack_symmetric_eigenvalues(a, n);  // ascending
    if (order == kwsvd::EigenOrder::descending)
      std::reverse(ref.begin(), ref.end());
    for (int l = 0; l < n; ++l)
      EXPECT_NEAR(double(lambda[l]), double(ref[l]), bound) << what << " eigenvalue " << l;
    double res = 0, orth = 0;
    for (int c = 0; c < n; ++c) {
      for (int i = 0; i < n; ++i) {
        double bj = 0;
        for (int k = 0; k < n; ++k)
          bj += double(a[i + std::size_t(n) * k]) * J[k + std::size_t(n) * c];
        const double r = bj - double(J[i + std::size_t(n) * c]) * lambda[c];
        res += r * r;
      }
      for (int d = 0; d < n; ++d) {
        double dot = 0;
        for (int k = 0; k < n; ++k)
          dot += double(J[k + std::size_t(n) * c]) * J[k + std::size_t(n) * d];
        orth += (dot - (c == d)) * (dot - (c == d));
      }
    }
    EXPECT_LE(std::sqrt(res), bound) << what << " residual";
    EXPECT_LE(std::sqrt(orth), 20.0 * n * u()) << what << " orthogonality";
  }
};

using Cases = kwsvd::test::ScalarLayoutCases;
TYPED_TEST_SUITE(GramEvd, Cases);

TYPED_TEST(GramEvd, RandomSymmetricMatchesLapack) {
  using T = typename TestFixture::TestScalar;
  // 16, 32, 47, 48 and 64 keep J in registers (gram_evd_register_size),
  // the others in scratch. 64 in double needs more than the host backends'
  // 32 KB of scratch.
  for (int n : {1, 2, 7, 16, 32, 47, 48, 64}) {
    if (!kwsvd::gram_evd_fits<T>(n))
      continue;
    std::vector<std::vector<T>> mats;
    for (int b = 0; b < 3; ++b)
      mats.push_back(random_symmetric<T>(n, 100 + 7 * b + n));
    for (auto order : {kwsvd::EigenOrder::descending, kwsvd::EigenOrder::ascending}) {
      kwsvd::EvdOptions opt;
      opt.order = order;
      const auto r = this->run(mats, n, opt);
      for (int b = 0; b < 3; ++b) {
        EXPECT_EQ(r.info[b].converged, 1) << "n " << n;
        EXPECT_EQ(r.info[b].nonfinite_input, 0);
        this->expect_accurate(mats[b], n, r.lambda[b], r.J[b], order, "n " + std::to_string(n));
      }
    }
  }
}

// J's columns come out of unit norm to rounding (unit_norm_correction): the
// rotations' drift is corrected in the last rounding, so | ||q||^2 - 1 | is at
// most the entries' own rounding (u) plus the measured excess's (u/2). In
// registers and in scratch.
TYPED_TEST(GramEvd, EigenvectorColumnsHaveUnitNorm) {
  using T = typename TestFixture::TestScalar;
  const long double u = std::numeric_limits<T>::epsilon() / 2;
  for (int n : {16, 32, 47, 48, 64}) {
    if (!kwsvd::gram_evd_fits<T>(n))
      continue;
    std::vector<std::vector<T>> mats;
    for (int b = 0; b < 3; ++b)
      mats.push_back(random_symmetric<T>(n, 300 + 7 * b + n));
    const auto r = this->run(mats, n);
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < n; ++c) {
        long double norm2 = 0;
        for (int i = 0; i < n; ++i) {
          const long double x = r.J[b][i + std::size_t(n) * c];
          norm2 += x * x;
        }
        EXPECT_LE(std::fabs(norm2 - 1), 2 * u) << "n " << n << " matrix " << b << " column " << c;
      }
  }
}

TYPED_TEST(GramEvd, GramOfIllConditionedMatrix) {
  using T = typename TestFixture::TestScalar;
  // B = A^T A with kappa(A) = 1e5 (double) / 1e2 (float): kappa(B) = kappa(A)^2.
  const double kappa = std::is_same<T, double>::value ? 1e5 : 1e2;
  const int m = 40, n = 24;
  for (const char* name : {"arith", "geo", "logrand", "cluster0", "cluster1"}) {
    const auto sigma = kwsvd::test::spectrum(name, n, kappa, 5);
    const auto a = kwsvd::test::matrix_with_spectrum<double>(m, n, sigma, 6);
    const auto g = kwsvd::test::blas_gram(a, m, n);
    std::vector<T> b(g.begin(), g.end());
    for (int j = 0; j < n; ++j)  // blas_gram fills the upper triangle; mirror it
      for (int i = j + 1; i < n; ++i)
        b[i + std::size_t(n) * j] = b[j + std::size_t(n) * i];
    const auto r = this->run({b}, n);
    EXPECT_EQ(r.info[0].converged, 1) << name;
    this->expect_accurate(b, n, r.lambda[0], r.J[0], kwsvd::EigenOrder::descending, name);
    for (int l = 0; l < n; ++l)
      EXPECT_GE(r.lambda[0][l], T(0)) << name << " Gram eigenvalue " << l;
  }
}

// Semidefinite mode (positive_semidefinite) on rank-deficient Grams: the
// null space's eigenvalues come out of the rotations near 0, some below it
// by rounding, and such a column is still rotated away from the large ones
// (excluding it left ||B J - J Lambda|| = 1.4e-9 ||B|| in double at n = 5).
TYPED_TEST(GramEvd, RankDeficientGramsInSemidefiniteModeAreBackwardStable) {
  using T = typename TestFixture::TestScalar;
  kwsvd::EvdOptions opt;
  opt.positive_semidefinite = true;
  for (const int n : {5, 16, 33}) {
    for (const int m : {1, 3, n / 2}) {
      std::vector<std::vector<T>> mats;
      for (int b = 0; b < 4; ++b)
        mats.push_back(random_gram<T>(m, n, 900 + 10 * b + m + n));
      const auto r = this->run(mats, n, opt);
      for (std::size_t b = 0; b < mats.size(); ++b) {
        const std::string what = "rank " + std::to_string(m) + " of " + std::to_string(n) +
                                 ", matrix " + std::to_string(b);
        EXPECT_EQ(r.info[b].converged, 1) << what;
        this->expect_accurate(mats[b], n, r.lambda[b], r.J[b], kwsvd::EigenOrder::descending, what);
      }
    }
  }
}

// Random combinations of what a caller chooses (fixed seed): n from 1 to 48,
// Grams of 1 to 200 rows or indefinite inputs, every order, team sizes,
// semidefinite mode, tolerances down to machine epsilon. (A host fuzz of
// this kind found the semidefinite mode's negative diagonals.)
TYPED_TEST(GramEvd, RandomOptionsAndInputs) {
  using T = typename TestFixture::TestScalar;
  std::mt19937_64 rng(20261127);
  const auto pick = [&](std::initializer_list<int> v) { return *(v.begin() + rng() % v.size()); };
  for (int trial = 0; trial < 100; ++trial) {
    const int n = pick({1, 2, 3, 5, 8, 16, 17, 31, 32, 33, 48});
    const int m = pick({1, 3, n, 2 * n + 1, 200});
    kwsvd::EvdOptions opt;
    opt.order = kwsvd::EigenOrder(rng() % 3);
    opt.team_threads = pick({0, 0, 1, 2, 32, 64, 256});
    opt.positive_semidefinite = rng() % 2 != 0;
    if (rng() % 3 == 0)
      opt.tolerance = pick({2, 10}) * this->u();
    const bool gram = opt.positive_semidefinite || rng() % 2 != 0;
    std::vector<std::vector<T>> mats;
    for (int b = 0, batch = pick({1, 2, 4}); b < batch; ++b)
      mats.push_back(gram ? random_gram<T>(m, n, 1000 * trial + b)
                          : random_symmetric<T>(n, 1000 * trial + b));
    const auto r = this->run(mats, n, opt);
    for (std::size_t b = 0; b < mats.size(); ++b) {
      const std::string what =
          "trial " + std::to_string(trial) + ": n " + std::to_string(n) +
          (gram ? ", Gram of " + std::to_string(m) + " rows" : ", indefinite") + ", order " +
          std::to_string(int(opt.order)) + ", threads " + std::to_string(opt.team_threads) +
          ", semidefinite " + std::to_string(opt.positive_semidefinite) + ", matrix " +
          std::to_string(b);
      EXPECT_EQ(r.info[b].converged, 1) << what;
      // Unsorted eigenpairs are compared in descending order.
      std::vector<int> order(std::size_t(n), 0);
      std::iota(order.begin(), order.end(), 0);
      if (opt.order == kwsvd::EigenOrder::unsorted)
        std::sort(order.begin(), order.end(), [&](int x, int y) {
          return r.lambda[b][std::size_t(x)] > r.lambda[b][std::size_t(y)];
        });
      std::vector<T> lambda, J;
      for (int c : order) {
        lambda.push_back(r.lambda[b][std::size_t(c)]);
        J.insert(J.end(), r.J[b].begin() + std::ptrdiff_t(n) * c,
                 r.J[b].begin() + std::ptrdiff_t(n) * (c + 1));
      }
      this->expect_accurate(mats[b], n, lambda, J,
                            opt.order == kwsvd::EigenOrder::ascending
                                ? kwsvd::EigenOrder::ascending
                                : kwsvd::EigenOrder::descending,
                            what);
    }
  }
}

TYPED_TEST(GramEvd, DiagonalInputNeedsNoRotation) {
  using T = typename TestFixture::TestScalar;
  const int n = 9;
  std::vector<T> b(std::size_t(n) * n, T(0));
  for (int i = 0; i < n; ++i)
    b[i + std::size_t(n) * i] = T((i * 5) % n - 3);
  // Run to convergence, one sweep finds nothing to rotate; in fixed-sweep
  // mode (the W-cycle's) the check before the first sweep does.
  kwsvd::EvdOptions fixed;
  fixed.sweeps = 1;
  const auto f = this->run({b}, n, fixed);
  EXPECT_EQ(f.info[0].sweeps, 0);
  EXPECT_EQ(f.info[0].converged, 1);
  const auto r = this->run({b}, n);
  EXPECT_EQ(r.info[0].sweeps, 1);
  EXPECT_EQ(r.info[0].converged, 1);
  for (int l = 0; l < n; ++l)
    EXPECT_EQ(r.lambda[0][l], T(n - 1 - l - 3)) << l;
  for (int c = 0; c < n; ++c)  // J is the sorting permutation
    for (int i = 0; i < n; ++i) {
      const T x = r.J[0][i + std::size_t(n) * c];
      EXPECT_TRUE(x == T(0) || x == T(1));
    }
}

TYPED_TEST(GramEvd, RepeatedEigenvalues) {
  using T = typename TestFixture::TestScalar;
  const std::vector<double> d = {3, 3, 3, 1, 1, -2, -2, -2, -2, 0, 0, 5, 5, 5, 5, 5};
  const auto b = symmetric_with_eigenvalues<T>(d, 11);
  const auto r = this->run({b}, int(d.size()));
  EXPECT_EQ(r.info[0].converged, 1);
  this->expect_accurate(b, int(d.size()), r.lambda[0], r.J[0], kwsvd::EigenOrder::descending,
                        "repeated");
}

TYPED_TEST(GramEvd, EveryTeamSizeGivesTheSameResult) {
  // The kernel's loops are spread over all threads of a team, whatever its
  // size (tuning/gram_evd_team_threads.hpp picks one): the arithmetic per
  // entry is the same, so results agree bit for bit.
  using T = typename TestFixture::TestScalar;
  const int n = 20;
  const std::vector<std::vector<T>> mats = {random_symmetric<T>(n, 21), random_symmetric<T>(n, 22)};
  kwsvd::EvdOptions opt;
  opt.team_threads = 1;
  const auto ref = this->run(mats, n, opt);
  for (int threads : {8, 32, 64, 128, 256, 1024}) {
    opt.team_threads = threads;
    const auto r = this->run(mats, n, opt);
    for (int b = 0; b < 2; ++b) {
      EXPECT_EQ(r.info[b].sweeps, ref.info[b].sweeps) << threads;
      EXPECT_EQ(r.lambda[b], ref.lambda[b]) << threads;
      EXPECT_EQ(r.J[b], ref.J[b]) << threads;
    }
  }
  this->expect_accurate(mats[0], n, ref.lambda[0], ref.J[0], kwsvd::EigenOrder::descending,
                        "team sizes");
}

TYPED_TEST(GramEvd, LargeBatchesGiveTheSameResultAsSmallOnes) {
  // With J in scratch, J's rotation by a step runs during the next step's
  // rotations or after the step's block update, and the team size follows
  // the batch too (tuning/gram_evd_team_threads.hpp: float rotates J after
  // the update from gram_evd_large_batch matrices on). The same rotations
  // in the same order whatever the variant: bit for bit.
  using T = typename TestFixture::TestScalar;
  const int n = 20;
  const std::vector<std::vector<T>> few = {random_symmetric<T>(n, 23), random_symmetric<T>(n, 24)};
  std::vector<std::vector<T>> many(std::size_t(kwsvd::Impl::gram_evd_large_batch), few[1]);
  many[0] = few[0];
  const kwsvd::EvdOptions opt;
  const auto small = this->run(few, n, opt);
  const auto large = this->run(many, n, opt);
  for (int b = 0; b < 2; ++b) {
    EXPECT_EQ(large.info[b].sweeps, small.info[b].sweeps) << b;
    EXPECT_EQ(large.lambda[b], small.lambda[b]) << b;
    EXPECT_EQ(large.J[b], small.J[b]) << b;
  }
  EXPECT_EQ(large.J.back(), small.J[1]);
}

TYPED_TEST(GramEvd, FixedSweepsRunExactlyThatMany) {
  using T = typename TestFixture::TestScalar;
  const int n = 16;
  const auto b = random_symmetric<T>(n, 3);
  kwsvd::EvdOptions opt;
  opt.sweeps = 1;
  opt.order = kwsvd::EigenOrder::unsorted;
  const auto one = this->run({b}, n, opt);
  EXPECT_EQ(one.info[0].sweeps, 1);
  EXPECT_EQ(one.info[0].converged, 0);  // one sweep rotates and leaves work
  // Still an orthogonal similarity: J^T B J has the returned diagonal and an
  // off-diagonal part smaller than B's.
  double off_b = 0, off_j = 0;
  for (int c = 0; c < n; ++c)
    for (int d = 0; d < n; ++d) {
      double x = 0;
      for (int i = 0; i < n; ++i)
        for (int k = 0; k < n; ++k)
          x += double(one.J[0][i + std::size_t(n) * c]) * b[i + std::size_t(n) * k] *
               one.J[0][k + std::size_t(n) * d];
      if (c == d)
        EXPECT_NEAR(x, double(one.lambda[0][c]), 100 * n * this->u());
      else {
        off_j += x * x;
        off_b += double(b[c + std::size_t(n) * d]) * b[c + std::size_t(n) * d];
      }
    }
  EXPECT_LT(off_j, 0.5 * off_b);
  opt.sweeps = 3;
  EXPECT_EQ(this->run({b}, n, opt).info[0].sweeps, 3);
}

// The W-cycle's pairs: a narrow block's missing columns are zero in B, and
// the sorted eigenvectors must leave them where they are (zero_columns_stay).
TYPED_TEST(GramEvd, ZeroColumnsKeepTheirPlaceWhenAsked) {
  using T = typename TestFixture::TestScalar;
  for (int n : {16, 48}) {
    const std::vector<int> zero = {1, n / 2, n - 2, n - 1};
    auto x = kwsvd::test::random_matrix<double>(n, n, std::uint64_t(7 + n));
    for (int c : zero)
      for (int i = 0; i < n; ++i)
        x[i + std::size_t(n) * c] = 0;
    std::vector<T> b(std::size_t(n) * n);  // X^T X
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        double sum = 0;
        for (int k = 0; k < n; ++k)
          sum += x[k + std::size_t(n) * i] * x[k + std::size_t(n) * j];
        b[i + std::size_t(n) * j] = T(sum);
      }
    kwsvd::EvdOptions opt;
    opt.positive_semidefinite = true;
    const auto r = this->run({b}, n, opt, true);
    const std::string what = "n = " + std::to_string(n);
    EXPECT_EQ(r.info[0].converged, 1) << what;
    T previous = std::numeric_limits<T>::infinity();
    for (int c = 0; c < n; ++c) {
      if (std::find(zero.begin(), zero.end(), c) != zero.end()) {
        EXPECT_EQ(r.lambda[0][c], T(0)) << what << " column " << c;
        for (int i = 0; i < n; ++i)
          EXPECT_EQ(r.J[0][i + std::size_t(n) * c], T(i == c ? 1 : 0)) << what << " column " << c;
      } else {
        EXPECT_LE(r.lambda[0][c], previous) << what << " column " << c << " out of order";
        EXPECT_GT(r.lambda[0][c], T(0)) << what << " column " << c;
        previous = r.lambda[0][c];
      }
    }
    // Sorted as a whole (zeros last), it is an accurate EVD.
    std::vector<int> perm(std::size_t(n), 0);
    for (int c = 0; c < n; ++c)
      perm[std::size_t(c)] = c;
    std::stable_sort(perm.begin(), perm.end(),
                     [&](int p, int q) { return r.lambda[0][p] > r.lambda[0][q]; });
    std::vector<T> lambda(std::size_t(n), T(0)), J(std::size_t(n) * n, T(0));
    for (int c = 0; c < n; ++c) {
      lambda[std::size_t(c)] = r.lambda[0][perm[std::size_t(c)]];
      for (int i = 0; i < n; ++i)
        J[i + std::size_t(n) * c] = r.J[0][i + std::size_t(n) * perm[std::size_t(c)]];
    }
    this->expect_accurate(b, n, lambda, J, kwsvd::EigenOrder::descending, what);
  }
}

// The W-cycle's steps (the recursive ordering of the columns) instead of
// the circle method: as accurate, and a sweep is still n - 1 steps.
TYPED_TEST(GramEvd, RecursivePairOrderGivesAnAccurateEvd) {
  using T = typename TestFixture::TestScalar;
  for (int n : {16, 32, 48}) {
    const auto b = random_symmetric<T>(n, std::uint64_t(11 + n));
    const auto r = this->run({b}, n, {}, false, true);
    const std::string what = "n = " + std::to_string(n);
    EXPECT_EQ(r.info[0].converged, 1) << what;
    this->expect_accurate(b, n, r.lambda[0], r.J[0], kwsvd::EigenOrder::descending, what);
    kwsvd::EvdOptions one;
    one.sweeps = 1;
    EXPECT_EQ(this->run({b}, n, one, false, true).info[0].sweeps, 1) << what;
  }
}

// Hooks that record what batched_gram_evd_hooked reports for each matrix.
struct RecordingHooks {
  static constexpr bool reports = true;
  const int* skip_list;
  int* report;  // -1 until done(b, rotated) stores 0 or 1
  KOKKOS_INLINE_FUNCTION bool skip(int b) const { return skip_list[b] != 0; }
  KOKKOS_INLINE_FUNCTION void done(int b, bool rotated, bool /*large*/) const {
    report[b] = rotated ? 1 : 0;
  }
};

TYPED_TEST(GramEvd, HooksSkipMatricesAndReportWhetherJRotates) {
  // The W-cycle's EVD skips the pairs of converged matrices and marks the
  // pairs whose J is not I through these hooks: a random matrix rotates, a
  // diagonal one in descending order does not (J = I), a skipped one is
  // reported as not rotating and its outputs are left alone.
  using T = typename TestFixture::TestScalar;
  const int n = 16, batch = 3;
  std::vector<T> diagonal(std::size_t(n) * n, T(0));
  for (int i = 0; i < n; ++i)
    diagonal[i + std::size_t(n) * i] = T(n - i);
  const std::vector<std::vector<T>> mats = {random_symmetric<T>(n, 5), diagonal,
                                            random_symmetric<T>(n, 6)};
  for (int sweeps : {0, 1}) {
    const std::string what = "sweeps option " + std::to_string(sweeps);
    Kokkos::View<int*> skip("skip", batch), report("report", batch);
    auto hs = Kokkos::create_mirror_view(skip);
    auto hr = Kokkos::create_mirror_view(report);
    for (int b = 0; b < batch; ++b) {
      hs(b) = b == 2 ? 1 : 0;
      hr(b) = -1;
    }
    Kokkos::deep_copy(skip, hs);
    Kokkos::deep_copy(report, hr);
    kwsvd::EvdOptions opt;
    opt.sweeps = sweeps;
    const auto r =
        this->run(mats, n, opt, false, false, RecordingHooks{skip.data(), report.data()});
    Kokkos::deep_copy(hr, report);
    EXPECT_EQ(hr(0), 1) << what;
    EXPECT_EQ(hr(1), 0) << what;
    EXPECT_EQ(hr(2), 0) << what;
    EXPECT_EQ(r.info[2].sweeps, 0) << what;
    EXPECT_EQ(r.info[2].converged, 1) << what;
    for (int c = 0; c < n; ++c)
      for (int i = 0; i < n; ++i) {
        const std::size_t e = std::size_t(i) + std::size_t(n) * c;
        EXPECT_EQ(r.J[1][e], T(i == c ? 1 : 0)) << what << ": J of the diagonal matrix";
        EXPECT_TRUE(std::isnan(r.J[2][e])) << what << ": J of the skipped matrix was written";
      }
  }
}

TYPED_TEST(GramEvd, NonFiniteMatrixLeavesOthersUntouched) {
  using T = typename TestFixture::TestScalar;
  const int n = 12;
  const auto good0 = random_symmetric<T>(n, 1), good1 = random_symmetric<T>(n, 2);
  auto bad = random_symmetric<T>(n, 3);
  bad[5 + std::size_t(n) * 7] = std::numeric_limits<T>::quiet_NaN();
  const auto alone = this->run({good0, good1}, n);
  const auto mixed = this->run({good0, bad, good1}, n);
  EXPECT_EQ(mixed.info[1].nonfinite_input, 1);
  EXPECT_EQ(mixed.info[1].converged, 0);
  for (T x : mixed.lambda[1])
    EXPECT_TRUE(std::isnan(x));
  EXPECT_EQ(mixed.lambda[0], alone.lambda[0]);
  EXPECT_EQ(mixed.J[0], alone.J[0]);
  EXPECT_EQ(mixed.lambda[2], alone.lambda[1]);
  EXPECT_EQ(mixed.J[2], alone.J[1]);
  auto inf = random_symmetric<T>(n, 4);
  inf[0] = std::numeric_limits<T>::infinity();
  EXPECT_EQ(this->run({inf}, n).info[0].nonfinite_input, 1);
}

// info may be any rank-1 View: a column of a 2-D one writes that column
// only (its entries used to be written as if contiguous); an empty matrix
// (n = 0) is reported converged, as the SVD reports one.
TYPED_TEST(GramEvd, InfoMayBeStridedAndEmptyMatricesConverge) {
  using T = typename TestFixture::TestScalar;
  using L = typename TestFixture::TestLayout;
  for (int n : {0, 6}) {
    const int batch = 3;
    std::vector<std::vector<T>> mats;
    for (int b = 0; b < batch; ++b)
      mats.push_back(random_symmetric<T>(n, 500 + b));
    auto B = kwsvd::test::to_device<T, L>(mats, n, n);
    Kokkos::View<T**, L> lambda("lambda", batch, n);
    Kokkos::View<T***, L> J("J", batch, n, n);
    Kokkos::View<kwsvd::EvdInfo**, Kokkos::LayoutRight> info2("info2", batch, 2);
    kwsvd::test::fill(info2, kwsvd::EvdInfo{-1, -1, -1});
    const auto info = Kokkos::subview(info2, Kokkos::ALL, 1);
    ASSERT_EQ(info.stride(0), 2u);
    kwsvd::batched_gram_evd(Exec(), B, lambda, J, info);
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info2);
    for (int b = 0; b < batch; ++b) {
      EXPECT_EQ(h(b, 0).sweeps, -1) << "n = " << n << ", column 0 written at " << b;
      EXPECT_EQ(h(b, 1).converged, 1) << "n = " << n << ", matrix " << b;
      EXPECT_EQ(h(b, 1).nonfinite_input, 0) << "n = " << n << ", matrix " << b;
      EXPECT_EQ(h(b, 1).sweeps > 0, n > 0) << "n = " << n << ", matrix " << b;
    }
  }
}

TYPED_TEST(GramEvd, BadScalesAreHandledExactly) {
  using T = typename TestFixture::TestScalar;
  const int n = 10;
  const auto b = random_symmetric<T>(n, 9);
  const T big = std::is_same<T, double>::value ? T(1e250) : T(1e30);
  std::vector<T> scaled(b);
  for (T& x : scaled)
    x *= big;
  const auto r0 = this->run({b}, n), r1 = this->run({scaled}, n);
  for (int l = 0; l < n; ++l)
    EXPECT_NEAR(r1.lambda[0][l] / big, r0.lambda[0][l], 1e-5);
}

TYPED_TEST(GramEvd, ArgumentErrorsNameTheArgument) {
  using T = typename TestFixture::TestScalar;
  using L = typename TestFixture::TestLayout;
  using kwsvd::test::error_of;
  Kokkos::View<T***, L> B("B", 2, 4, 4), J("J", 2, 4, 4), Jbad("J", 2, 4, 3), Bwide("B", 2, 4, 5);
  Kokkos::View<T**, L> lambda("lambda", 2, 4), lambda_bad("lambda", 3, 4);
  Kokkos::View<kwsvd::EvdInfo*> info("info", 2);
  auto has = [](const std::string& w, const char* s) { return w.find(s) != std::string::npos; };
  std::string w = error_of([&] { kwsvd::batched_gram_evd(Exec(), Bwide, lambda, J, info); });
  EXPECT_TRUE(has(w, "B") && has(w, "square")) << w;
  w = error_of([&] { kwsvd::batched_gram_evd(Exec(), B, lambda_bad, J, info); });
  EXPECT_TRUE(has(w, "lambda")) << w;
  w = error_of([&] { kwsvd::batched_gram_evd(Exec(), B, lambda, Jbad, info); });
  EXPECT_TRUE(has(w, "J")) << w;
  kwsvd::EvdOptions opt;
  opt.sweeps = -1;
  w = error_of([&] { kwsvd::batched_gram_evd(Exec(), B, lambda, J, info, opt); });
  EXPECT_TRUE(has(w, "options.sweeps")) << w;
  opt = {};
  opt.team_threads = -1;
  w = error_of([&] { kwsvd::batched_gram_evd(Exec(), B, lambda, J, info, opt); });
  EXPECT_TRUE(has(w, "options.team_threads")) << w;
  opt = {};
  opt.tolerance = 2;
  w = error_of([&] { kwsvd::batched_gram_evd(Exec(), B, lambda, J, info, opt); });
  EXPECT_TRUE(has(w, "options.tolerance")) << w;
  opt.tolerance = 1e-20;  // below eps
  w = error_of([&] { kwsvd::batched_gram_evd(Exec(), B, lambda, J, info, opt); });
  EXPECT_TRUE(has(w, "options.tolerance") && has(w, "machine epsilon")) << w;
  // In place (J on B) is refused: B is left unchanged by contract.
  w = error_of([&] { kwsvd::batched_gram_evd(Exec(), B, lambda, B, info); });
  EXPECT_TRUE(has(w, "argument 'J' shares storage with 'B'")) << w;
  int n = 2;
  while (kwsvd::gram_evd_fits<T>(n + 1))
    ++n;
  EXPECT_GE(n, 32);  // at least the 2w = 32 the W-cycle needs, on every backend
  Kokkos::View<T***, L> Bbig("B", 1, n + 1, n + 1), Jbig("J", 1, n + 1, n + 1);
  Kokkos::View<T**, L> lbig("l", 1, n + 1);
  Kokkos::View<kwsvd::EvdInfo*> ibig("i", 1);
  w = error_of([&] { kwsvd::batched_gram_evd(Exec(), Bbig, lbig, Jbig, ibig); });
  EXPECT_TRUE(has(w, "gram_evd_fits")) << w;
}

TEST(GramEvdPlan, SmallQuotientIsExactInItsRange) {
  // The float-reciprocal quotient is exact for q < 2^22; the risky q are the
  // ones next to a multiple of d, checked for every divisor the kernel uses.
  for (int d = 1; d <= kwsvd::Impl::gram_evd_max_n + 1; ++d) {
    const float inv = 1.0f / float(d);
    for (long k = 0; k * d < (1L << 22); ++k) {
      for (long q = k * d - 1; q <= k * d; ++q) {
        if (q < 0 || q >= (1L << 22))
          continue;
        ASSERT_EQ(kwsvd::Impl::small_quotient(int(q), inv), int(q / d)) << q << " / " << d;
      }
    }
  }
}

// upper_block walks both the kernel's off-diagonal 2 x 2 blocks (w up to
// gram_evd_max_n / 2) and, at w = n', the upper triangle it loads and scales
// (n' up to gram_evd_max_n).
TEST(GramEvdPlan, UpperBlocksAreEachVisitedOnce) {
  std::vector<int> sizes;
  for (int w = 1; w <= 130; ++w)
    sizes.push_back(w);
  for (int w : {255, 256, 511, 512, 1023, 1024, 2047, kwsvd::Impl::gram_evd_max_n})
    sizes.push_back(w);
  for (int w : sizes) {
    std::vector<int> seen(std::size_t(w) * w, 0);
    for (int e = 0; e < w * (w + 1) / 2; ++e) {
      int P, Q;
      kwsvd::Impl::upper_block(w, 1.0f / float(w + 1), e, P, Q);
      ASSERT_LE(P, Q) << w;
      ASSERT_LT(Q, w) << w;
      ++seen[P * w + Q];
    }
    for (int P = 0; P < w; ++P)
      for (int Q = P; Q < w; ++Q)
        ASSERT_EQ(seen[P * w + Q], 1) << "w " << w;
  }
}

// The recursive ordering (the W-cycle's Gram EVDs walk it) for every even
// size up to 130: each step pairs every element once, each sweep every pair
// once.
TEST(GramEvdPlan, RecursivePairsEveryElementOncePerStep) {
  for (int n_even = 2; n_even <= 130; n_even += 2) {
    std::vector<int> met(std::size_t(n_even) * n_even, 0);
    for (int step = 0; step < n_even - 1; ++step) {
      std::vector<int> used(n_even, 0);
      for (int k = 0; k < n_even / 2; ++k) {
        int i = -1, j = -1;
        kwsvd::Impl::recursive_pair(n_even, step, k, i, j);
        ASSERT_TRUE(0 <= i && i < j && j < n_even) << n_even << ": (" << i << ", " << j << ")";
        ++used[i];
        ++used[j];
        ++met[std::size_t(i) * n_even + j];
      }
      for (int c = 0; c < n_even; ++c)
        ASSERT_EQ(used[c], 1) << n_even << " step " << step;
    }
    for (int i = 0; i < n_even; ++i)
      for (int j = i + 1; j < n_even; ++j)
        ASSERT_EQ(met[std::size_t(i) * n_even + j], 1) << n_even << ": (" << i << ", " << j << ")";
  }
}

}  // namespace
