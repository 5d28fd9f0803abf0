// Example 02: a Kokkos program that owns its Views and calls kwsvd on them
// repeatedly without allocating: a time loop in which every step perturbs a
// batch of 96 x 64 matrices (its own kernel, its own Views) and takes their
// singular values and left vectors (each matrix's POD basis: U alone,
// Job::values_and_left_vectors, which keeps no V and so costs little more
// than the values) through one kwsvd::BatchedSvd handle, planned once, run
// on the program's execution-space instance.
//
//   example_02_reused_handle [--batch N] [--steps S]

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <Kokkos_Core.hpp>

#include "kwsvd/kwsvd.hpp"

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  int batch = 8, steps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--batch"))
      batch = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--steps"))
      steps = std::atoi(argv[i + 1]);
  }
  const int m = 96, n = 64;
  using Exec = Kokkos::DefaultExecutionSpace;
  const Exec exec;  // the program's instance (a stream on GPUs)

  // The application's own data, in its own layout.
  Kokkos::View<double***, Kokkos::LayoutLeft> A("state", batch, m, n);
  Kokkos::View<double**, Kokkos::LayoutLeft> S("sigma", batch, n);
  Kokkos::View<double***, Kokkos::LayoutLeft> U("modes", batch, m, n);
  const Kokkos::View<double***, Kokkos::LayoutLeft> no_v;  // V is not computed: an empty View
  Kokkos::View<kwsvd::SvdInfo*> info("info", batch);

  // The device memory the handle will hold, known before it allocates any
  // (a program short of memory would split its batch by it).
  kwsvd::SvdOptions options;
  options.job = kwsvd::Job::values_and_left_vectors;
  const std::size_t workspace =
      kwsvd::BatchedSvd<Exec, double>::planned_workspace_bytes(exec, batch, m, n, options);

  // Plans the block width and allocates the workspace once.
  kwsvd::BatchedSvd<Exec, double> svd(exec, batch, m, n, options);
  std::printf("%d matrices of %d x %d: %s, workspace %.1f KiB\n", batch, m, n,
              svd.level0() ? "level-0 kernel"
                           : ("W-cycle, block width " + std::to_string(svd.block_width())).c_str(),
              double(workspace) / 1024.0);

  for (int step = 0; step < steps; ++step) {
    // The application's kernel: a smooth matrix plus a step-dependent bump.
    Kokkos::parallel_for(
        "app::update_state",
        Kokkos::MDRangePolicy<Exec, Kokkos::Rank<3>>(exec, {0, 0, 0}, {batch, m, n}),
        KOKKOS_LAMBDA(const int b, const int i, const int j) {
          A(b, i, j) = 1.0 / (1.0 + i + j) + 0.01 * (b + 1) * (step + 1) * (i == j ? 1.0 : 0.0);
        });
    svd.compute(A, S, U, no_v, info);  // asynchronous on `exec`, no allocation
    auto s = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), S);
    auto in = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
    // The share of matrix 0's energy (sum of sigma^2) its first 4 modes hold.
    double all = 0, first = 0;
    for (int l = 0; l < n; ++l) {
      all += s(0, l) * s(0, l);
      first += l < 4 ? s(0, l) * s(0, l) : 0.0;
    }
    std::printf(
        "step %d: matrix 0 sigma_max %.6f sigma_min %.3e, 4 modes hold %.6f (%d sweeps%s)\n", step,
        s(0, 0), s(0, n - 1), first / all, in(0).sweeps, in(0).converged ? "" : ", not converged");
  }
  return 0;
}
