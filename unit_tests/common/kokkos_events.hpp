#pragma once
// What a call asks of Kokkos, recorded through Kokkos Tools' in-process
// callbacks (Kokkos::Tools::Experimental, Kokkos 3.4 and 4.x): the memory it
// allocates, the deep copies it makes and the fences it waits on. The
// handles promise that a reused compute() allocates nothing and that a sweep
// reads back at most one small value (issue 6: "at most one small
// device-to-host read per sweep"; "a reusable workspace/handle so repeated
// calls do not allocate"). Kokkos 3.4's host backends report no fences.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>

namespace kwsvd::test {

/// The allocations and deep copies made while a KokkosEventRecorder lived.
struct KokkosEvents {
  struct Copy {
    std::string dst_space, dst_label, src_space;
    std::uint64_t bytes;
    bool into_host(const std::string& except) const {
      return dst_space == "Host" && (except.empty() || dst_label != except);
    }
  };
  struct Allocation {
    std::string label, space;
    std::uint64_t bytes;
  };
  std::vector<Allocation> allocations;  // bytes > 0
  std::vector<Copy> copies;
  std::vector<std::string> fences;  // their names

  /// Bytes allocated in memory space `space` (its name()) under labels that
  /// start with `prefix`.
  std::uint64_t bytes_allocated(const std::string& space, const std::string& prefix) const {
    std::uint64_t sum = 0;
    for (const auto& a : allocations)
      if (a.space == space && a.label.compare(0, prefix.size(), prefix) == 0)
        sum += a.bytes;
    return sum;
  }
  /// Copies into host memory from memory that is not the host's.
  int device_to_host_copies() const {
    return int(std::count_if(copies.begin(), copies.end(), [](const Copy& c) {
      return c.into_host({}) && c.src_space != "Host";
    }));
  }
  /// Copies into host memory from anywhere, but for those into the View
  /// labelled `except`. On host backends a handle's host mirror is its View,
  /// so what a GPU reads back is a copy within host memory there.
  int copies_into_host(const std::string& except = {}) const {
    return int(std::count_if(copies.begin(), copies.end(),
                             [&](const Copy& c) { return c.into_host(except); }));
  }
  /// Copies into the View labelled `label`, from anywhere.
  int copies_into(const std::string& label) const {
    return int(std::count_if(copies.begin(), copies.end(),
                             [&](const Copy& c) { return c.dst_label == label; }));
  }
  std::uint64_t largest_copy_into_host(const std::string& except = {}) const {
    std::uint64_t most = 0;
    for (const auto& c : copies)
      if (c.into_host(except) && c.bytes > most)
        most = c.bytes;
    return most;
  }
  static std::string list(const std::vector<std::string>& items) {
    std::string s;
    for (const auto& a : items)
      s.append(s.empty() ? "" : "; ").append(a);
    return s;
  }
  /// "label (space, bytes); ..." for a message.
  std::string allocation_list() const {
    std::vector<std::string> items;
    for (const auto& a : allocations)
      items.push_back(a.label + " (" + a.space + ", " + std::to_string(a.bytes) + " bytes)");
    return list(items);
  }
  std::string fence_list() const { return list(fences); }
};

/// Records into `events` from construction to destruction (one recorder at a
/// time; the callbacks are process-wide). Fences before it starts and before
/// it stops so that only the work between them is seen.
class KokkosEventRecorder {
 public:
  explicit KokkosEventRecorder(KokkosEvents& events) {
    Kokkos::fence();
    current() = &events;
    Kokkos::Tools::Experimental::set_allocate_data_callback(&on_allocate);
    Kokkos::Tools::Experimental::set_begin_deep_copy_callback(&on_deep_copy);
    Kokkos::Tools::Experimental::set_begin_fence_callback(&on_fence);
  }
  ~KokkosEventRecorder() {
    Kokkos::Tools::Experimental::set_begin_fence_callback(nullptr);  // not the fence below
    Kokkos::fence();
    Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
    Kokkos::Tools::Experimental::set_begin_deep_copy_callback(nullptr);
    current() = nullptr;
  }
  KokkosEventRecorder(const KokkosEventRecorder&) = delete;
  KokkosEventRecorder& operator=(const KokkosEventRecorder&) = delete;

 private:
  static KokkosEvents*& current() {
    static KokkosEvents* events = nullptr;
    return events;
  }
  static std::string space_name(const Kokkos::Tools::SpaceHandle& h) {
    return std::string(h.name, strnlen(h.name, sizeof(h.name)));
  }
  // Zero-byte allocations are left out: Kokkos 4's CUDA backend reports one
  // ("Kokkos::CudaSpace::TeamScratchMemory", 0 bytes) at every team launch
  // that asks for no level-1 scratch, and allocates no memory for it.
  static void on_allocate(const Kokkos::Tools::SpaceHandle space, const char* label, const void*,
                          const std::uint64_t bytes) {
    if (current() == nullptr || bytes == 0)
      return;
    current()->allocations.push_back({label, space_name(space), bytes});
  }
  static void on_deep_copy(Kokkos::Tools::SpaceHandle dst, const char* dst_label, const void*,
                           Kokkos::Tools::SpaceHandle src, const char*, const void*,
                           std::uint64_t bytes) {
    if (current() != nullptr)
      current()->copies.push_back({space_name(dst), dst_label, space_name(src), bytes});
  }
  static void on_fence(const char* name, const std::uint32_t, std::uint64_t* handle) {
    *handle = 0;
    if (current() != nullptr)
      current()->fences.push_back(name);
  }
};

}  // namespace kwsvd::test
