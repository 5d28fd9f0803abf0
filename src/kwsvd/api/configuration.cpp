#include "kwsvd/api/configuration.hpp"

#include <ostream>

#include "kwsvd/impl/kokkos_compat.hpp"
#include "kwsvd/version.hpp"

namespace kwsvd {

const char* version() {
  return KWSVD_VERSION_STRING;
}

void print_configuration(std::ostream& out) {
  using Exec = Kokkos::DefaultExecutionSpace;
  out << "kwsvd " << version() << '\n'
      << "  Kokkos " << KOKKOS_VERSION / 10000 << '.' << (KOKKOS_VERSION / 100) % 100 << '.'
      << KOKKOS_VERSION % 100 << ", default execution space " << Exec::name() << " ("
      << Exec().concurrency() << " concurrent threads)\n"
      << "  level-0 team scratch max: " << Impl::team_scratch_bytes_max<Exec>() << " bytes\n"
      << "  vector length max: " << Impl::vector_length_max<Exec>() << '\n';
}

}  // namespace kwsvd
