#pragma once
// kwsvd::VariableBatchedSvd and the variable-size forms of kwsvd::batched_svd:
// one call for a batch whose matrices all have different shapes (the
// W-cycle paper's size-oblivious batch, §III and Table VI). The matrices
// whose SVD fits one team's level-0 scratch go to the level-0 one-sided
// Jacobi kernel, one launch per size class (Impl::level0_size_class); the
// others to the W-cycle scheduler, in one set of level launches; empty ones
// (m or n = 0) are only reported.
//
// The caller's matrices are described to the kernels by slots (pointer,
// extents, strides: impl/matrix_slot.hpp) gathered on the host from a list
// of Views or from pointer arrays and copied to the device in one transfer
// per call; the entries themselves are never touched on the host.

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kwsvd/api/batched_small_svd.hpp"
#include "kwsvd/api/batched_svd.hpp"
#include "kwsvd/api/errors.hpp"
#include "kwsvd/api/options.hpp"
#include "kwsvd/impl/matrix_slot.hpp"
#include "kwsvd/scheduler/wcycle.hpp"

namespace kwsvd {

/// A reusable SVD of a variable-size batch: the constructor takes every
/// matrix's shape, sorts the matrices into the level-0 group and the
/// block-rotation group, plans both and allocates their workspace; compute()
/// then allocates nothing. It copies the batch's slots (a few dozen bytes per
/// matrix) to the device only when they differ from the last call's, and
/// then first waits for that call's copy; a call on the same Views or
/// pointers as the last one neither copies nor waits for them.
template <class ExecSpace, class Scalar>
class VariableBatchedSvd {
  static_assert(std::is_floating_point<Scalar>::value,
                "kwsvd::VariableBatchedSvd: the scalar type must be float or double");

 public:
  using memory_space = typename ExecSpace::memory_space;

  /// Plans for matrices of shapes[b].rows x shapes[b].cols. Throws
  /// kwsvd::invalid_argument on negative or oversized extents or bad options.
  VariableBatchedSvd(const ExecSpace& exec, const std::vector<MatrixShape>& shapes,
                     const SvdOptions& options = {})
      : VariableBatchedSvd(exec, shapes, options, true, "kwsvd::VariableBatchedSvd") {}

  /// Bytes of device memory (ExecSpace's memory space) that a
  /// VariableBatchedSvd of these arguments holds: what workspace_bytes() of
  /// one would report, found by planning it without allocating anything.
  /// Checks its arguments as the constructor does. Kokkos's own buffers are
  /// not included.
  static std::size_t planned_workspace_bytes(const ExecSpace& exec,
                                             const std::vector<MatrixShape>& shapes,
                                             const SvdOptions& options = {}) {
    return VariableBatchedSvd(exec, shapes, options, false,
                              "kwsvd::VariableBatchedSvd::planned_workspace_bytes")
        .workspace_bytes();
  }

  /// Bytes of device memory this handle holds: the matrices' slots, the
  /// level-0 groups' lists, and the W-cycle's working copies, buffers and
  /// task lists (BatchedSvd::workspace_bytes); under
  /// SvdOptions::max_workspace_bytes, every round's plan and the workspace
  /// the rounds share, within the limit.
  std::size_t workspace_bytes() const { return workspace_bytes_; }

  /// Number of matrices.
  std::size_t size() const { return shapes_.size(); }
  /// Matrices solved by the level-0 kernel, by block rotations, and empty ones.
  int level0_count() const {
    int count = 0;
    for (const auto& g : level0_groups_)
      count += g.count;
    return count;
  }
  /// Launches of the level-0 kernel per call: one per size class of the
  /// level-0 matrices (larger extent up to 32, 64, 128, ...), each with the
  /// team size, lanes and scratch of its own largest matrix.
  int level0_launches() const { return int(level0_groups_.size()); }
  int block_count() const { return block_count_; }
  int empty_count() const { return empty_count_; }
  /// Column-block width of the W-cycle's level 1 (0 when no matrix needs
  /// it; its first round's under SvdOptions::max_workspace_bytes).
  int block_width() const { return rounds_.empty() ? 0 : rounds_.front().solver.width(); }
  /// How the W-cycle splits a sweep of the block-rotation matrices (levels,
  /// steps, pairs by group; its first round's under a workspace limit);
  /// empty when no matrix needs it.
  WcyclePlanSummary plan_summary() const {
    return rounds_.empty() ? WcyclePlanSummary{} : rounds_.front().solver.summary();
  }
  /// Rounds the W-cycle sweeps the block-rotation matrices in, one after
  /// another: 1, or more under SvdOptions::max_workspace_bytes (0 when no
  /// matrix needs block rotations).
  int rounds() const { return int(rounds_.size()); }
  /// The block-rotation matrices of each round, in their batch order.
  std::vector<int> matrices_per_round() const {
    std::vector<int> counts;
    for (const auto& round : rounds_)
      counts.push_back(round.count);
    return counts;
  }

  /// A[b] = U[b] diag(S[b]) V[b]^T for every b: A[b] a rank-2 View (m_b,
  /// n_b), S[b] rank-1 (k_b = min(m_b, n_b)), U[b] (m_b, k_b), V[b] (n_b,
  /// k_b) ((m_b, m_b) and (n_b, n_b) under SvdOptions::full_matrices; (m_b,
  /// r_b) and (n_b, r_b), S[b] (r_b) or (k_b), r_b = min(k_b, rank), under
  /// SvdOptions::rank), info
  /// a rank-1 View (batch) of kwsvd::SvdInfo; any layouts, memory
  /// the execution space can reach. A is left unchanged; the outputs must
  /// not share storage with any A[b] or with each other. Under
  /// SvdOptions::job = Job::values_and_left_vectors (right_vectors) V (U)
  /// is not computed and must be an empty list.
  template <class AView, class SView, class UView, class VView, class InfoView>
  void compute(const std::vector<AView>& A, const std::vector<SView>& S,
               const std::vector<UView>& U, const std::vector<VView>& V, const InfoView& info) {
    constexpr const char* fn = "kwsvd::VariableBatchedSvd::compute";
    const Job job = options_.job;
    Impl::require_vector_job(fn, job);
    check_views<AView, SView, InfoView>(A, S, info);
    static_assert(Kokkos::is_view<UView>::value && UView::rank == 2 &&
                      Kokkos::is_view<VView>::value && VView::rank == 2 &&
                      std::is_same<typename UView::value_type, Scalar>::value &&
                      std::is_same<typename VView::value_type, Scalar>::value,
                  "kwsvd::VariableBatchedSvd: U[b] and V[b] must be rank-2 Views of the handle's "
                  "(non-const) scalar type");
    static_assert(
        Kokkos::SpaceAccessibility<ExecSpace, typename UView::memory_space>::accessible &&
            Kokkos::SpaceAccessibility<ExecSpace, typename VView::memory_space>::accessible,
        "kwsvd::VariableBatchedSvd: U[b] and V[b] must be in a memory space the execution "
        "space can access");
    const bool left = job_writes_u(job), right = job_writes_v(job);
    if (left)
      require_count(fn, "U", U.size());
    else
      Impl::require_unwritten_output(fn, "U", job, U.size());
    if (right)
      require_count(fn, "V", V.size());
    else
      Impl::require_unwritten_output(fn, "V", job, V.size());
    for (std::size_t b = 0; b < shapes_.size(); ++b) {
      const std::size_t m = std::size_t(shapes_[b].rows), n = std::size_t(shapes_[b].cols);
      // Columns: k_b, or r_b = min(k_b, options.rank), or rows (full).
      const std::size_t r = std::size_t(Impl::output_rank(options_, long(std::min(m, n))));
      auto& slot = staged_[b];
      slot.u = slot.v = Impl::StridedMatrix<Scalar>{};
      // One side of `rows` rows; its expected shape's names, full, ranked
      // and thin, as literals (no message is built unless the check fails).
      const auto side = [&](const char* name, const auto& X, std::size_t rows, const char* full,
                            const char* ranked, const char* thin) {
        const bool f = options_.full_matrices;
        require_extents_of(fn, name, b, {X.extent(0), X.extent(1)}, {rows, f ? rows : r},
                           f                   ? full
                           : options_.rank > 0 ? ranked
                                               : thin);
        return view_matrix<Scalar>(X);
      };
      if (left)
        slot.u = side("U", U[b], m, "(m_b, m_b) of shapes[b] (options.full_matrices)",
                      "(m_b, min(m_b, n_b, options.rank)) of shapes[b]",
                      "(m_b, min(m_b, n_b)) of shapes[b]");
      if (right)
        slot.v = side("V", V[b], n, "(n_b, n_b) of shapes[b] (options.full_matrices)",
                      "(n_b, min(m_b, n_b, options.rank)) of shapes[b]",
                      "(n_b, min(m_b, n_b)) of shapes[b]");
    }
    launch(true);
  }

  /// Singular values only.
  template <class AView, class SView, class InfoView>
  void compute(const std::vector<AView>& A, const std::vector<SView>& S, const InfoView& info) {
    check_views<AView, SView, InfoView>(A, S, info);
    for (auto& slot : staged_)
      slot.u = slot.v = Impl::StridedMatrix<Scalar>{};
    launch(false);
  }

  /// The pointer-array form (MAGMA's vbatched convention, column-major):
  /// host arrays of `size()` device pointers and leading dimensions. A[b] is
  /// m_b x n_b with lda[b] >= max(1, m_b); S[b] holds min(m_b, n_b) values;
  /// U[b] is m_b x k_b (ldu[b] >= max(1, m_b)) and V[b] n_b x k_b (ldv[b] >=
  /// max(1, n_b)), or m_b x m_b and n_b x n_b under
  /// SvdOptions::full_matrices; under SvdOptions::rank S[b] holds r_b =
  /// min(k_b, rank) values, U[b] is m_b x r_b and V[b] n_b x r_b; U, ldu, V, ldv all null for
  /// values only, and U, ldu (V, ldv) null where the handle's job does not compute U (V); info
  /// points to size() SvdInfo in device-reachable memory.
  void compute(const Scalar* const* A, const int* lda, Scalar* const* S, Scalar* const* U,
               const int* ldu, Scalar* const* V, const int* ldv, SvdInfo* info) {
    constexpr const char* fn = "kwsvd::VariableBatchedSvd::compute";
    const bool left = U != nullptr || ldu != nullptr, right = V != nullptr || ldv != nullptr;
    const bool vectors = left || right;
    const std::size_t batch = shapes_.size();
    auto require = [&](bool ok, const std::string& arg, const std::string& what) {
      if (!ok)
        Impl::throw_invalid_argument(fn, arg.c_str(), what);
    };
    require(batch == 0 || (A != nullptr && lda != nullptr && S != nullptr && info != nullptr),
            "A, lda, S, info", "must not be null for a non-empty batch");
    require(!left || (U != nullptr && ldu != nullptr), "U, ldu",
            "must both be given or both be null");
    require(!right || (V != nullptr && ldv != nullptr), "V, ldv",
            "must both be given or both be null");
    if (vectors) {  // all null: values only, whatever the job
      Impl::require_vector_job(fn, options_.job);
      Impl::require_vector_pointers(fn, options_.job, left, right, "U, ldu", "V, ldv");
    }
    // The checks of every matrix build their messages only when they fail:
    // this loop runs for every matrix of every call, and messages built
    // eagerly cost about 1 us a matrix (10000 matrices: 9 to 11 ms on a
    // 2-core Debian host, more than the H200 took to solve them).
    const bool full = options_.full_matrices;
    for (std::size_t b = 0; b < batch; ++b) {
      const int m = shapes_[b].rows, n = shapes_[b].cols;
      // Values and columns: k_b, or its leading r_b (options.rank); full: m_b, n_b.
      const int r = int(Impl::output_rank(options_, std::min(m, n)));
      const int u_cols = full ? m : r, v_cols = full ? n : r;
      // Leading dimension `ld` of an array of `rows` rows (`extent` names them).
      const auto require_ld = [&](int ld, const char* name, int rows, const char* extent) {
        if (ld < std::max(1, rows))
          Impl::throw_invalid_argument(fn, Impl::indexed_name(name, b).c_str(),
                                       std::string("must be at least max(1, ") + extent +
                                           ") = " + std::to_string(std::max(1, rows)) + ", got " +
                                           std::to_string(ld));
      };
      // A pointer of matrix b found null (`names` names it): refused unless
      // its array is empty (`cols` columns).
      const auto refuse_null = [&](const std::string& names, int cols) {
        if (cols != 0)
          Impl::throw_invalid_argument(fn, names.c_str(),
                                       "must not be null for a " + std::to_string(m) + " x " +
                                           std::to_string(n) + " matrix");
      };
      require_ld(lda[b], "lda", m, "m_b");
      if (A[b] == nullptr || S[b] == nullptr)
        refuse_null(Impl::indexed_name("A", b) + ", " + Impl::indexed_name("S", b), r);
      auto& slot = staged_[b];
      slot.a = {A[b], m, n, 1, lda[b]};
      slot.s = S[b];
      slot.s_stride = 1;
      slot.s_count = r;
      slot.info = info + b;
      slot.u = slot.v = Impl::StridedMatrix<Scalar>{};
      if (left) {
        require_ld(ldu[b], "ldu", m, "m_b");
        if (U[b] == nullptr)
          refuse_null(Impl::indexed_name("U", b), m == 0 ? 0 : u_cols);
        slot.u = {U[b], m, u_cols, 1, ldu[b]};
      }
      if (right) {
        require_ld(ldv[b], "ldv", n, "n_b");
        if (V[b] == nullptr)
          refuse_null(Impl::indexed_name("V", b), n == 0 ? 0 : v_cols);
        slot.v = {V[b], n, v_cols, 1, ldv[b]};
      }
    }
    launch(vectors);
  }

 private:
  // `allocate` false: plan only, for planned_workspace_bytes (`fn` names
  // the entry point in error messages).
  VariableBatchedSvd(const ExecSpace& exec, const std::vector<MatrixShape>& shapes,
                     const SvdOptions& options, bool allocate, const char* fn)
      : exec_(exec), shapes_(shapes), options_(options) {
    if (shapes.size() > (std::size_t(1) << 30)) {
      Impl::throw_invalid_argument(
          fn, "shapes", "must hold at most 2^30 matrices, got " + std::to_string(shapes.size()));
    }
    for (std::size_t b = 0; b < shapes.size(); ++b) {
      const auto& s = shapes[b];
      if (s.rows < 0 || s.cols < 0 || s.rows > (1 << 24) || s.cols > (1 << 24)) {
        const std::string arg = "shapes[" + std::to_string(b) + "]";
        Impl::throw_invalid_argument(fn, arg.c_str(),
                                     "must have rows and cols in [0, 2^24], got " +
                                         std::to_string(s.rows) + " x " + std::to_string(s.cols));
      }
    }
    Impl::require_svd_options<Scalar>(fn, options);
    if (options.qr == QrPreprocessing::always)
      Impl::throw_invalid_argument(fn, "options.qr",
                                   "VariableBatchedSvd solves without QR preprocessing: "
                                   "QrPreprocessing::always is BatchedSvd's only (use automatic "
                                   "or never)");
    Impl::WorkspaceAllocator<memory_space> alloc(allocate, fn);
    std::vector<int> blocks, empty;
    std::vector<MatrixShape> block_shapes;
    // Level-0 matrices by size class, smallest class first.
    std::map<int, std::pair<std::vector<int>, std::vector<MatrixShape>>> level0;
    for (std::size_t b = 0; b < shapes.size(); ++b) {
      const auto& s = shapes[b];
      if (s.rows == 0 || s.cols == 0) {
        empty.push_back(int(b));
      } else if (options.level0 &&
                 // The call's matrix count stands in for the batch of the
                 // level-0 class (known only after this split) in the lanes.
                 Impl::solves_at_level0<Scalar, ExecSpace>(s.rows, s.cols, long(shapes.size()),
                                                           options)) {
        auto& group = level0[Impl::level0_size_class(s)];
        group.first.push_back(int(b));
        group.second.push_back(s);
      } else {
        blocks.push_back(int(b));
        block_shapes.push_back(s);
      }
    }
    block_count_ = int(blocks.size());
    empty_count_ = int(empty.size());
    for (const auto& [size_class, group] : level0) {
      Level0Group g;
      g.count = int(group.first.size());
      g.index = alloc.upload(group.first, "kwsvd::level0_index");
      g.plan = Impl::plan_slotted_small_svd<ExecSpace, Scalar>(group.second, options);
      g.shapes = alloc.upload(g.plan.shapes, "kwsvd::level0_shapes");
      std::vector<MatrixShape> full;
      for (const auto& s : group.second)
        if (Impl::has_full_side(options, options.job, s.rows, s.cols))
          full.push_back(s);
      if (!full.empty())
        g.full_scratch = Impl::plan_full_side_scratch<ExecSpace, Scalar>(full);
      g.completes_full = !full.empty();
      level0_groups_.push_back(std::move(g));
    }
    for (const int b : empty)
      empty_full_sides_ = empty_full_sides_ ||
                          Impl::has_full_side(options, options.job, shapes[std::size_t(b)].rows,
                                              shapes[std::size_t(b)].cols);
    block_index_ = alloc.upload(blocks, "kwsvd::block_index");
    empty_index_ = alloc.upload(empty, "kwsvd::empty_index");
    slots_ = alloc.template zeros<Impl::MatrixSlot<Scalar>>("kwsvd::slots", shapes.size());
    plan_rounds(exec, block_shapes, alloc, fn);
    workspace_bytes_ = alloc.bytes();
    for (const auto& round : rounds_)
      workspace_bytes_ += round.solver.workspace_bytes();
    if (!allocate)
      return;
    host_slots_ = Kokkos::create_mirror_view(slots_);
    staged_.resize(shapes.size());
    storage_.reserve(5 * shapes.size());
  }

  template <class T, class View>
  static Impl::StridedMatrix<T> view_matrix(const View& X) {
    return {X.data(), int(X.extent(0)), int(X.extent(1)), std::ptrdiff_t(X.stride(0)),
            std::ptrdiff_t(X.stride(1))};
  }

  // Impl::require_extents for argument name[b], its name built only when the
  // extents differ (the check runs for every matrix of every call).
  static void require_extents_of(const char* fn, const char* name, std::size_t b,
                                 std::initializer_list<std::size_t> actual,
                                 std::initializer_list<std::size_t> expected,
                                 const char* expected_names) {
    if (!std::equal(actual.begin(), actual.end(), expected.begin(), expected.end()))
      Impl::require_extents(fn, Impl::indexed_name(name, b).c_str(), actual, expected,
                            expected_names);
  }

  void require_count(const char* fn, const char* arg, std::size_t count) const {
    if (count != shapes_.size()) {
      Impl::throw_invalid_argument(fn, arg,
                                   "must hold one View per matrix (" +
                                       std::to_string(shapes_.size()) + "), got " +
                                       std::to_string(count));
    }
  }

  // Checks A, S and info against the planned shapes and fills their slots.
  template <class AView, class SView, class InfoView>
  void check_views(const std::vector<AView>& A, const std::vector<SView>& S, const InfoView& info) {
    static_assert(Kokkos::is_view<AView>::value && AView::rank == 2,
                  "kwsvd::VariableBatchedSvd: A[b] must be a rank-2 View (m_b, n_b)");
    static_assert(Kokkos::is_view<SView>::value && SView::rank == 1,
                  "kwsvd::VariableBatchedSvd: S[b] must be a rank-1 View (min(m_b, n_b))");
    static_assert(std::is_same<typename AView::non_const_value_type, Scalar>::value &&
                      std::is_same<typename SView::value_type, Scalar>::value,
                  "kwsvd::VariableBatchedSvd: A and S must hold the handle's scalar type (S not "
                  "const)");
    static_assert(Kokkos::is_view<InfoView>::value && InfoView::rank == 1 &&
                      std::is_same<typename InfoView::value_type, SvdInfo>::value,
                  "kwsvd::VariableBatchedSvd: info must be a rank-1 View of kwsvd::SvdInfo");
    static_assert(
        Kokkos::SpaceAccessibility<ExecSpace, typename AView::memory_space>::accessible &&
            Kokkos::SpaceAccessibility<ExecSpace, typename SView::memory_space>::accessible &&
            Kokkos::SpaceAccessibility<ExecSpace, typename InfoView::memory_space>::accessible,
        "kwsvd::VariableBatchedSvd: every View must be in a memory space the execution space "
        "can access");
    constexpr const char* fn = "kwsvd::VariableBatchedSvd::compute";
    require_count(fn, "A", A.size());
    require_count(fn, "S", S.size());
    Impl::require_extents(fn, "info", {info.extent(0)}, {shapes_.size()},
                          "(batch) with batch the number of shapes");
    for (std::size_t b = 0; b < shapes_.size(); ++b) {
      const std::size_t m = std::size_t(shapes_[b].rows), n = std::size_t(shapes_[b].cols);
      require_extents_of(fn, "A", b, {A[b].extent(0), A[b].extent(1)}, {m, n},
                         "(m_b, n_b) of shapes[b]");
      // S[b]: all k_b values, or under SvdOptions::rank the leading r_b.
      const std::size_t k = std::min(m, n), r = std::size_t(Impl::output_rank(options_, long(k)));
      if (r == k || S[b].extent(0) != r)
        require_extents_of(fn, "S", b, {S[b].extent(0)}, {k},
                           r == k
                               ? "(min(m_b, n_b)) of shapes[b]"
                               : "(min(m_b, n_b)) or (min(m_b, n_b, options.rank)) of shapes[b]");
      auto& slot = staged_[b];
      slot.a = view_matrix<const Scalar>(A[b]);
      slot.s = S[b].data();
      slot.s_stride = std::ptrdiff_t(S[b].stride(0));
      slot.s_count = int(S[b].extent(0));
      slot.info = info.data() + std::ptrdiff_t(b) * std::ptrdiff_t(info.stride(0));
    }
  }

  // The slots' upload when they changed, then one launch per group.
  void launch(bool vectors) {
    if (shapes_.empty())
      return;
    upload_slots();
    const Impl::MatrixSlot<Scalar>* slots = slots_.data();
    Impl::report_converged(exec_, Impl::IndexedSlots<Scalar>{slots, empty_index_.data()},
                           empty_count_);
    const Scalar tol = Impl::resolved_tolerance<Scalar>(options_.tolerance);
    // SvdOptions::full_matrices: an empty matrix's full side is the
    // identity, a level-0 matrix's is completed after its group's SVDs (the
    // W-cycle completes its own matrices' in its finish).
    if (vectors && empty_full_sides_)
      Impl::launch_full_side_completion<ExecSpace, Scalar>(
          exec_, Impl::IndexedSlots<Scalar>{slots, empty_index_.data()}, empty_count_,
          Impl::FullSideScratch{});
    for (const auto& g : level0_groups_) {
      const Impl::IndexedSlots<Scalar> group_slots{slots, g.index.data()};
      Impl::launch_slotted_small_svd(
          exec_, g.count, g.plan,
          Impl::SlottedSmallSvdFunctor<ExecSpace, Scalar>{group_slots, g.shapes.data(), vectors,
                                                          tol, options_.max_sweeps});
      if (vectors && g.completes_full)
        Impl::launch_full_side_completion<ExecSpace, Scalar>(exec_, group_slots, g.count,
                                                             g.full_scratch);
    }
    for (auto& round : rounds_) {
      // Rounds that share the arena each find it as a fresh plan would.
      if (arena_.data() != nullptr)
        Kokkos::deep_copy(
            exec_,
            Kokkos::subview(arena_, std::make_pair(std::size_t(0), round.solver.arena_bytes())),
            static_cast<unsigned char>(0));
      round.solver.run(exec_, Impl::IndexedSlots<Scalar>{slots, block_index_.data() + round.begin},
                       vectors);
    }
  }

  // The W-cycle's rounds over the block-rotation matrices (`shapes`, in
  // their batch order): all of them in one plan, or, when their plan and
  // the handle's other buffers (`alloc`'s so far) exceed
  // options.max_workspace_bytes, consecutive runs of them whose plans fit it
  // together. Each round's plan keeps its own task lists and geometry; their
  // per-call state (working copies, Grams, rotations) is carved from one
  // arena, as large as the largest round's, which launch() clears before
  // each round. The arena dominates: for a cap on it, rounds are made as
  // long as their state stays within the cap (pack_rounds), the cap being
  // what the limit leaves for it. A limit that even the smallest cap (the
  // largest single matrix's state) does not fit is refused, as is one below
  // the other buffers alone.
  void plan_rounds(const ExecSpace& exec, const std::vector<MatrixShape>& shapes,
                   Impl::WorkspaceAllocator<memory_space>& alloc, const char* fn) {
    using Solver = Impl::WcycleLevelSolver<ExecSpace, Scalar>;
    using Allocator = Impl::WorkspaceAllocator<memory_space>;
    const int total = int(shapes.size());
    const std::size_t limit = options_.max_workspace_bytes;
    if (limit != 0 && alloc.bytes() > limit) {
      Impl::throw_invalid_argument(
          fn, "options.max_workspace_bytes",
          "must be 0 (no limit) or at least the " + Impl::format_bytes(alloc.bytes()) +
              " that the batch's slots and lists take, got " + Impl::format_bytes(limit));
    }
    if (total == 0)
      return;
    const bool allocate = alloc.allocates();
    const auto span = [&](int begin, int count) {
      return std::vector<MatrixShape>(shapes.begin() + begin, shapes.begin() + begin + count);
    };
    if (limit == 0 ||
        alloc.bytes() + Solver(exec, shapes, options_, fn, false).workspace_bytes() <= limit) {
      rounds_.push_back({0, total, Solver(exec, shapes, options_, fn, allocate)});
      return;
    }
    // A round's plan, made without allocating: its own bytes and its arena's.
    const auto need = [&](int begin, int count) {
      const Solver plan(exec, span(begin, count), options_, fn, Allocator::sharing({}, false, fn));
      return std::make_pair(plan.workspace_bytes(), plan.arena_bytes());
    };
    // Each matrix's plan alone: a round's least, and the smallest cap (the
    // largest single arena).
    std::vector<std::pair<std::size_t, std::size_t>> single;
    std::size_t smallest = 0;
    for (int b = 0; b < total; ++b) {
      single.push_back(need(b, 1));
      smallest = std::max(smallest, single.back().second);
    }
    // The first cap: what the limit leaves beside the other buffers and the
    // plans' own bytes, taken as the whole batch's in one plan. Rounds'
    // plans hold a little more together (each its own per-step lists), so
    // the cap is then lowered by what the rounds exceed the limit by, until
    // they fit (a few packings), or down to the smallest cap.
    const auto [whole_own, whole_arena] = need(0, total);
    const std::size_t held = alloc.bytes();
    std::size_t cap = limit > held + whole_own ? limit - held - whole_own : 0;
    cap = std::max(smallest, std::min(cap, whole_arena));
    Packing best = pack_rounds(cap, single, need);
    for (int trial = 0; held + best.bytes > limit && cap > smallest; ++trial) {
      const std::size_t excess = held + best.bytes - limit;
      cap = trial < 8 && cap > smallest + excess ? cap - excess : smallest;
      best = pack_rounds(cap, single, need);
    }
    if (held + best.bytes > limit) {
      Impl::throw_invalid_argument(
          fn, "options.max_workspace_bytes",
          "must be 0 (no limit) or at least the " + Impl::format_bytes(held + best.bytes) +
              " that rounds of the block-rotation matrices with the smallest shared workspace "
              "take with the batch's other buffers, got " +
              Impl::format_bytes(limit));
    }
    arena_ = alloc.template zeros<unsigned char>("kwsvd::round_workspace", best.arena);
    // The rounds run one after another: they share the streams of the round
    // with the most parts.
    for (const auto& [begin, count] : best.spans)
      rounds_.push_back({begin, count,
                         Solver(exec, span(begin, count), options_, fn,
                                Allocator::sharing(arena_, allocate, fn))});
    const auto donor =
        std::max_element(rounds_.begin(), rounds_.end(), [](const auto& a, const auto& b) {
          return a.solver.stream_count() < b.solver.stream_count();
        });
    for (auto& round : rounds_)
      if (&round != &*donor)
        round.solver.share_streams(donor->solver);
  }

  // Rounds of the block-rotation matrices whose arenas stay within `cap`,
  // each as long as that allows (from the previous round's length, doubling,
  // then bisection over `need(begin, count)`; `single[b]` is need(b, 1)):
  // their spans, the largest arena, and the bytes of their plans and that
  // arena together.
  struct Packing {
    std::vector<std::pair<int, int>> spans;  // (begin, count) of each round
    std::size_t arena = 0, bytes = 0;
  };
  template <class Need>
  static Packing pack_rounds(std::size_t cap,
                             const std::vector<std::pair<std::size_t, std::size_t>>& single,
                             const Need& need) {
    const int total = int(single.size());
    Packing packing;
    std::size_t own = 0;
    int last = 1;  // the previous round's length: the first guess of the next
    for (int begin = 0; begin < total;) {
      const int rest = total - begin;
      // A round of `good` matrices stays within the cap (a single one always
      // does: the cap is at least the largest single arena), one of `bad`
      // does not.
      int good = 1, bad = rest + 1;
      auto at_good = single[std::size_t(begin)];
      for (bool first = true; bad - good > 1; first = false) {
        const int count = first && last > 1 ? std::min(last, rest)
                          : bad > rest      ? std::min(2 * good, rest)
                                            : (good + bad) / 2;
        const auto n = need(begin, count);
        if (n.second <= cap) {
          good = count;
          at_good = n;
        } else {
          bad = count;
        }
      }
      packing.spans.emplace_back(begin, good);
      last = good;
      own += at_good.first;
      packing.arena = std::max(packing.arena, at_good.second);
      begin += good;
    }
    packing.bytes = own + packing.arena;
    return packing;
  }

  // The device keeps the slots it was last sent, so a call whose slots are
  // the same (a handle reused on the same Views or pointers) copies nothing
  // and waits for nothing; its launches follow that upload on the same
  // instance. Otherwise the previous upload (or, on host backends where the
  // mirror is the device View, the previous call's launches) may still read
  // the host slots, so the refill waits for it first.
  void upload_slots() {
    if (uploaded_ &&
        std::equal(staged_.begin(), staged_.end(), host_slots_.data(), Impl::same_slot<Scalar>))
      return;
    require_disjoint_slots();
    if (uploaded_)
      exec_.fence();
    std::copy(staged_.begin(), staged_.end(), host_slots_.data());
    Kokkos::deep_copy(exec_, slots_, host_slots_);
    uploaded_ = true;
  }

  // Outputs that share storage with an input or another output, refused
  // before anything is copied (checked only when the slots changed: the
  // last upload's passed).
  void require_disjoint_slots() {
    storage_.clear();
    for (std::size_t b = 0; b < staged_.size(); ++b) {
      const auto& slot = staged_[b];
      const auto add = [&](int argument, bool output, const Impl::StorageRuns& runs) {
        storage_.push_back({runs, b, argument, output});
      };
      add(0, false,
          Impl::matrix_storage_runs(slot.a.data, slot.a.rows, slot.a.cols, slot.a.row_stride,
                                    slot.a.col_stride));
      add(1, true, Impl::matrix_storage_runs(slot.s, slot.s_count, 1, slot.s_stride, 1));
      add(2, true,
          Impl::matrix_storage_runs(slot.u.data, slot.u.rows, slot.u.cols, slot.u.row_stride,
                                    slot.u.col_stride));
      add(3, true,
          Impl::matrix_storage_runs(slot.v.data, slot.v.rows, slot.v.cols, slot.v.row_stride,
                                    slot.v.col_stride));
      add(4, true, Impl::matrix_storage_runs(slot.info, 1, 1, 1, 1));
    }
    static constexpr const char* names[] = {"A", "S", "U", "V", "info"};
    Impl::require_disjoint_matrix_storage("kwsvd::VariableBatchedSvd::compute", storage_, names);
  }

  ExecSpace exec_;
  std::vector<MatrixShape> shapes_;
  SvdOptions options_;
  // The level-0 matrices of one size class: their batch indices, plan and
  // planned shapes.
  struct Level0Group {
    int count = 0;
    Kokkos::View<int*, memory_space> index;
    Impl::SlottedSmallSvdPlan plan;
    Kokkos::View<Impl::OneSidedJacobiShape*, memory_space> shapes;
    // Whether some of them have a full side to complete (SvdOptions::
    // full_matrices), and the completion's team scratch.
    bool completes_full = false;
    Impl::FullSideScratch full_scratch;
  };
  bool empty_full_sides_ = false;  // some empty matrix has a full side (the identity)
  int block_count_ = 0, empty_count_ = 0;
  std::vector<Level0Group> level0_groups_;
  Kokkos::View<int*, memory_space> block_index_, empty_index_;
  Kokkos::View<Impl::MatrixSlot<Scalar>*, memory_space> slots_;
  typename Kokkos::View<Impl::MatrixSlot<Scalar>*, memory_space>::HostMirror host_slots_;
  // This call's slots, filled by the checks; host_slots_ holds the last upload.
  std::vector<Impl::MatrixSlot<Scalar>> staged_;
  std::vector<Impl::MatrixStorage> storage_;  // the overlap check's list, kept for its capacity
  bool uploaded_ = false;
  // The block-rotation matrices block_index_[begin, begin + count) and
  // their W-cycle plan.
  struct Round {
    int begin = 0, count = 0;
    Impl::WcycleLevelSolver<ExecSpace, Scalar> solver;
  };
  std::vector<Round> rounds_;
  // The rounds' shared per-call state; empty unless there are several.
  Kokkos::View<unsigned char*, memory_space> arena_;
  std::size_t workspace_bytes_ = 0;  // device bytes of every buffer above
};

/// The SVD of every matrix of a variable-size batch given as lists of Views
/// (see VariableBatchedSvd; this plans and allocates per call).
template <class ExecSpace, class AView, class SView, class UView, class VView, class InfoView>
void batched_svd(const ExecSpace& exec, const std::vector<AView>& A, const std::vector<SView>& S,
                 const std::vector<UView>& U, const std::vector<VView>& V, const InfoView& info,
                 const SvdOptions& options = {}) {
  using Scalar = typename SView::non_const_value_type;
  std::vector<MatrixShape> shapes;
  for (const auto& a : A)
    shapes.push_back({int(a.extent(0)), int(a.extent(1))});
  VariableBatchedSvd<ExecSpace, Scalar> svd(exec, shapes, options);
  svd.compute(A, S, U, V, info);
}

/// Singular values only, variable-size batch.
template <class ExecSpace, class AView, class SView, class InfoView>
void batched_svd(const ExecSpace& exec, const std::vector<AView>& A, const std::vector<SView>& S,
                 const InfoView& info, SvdOptions options = {}) {
  using Scalar = typename SView::non_const_value_type;
  options.job = Job::values;
  std::vector<MatrixShape> shapes;
  for (const auto& a : A)
    shapes.push_back({int(a.extent(0)), int(a.extent(1))});
  VariableBatchedSvd<ExecSpace, Scalar> svd(exec, shapes, options);
  svd.compute(A, S, info);
}

/// The pointer-array form of a variable-size batch: m[b], n[b] and the host
/// arrays of VariableBatchedSvd::compute (U, ldu, V, ldv null: values only;
/// U, ldu or V, ldv null: the other side's vectors only, the job taken from
/// them unless options.job names another vector job).
template <class ExecSpace, class Scalar>
void batched_svd(const ExecSpace& exec, int batch, const int* m, const int* n,
                 const Scalar* const* A, const int* lda, Scalar* const* S, Scalar* const* U,
                 const int* ldu, Scalar* const* V, const int* ldv, SvdInfo* info,
                 SvdOptions options = {}) {
  if (batch < 0) {
    Impl::throw_invalid_argument("kwsvd::batched_svd", "batch",
                                 "must be non-negative, got " + std::to_string(batch));
  }
  if (batch > 0 && (m == nullptr || n == nullptr))
    Impl::throw_invalid_argument("kwsvd::batched_svd", "m, n", "must not be null");
  std::vector<MatrixShape> shapes;
  for (int b = 0; b < batch; ++b)
    shapes.push_back({m[b], n[b]});
  // The job the pointers name, where options.job is the default (a job it
  // names otherwise is checked against them by compute).
  const Job named = Impl::job_computing(U != nullptr, V != nullptr);
  if (named == Job::values || options.job == Job::values_and_vectors)
    options.job = named;
  VariableBatchedSvd<ExecSpace, Scalar> svd(exec, shapes, options);
  svd.compute(A, lda, S, U, ldu, V, ldv, info);
}

}  // namespace kwsvd
