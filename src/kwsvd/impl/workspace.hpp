#pragma once
// The device buffers a handle's planning makes (workspace, plans, task
// lists), made through one allocator that also counts their bytes: what the
// handles' workspace_bytes() report, and, in its counting mode, what their
// planned_workspace_bytes() queries report without allocating anything (as
// cuSOLVER's *_bufferSize calls do), so that a caller can size a batch to
// the memory it has before it commits any. A buffer that cannot be
// allocated is reported as kwsvd::out_of_memory, naming the buffer, its size
// and the caller's entry point.
//
// Plans that run one after another (the rounds of a variable batch under
// SvdOptions::max_workspace_bytes) share their per-call state: the buffers a
// plan makes with zeros() are then carved from one arena, which the owner
// clears before each plan's run, while its uploads (task lists, geometry)
// stay its own.

#include <cstddef>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>

#include "kwsvd/api/errors.hpp"

namespace kwsvd::Impl {

template <class MemorySpace>
class WorkspaceAllocator {
 public:
  template <class T>
  using Buffer = Kokkos::View<T*, MemorySpace>;

  /// `allocate` false: every buffer is only counted and comes back empty
  /// (for size queries; such a plan must never run). `function` names the
  /// public entry point in an out-of-memory message.
  explicit WorkspaceAllocator(bool allocate = true, const char* function = "kwsvd")
      : allocate_(allocate), function_(function) {}

  /// An allocator whose zeros() carve their buffers from `arena` (shared by
  /// plans run one after another; see above). With `allocate` false the
  /// arena may be empty: the carved bytes are only counted.
  static WorkspaceAllocator sharing(const Buffer<unsigned char>& arena, bool allocate,
                                    const char* function) {
    WorkspaceAllocator alloc(allocate, function);
    alloc.shared_ = true;
    alloc.arena_ = arena;
    return alloc;
  }

  /// Alignment of the buffers carved from a shared arena (a multiple of
  /// every scalar's and of the GPUs' widest loads).
  static constexpr std::size_t arena_alignment = 128;

  bool allocates() const { return allocate_; }
  /// Bytes of every buffer allocated so far, each rounded up to 8 bytes as
  /// Kokkos rounds a View's allocation.
  std::size_t bytes() const { return bytes_; }
  /// Bytes carved from the shared arena so far (0 unless sharing).
  std::size_t arena_bytes() const { return arena_bytes_; }

  /// `count` zero-initialized elements: a plan's per-call state. An empty
  /// buffer is not allocated (a View with no data): it would hold only
  /// Kokkos's allocation header. When sharing an arena, carved from it and
  /// not initialized (the owner clears the arena before the plan runs).
  template <class T>
  Buffer<T> zeros(const std::string& label, std::size_t count) {
    if (shared_)
      return carved<T>(count);
    Buffer<T> d = uninitialized<T>(label, count);
    if (d.data() != nullptr)
      Kokkos::deep_copy(d, T());
    return d;
  }

  /// A device copy of a host vector (none for an empty one, as for zeros).
  template <class T>
  Buffer<T> upload(const std::vector<T>& host, const std::string& label) {
    Buffer<T> d = uninitialized<T>(label, host.size());
    if (d.data() == nullptr)
      return d;
    Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(
        host.data(), host.size());
    Kokkos::deep_copy(d, h);
    return d;
  }

 private:
  template <class T>
  Buffer<T> carved(std::size_t count) {
    const std::size_t offset = arena_bytes_;
    arena_bytes_ += (count * sizeof(T) + arena_alignment - 1) / arena_alignment * arena_alignment;
    if (!allocate_ || count == 0)
      return Buffer<T>();
    if (arena_bytes_ > arena_.extent(0))
      throw std::logic_error("kwsvd: a plan outgrew the shared workspace it was planned for");
    return Buffer<T>(reinterpret_cast<T*>(arena_.data() + offset), count);
  }

  template <class T>
  Buffer<T> uninitialized(const std::string& label, std::size_t count) {
    const std::size_t held = bytes_, bytes = (count * sizeof(T) + 7) / 8 * 8;
    bytes_ += bytes;
    if (!allocate_ || count == 0)
      return Buffer<T>();
    try {
      return Buffer<T>(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), count);
    } catch (const std::exception& e) {
      // Only the allocation is tried here (no kernel, no copy): Kokkos 3
      // reports its failure as a std::bad_alloc, Kokkos 4 as a
      // std::runtime_error.
      throw_out_of_memory(function_, label, bytes, held, MemorySpace::name(), e.what());
    }
  }

  bool allocate_ = true, shared_ = false;
  const char* function_ = "kwsvd";
  std::size_t bytes_ = 0, arena_bytes_ = 0;
  Buffer<unsigned char> arena_;
};

/// A device copy of a host vector (planning time: allocates).
template <class MemorySpace, class T>
Kokkos::View<T*, MemorySpace> copy_to_device(const std::vector<T>& host, const std::string& label) {
  WorkspaceAllocator<MemorySpace> alloc;
  return alloc.upload(host, label);
}

}  // namespace kwsvd::Impl
