// Shared main for the unit test binaries: Kokkos lives for the whole run.
#include <gtest/gtest.h>

#include <iostream>

#include <Kokkos_Core.hpp>

#include "kwsvd/api/configuration.hpp"

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  kwsvd::print_configuration(std::cout);
  return RUN_ALL_TESTS();
}
