#pragma once
// kwsvd::batched_gram: B(b) = A(b)^T A(b) for every matrix b of a batch.
//
// A building block of the Jacobi SVD (the Gram of a column-block pair) exposed
// so users can check the pipeline end to end and reuse it.

#include <string>
#include <type_traits>

#include "kwsvd/api/errors.hpp"
#include "kwsvd/kernels/gram_team.hpp"

namespace kwsvd {
namespace Impl {

// Like every kwsvd launch closure, it holds raw pointers and strides only
// (see BatchedSmallSvdFunctor): one closure type per scalar and space.
template <class ExecSpace, class Scalar>
struct BatchedGramFunctor {
  using Member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using ScratchVector = TeamScratch<ExecSpace, Scalar>;
  StridedMatrix<const Scalar> A;  // matrix 0; matrix b starts a_batch_stride later
  std::ptrdiff_t a_batch_stride;
  StridedMatrix<Scalar> B;
  std::ptrdiff_t b_batch_stride;
  int chunk_rows;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const int b = member.league_rank();
    // Carved exactly as plan_gram_team sized them (View::shmem_size).
    ScratchVector tile(member.team_scratch(0), std::size_t(chunk_rows) * A.cols);
    ScratchVector acc(member.team_scratch(0), std::size_t(triangle_size(A.cols)));
    StridedMatrix<const Scalar> a = A;
    StridedMatrix<Scalar> g = B;
    a.data += b * a_batch_stride;
    g.data += b * b_batch_stride;
    gram_team(member, a, g, chunk_rows, tile.data(), acc.data());
  }
};

/// Launches one team per matrix with the given plan (checked by the caller).
template <class ExecSpace, class AView, class BView>
void launch_batched_gram(const ExecSpace& exec, const AView& A, const BView& B,
                         const GramTeamPlan& plan) {
  // Vector lanes reduce over the rows of a chunk: at most a warp, no more
  // lanes than the chunk has rows, no more than the backend supports.
  int vector = 1;
  while (vector < 32 && vector * 2 <= vector_length_max<ExecSpace>() &&
         vector * 2 <= plan.chunk_rows) {
    vector *= 2;
  }
  using Scalar = typename BView::non_const_value_type;
  using Functor = BatchedGramFunctor<ExecSpace, Scalar>;
  Kokkos::TeamPolicy<ExecSpace> policy(exec, int(A.extent(0)), Kokkos::AUTO, vector);
  policy.set_scratch_size(0, Kokkos::PerTeam(static_cast<int>(plan.scratch_bytes)));
  Kokkos::parallel_for(
      "kwsvd::batched_gram", policy,
      Functor{matrix_of<const Scalar>(A, 0), std::ptrdiff_t(A.stride(0)), matrix_of<Scalar>(B, 0),
              std::ptrdiff_t(B.stride(0)), plan.chunk_rows});
}

}  // namespace Impl

/// Largest n for which batched_gram<Scalar> runs on ExecSpace, given the
/// run-time level-0 scratch limit.
template <class Scalar, class ExecSpace = Kokkos::DefaultExecutionSpace>
int batched_gram_max_cols() {
  const std::size_t limit = Impl::team_scratch_bytes_max<ExecSpace>();
  int n = 0;
  while (Impl::plan_gram_team<ExecSpace, Scalar>(1, n + 1, limit).fits)
    ++n;
  return n;
}

/// Computes B(b, :, :) = A(b, :, :)^T A(b, :, :) for b = 0 .. batch-1, one team
/// per matrix, on `exec`.
///
/// A: rank-3 View (batch, m, n) of float or double, any layout, in a memory
/// space `exec` can access. B: rank-3 View (batch, n, n), same scalar type,
/// not sharing storage with A.
/// Both triangles of B are written. Non-finite entries in one matrix make
/// only that matrix's B non-finite. Asynchronous with respect to the host.
///
/// Throws kwsvd::invalid_argument if the extents disagree or n exceeds
/// batched_gram_max_cols<Scalar, ExecSpace>().
template <class ExecSpace, class AView, class BView>
void batched_gram(const ExecSpace& exec, const AView& A, const BView& B) {
  static_assert(Kokkos::is_view<AView>::value && Kokkos::is_view<BView>::value,
                "kwsvd::batched_gram: A and B must be Kokkos::Views");
  static_assert(AView::rank == 3 && BView::rank == 3,
                "kwsvd::batched_gram: A must be rank 3 (batch, m, n) and B rank 3 (batch, n, n)");
  using Scalar = typename BView::non_const_value_type;
  static_assert(std::is_same<typename AView::non_const_value_type, Scalar>::value,
                "kwsvd::batched_gram: A and B must have the same scalar type");
  static_assert(std::is_same<typename BView::value_type, Scalar>::value,
                "kwsvd::batched_gram: B must not be const");
  static_assert(std::is_floating_point<Scalar>::value,
                "kwsvd::batched_gram: the scalar type must be float or double");
  static_assert(
      Kokkos::SpaceAccessibility<ExecSpace, typename AView::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<ExecSpace, typename BView::memory_space>::accessible,
      "kwsvd::batched_gram: A and B must be in a memory space the execution space can access");

  constexpr const char* fn = "kwsvd::batched_gram";
  const std::size_t batch = A.extent(0), m = A.extent(1), n = A.extent(2);
  Impl::require_extents(fn, "B", {B.extent(0), B.extent(1), B.extent(2)}, {batch, n, n},
                        "(batch, n, n) with batch and n taken from A");
  if (batch > std::size_t(1) << 30 || m > std::size_t(1) << 30 || n > std::size_t(1) << 15) {
    Impl::throw_invalid_argument(fn, "A",
                                 "is too large: extents " + Impl::format_extents({batch, m, n}));
  }
  Impl::require_disjoint_storage(fn, {{"A", Impl::batch_storage_runs(A)}},
                                 {{"B", Impl::batch_storage_runs(B)}});
  if (batch == 0 || n == 0)
    return;

  const std::size_t limit = Impl::team_scratch_bytes_max<ExecSpace>();
  const auto plan = Impl::plan_gram_team<ExecSpace, Scalar>(int(m), int(n), limit);
  if (!plan.fits) {
    Impl::throw_invalid_argument(fn, "A",
                                 "has n = " + std::to_string(n) + " columns; at most " +
                                     std::to_string(batched_gram_max_cols<Scalar, ExecSpace>()) +
                                     " fit in the " + std::to_string(limit) +
                                     " bytes of team scratch of " + ExecSpace::name());
  }

  Impl::launch_batched_gram(exec, A, B, plan);
}

/// batched_gram on a default instance of the Views' execution space.
template <class AView, class BView>
void batched_gram(const AView& A, const BView& B) {
  batched_gram(typename BView::execution_space(), A, B);
}

}  // namespace kwsvd
