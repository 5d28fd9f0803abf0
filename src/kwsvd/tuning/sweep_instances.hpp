#pragma once
// On how many execution-space instances (streams) the W-cycle sweeps a
// batch when SvdOptions::instances is 0. Several parts overlap one part's
// memory-bound updates with another's Gram EVDs and fill each other's
// partial waves, but multiply the host's launches per step: a batch whose
// steps are short is bound by those launches, and loses.
//
// Fitted to perf_svd_suite on an H200 and an H100 (same binary,
// --instances=1..4; perf_tests/notes/wcycle.md), with W the sum of M N^2
// over the working matrices swept in blocks (M >= N; a sweep's Gram, EVD
// and update work grows so) and `matrices` their count.
//
// Two against one (H200, the kernels of its first fit, 2026-11-22; the
// H100 figures below are of 2026-12-07's kernels): from W = 4.2e8 up two
// won everywhere (Table IV 128^2 x 200 -14% in double, -5% in float; Fig.
// 8(b) 512^2 x 100 -14% / -15%); below 3.4e8 they lost up to 19% (Fig.
// 8(b) 64^2 x 100 +14% in double, 128^2 x 10 +12% / +19%).
//
// Four (double) and three (float) against two, where two are taken: double
// gained at every batch of 20 or more (200^2 x 200 -5.3%, 1000^2 x 20 -5.4%,
// 384^2 x 100 -3.9%, 128^2 x 200 -3.1%; batch 1000 within 0.3%) and at
// batch 10 only once the matrices are large (1024^2 x 10 -6.7%; 512^2 x 10
// -0.0%). Float's steps are half as long, so its extra parts' launches
// cost more: three gained from W = 1.6e9 at 20 matrices or more (200^2 x
// 200 -4.7%, 384^2 x 100 -4.7%, 256^2 x 200 -4.4%, 1000^2 x 20 -2.2%) and
// lost below (128^2 x 200 +2.2%) and at batch 10 (512^2 x 10 +3.9%).
// Checked on an H100 against two parts, best of two rounds: -0.2% to -6.5%
// wherever it takes three or four, five new shapes included (double 160^2
// x 200 -5.3%, float 2000 x 200 x 100 -6.9%), within 0.5% where it keeps
// two.
//
// Below W = 3.5e8 (H100, 2026-12-07's kernels, 1 / 2 / 4 parts, best of two
// rounds): double batches of 20 or more gain from two parts from W = 1.5e8
// (100^2 x 200 -6.7%, 96^2 x 300 -6.5%, 256^2 x 20 -6.4%, 240^2 x 20
// -6.2%, 400 x 100 x 40 -3.6%; the worst +1.5% at 128^2 x 80) and lose
// below it (300 x 100 x 30 +1.3%, 256 x 64 x 100 +1.1%); four parts need
// about 1e8 of W a part (4 against 2: 200^2 x 25 +9%, 256^2 x 20 +3%,
// 128^2 x 200 at 4.2e8 -3.7%). Float there is no rule of W: two parts gain
// at 100^2 x 200 and 112^2 x 200 (-6.7%, -8.7%) and lose at most shapes
// around them (96^2 x 200 +4.5%, 128^2 x 100 +3.7%, 160^2 x 50 +5.2%), so
// float keeps one.

namespace kwsvd::Impl {

/// Most parts (SvdOptions::instances) a batch may be swept in.
constexpr int sweep_instances_max = 4;

/// Instances for `matrices` working matrices swept in blocks with
/// sum(M N^2) = `work`, in single or double precision, on a backend where
/// `streams` (instances run concurrently).
inline int sweep_instances(bool streams, double work, int matrices, bool single_precision) {
  if (!streams)
    return 1;
  if (single_precision)
    return work < 3.5e8 ? 1 : matrices >= 20 && work >= 1.5e9 ? 3 : 2;
  if (matrices >= 20)
    return work >= 4e8 ? 4 : work >= 1.5e8 ? 2 : 1;
  return work >= 5e9 ? 4 : work >= 3.5e8 ? 2 : 1;
}

}  // namespace kwsvd::Impl
