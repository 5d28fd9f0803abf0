// Shared main for the perf_tests: Kokkos lives for the whole run, and the
// kwsvd/Kokkos configuration is recorded in the benchmark context.
#include <benchmark/benchmark.h>

#include <sstream>

#include <Kokkos_Core.hpp>

#include "kwsvd/api/configuration.hpp"

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  std::ostringstream config;
  kwsvd::print_configuration(config);
  benchmark::AddCustomContext("kwsvd", config.str());
  benchmark::AddCustomContext("execution_space", Kokkos::DefaultExecutionSpace::name());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
