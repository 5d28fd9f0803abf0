#pragma once
// Errors reported by kwsvd's public entry points.

#include <cstddef>
#include <initializer_list>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "kwsvd/api/options.hpp"
#include "kwsvd/impl/storage_overlap.hpp"

namespace kwsvd {

/// Thrown by every public entry point when an argument is unusable. The
/// message names the function, the argument and what was expected.
class invalid_argument : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Thrown when a handle cannot allocate its workspace. A std::bad_alloc, as
/// a failed new is; the message names the function, the buffer, its size and
/// the memory space (the handles' planned_workspace_bytes() tell beforehand
/// how much a batch needs).
class out_of_memory : public std::bad_alloc {
 public:
  explicit out_of_memory(const std::string& message)
      : message_(std::make_shared<const std::string>(message)) {}
  const char* what() const noexcept override { return message_->c_str(); }

 private:
  std::shared_ptr<const std::string> message_;  // shared: copying must not throw
};

namespace Impl {

/// "1.5 GB (1500000000 bytes)": a byte count for a message.
std::string format_bytes(std::size_t bytes);

/// Throws kwsvd::out_of_memory for a workspace buffer `label` of `bytes`
/// in memory space `space` that could not be allocated after `held` bytes of
/// the same workspace were; `cause` is the backend's message.
[[noreturn]] void throw_out_of_memory(const char* function, const std::string& label,
                                      std::size_t bytes, std::size_t held, const char* space,
                                      const char* cause);

/// "(a, b, c)" for a list of extents.
std::string format_extents(std::initializer_list<std::size_t> extents);

/// "{a, b, c}" for a list of widths (SvdOptions::level_widths).
std::string format_widths(const std::vector<int>& widths);

/// "name[b]": argument `name` of matrix b of a variable-size batch, for a
/// message.
std::string indexed_name(const char* name, std::size_t b);

/// Throws kwsvd::invalid_argument with "<function>: argument '<argument>' <problem>".
[[noreturn]] void throw_invalid_argument(const char* function, const char* argument,
                                         const std::string& problem);

/// Throws unless `actual` equals `expected`, naming both shapes.
void require_extents(const char* function, const char* argument,
                     std::initializer_list<std::size_t> actual,
                     std::initializer_list<std::size_t> expected, const char* expected_names);

/// "Job::values_and_left_vectors": a job's name, for a message.
const char* job_name(Job job);

/// Throws unless a call with vectors may run under `job` (a handle's
/// SvdOptions::job): any job but Job::values.
void require_vector_job(const char* function, Job job);

/// Throws unless an output that `job` does not compute (`argument`, "U" or
/// "V") is empty (`size` elements), so that no caller takes it for written.
void require_unwritten_output(const char* function, const char* argument, Job job,
                              std::size_t size);

/// Throws unless the pointer forms' U and V (`u_given`, `v_given`; named
/// `u_argument`, `v_argument` in the message) are given exactly where `job`
/// computes them.
void require_vector_pointers(const char* function, Job job, bool u_given, bool v_given,
                             const char* u_argument, const char* v_argument);

/// The vector outputs of a uniform batch's call with U and V under
/// `options` and `job`: each side the job computes has the shape (batch, m |
/// n, r), r = output_rank(options, min(m, n)) (SvdOptions::rank), or (batch,
/// m, m) and (batch, n, n) under SvdOptions::full_matrices; the other is
/// empty.
template <class UView, class VView>
void require_uniform_vectors(const char* function, Job job, const SvdOptions& options,
                             const UView& U, const VView& V, std::size_t batch, std::size_t m,
                             std::size_t n) {
  const std::size_t k = m < n ? m : n;
  const std::size_t r = std::size_t(output_rank(options, long(k)));
  const bool full = options.full_matrices;
  // One side: `name` of `rows` rows, named `extent` (m or n).
  const auto require_side = [&](const char* name, bool computed, const auto& X, std::size_t rows,
                                const std::string& extent) {
    if (!computed) {
      require_unwritten_output(function, name, job, X.size());
      return;
    }
    const std::string expected =
        full ? "(batch, " + extent + ", " + extent + ") with batch, " + extent +
                   " taken from A (options.full_matrices)"
        : r < k ? "(batch, " + extent + ", " + std::to_string(r) + ") with batch, " + extent +
                      " taken from A and " + std::to_string(r) + " = options.rank"
                : "(batch, " + extent + ", min(m, n)) with batch, m, n taken from A";
    require_extents(function, name, {X.extent(0), X.extent(1), X.extent(2)},
                    {batch, rows, full ? rows : r}, expected.c_str());
  };
  require_side("U", job_writes_u(job), U, m, "m");
  require_side("V", job_writes_v(job), V, n, "n");
}

/// A uniform batch's S: (batch, k), k = min(m, n), or under SvdOptions::rank
/// = r < k (batch, r) as well: values the call writes, S.extent(1).
template <class SView>
void require_uniform_values(const char* function, const SvdOptions& options, const SView& S,
                            std::size_t batch, std::size_t m, std::size_t n) {
  const std::size_t k = m < n ? m : n;
  const std::size_t r = std::size_t(output_rank(options, long(k)));
  if (r < k && S.extent(0) == batch && S.extent(1) == r)
    return;
  require_extents(function, "S", {S.extent(0), S.extent(1)}, {batch, k},
                  r < k ? ("(batch, min(m, n)) or (batch, " + std::to_string(r) + ") with " +
                           std::to_string(r) + " = options.rank, batch, m, n taken from A")
                              .c_str()
                        : "(batch, min(m, n)) with batch, m, n taken from A");
}

/// Throws unless tolerance is 0 (the default, 30 u) or in [2 u, 1) (2 u the
/// machine epsilon) and max_sweeps >= 1: the options every Jacobi entry point
/// shares, named as options.<field>. u is the unit roundoff of the scalar
/// type `scalar`.
void require_jacobi_options(const char* function, double tolerance, int max_sweeps,
                            double unit_roundoff, const char* scalar);

/// require_jacobi_options for the scalar type Scalar.
template <class Scalar>
void require_jacobi_options(const char* function, double tolerance, int max_sweeps) {
  require_jacobi_options(function, tolerance, max_sweeps,
                         double(std::numeric_limits<Scalar>::epsilon()) / 2,
                         sizeof(Scalar) == sizeof(float) ? "float" : "double");
}

/// Throws unless lanes is 0 (automatic) or a power of two from 1 to 32,
/// named as options.lanes_per_pair.
void require_lanes_per_pair(const char* function, int lanes);

/// Every field of SvdOptions that is valid or not whatever the shapes:
/// require_jacobi_options, require_lanes_per_pair, the enums, instances,
/// block_scratch_bytes and the form of level_widths (whether the last width
/// fits the scratch is the W-cycle planner's check). Each SVD entry point
/// calls it, so an option is refused whichever path a shape takes.
void require_svd_options(const char* function, const SvdOptions& options, double unit_roundoff,
                         const char* scalar);

/// require_svd_options for the scalar type Scalar.
template <class Scalar>
void require_svd_options(const char* function, const SvdOptions& options) {
  require_svd_options(function, options, double(std::numeric_limits<Scalar>::epsilon()) / 2,
                      sizeof(Scalar) == sizeof(float) ? "float" : "double");
}

/// An argument's storage, named for the message.
struct NamedStorage {
  const char* name;
  StorageRuns runs;
};

/// Throws unless every output's storage is disjoint from every input's and
/// from every other output's (inputs may share storage: they are only read).
void require_disjoint_storage(const char* function, std::initializer_list<NamedStorage> inputs,
                              std::initializer_list<NamedStorage> outputs);

/// require_disjoint_storage for a uniform batch's SVD: S, U, V (those that
/// `job` writes) and info against A and each other.
template <class AView, class SView, class UView, class VView, class InfoView>
void require_disjoint_svd_storage(const char* function, const AView& A, const SView& S,
                                  const UView& U, const VView& V, const InfoView& info, Job job) {
  require_disjoint_storage(function, {{"A", batch_storage_runs(A)}},
                           {{"S", batch_storage_runs(S)},
                            {"U", job_writes_u(job) ? batch_storage_runs(U) : StorageRuns{}},
                            {"V", job_writes_v(job) ? batch_storage_runs(V) : StorageRuns{}},
                            {"info", batch_storage_runs(info)}});
}

/// The storage of argument `argument` of matrix `matrix` of a variable-size
/// batch (arguments are named by the caller's `names`, e.g. "A", "S").
struct MatrixStorage {
  StorageRuns runs;
  std::size_t matrix;
  int argument;
  bool output;
};

/// require_disjoint_storage for a variable-size batch, whose arrays are one
/// per matrix (`storage` lists each matrix's arguments). Only arrays whose
/// spans meet can share storage: in address order the spans fall into groups
/// of meeting spans, and within a group every pair is compared
/// (storage_overlaps), or, where that is more work, the group's records are
/// merged in address order and each compared with the furthest-reaching
/// record of another array before it. Exact (up to storage_overlaps's bound
/// on records of different spacings); O(batch log batch) for separate
/// allocations, O(R log G) for a group of G arrays of R records in all (row
/// blocks of one array).
void require_disjoint_matrix_storage(const char* function,
                                     const std::vector<MatrixStorage>& storage,
                                     const char* const* names);

}  // namespace Impl
}  // namespace kwsvd
