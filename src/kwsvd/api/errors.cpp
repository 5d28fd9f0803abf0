#include "kwsvd/api/errors.hpp"

#include <algorithm>
#include <sstream>

namespace kwsvd::Impl {

std::string format_extents(std::initializer_list<std::size_t> extents) {
  std::ostringstream out;
  out << '(';
  bool first = true;
  for (std::size_t e : extents) {
    out << (first ? "" : ", ") << e;
    first = false;
  }
  out << ')';
  return out.str();
}

void throw_invalid_argument(const char* function, const char* argument,
                            const std::string& problem) {
  throw kwsvd::invalid_argument(std::string(function) + ": argument '" + argument + "' " + problem);
}

void require_extents(const char* function, const char* argument,
                     std::initializer_list<std::size_t> actual,
                     std::initializer_list<std::size_t> expected, const char* expected_names) {
  if (actual.size() == expected.size() &&
      std::equal(actual.begin(), actual.end(), expected.begin())) {
    return;
  }
  throw_invalid_argument(function, argument,
                         std::string("must have extents ") + expected_names + " = " +
                             format_extents(expected) + ", got " + format_extents(actual));
}

void require_jacobi_options(const char* function, double tolerance, int max_sweeps) {
  if (!(tolerance >= 0 && tolerance < 1)) {
    throw_invalid_argument(function, "options.tolerance",
                           "must be in [0, 1) (0 selects 30 u), got " + std::to_string(tolerance));
  }
  if (max_sweeps < 1) {
    throw_invalid_argument(function, "options.max_sweeps",
                           "must be at least 1, got " + std::to_string(max_sweeps));
  }
}

void require_lanes_per_pair(const char* function, int lanes) {
  if (lanes != 0 && (lanes < 1 || lanes > 32 || (lanes & (lanes - 1)) != 0)) {
    throw_invalid_argument(
        function, "options.lanes_per_pair",
        "must be 0 (automatic) or a power of two from 1 to 32, got " + std::to_string(lanes));
  }
}

}  // namespace kwsvd::Impl
