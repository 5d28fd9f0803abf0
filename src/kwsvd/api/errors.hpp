#pragma once
// Errors reported by kwsvd's public entry points.

#include <cstddef>
#include <initializer_list>
#include <stdexcept>
#include <string>

namespace kwsvd {

/// Thrown by every public entry point when an argument is unusable. The
/// message names the function, the argument and what was expected.
class invalid_argument : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

namespace Impl {

/// "(a, b, c)" for a list of extents.
std::string format_extents(std::initializer_list<std::size_t> extents);

/// Throws kwsvd::invalid_argument with "<function>: argument '<argument>' <problem>".
[[noreturn]] void throw_invalid_argument(const char* function, const char* argument,
                                         const std::string& problem);

/// Throws unless `actual` equals `expected`, naming both shapes.
void require_extents(const char* function, const char* argument,
                     std::initializer_list<std::size_t> actual,
                     std::initializer_list<std::size_t> expected, const char* expected_names);

/// Throws unless tolerance is in [0, 1) and max_sweeps >= 1: the options
/// every Jacobi entry point shares, named as options.<field>.
void require_jacobi_options(const char* function, double tolerance, int max_sweeps);

/// Throws unless lanes is 0 (automatic) or a power of two from 1 to 32,
/// named as options.lanes_per_pair.
void require_lanes_per_pair(const char* function, int lanes);

}  // namespace Impl
}  // namespace kwsvd
