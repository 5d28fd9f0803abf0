#pragma once
// Planning with the GPU's TLP threshold on any backend: a host backend's
// threshold is 1, so that its batches never take the plans a GPU takes for
// batches below the threshold (choose_wcycle_plan's fallback). The engine
// reads the threshold from the tuning file that KWSVD_TUNING_FILE names
// (active_tuning_parameters), so a scope writes the GPU's built-in
// parameters to a file of this process's (binaries run at once, ctest -j,
// neither share nor remove each other's) and points the variable at it.

#include <cstdio>
#include <cstdlib>
#include <string>

#include <unistd.h>

#include <gtest/gtest.h>

#include "kwsvd/tuning/tailoring_plan.hpp"

namespace kwsvd::test {

/// While it lives, the engine plans with the GPU's built-in TLP threshold;
/// at its end KWSVD_TUNING_FILE is what it was and the file is gone.
class GpuThresholdScope {
 public:
  /// `tag` names the file within the process (scopes may nest).
  explicit GpuThresholdScope(const std::string& tag)
      : path_(::testing::TempDir() + "kwsvd_gpu_threshold_" + tag + "_" +
              std::to_string(::getpid()) + ".txt") {
    const char* before = std::getenv("KWSVD_TUNING_FILE");
    had_before_ = before != nullptr;
    if (had_before_)
      before_ = before;
    kwsvd::write_tuning_file(path_, kwsvd::default_tuning_parameters(true),
                             "unit tests: the GPU's threshold on any backend");
    ::setenv("KWSVD_TUNING_FILE", path_.c_str(), 1);
  }
  ~GpuThresholdScope() {
    if (had_before_)
      ::setenv("KWSVD_TUNING_FILE", before_.c_str(), 1);
    else
      ::unsetenv("KWSVD_TUNING_FILE");
    std::remove(path_.c_str());
  }
  GpuThresholdScope(const GpuThresholdScope&) = delete;
  GpuThresholdScope& operator=(const GpuThresholdScope&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_, before_;
  bool had_before_ = false;
};

}  // namespace kwsvd::test
