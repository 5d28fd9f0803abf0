// Shared main for the unit test binaries: Kokkos lives for the whole run.
//
// --kwsvd-gpu-threshold: plan with the GPU's built-in TLP threshold (written
// to a tuning file that KWSVD_TUNING_FILE names), so that a host backend runs
// the plans a GPU takes for batches below it (choose_wcycle_plan's
// fallback), which the host's threshold of 1 never reaches.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include <unistd.h>

#include <Kokkos_Core.hpp>

#include "kwsvd/api/configuration.hpp"
#include "kwsvd/tuning/tailoring_plan.hpp"

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  // One file a process, so that binaries run at once (ctest -j) neither
  // share nor remove each other's.
  std::string tuning_file;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--kwsvd-gpu-threshold") == 0 && tuning_file.empty()) {
      tuning_file =
          ::testing::TempDir() + "kwsvd_gpu_threshold_" + std::to_string(::getpid()) + ".txt";
      kwsvd::write_tuning_file(tuning_file, kwsvd::default_tuning_parameters(true),
                               "unit tests: the GPU's threshold on a host backend");
      ::setenv("KWSVD_TUNING_FILE", tuning_file.c_str(), 1);
      std::cout << "planning with the GPU's TLP threshold (" << tuning_file << ")\n";
    }
  }
  kwsvd::print_configuration(std::cout);
  const int result = RUN_ALL_TESTS();
  if (!tuning_file.empty())
    std::remove(tuning_file.c_str());
  return result;
}
