#include "kwsvd/tuning/tailoring_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "kwsvd/api/errors.hpp"

namespace kwsvd {

namespace {

// Calibrated on an NVIDIA H200 with `kwsvd-calibrate -p double` and `-p
// float` (one 4096 x 4096 matrix, register-tiled GEMMs; both give the
// middle of (65536, 131072]; perf_tests/results/
// 2026-11-21-nvidia-h200-tuning-*-threshold-mid.txt); the paper measured
// 306,149 on a V100.
constexpr double gpu_tlp_threshold = 92682;

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos)
    return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// A threshold a plan can reach: strtod also reads "inf" and "1e999".
bool usable_threshold(double t) {
  return std::isfinite(t) && t > 0;
}

// The batch's largest rows and columns. The W-cycle's plans below the
// threshold (choose_wcycle_plan's fallback, wcycle_few_blocks_width) take
// its fewer blocks only for nearly square batches.
struct BatchExtent {
  int max_rows = 0, max_cols = 0;

  bool nearly_square() const { return max_rows < wcycle_fallback_widest_max_aspect * max_cols; }
};

BatchExtent batch_extent(const std::vector<MatrixShape>& shapes) {
  BatchExtent e;
  for (const auto& s : shapes) {
    e.max_cols = std::max(e.max_cols, s.cols);
    e.max_rows = std::max(e.max_rows, s.rows);
  }
  return e;
}

}  // namespace

double tailoring_tlp(const TailoringPlan& plan, const std::vector<MatrixShape>& shapes) {
  if (plan.w <= 0 || plan.delta <= 0)
    return 0;
  double sum = 0;
  for (const auto& s : shapes)
    sum += double(s.cols) * double(s.rows);
  // eq. (8)'s 2w: eq. (10) prints w, but the paper's worked example (f1 =
  // 68,267 and 409,600 for 100 matrices of 256 x 256) uses 2w.
  return sum / (2.0 * plan.w * double(plan.delta)) * double(plan.team_threads);
}

double tailoring_ai_gram(const TailoringPlan& plan, int load_width) {
  return double(load_width) * 2.0 * plan.w;
}

double tailoring_ai_update(const TailoringPlan& plan, int load_width) {
  const double w2 = 2.0 * plan.w;
  return double(load_width) * w2 * plan.delta / (w2 + plan.delta);
}

std::vector<TailoringPlan> tailoring_candidates(int max_rows, int w_max, int row_align) {
  if (row_align < 1) {
    Impl::throw_invalid_argument("kwsvd::tailoring_candidates", "row_align",
                                 "must be at least 1, got " + std::to_string(row_align));
  }
  std::vector<TailoringPlan> out;
  if (max_rows <= 0 || w_max < 8)
    return out;
  int w_top = 0;
  for (int w : {48, 32, 24})
    if (w <= w_max) {
      w_top = w;
      break;
    }
  const int m = max_rows;
  // A plate of fewer rows than m* starts on multiples of its height, so an
  // aligned height keeps every plate's first row aligned (build_plate_layout
  // lets the rows it leaves over join the task's last plate).
  auto delta = [&](int div) {
    const int least = std::min(8, m), d = m / div;
    return std::max(least, div == 1 ? d : d / row_align * row_align);
  };
  const TailoringPlan table[] = {{w_top, delta(1), 256}, {24, delta(1), 256}, {24, delta(2), 256},
                                 {16, delta(2), 256},    {16, delta(4), 256}, {16, delta(8), 256},
                                 {8, delta(4), 128},     {8, delta(8), 128}};
  for (const auto& p : table) {
    if (p.w <= 0 || p.w > w_max)
      continue;
    if (std::find(out.begin(), out.end(), p) == out.end())
      out.push_back(p);
  }
  return out;
}

TailoringPlan choose_tailoring_plan(const std::vector<TailoringPlan>& candidates,
                                    const std::vector<MatrixShape>& shapes, double tlp_threshold) {
  if (candidates.empty()) {
    Impl::throw_invalid_argument("kwsvd::choose_tailoring_plan", "candidates",
                                 "is empty: no block width fits this device's scratch");
  }
  for (const auto& p : candidates)
    if (tailoring_tlp(p, shapes) >= tlp_threshold)
      return p;
  return candidates.back();
}

TailoringPlan choose_wcycle_plan(const std::vector<TailoringPlan>& candidates,
                                 const std::vector<MatrixShape>& shapes, double tlp_threshold,
                                 int fallback_widest_max_blocks) {
  const TailoringPlan engine = choose_tailoring_plan(candidates, shapes, tlp_threshold);
  const TailoringPlan& widest = candidates.front();
  const BatchExtent extent = batch_extent(shapes);
  const int max_cols = extent.max_cols;
  const int widest_blocks = (max_cols + widest.w - 1) / widest.w;
  if (tailoring_tlp(engine, shapes) >= tlp_threshold) {
    if (widest.w <= engine.w ||
        tailoring_tlp(widest, shapes) < wcycle_widest_tlp_share * tlp_threshold)
      return engine;
    return widest_blocks <= wcycle_widest_max_blocks ? widest : engine;
  }
  // Nearly square matrices take the fewest blocks of an even count that the
  // widest candidate's width allows, where that is at most
  // fallback_widest_max_blocks (the header says why), each as narrow as
  // that count allows.
  const int blocks = widest_blocks + widest_blocks % 2;
  if (blocks >= 2 && blocks <= fallback_widest_max_blocks && extent.nearly_square()) {
    TailoringPlan p = widest;
    const int w = (max_cols + blocks - 1) / blocks;
    p.w = w + w % 2;
    if ((max_cols + p.w - 1) / p.w == blocks)
      return p;
  }
  for (auto p = candidates.rbegin(); p != candidates.rend(); ++p)
    if (p->w >= wcycle_fallback_min_w)
      return *p;
  return engine;
}

int wcycle_few_blocks_width(const std::vector<TailoringPlan>& candidates,
                            const std::vector<MatrixShape>& shapes, double tlp_threshold,
                            int widest_evd_w, int scalar_bytes) {
  // The rule's bounds (the header says where they come from).
  constexpr double tlp_share = 2.0;
  constexpr int first_count = 6, last_count = 8;
  const int max_w = std::min(widest_evd_w, scalar_bytes > 4 ? 20 : 24);
  // Small: even the most parallel candidate is below tlp_share thresholds.
  double most_tlp = 0;
  for (const auto& p : candidates)
    most_tlp = std::max(most_tlp, tailoring_tlp(p, shapes));
  if (candidates.empty() || !(most_tlp < tlp_share * tlp_threshold))
    return 0;
  const BatchExtent extent = batch_extent(shapes);
  const int max_cols = extent.max_cols;
  // Not where the widest candidate's four blocks could serve (choose_wcycle_
  // plan's rule below the threshold; float 128 x 128 x 20, above it, lost
  // 19% in 6 blocks of 22 against the engine's w = 16).
  const int widest = candidates.front().w;
  if (!extent.nearly_square() || max_cols <= (first_count - 2) * widest)
    return 0;
  for (int count = first_count; count <= last_count; count += 2) {
    int w = (max_cols + count - 1) / count;
    w += w % 2;
    if (w >= wcycle_fallback_min_w && w <= max_w && (max_cols + w - 1) / w == count)
      return w;
  }
  return 0;
}

TuningParameters default_tuning_parameters(bool gpu) {
  if (gpu)
    return {gpu_tlp_threshold, "NVIDIA H200", "built-in default (calibrated on an NVIDIA H200)"};
  return {1, "host", "built-in default for host backends"};
}

TuningParameters read_tuning_file(const std::string& path) {
  constexpr const char* fn = "kwsvd::read_tuning_file";
  std::ifstream in(path);
  if (!in)
    Impl::throw_invalid_argument(fn, "path", "'" + path + "' cannot be opened");
  TuningParameters p;
  p.source = path;
  bool have_threshold = false;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const auto hash = line.find('#');
    if (hash != std::string::npos)
      line.resize(hash);
    line = trim(line);
    if (line.empty())
      continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) {
      Impl::throw_invalid_argument(fn, "path",
                                   "'" + path + "' line " + std::to_string(number) +
                                       ": expected 'key = value', got '" + line + "'");
    }
    const std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (key == "tlp_threshold") {
      char* end = nullptr;
      p.tlp_threshold = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !usable_threshold(p.tlp_threshold)) {
        Impl::throw_invalid_argument(fn, "path",
                                     "'" + path + "' line " + std::to_string(number) +
                                         ": tlp_threshold must be a positive finite number, got '" +
                                         value + "'");
      }
      have_threshold = true;
    } else if (key == "device") {
      p.device = value;
    }  // other keys: informational (the calibration's measurements)
  }
  if (!have_threshold)
    Impl::throw_invalid_argument(fn, "path", "'" + path + "' has no tlp_threshold line");
  return p;
}

std::string tuning_device_name_problem(const std::string& device) {
  if (device.find_first_of("#\r\n") == std::string::npos)
    return "";
  return "must not hold '#' or a line break, got '" + device + "'";
}

void write_tuning_file(const std::string& path, const TuningParameters& parameters,
                       const std::string& comment) {
  constexpr const char* fn = "kwsvd::write_tuning_file";
  // Refused before the file is touched: read_tuning_file would reject the
  // threshold, and would cut the device name at a '#' or a line break.
  if (!usable_threshold(parameters.tlp_threshold)) {
    std::ostringstream got;
    got << parameters.tlp_threshold;
    Impl::throw_invalid_argument(fn, "parameters.tlp_threshold",
                                 "must be a positive finite number, got " + got.str());
  }
  if (const std::string problem = tuning_device_name_problem(parameters.device); !problem.empty())
    Impl::throw_invalid_argument(fn, "parameters.device", problem);
  std::ofstream out(path);
  std::istringstream lines(comment);
  std::string line;
  while (std::getline(lines, line))
    out << "# " << line << "\n";
  out << "device = " << parameters.device << "\n";
  // All the digits a double needs, so that the file reads back exactly.
  out.precision(std::numeric_limits<double>::max_digits10);
  out << "tlp_threshold = " << parameters.tlp_threshold << "\n";
  if (!out)
    Impl::throw_invalid_argument(fn, "path", "'" + path + "' cannot be written");
}

TuningParameters active_tuning_parameters(bool gpu) {
  const char* file = std::getenv("KWSVD_TUNING_FILE");
  if (file != nullptr && *file != '\0')
    return read_tuning_file(file);
  return default_tuning_parameters(gpu);
}

}  // namespace kwsvd
