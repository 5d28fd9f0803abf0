#include "kwsvd/api/errors.hpp"

#include <algorithm>
#include <sstream>
#include <utility>
#include <vector>

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

std::string indexed_name(const char* name, std::size_t b) {
  // Appended, not "[" + to_string(b): GCC 12 at -O3 reports a false
  // -Wrestrict in std::operator+(const char*, std::string&&).
  std::string s(name);
  s.append("[").append(std::to_string(b)).append("]");
  return s;
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

void require_jacobi_options(const char* function, double tolerance, int max_sweeps,
                            double unit_roundoff, const char* scalar) {
  // The floor is machine epsilon, 2 u, as LAPACK dgesvj's (its CTOL >= 1 in
  // units of epsilon). A computed cosine carries rounding errors of about u,
  // so at u itself the columns of a cluster of equal singular values kept
  // rotating by large angles on rounding alone: host, seed 002's cluster
  // spectra at 64^2, all of 20 matrices unconverged after 60 sweeps (float
  // cluster0, double cluster1), where at 2 u every matrix of both spectra
  // converged in 3 to 13 sweeps at sizes 32^2 to 200 x 150, by level 0 and by
  // block rotations. Far below (1e-200 in double) the tolerance's square
  // underflows, and the W-cycle's test of small rotations, which compares
  // with that square, would pass a sweep that had not converged.
  if (!(tolerance == 0 || (tolerance >= 2 * unit_roundoff && tolerance < 1))) {
    std::ostringstream out;
    out << "must be 0 (selects 30 u) or in [eps, 1), eps = " << 2 * unit_roundoff
        << " the machine epsilon of " << scalar
        << " (rounding in the cosines keeps anything below it from being met), got " << tolerance;
    throw_invalid_argument(function, "options.tolerance", out.str());
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

namespace {

[[noreturn]] void throw_shared_storage(const char* function, const std::string& output,
                                       const std::string& other) {
  throw_invalid_argument(
      function, output.c_str(),
      "shares storage with '" + other + "': the outputs must not overlap the input or each other");
}

}  // namespace

void require_disjoint_storage(const char* function, std::initializer_list<NamedStorage> inputs,
                              std::initializer_list<NamedStorage> outputs) {
  for (auto out = outputs.begin(); out != outputs.end(); ++out) {
    for (const auto& in : inputs)
      if (storage_overlaps(out->runs, in.runs))
        throw_shared_storage(function, out->name, in.name);
    for (auto other = outputs.begin(); other != out; ++other)
      if (storage_overlaps(out->runs, other->runs))
        throw_shared_storage(function, out->name, other->name);
  }
}

void require_disjoint_matrix_storage(const char* function,
                                     const std::vector<MatrixStorage>& storage,
                                     const char* const* names) {
  // A pair may meet when one of them is written.
  const auto check = [&](const MatrixStorage& x, const MatrixStorage& y) {
    if ((x.output || y.output) && storage_overlaps(x.runs, y.runs)) {
      const MatrixStorage& out = x.output ? x : y;
      const MatrixStorage& other = &out == &x ? y : x;
      throw_shared_storage(function, indexed_name(names[out.argument], out.matrix),
                           indexed_name(names[other.argument], other.matrix));
    }
  };
  // Each matrix's own arguments, all pairs (they are adjacent in `storage`).
  for (std::size_t first = 0; first < storage.size();) {
    std::size_t last = first;
    while (last < storage.size() && storage[last].matrix == storage[first].matrix)
      ++last;
    for (std::size_t i = first; i < last; ++i)
      for (std::size_t j = first; j < i; ++j)
        check(storage[i], storage[j]);
    first = last;
  }
  // Across matrices: in address order, each span against the one before it
  // and against the furthest-reaching output (and, for an output, input)
  // before it. (The whole check takes about 0.1 us a matrix on a 2-core
  // Debian host, and runs only when a handle's slots changed.)
  std::vector<std::pair<std::uintptr_t, std::size_t>> order;  // address, position
  order.reserve(storage.size());
  for (std::size_t i = 0; i < storage.size(); ++i)
    if (!storage[i].runs.empty())
      order.emplace_back(storage[i].runs.first, i);
  std::sort(order.begin(), order.end());
  const MatrixStorage* reach_output = nullptr;
  const MatrixStorage* reach_input = nullptr;
  const MatrixStorage* previous = nullptr;
  for (const auto& entry : order) {
    const MatrixStorage& s = storage[entry.second];
    if (previous != nullptr)
      check(s, *previous);
    if (reach_output != nullptr)
      check(s, *reach_output);
    if (s.output && reach_input != nullptr)
      check(s, *reach_input);
    const MatrixStorage*& reach = s.output ? reach_output : reach_input;
    if (reach == nullptr || s.runs.end() > reach->runs.end())
      reach = &s;
    previous = &s;
  }
}

}  // namespace kwsvd::Impl
