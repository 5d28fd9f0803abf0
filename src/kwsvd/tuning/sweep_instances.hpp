#pragma once
// On how many execution-space instances (streams) the W-cycle sweeps a
// batch when SvdOptions::instances is 0. Two parts overlap one part's
// memory-bound updates with the other's Gram EVDs and fill each other's
// partial waves, but double the host's launches per step: a batch whose
// steps are short is bound by those launches, and loses.
//
// Fitted to perf_svd_suite on an H200 (two instances against one, same
// binary; perf_tests/notes/wcycle.md), with W the sum of M N^2 over the
// working matrices (M >= N; a sweep's Gram, EVD and update work grows so).
// From W = 4.2e8 up two won everywhere: Table IV 128^2 x 200 -14% in double,
// -5% in float; 512^2 x 200 -7% / -10%; Fig. 8(b) 512^2 x 100 -14% / -15%,
// 512^2 x 10 -8% / -4%. Below 3.4e8 they lost up to 19% (Fig. 8(b) 64^2 x
// 100 +14% in double, 128^2 x 10 +12% / +19%; Table VI's groups up to 128
// +4% to +6% in double) and won at most 4.5% (Table IV 100^2 in double).

namespace kwsvd::Impl {

/// Most parts (SvdOptions::instances) a batch may be swept in.
constexpr int sweep_instances_max = 4;

/// Instances for a batch of working matrices with sum(M N^2) = `work`, on a
/// backend where `streams` (two instances run concurrently).
inline int sweep_instances(bool streams, double work) {
  return streams && work >= 3.5e8 ? 2 : 1;
}

}  // namespace kwsvd::Impl
