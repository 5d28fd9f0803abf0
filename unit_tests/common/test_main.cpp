// Shared main for the unit test binaries: Kokkos lives for the whole run.
//
// --kwsvd-gpu-threshold: plan with the GPU's built-in TLP threshold
// (GpuThresholdScope), so that a host backend runs the plans a GPU takes for
// batches below it (choose_wcycle_plan's fallback).
#include <gtest/gtest.h>

#include <cstring>
#include <iostream>
#include <optional>

#include <Kokkos_Core.hpp>

#include "common/gpu_threshold.hpp"
#include "kwsvd/api/configuration.hpp"

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  std::optional<kwsvd::test::GpuThresholdScope> gpu_threshold;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--kwsvd-gpu-threshold") == 0 && !gpu_threshold) {
      gpu_threshold.emplace("main");
      std::cout << "planning with the GPU's TLP threshold (" << gpu_threshold->path() << ")\n";
    }
  }
  kwsvd::print_configuration(std::cout);
  return RUN_ALL_TESTS();
}
