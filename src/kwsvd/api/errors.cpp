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

namespace {

/// The furthest end of the records seen so far by two different arrays (the
/// two furthest, each kept only while it is another array's than the
/// first's): enough to know whether any array other than a given one
/// reaches past an address.
struct FurthestEnds {
  std::uintptr_t end[2] = {0, 0};
  std::size_t array[2] = {0, 0};
  bool seen[2] = {false, false};

  void add(std::uintptr_t e, std::size_t a) {
    if (seen[0] && array[0] == a) {
      end[0] = std::max(end[0], e);
    } else if (!seen[0] || e > end[0]) {
      end[1] = end[0], array[1] = array[0], seen[1] = seen[0];
      end[0] = e, array[0] = a, seen[0] = true;
    } else if (seen[1] && array[1] == a) {
      end[1] = std::max(end[1], e);
    } else if (!seen[1] || e > end[1]) {
      end[1] = e, array[1] = a, seen[1] = true;
    }
  }
  /// An array other than `a` with a record ending past `address`, if any.
  bool reaches_past(std::uintptr_t address, std::size_t a, std::size_t& other) const {
    const int k = seen[0] && array[0] != a ? 0 : 1;
    if (!seen[k] || end[k] <= address)
      return false;
    other = array[k];
    return true;
  }
};

}  // namespace

void require_disjoint_matrix_storage(const char* function,
                                     const std::vector<MatrixStorage>& storage,
                                     const char* const* names) {
  // A pair may meet when one of them is written.
  const auto refuse = [&](const MatrixStorage& x, const MatrixStorage& y) {
    const MatrixStorage& out = x.output ? x : y;
    const MatrixStorage& other = &out == &x ? y : x;
    throw_shared_storage(function, indexed_name(names[out.argument], out.matrix),
                         indexed_name(names[other.argument], other.matrix));
  };
  const auto check = [&](const MatrixStorage& x, const MatrixStorage& y) {
    if ((x.output || y.output) && storage_overlaps(x.runs, y.runs))
      refuse(x, y);
  };
  // The arrays' spans in address order fall into groups whose spans meet
  // (each begins before the furthest end of the group so far); only arrays
  // of one group can share storage. Separate allocations, or one record of
  // A, S, U, V per matrix, make small groups, and the check costs a sort
  // (about 0.06 us an array on a 2-core Debian host; it runs only when a
  // handle's slots changed).
  std::vector<std::pair<std::uintptr_t, std::size_t>> order;  // address, position
  order.reserve(storage.size());
  for (std::size_t i = 0; i < storage.size(); ++i)
    if (!storage[i].runs.empty())
      order.emplace_back(storage[i].runs.first, i);
  std::sort(order.begin(), order.end());
  std::vector<std::pair<std::uintptr_t, std::size_t>> items;   // phase or address, array
  std::vector<std::pair<std::uintptr_t, std::size_t>> active;  // phase end, array
  std::vector<std::size_t> next_record;
  for (std::size_t next = 0; next < order.size();) {
    const std::size_t first = next;
    const auto at = [&](std::size_t g) -> const MatrixStorage& {
      return storage[order[first + g].second];
    };
    std::uintptr_t group_end = at(0).runs.end();
    std::size_t last = first + 1;
    for (; last < order.size() && order[last].first < group_end; ++last)
      group_end = std::max(group_end, storage[order[last].second].runs.end());
    const std::size_t size = last - first;
    next = last;
    if (size < 2)
      continue;
    // One spacing s for the group's runs of several records, and no record
    // longer than s (arrays stacked as row blocks of one column-major array:
    // their spans all meet, their columns do not).
    std::size_t stride = 0, records = 0;
    bool one_spacing = true;
    for (std::size_t g = 0; g < size; ++g) {
      const StorageRuns& r = at(g).runs;
      records += r.count;
      if (r.count > 1 && stride == 0)
        stride = r.stride;
      one_spacing = one_spacing && (r.count == 1 || r.stride == stride);
    }
    for (std::size_t g = 0; g < size && one_spacing; ++g)
      one_spacing = at(g).runs.length <= stride;
    if (one_spacing) {
      // Two such arrays share a byte only if their records' offsets modulo
      // s meet: a sweep over those offset ranges (a wrapping one in two
      // pieces) compares exactly the arrays whose ranges meet, so stacked
      // blocks cost O(G log G) for G arrays.
      items.clear();
      for (std::size_t g = 0; g < size; ++g) {
        const StorageRuns& r = at(g).runs;
        const std::uintptr_t phase = r.first % stride;
        items.emplace_back(phase, g);
        if (phase + r.length > stride)
          items.emplace_back(0, g);
      }
      std::sort(items.begin(), items.end());
      active.clear();
      for (const auto& [phase, g] : items) {
        const StorageRuns& r = at(g).runs;
        const std::uintptr_t end = phase == r.first % stride
                                       ? std::min<std::uintptr_t>(phase + r.length, stride)
                                       : (r.first % stride + r.length) - stride;
        active.erase(std::remove_if(active.begin(), active.end(),
                                    [&](const auto& a) { return a.first <= phase; }),
                     active.end());
        for (const auto& a : active)
          if (a.second != g)
            check(at(g), at(a.second));
        active.emplace_back(end, g);
      }
      continue;
    }
    std::size_t log2_size = 1;
    while ((std::size_t(1) << log2_size) < size)
      ++log2_size;
    if (size * (size - 1) / 2 <= records * log2_size) {
      // Every pair of the group.
      for (std::size_t i = 1; i < size; ++i)
        for (std::size_t j = 0; j < i; ++j)
          check(at(i), at(j));
      continue;
    }
    // The group's records merged in address order: a record meets an
    // earlier-starting one of another array exactly when that one ends past
    // its start.
    FurthestEnds any, outputs;
    items.clear();
    next_record.assign(size, 0);
    const auto later = [](const auto& a, const auto& b) { return a.first > b.first; };
    for (std::size_t g = 0; g < size; ++g)
      items.emplace_back(at(g).runs.first, g);
    std::make_heap(items.begin(), items.end(), later);
    while (!items.empty()) {
      std::pop_heap(items.begin(), items.end(), later);
      const auto [address, g] = items.back();
      items.pop_back();
      const MatrixStorage& s = at(g);
      std::size_t other = 0;
      if ((s.output ? any : outputs).reaches_past(address, g, other))
        refuse(s, at(other));
      any.add(address + s.runs.length, g);
      if (s.output)
        outputs.add(address + s.runs.length, g);
      if (++next_record[g] < s.runs.count && s.runs.stride != 0) {
        items.emplace_back(address + s.runs.stride, g);
        std::push_heap(items.begin(), items.end(), later);
      }
    }
  }
}

}  // namespace kwsvd::Impl
