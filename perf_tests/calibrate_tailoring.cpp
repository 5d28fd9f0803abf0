// kwsvd-calibrate: measures the TLP threshold of the tailoring auto-tuning
// engine on this device (W-cycle paper §IV-D-3, the inflection-point method)
// and writes the tuning file the library reads (KWSVD_TUNING_FILE).
//
// It times the GEMMs of one sweep of a huge matrix (Gram and fused update of
// every column-block pair) under every candidate plan of Table II, orders the
// plans by their TLP (eq. 8) and picks the first plan after which no plan
// with more parallelism is more than --gain faster: its TLP is the threshold.

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "kwsvd/kwsvd.hpp"
#include "tailoring_sweep.hpp"

namespace {

struct Row {
  kwsvd::TailoringPlan plan;
  double tlp = 0, seconds = 0;
};

template <class T>
std::vector<Row> measure(int n, int batch, int reps) {
  using Exec = Kokkos::DefaultExecutionSpace;
  const int w_max = kwsvd::Impl::widest_evd_block<Exec, T>();
  const std::vector<kwsvd::MatrixShape> shapes(std::size_t(batch), {n, n});
  std::vector<Row> rows;
  for (const auto& plan : kwsvd::tailoring_candidates(n, w_max)) {
    kwsvd::bench::SweepGemms<T> sweep(batch, n, plan);
    rows.push_back(
        {plan, kwsvd::tailoring_tlp(plan, shapes), kwsvd::bench::time_sweep(sweep, reps)});
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.tlp < b.tlp; });
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kwsvd-calibrate: measure the tailoring TLP threshold and write a tuning file"};
  int n = 4096, batch = 1, reps = 5;
  double gain = 0.10;
  std::string precision = "double", output = "kwsvd-tuning.txt", device = "unnamed device";
  app.add_option("-n,--size", n, "order of the square test matrices")->check(CLI::Range(64, 65536));
  app.add_option("-b,--batch", batch, "number of test matrices")->check(CLI::Range(1, 100000));
  app.add_option("-r,--reps", reps, "timed sweeps per plan (median)")->check(CLI::Range(1, 1000));
  app.add_option("-g,--gain", gain, "improvement that still counts as significant")
      ->check(CLI::Range(0.0, 10.0));
  app.add_option("-p,--precision", precision, "double or float")
      ->check(CLI::IsMember({"double", "float"}));
  app.add_option("-o,--output", output, "tuning file to write");
  // Checked here, not after minutes of measuring, by write_tuning_file's rule.
  app.add_option("-d,--device", device, "device name recorded in the file")
      ->check(kwsvd::tuning_device_name_problem, "no '#' or line break");
  CLI11_PARSE(app, argc, argv);

  Kokkos::ScopeGuard guard(argc, argv);
  const auto rows =
      precision == "double" ? measure<double>(n, batch, reps) : measure<float>(n, batch, reps);
  // The inflection point: the first plan (by TLP) that no later plan beats
  // by more than `gain`.
  std::size_t pick = rows.size() - 1;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    double best_after = rows[k].seconds;
    for (std::size_t j = k; j < rows.size(); ++j)
      best_after = std::min(best_after, rows[j].seconds);
    if (rows[k].seconds <= (1 + gain) * best_after) {
      pick = k;
      break;
    }
  }
  std::ostringstream table;
  table << "kwsvd-calibrate: " << batch << " x " << n << "^2 " << precision << ", "
        << Kokkos::DefaultExecutionSpace::name() << "\n";
  table << "plan (w, delta, T): TLP, ms per sweep of GEMMs\n";
  for (std::size_t k = 0; k < rows.size(); ++k) {
    char line[160];
    std::snprintf(line, sizeof line, "(%d, %d, %d): %.0f, %.3f%s\n", rows[k].plan.w,
                  rows[k].plan.delta, rows[k].plan.team_threads, rows[k].tlp, rows[k].seconds * 1e3,
                  k == pick ? "  <- threshold" : "");
    table << line;
  }
  // Every threshold above the TLP of the plans before the pick (by TLP) and
  // up to the pick's own selects the same plan here; take the geometric
  // middle of that interval rather than its top. Batches of many mid-size
  // matrices fill the device at lower TLP than one huge matrix does, and
  // there the top rejected wider, faster plans (H200, float, 100 x 256^2:
  // w = 32 at TLP 102400 took 0.99 ms a sweep, the w = 24 plan chosen at
  // 131072 1.21 ms).
  double below = 0;
  for (std::size_t k = 0; k < pick; ++k)
    if (rows[k].tlp < rows[pick].tlp)
      below = std::max(below, rows[k].tlp);
  const double threshold =
      below > 0 ? std::ceil(std::sqrt(below * rows[pick].tlp)) : rows[pick].tlp;
  table << "threshold: " << threshold;
  if (below > 0)
    table << " (between " << below << " and " << rows[pick].tlp << ")\n";
  else
    table << " (the picked plan's TLP: no plan has less)\n";
  std::cout << table.str();
  kwsvd::TuningParameters p{threshold, device, output};
  try {
    kwsvd::write_tuning_file(output, p, table.str());
  } catch (const kwsvd::invalid_argument& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  std::cout << "wrote " << output << " (tlp_threshold = " << p.tlp_threshold << ")\n";
  return 0;
}
