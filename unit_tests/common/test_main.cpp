// Shared main for the unit test binaries: Kokkos lives for the whole run.
//
// --kwsvd-gpu-threshold: plan with the GPU's built-in TLP threshold (written
// to a tuning file that KWSVD_TUNING_FILE names), so that a host backend runs
// the plans a GPU takes for batches below it (choose_wcycle_plan's
// fallback), which the host's threshold of 1 never reaches.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include <Kokkos_Core.hpp>

#include "kwsvd/api/configuration.hpp"
#include "kwsvd/tuning/tailoring_plan.hpp"

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--kwsvd-gpu-threshold") == 0) {
      const std::string path = ::testing::TempDir() + "kwsvd_gpu_threshold_main.txt";
      kwsvd::write_tuning_file(path, kwsvd::default_tuning_parameters(true),
                               "unit tests: the GPU's threshold on a host backend");
      ::setenv("KWSVD_TUNING_FILE", path.c_str(), 1);
      std::cout << "planning with the GPU's TLP threshold (" << path << ")\n";
    }
  }
  kwsvd::print_configuration(std::cout);
  return RUN_ALL_TESTS();
}
