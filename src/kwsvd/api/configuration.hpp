#pragma once
// What this build of kwsvd is and what the device offers it.

#include <iosfwd>

namespace kwsvd {

/// Version string, "MAJOR.MINOR.PATCH".
const char* version();

/// Prints kwsvd's version, the Kokkos version and backend it was built with,
/// and the run-time limits the kernels size themselves from (level-0 team
/// scratch, vector length) for the default execution space. Call after
/// Kokkos::initialize.
void print_configuration(std::ostream& out);

}  // namespace kwsvd
