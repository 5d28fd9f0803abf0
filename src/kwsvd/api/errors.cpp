#include "kwsvd/api/errors.hpp"

#include "kwsvd/tuning/sweep_instances.hpp"

#include <algorithm>
#include <cctype>
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

std::string format_widths(const std::vector<int>& widths) {
  std::string s = "{";
  for (std::size_t k = 0; k < widths.size(); ++k)
    s.append(k ? ", " : "").append(std::to_string(widths[k]));
  return s + "}";
}

std::string indexed_name(const char* name, std::size_t b) {
  // Appended, not "[" + to_string(b): GCC 12 at -O3 reports a false
  // -Wrestrict in std::operator+(const char*, std::string&&).
  std::string s(name);
  s.append("[").append(std::to_string(b)).append("]");
  return s;
}

std::string format_bytes(std::size_t bytes) {
  std::ostringstream out;
  out.precision(3);
  const double b = double(bytes);
  if (b >= 1e12)
    out << b / 1e12 << " TB (";
  else if (b >= 1e9)
    out << b / 1e9 << " GB (";
  else if (b >= 1e6)
    out << b / 1e6 << " MB (";
  else if (b >= 1e3)
    out << b / 1e3 << " kB (";
  else
    return std::to_string(bytes) + " bytes";
  out << bytes << " bytes)";
  return out.str();
}

void throw_out_of_memory(const char* function, const std::string& label, std::size_t bytes,
                         std::size_t held, const char* space, const char* cause) {
  std::string backend(cause);  // Kokkos 3's message ends in line breaks
  while (!backend.empty() && std::isspace(static_cast<unsigned char>(backend.back())))
    backend.pop_back();
  throw kwsvd::out_of_memory(std::string(function) + ": could not allocate workspace buffer '" +
                             label + "' of " + format_bytes(bytes) + " in " + space +
                             " memory, with " + format_bytes(held) +
                             " of the workspace allocated before it (" + backend +
                             "); planned_workspace_bytes() tells the whole workspace a batch "
                             "needs: split the batch into parts that fit");
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

const char* job_name(Job job) {
  switch (job) {
    case Job::values:
      return "Job::values";
    case Job::values_and_vectors:
      return "Job::values_and_vectors";
    case Job::values_and_left_vectors:
      return "Job::values_and_left_vectors";
    case Job::values_and_right_vectors:
      return "Job::values_and_right_vectors";
  }
  return "an unknown Job";
}

void require_vector_job(const char* function, Job job) {
  if (job == Job::values)
    throw_invalid_argument(function, "options.job",
                           "is Job::values, which computes no vectors: pass no U and V (the call "
                           "with values only), or plan with a job that computes them");
}

void require_unwritten_output(const char* function, const char* argument, Job job,
                              std::size_t size) {
  if (size != 0)
    throw_invalid_argument(function, argument,
                           std::string("must be empty: options.job = ") + job_name(job) +
                               " does not compute " + argument + ", got " + std::to_string(size) +
                               " elements");
}

void require_vector_pointers(const char* function, Job job, bool u_given, bool v_given,
                             const char* u_argument, const char* v_argument) {
  // A side given that the job does not compute is named first: the likelier
  // mistake is the job's, not the missing side's.
  const auto require_side = [&](bool given, bool computed, bool refused, const char* argument,
                                const char* side) {
    if (given == refused && given != computed)
      throw_invalid_argument(function, argument,
                             std::string(given ? "must be null" : "must not be null") +
                                 ": options.job = " + job_name(job) +
                                 (computed ? " computes " : " does not compute ") + side);
  };
  for (const bool refused : {true, false}) {
    require_side(u_given, job_writes_u(job), refused, u_argument, "U");
    require_side(v_given, job_writes_v(job), refused, v_argument, "V");
  }
}

void require_lanes_per_pair(const char* function, int lanes) {
  if (lanes != 0 && (lanes < 1 || lanes > 32 || (lanes & (lanes - 1)) != 0)) {
    throw_invalid_argument(
        function, "options.lanes_per_pair",
        "must be 0 (automatic) or a power of two from 1 to 32, got " + std::to_string(lanes));
  }
}

void require_svd_options(const char* function, const SvdOptions& options, double unit_roundoff,
                         const char* scalar) {
  require_jacobi_options(function, options.tolerance, options.max_sweeps, unit_roundoff, scalar);
  require_lanes_per_pair(function, options.lanes_per_pair);
  if (options.job != Job::values && options.job != Job::values_and_vectors &&
      options.job != Job::values_and_left_vectors && options.job != Job::values_and_right_vectors) {
    throw_invalid_argument(function, "options.job",
                           "must be Job::values, Job::values_and_vectors, "
                           "Job::values_and_left_vectors or Job::values_and_right_vectors, got " +
                               std::to_string(int(options.job)));
  }
  if (options.lanes_rule != LanesRule::measured && options.lanes_rule != LanesRule::gcd) {
    throw_invalid_argument(function, "options.lanes_rule",
                           "must be LanesRule::measured or LanesRule::gcd, got " +
                               std::to_string(int(options.lanes_rule)));
  }
  if (options.instances < 0 || options.instances > Impl::sweep_instances_max) {
    throw_invalid_argument(function, "options.instances",
                           "must be 0 (automatic) or 1 to " +
                               std::to_string(Impl::sweep_instances_max) + ", got " +
                               std::to_string(options.instances));
  }
  if (options.rank < 0) {
    throw_invalid_argument(function, "options.rank",
                           "must be 0 (all min(m, n) singular triplets) or a count of leading "
                           "ones, got " +
                               std::to_string(options.rank));
  }
  if (options.rank > 0 && !options.sort) {
    throw_invalid_argument(function, "options.rank",
                           "keeps the leading (largest) singular triplets, which needs "
                           "options.sort = true; got rank " +
                               std::to_string(options.rank) + " with sort = false");
  }
  if (options.rank > 0 && options.full_matrices) {
    throw_invalid_argument(function, "options.rank",
                           "asks for fewer vector columns than min(m, n), "
                           "options.full_matrices for more: they exclude each other; got rank " +
                               std::to_string(options.rank) + " with full_matrices = true");
  }
  if (options.qr != QrPreprocessing::automatic && options.qr != QrPreprocessing::never &&
      options.qr != QrPreprocessing::always) {
    throw_invalid_argument(function, "options.qr",
                           "must be QrPreprocessing::automatic, never or always, got " +
                               std::to_string(int(options.qr)));
  }
  if (options.qr == QrPreprocessing::always && options.max_workspace_bytes > 0) {
    throw_invalid_argument(function, "options.qr",
                           "QrPreprocessing::always holds the whole batch's factors: it excludes "
                           "options.max_workspace_bytes (use automatic or never)");
  }
  if (options.block_scratch_bytes < 0) {
    throw_invalid_argument(function, "options.block_scratch_bytes",
                           "must be 0 (the device's limit) or a byte count, got " +
                               std::to_string(options.block_scratch_bytes));
  }
  const auto& lw = options.level_widths;
  for (std::size_t h = 0; h < lw.size(); ++h) {
    if (lw[h] < 2 || lw[h] % 2 != 0 || (h > 0 && lw[h] >= lw[h - 1]) || lw.size() > 8) {
      throw_invalid_argument(
          function, "options.level_widths",
          "must be at most 8 even widths >= 2, strictly decreasing; got " + format_widths(lw));
    }
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
  // Offset ranges modulo a group's spacing [begin, end), by array.
  struct Phases {
    std::uintptr_t begin, end;
    std::size_t array;
    bool operator<(const Phases& o) const { return begin < o.begin; }
  };
  std::vector<Phases> phases, active;
  std::vector<std::pair<std::uintptr_t, std::size_t>> ahead;  // next record: address, array
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
      phases.clear();
      for (std::size_t g = 0; g < size; ++g) {
        const StorageRuns& r = at(g).runs;
        const std::uintptr_t begin = r.first % stride, end = begin + r.length;
        phases.push_back({begin, std::min<std::uintptr_t>(end, stride), g});
        if (end > stride)
          phases.push_back({0, end - stride, g});
      }
      std::sort(phases.begin(), phases.end());
      active.clear();
      for (const Phases& p : phases) {
        active.erase(std::remove_if(active.begin(), active.end(),
                                    [&](const Phases& a) { return a.end <= p.begin; }),
                     active.end());
        for (const Phases& a : active)
          if (a.array != p.array)
            check(at(p.array), at(a.array));
        active.push_back(p);
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
    ahead.clear();
    const auto later = [](const auto& a, const auto& b) { return a.first > b.first; };
    for (std::size_t g = 0; g < size; ++g)
      ahead.emplace_back(at(g).runs.first, g);
    std::make_heap(ahead.begin(), ahead.end(), later);
    while (!ahead.empty()) {
      std::pop_heap(ahead.begin(), ahead.end(), later);
      const auto [address, g] = ahead.back();
      ahead.pop_back();
      const StorageRuns& r = at(g).runs;
      std::size_t other = 0;
      if ((at(g).output ? any : outputs).reaches_past(address, g, other))
        refuse(at(g), at(other));
      any.add(address + r.length, g);
      if (at(g).output)
        outputs.add(address + r.length, g);
      if (r.stride != 0 && address < r.first + (r.count - 1) * r.stride) {  // a record follows
        ahead.emplace_back(address + r.stride, g);
        std::push_heap(ahead.begin(), ahead.end(), later);
      }
    }
  }
}

}  // namespace kwsvd::Impl
