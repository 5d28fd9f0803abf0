#pragma once
// kwsvd::batched_svd and kwsvd::BatchedSvd: the SVD of every matrix of a
// uniform batch, whatever its size. Shapes that fit one team's level-0
// scratch go to the level-0 one-sided Jacobi kernel (batched_small_svd); the
// others to the W-cycle scheduler (scheduler/wcycle.hpp).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kwsvd/api/batched_small_svd.hpp"
#include "kwsvd/api/errors.hpp"
#include "kwsvd/api/options.hpp"
#include "kwsvd/scheduler/qr_preprocessing.hpp"
#include "kwsvd/scheduler/wcycle.hpp"
#include "kwsvd/tuning/qr_preprocessing.hpp"

namespace kwsvd {

/// A reusable SVD of batches of one shape: the constructor plans and
/// allocates the workspace (block width, tailoring plan, task lists); every
/// compute() call then runs without allocating, on the given execution-space
/// instance (e.g. a CUDA stream).
template <class ExecSpace, class Scalar>
class BatchedSvd {
  static_assert(std::is_floating_point<Scalar>::value,
                "kwsvd::BatchedSvd: the scalar type must be float or double");

 public:
  /// Plans for `batch` matrices of m x n. Throws kwsvd::invalid_argument on
  /// negative extents or bad options.
  BatchedSvd(const ExecSpace& exec, long batch, long m, long n, const SvdOptions& options = {})
      : BatchedSvd(exec, batch, m, n, options, true, "kwsvd::BatchedSvd") {}

  /// Bytes of device memory (ExecSpace's memory space) that a BatchedSvd of
  /// these arguments holds: what workspace_bytes() of one would report, found
  /// by planning it without allocating anything (cuSOLVER's *_bufferSize).
  /// Checks its arguments as the constructor does. Kokkos's own buffers
  /// (team scratch, reductions, the streams' instances) are not included.
  static std::size_t planned_workspace_bytes(const ExecSpace& exec, long batch, long m, long n,
                                             const SvdOptions& options = {}) {
    return BatchedSvd(exec, batch, m, n, options, false,
                      "kwsvd::BatchedSvd::planned_workspace_bytes")
        .workspace_bytes();
  }

  /// Bytes of device memory this handle holds: the W-cycle's working copy of
  /// the matrices (and of V), its per-step buffers and task lists, for a
  /// round's matrices under SvdOptions::max_workspace_bytes; 0 for shapes
  /// solved at level 0, which need only team scratch.
  std::size_t workspace_bytes() const {
    return solver_.workspace_bytes() + qr_bytes_ + (factors_ ? factors_->workspace_bytes() : 0);
  }

  /// Matrices the W-cycle sweeps together: the batch, or, under
  /// SvdOptions::max_workspace_bytes, the size of each round (0 for level 0
  /// or an empty batch).
  long matrices_per_round() const { return round_; }

  /// True when the shape runs in the level-0 kernel (no block rotations);
  /// under QR preprocessing, whether the triangular factors do.
  bool level0() const { return factors_ ? factors_->level0() : level0_; }
  /// True when the matrices are reduced to their triangular factors first
  /// (SvdOptions::qr), whose SVD the other queries then describe.
  bool qr_preprocessed() const { return factors_ != nullptr; }
  /// Column-block width of the W-cycle's level 1 (0 for level 0).
  int block_width() const {
    return factors_ ? factors_->block_width() : level0_ ? 0 : solver_.width();
  }
  /// How the W-cycle splits a sweep (levels, steps, pairs by group); empty
  /// for level 0 or an empty batch.
  WcyclePlanSummary plan_summary() const {
    if (factors_)
      return factors_->plan_summary();
    return level0_ || batch_ == 0 || m_ == 0 || n_ == 0 ? WcyclePlanSummary{} : solver_.summary();
  }

  /// A(b) = U(b) diag(S(b)) V(b)^T for every b. A: (batch, m, n), S: (batch,
  /// k), U: (batch, m, k), V: (batch, n, k), k = min(m, n) (U: (batch, m, m),
  /// V: (batch, n, n) under SvdOptions::full_matrices; U: (batch, m, r), V:
  /// (batch, n, r) and S (batch, r) or (batch, k) under SvdOptions::rank =
  /// r < k), info: (batch) of
  /// kwsvd::SvdInfo; any layouts, memory the execution space can reach. A is
  /// left unchanged; S, U, V and info must not share storage with A or with
  /// each other (kwsvd::invalid_argument names the pair). Singular values
  /// descending, U and V orthonormal (the U columns of zero singular values
  /// complete U's orthonormal set). Under SvdOptions::job =
  /// Job::values_and_left_vectors (right_vectors) V (U) is not computed and
  /// must be an empty View, such as a default-constructed one.
  template <class AView, class SView, class UView, class VView, class InfoView>
  void compute(const AView& A, const SView& S, const UView& U, const VView& V,
               const InfoView& info) {
    Impl::require_vector_job("kwsvd::BatchedSvd::compute", options_.job);
    run(A, S, U, V, info, options_.job);
  }

  /// Singular values only (whatever the handle's job).
  template <class AView, class SView, class InfoView>
  void compute(const AView& A, const SView& S, const InfoView& info) {
    using NoVectors = Kokkos::View<Scalar***, Kokkos::LayoutRight, typename SView::memory_space>;
    run(A, S, NoVectors(), NoVectors(), info, Job::values);
  }

 private:
  // `allocate` false: plan only, for planned_workspace_bytes (`fn` names
  // the entry point in error messages).
  BatchedSvd(const ExecSpace& exec, long batch, long m, long n, const SvdOptions& options,
             bool allocate, const char* fn)
      : exec_(exec), batch_(batch), m_(m), n_(n), options_(options) {
    if (batch < 0 || m < 0 || n < 0 || batch > (1L << 30) || m > (1L << 24) || n > (1L << 24)) {
      Impl::throw_invalid_argument(fn, "batch, m, n",
                                   "must be non-negative and at most 2^30, 2^24, 2^24; got " +
                                       std::to_string(batch) + ", " + std::to_string(m) + ", " +
                                       std::to_string(n));
    }
    Impl::require_svd_options<Scalar>(fn, options);
    level0_ =
        options.level0 && Impl::solves_at_level0<Scalar, ExecSpace>(int(m), int(n), batch, options);
    const bool qr = options.qr == QrPreprocessing::always || !level0_;
    if (qr && batch > 0) {
      const bool crosses = factor_crosses_level0(batch, m, n, options);
      if (Impl::uses_qr_preprocessing<Scalar>(options, batch, m, n, crosses)) {
        plan_qr(exec, allocate, fn, crosses);
        return;
      }
    }
    if (!level0_ && batch > 0 && m > 0 && n > 0) {
      round_ = plan_round(exec, fn);
      solver_ = Impl::WcycleLevelSolver<ExecSpace, Scalar>(
          exec, std::vector<MatrixShape>(std::size_t(round_), MatrixShape{int(m), int(n)}), options,
          fn, allocate);
    }
  }

  // Whether the W-cycle would sweep the m x n working matrix in column
  // blocks while its k x k triangular factor is solved at level 0 (the QR
  // rule's factor_crosses_level0; host arithmetic only).
  static bool factor_crosses_level0(long batch, long m, long n, const SvdOptions& options) {
    const int rows = int(m > n ? m : n), cols = int(m > n ? n : m);
    if (cols < 2 || rows == cols || !options.level0)
      return false;
    return !Impl::wcycle_sweeps_whole<ExecSpace, Scalar>(
               options, rows, cols, Impl::wcycle_scratch_limit<ExecSpace>(options)) &&
           Impl::solves_at_level0<Scalar, ExecSpace>(cols, cols, batch, options);
  }

  // The QR preprocessing (SvdOptions::qr): the factors' buffers, and a
  // handle for the SVD of the k x k factors X = R^T, whose U is the short
  // side's vectors (V of a tall matrix, U of a wide one) and whose V the
  // finish turns into the long side's (QrPreprocessor). `crosses`: the
  // rule's factor_crosses_level0, which the preprocessor's choice of a tree
  // takes too.
  void plan_qr(const ExecSpace& exec, bool allocate, const char* fn, bool crosses) {
    const long k = std::min(m_, n_);
    const bool tall = m_ > n_;
    const bool long_side = tall ? job_writes_u(options_.job) : job_writes_v(options_.job);
    const bool short_side = tall ? job_writes_v(options_.job) : job_writes_u(options_.job);
    SvdOptions inner = options_;
    inner.job = Impl::job_computing(short_side, long_side);
    inner.qr = QrPreprocessing::never;
    inner.full_matrices = false;  // k x k: full and thin alike; the finish completes the long side
    Impl::WorkspaceAllocator<typename ExecSpace::memory_space> alloc(allocate, fn);
    qr_ = Impl::QrPreprocessor<ExecSpace, Scalar>(batch_, int(m_), int(n_),
                                                  int(Impl::output_rank(options_, k)), long_side,
                                                  options_.full_matrices, crosses, alloc);
    qr_bytes_ = alloc.bytes();
    factors_ = std::shared_ptr<BatchedSvd>(new BatchedSvd(exec, batch_, k, k, inner, allocate, fn));
    level0_ = false;
  }

  // The SVD through the factors (plan_qr): factor, the factors' SVD, finish.
  template <class AView, class SView, class UView, class VView, class InfoView>
  void run_qr(const AView& A, const SView& S, const UView& U, const VView& V, const InfoView& info,
              Job job) {
    const auto slots = Impl::uniform_slots<Scalar>(A, S, U, V, info, job);
    qr_.factor(exec_, slots);
    const bool tall = m_ > n_;
    const bool long_side = tall ? job_writes_u(job) : job_writes_v(job);
    const bool short_side = tall ? job_writes_v(job) : job_writes_u(job);
    using Blocks = typename Impl::QrPreprocessor<ExecSpace, Scalar>::Blocks;
    const auto X = qr_.factors();
    const Blocks Y = long_side ? qr_.right_vectors() : Blocks();
    using Empty = Kokkos::View<Scalar***, Kokkos::LayoutRight, typename SView::memory_space>;
    const Job inner = Impl::job_computing(short_side, long_side);
    if (short_side && tall)
      factors_->solve(X, S, V, Y, info, inner);
    else if (short_side)
      factors_->solve(X, S, U, Y, info, inner);
    else
      factors_->solve(X, S, Empty(), Y, info, inner);
    qr_.finish(exec_, slots, long_side);
  }

  // Matrices per W-cycle round: the batch, or under max_workspace_bytes the
  // fewest rounds of equal size whose workspace fits, found by planning
  // without allocating (the workspace grows with the matrices of a round,
  // not quite in proportion: a guess from the ratio, then one more round
  // until it fits).
  long plan_round(const ExecSpace& exec, const char* fn) const {
    const std::size_t limit = options_.max_workspace_bytes;
    if (limit == 0)
      return batch_;
    const auto bytes = [&](long count) {
      return Impl::WcycleLevelSolver<ExecSpace, Scalar>(
                 exec, std::vector<MatrixShape>(std::size_t(count), MatrixShape{int(m_), int(n_)}),
                 options_, fn, false)
          .workspace_bytes();
    };
    long rounds = 1, round = batch_;
    for (std::size_t need = bytes(round); need > limit; need = bytes(round)) {
      if (round == 1) {
        Impl::throw_invalid_argument(fn, "options.max_workspace_bytes",
                                     "must be 0 (no limit) or at least " +
                                         Impl::format_bytes(need) + ", the workspace of one " +
                                         std::to_string(m_) + " x " + std::to_string(n_) +
                                         " matrix, got " + Impl::format_bytes(limit));
      }
      const double guess = std::ceil(double(rounds) * double(need) / double(limit));
      rounds = std::min(batch_, std::max(rounds + 1, long(guess)));
      round = (batch_ + rounds - 1) / rounds;
    }
    return round;
  }

  template <class AView, class SView, class UView, class VView, class InfoView>
  // `job`: what this call computes (the handle's job, or Job::values).
  void run(const AView& A, const SView& S, const UView& U, const VView& V, const InfoView& info,
           Job job) {
    static_assert(Kokkos::is_view<AView>::value && AView::rank == 3,
                  "kwsvd::batched_svd: A must be a rank-3 View (batch, m, n)");
    static_assert(Kokkos::is_view<SView>::value && SView::rank == 2,
                  "kwsvd::batched_svd: S must be a rank-2 View (batch, min(m, n))");
    static_assert(std::is_same<typename AView::non_const_value_type, Scalar>::value &&
                      std::is_same<typename SView::value_type, Scalar>::value,
                  "kwsvd::batched_svd: A and S must hold the handle's scalar type (S not const)");
    static_assert(Kokkos::is_view<InfoView>::value && InfoView::rank == 1 &&
                      std::is_same<typename InfoView::value_type, SvdInfo>::value,
                  "kwsvd::batched_svd: info must be a rank-1 View of kwsvd::SvdInfo");
    static_assert(
        Kokkos::SpaceAccessibility<ExecSpace, typename AView::memory_space>::accessible &&
            Kokkos::SpaceAccessibility<ExecSpace, typename SView::memory_space>::accessible &&
            Kokkos::SpaceAccessibility<ExecSpace, typename InfoView::memory_space>::accessible,
        "kwsvd::batched_svd: every View must be in a memory space the execution space can "
        "access");
    constexpr const char* fn = "kwsvd::batched_svd";
    const std::size_t batch = std::size_t(batch_), m = std::size_t(m_), n = std::size_t(n_);
    Impl::require_extents(fn, "A", {A.extent(0), A.extent(1), A.extent(2)}, {batch, m, n},
                          "(batch, m, n) as planned");
    Impl::require_uniform_values(fn, options_, S, batch, m, n);
    Impl::require_extents(fn, "info", {info.extent(0)}, {batch}, "(batch) with batch taken from A");
    if (job != Job::values)
      Impl::require_uniform_vectors(fn, job, options_, U, V, batch, m, n);
    Impl::require_disjoint_svd_storage(fn, A, S, U, V, info, job);
    solve(A, S, U, V, info, job);
  }

  // run's work past its checks: run_qr calls it on the inner handle, whose
  // arguments (the factors' buffers and slices of checked outputs) are right
  // by construction, so a call checks its arguments once.
  template <class AView, class SView, class UView, class VView, class InfoView>
  void solve(const AView& A, const SView& S, const UView& U, const VView& V, const InfoView& info,
             Job job) {
    const std::size_t batch = std::size_t(batch_), k = std::size_t(std::min(m_, n_));
    if (batch == 0)
      return;
    if (k == 0) {  // nothing to decompose: report success (a full side is the identity)
      Impl::report_converged(exec_, info.data(), std::ptrdiff_t(info.stride(0)), batch);
      Impl::complete_uniform_full_sides(exec_, A, S, U, V, info, options_, job);
      return;
    }
    if (factors_) {
      run_qr(A, S, U, V, info, job);
      return;
    }
    if (level0_) {
      Impl::batched_small_svd_impl(exec_, A, S, U, V, info, options_, job);
      return;
    }
    const auto slots = Impl::uniform_slots<Scalar>(A, S, U, V, info, job);
    // Rounds of round_ matrices; the last one ends at the batch's end.
    for (long b = 0; b < batch_; b += round_)
      solver_.run(exec_, slots.from(int(std::min(b, batch_ - round_))), job != Job::values);
  }

  ExecSpace exec_;
  long batch_, m_, n_;
  SvdOptions options_;
  bool level0_ = false;
  long round_ = 0;  // matrices per W-cycle round (plan_round)
  Impl::WcycleLevelSolver<ExecSpace, Scalar> solver_;
  // Under QR preprocessing (plan_qr): the factors' buffers and their SVD.
  Impl::QrPreprocessor<ExecSpace, Scalar> qr_;
  std::size_t qr_bytes_ = 0;
  std::shared_ptr<BatchedSvd> factors_;
};

/// The SVD of every matrix of a uniform batch, any size (see BatchedSvd;
/// this plans and allocates a workspace per call: keep a BatchedSvd to call
/// repeatedly without allocating).
template <class ExecSpace, class AView, class SView, class UView, class VView, class InfoView>
void batched_svd(const ExecSpace& exec, const AView& A, const SView& S, const UView& U,
                 const VView& V, const InfoView& info, const SvdOptions& options = {}) {
  using Scalar = typename SView::non_const_value_type;
  BatchedSvd<ExecSpace, Scalar> svd(exec, long(A.extent(0)), long(A.extent(1)), long(A.extent(2)),
                                    options);
  svd.compute(A, S, U, V, info);
}

/// Singular values only.
template <class ExecSpace, class AView, class SView, class InfoView>
void batched_svd(const ExecSpace& exec, const AView& A, const SView& S, const InfoView& info,
                 SvdOptions options = {}) {
  using Scalar = typename SView::non_const_value_type;
  options.job = Job::values;
  BatchedSvd<ExecSpace, Scalar> svd(exec, long(A.extent(0)), long(A.extent(1)), long(A.extent(2)),
                                    options);
  svd.compute(A, S, info);
}

/// The cuSOLVER-like form: raw pointers into memory `exec` can reach,
/// column-major matrices with leading dimensions, and batch strides (in
/// elements) between consecutive matrices. A(b) is m x n at A + b strideA
/// with leading dimension lda >= m; S(b) holds k = min(m, n) values at S + b
/// strideS; U(b) is m x k (ldu >= m), V(b) n x k (ldv >= n), or m x m and
/// n x n under options.full_matrices; under options.rank = r < k, S(b)
/// holds r values, U(b) is m x r and V(b) n x r. A null U or V
/// is not computed: both null for values only, one of them for the other
/// side's vectors only (Job::values_and_left_vectors or
/// values_and_right_vectors, which options.job may also name; then the one
/// it leaves out must be null). Throws kwsvd::invalid_argument naming the
/// argument.
template <class ExecSpace, class Scalar>
void batched_svd(const ExecSpace& exec, int batch, int m, int n, const Scalar* A, int lda,
                 long long strideA, Scalar* S, long long strideS, Scalar* U, int ldu,
                 long long strideU, Scalar* V, int ldv, long long strideV, SvdInfo* info,
                 SvdOptions options = {}) {
  constexpr const char* fn = "kwsvd::batched_svd";
  if (batch < 0 || m < 0 || n < 0) {
    Impl::throw_invalid_argument(fn, "batch, m, n",
                                 "must be non-negative, got " + std::to_string(batch) + ", " +
                                     std::to_string(m) + ", " + std::to_string(n));
  }
  const int k = m < n ? m : n;
  // Values of S and columns of U and V: k, or r < k under options.rank, or
  // m and n columns under options.full_matrices.
  const int r = int(Impl::output_rank(options, k));
  const int u_cols = options.full_matrices ? m : r, v_cols = options.full_matrices ? n : r;
  const std::string r_name = r < k ? "options.rank" : "min(m, n)";
  const bool left = U != nullptr, right = V != nullptr;
  auto require = [&](bool ok, const char* arg, const std::string& what) {
    if (!ok)
      Impl::throw_invalid_argument(fn, arg, what);
  };
  const long long mm = m > 1 ? m : 1, nn = n > 1 ? n : 1;
  require(lda >= mm, "lda",
          "must be at least max(1, m) = " + std::to_string(mm) + ", got " + std::to_string(lda));
  require(strideA >= (long long)lda * n, "strideA",
          "must be at least lda * n = " + std::to_string((long long)lda * n) +
              " (matrices must not overlap), got " + std::to_string(strideA));
  require(strideS >= r, "strideS",
          "must be at least " + r_name + " = " + std::to_string(r) + ", got " +
              std::to_string(strideS));
  const bool any = batch > 0 && k > 0;
  require(!any || (A != nullptr && S != nullptr && info != nullptr), "A, S, info",
          "must not be null for a non-empty batch");
  // The job the pointers name; options.job may name it too (the default
  // values_and_vectors takes whichever they name).
  const Job job = Impl::job_computing(left, right);
  if (options.job != Job::values_and_vectors)
    Impl::require_vector_pointers(fn, options.job, left, right, "U", "V");
  if (left) {
    require(ldu >= mm, "ldu",
            "must be at least max(1, m) = " + std::to_string(mm) + ", got " + std::to_string(ldu));
    require(strideU >= (long long)ldu * u_cols, "strideU",
            std::string("must be at least ldu * ") +
                (options.full_matrices ? "m (options.full_matrices)" : r_name) + " = " +
                std::to_string((long long)ldu * u_cols) + ", got " + std::to_string(strideU));
  }
  if (right) {
    require(ldv >= nn, "ldv",
            "must be at least max(1, n) = " + std::to_string(nn) + ", got " + std::to_string(ldv));
    require(strideV >= (long long)ldv * v_cols, "strideV",
            std::string("must be at least ldv * ") +
                (options.full_matrices ? "n (options.full_matrices)" : r_name) + " = " +
                std::to_string((long long)ldv * v_cols) + ", got " + std::to_string(strideV));
  }
  using Space = typename ExecSpace::memory_space;
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  using Matrices = Kokkos::View<Scalar***, Kokkos::LayoutStride, Space, Unmanaged>;
  using ConstMatrices = Kokkos::View<const Scalar***, Kokkos::LayoutStride, Space, Unmanaged>;
  using Values = Kokkos::View<Scalar**, Kokkos::LayoutStride, Space, Unmanaged>;
  using Infos = Kokkos::View<SvdInfo*, Space, Unmanaged>;
  const std::size_t b = std::size_t(batch);
  ConstMatrices Av(A, Kokkos::LayoutStride(b, std::size_t(strideA), std::size_t(m), 1,
                                           std::size_t(n), std::size_t(lda)));
  Values Sv(S, Kokkos::LayoutStride(b, std::size_t(strideS), std::size_t(r), 1));
  Infos Iv(info, b);
  options.job = job;
  BatchedSvd<ExecSpace, Scalar> svd(exec, batch, m, n, options);
  if (job == Job::values) {
    svd.compute(Av, Sv, Iv);
    return;
  }
  Matrices Uv, Vv;  // empty where not computed
  if (left)
    Uv = Matrices(U, Kokkos::LayoutStride(b, std::size_t(strideU), std::size_t(m), 1,
                                          std::size_t(u_cols), std::size_t(ldu)));
  if (right)
    Vv = Matrices(V, Kokkos::LayoutStride(b, std::size_t(strideV), std::size_t(n), 1,
                                          std::size_t(v_cols), std::size_t(ldv)));
  svd.compute(Av, Sv, Uv, Vv, Iv);
}

}  // namespace kwsvd
