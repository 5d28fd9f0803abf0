// What the tests and benchmarks assume of the Kokkos build they run on, checked
// on the default execution space: a functor's members after a View reach the
// kernel as the host set them, and Kokkos's own fills of a View write every
// entry. A Kokkos 4.6.99 View under nvcc 13.0 in C++20 broke both without an
// error (kwsvd/impl/kokkos_compat.hpp, which now refuses that build); these
// tests catch any other build whose kernels see a functor at other offsets.

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>

#include "kwsvd/kwsvd.hpp"

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using DeviceVector = Kokkos::View<double*, Exec::memory_space>;

constexpr const char* garbled =
    " (a functor's members after a View arrived at other offsets in the kernel: see "
    "kwsvd/impl/kokkos_compat.hpp)";

// out(i) = offset + step i: the members after the View must arrive intact.
struct AffineFill {
  DeviceVector out;
  int step;
  double offset;
  KOKKOS_FUNCTION void operator()(const int i) const { out(i) = offset + double(step) * i; }
};

TEST(KokkosToolchain, FunctorMembersAfterAViewReachTheKernel) {
  const int n = 1000;
  DeviceVector out("out", n);
  Kokkos::parallel_for("kwsvd_test::affine_fill", Kokkos::RangePolicy<Exec>(0, n),
                       AffineFill{out, 3, 0.5});
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  int wrong = 0;
  for (int i = 0; i < n; ++i)
    wrong += h(i) == 0.5 + 3.0 * i ? 0 : 1;
  EXPECT_EQ(wrong, 0) << "of " << n << " entries on " << Exec::name() << garbled;
}

TEST(KokkosToolchain, DeepCopyFillAndFillRandomWriteEveryEntry) {
  const int n = 4096;
  DeviceVector v("v", n);
  Kokkos::deep_copy(v, 2.5);
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  int wrong = 0;
  for (int i = 0; i < n; ++i)
    wrong += h(i) == 2.5 ? 0 : 1;
  EXPECT_EQ(wrong, 0) << "entries of deep_copy(v, 2.5) on " << Exec::name() << garbled;

  Kokkos::Random_XorShift64_Pool<Exec> pool(4321);
  Kokkos::fill_random(v, pool, -1.0, 1.0);
  Kokkos::fence();
  Kokkos::deep_copy(h, v);
  int outside = 0, unchanged = 0;
  for (int i = 0; i < n; ++i) {
    outside += h(i) >= -1.0 && h(i) <= 1.0 ? 0 : 1;
    unchanged += h(i) == 2.5 ? 1 : 0;
  }
  EXPECT_EQ(unchanged, 0) << "entries left by fill_random on " << Exec::name() << garbled;
  EXPECT_EQ(outside, 0) << "entries of fill_random outside [-1, 1] on " << Exec::name() << garbled;
}

}  // namespace
