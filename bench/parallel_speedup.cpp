// Parallel slots: wall time and search quality at the same trial budget,
// N = 1 against N = 4, on the synthetic workload with trials that sleep to
// stand in for a real measurement.
//
//   build/bench/bench_parallel_speedup [strategy] [trial_seconds] [budget] [seeds]
//   defaults:                          bo         0.25            40       5
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "bench/bench_util.hpp"
#include "search/strategy.hpp"
#include "tuner/run/tune.hpp"
#include "bench/landscapes.hpp"
#include "workloads/synthetic.hpp"
#include "workloads/workloads.hpp"

using namespace autotune;

int main(int argc, char** argv) {
  const std::string strategy = argc > 1 ? argv[1] : (find_strategy("bo") ? "bo" : "random");
  const double trial_s = argc > 2 ? std::stod(argv[2]) : 0.25;
  const int budget = argc > 3 ? std::stoi(argv[3]) : 40;
  const int seeds = argc > 4 ? std::stoi(argv[4]) : 5;
  std::printf("machine: %s, %u hardware threads\n", bench::cpu_model().c_str(), std::thread::hardware_concurrency());
  std::printf("strategy %s, budget %d trials, %.2f s per trial (sleep), %d seeds, profile balanced, noise 0.03\n\n",
              strategy.c_str(), budget, trial_s, seeds);

  auto info = synthetic_workload_info();
  auto workload = info.make(Options::with_defaults(info.options, {{"trial_seconds", OptionValue{trial_s}}}), {});
  const SearchSpace space = bench::pipeline_space();
  const double optimum = bench::exhaustive_optimum(*workload, space);
  const auto dir = std::filesystem::temp_directory_path() / ("autotune_bench_parallel_" + std::to_string(::getpid()));
  std::printf("%-8s %12s %12s %14s %14s\n", "slots", "wall_s", "speedup", "quality", "median");
  double wall1 = 0, q1 = 0, wall4 = 0, q4 = 0, m1 = 0, m4 = 0;
  for (int slots : {1, 4}) {
    double wall = 0, quality = 0;
    std::vector<double> qs;
    for (int s = 0; s < seeds; ++s) {
      Spec spec = bench::synthetic_spec(space, strategy, budget, static_cast<std::uint64_t>(s),
                                        dir / fmt::format("j{}_{}.jsonl", slots, s));
      spec.search.parallel = slots;
      const auto t0 = std::chrono::steady_clock::now();
      Study r = run_tuning(
          spec, [&](const Assignment& a, const TrialContext& ctx) { return workload->measure(a, ctx); }, {});
      wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double q = r.best ? workload->expected(space.to_assignment(*r.best))->throughput / optimum : 0.0;
      quality += q;
      qs.push_back(q);
    }
    wall /= seeds;
    quality /= seeds;
    const double median = bench::quantile(qs, 0.5);
    if (slots == 1) wall1 = wall, q1 = quality, m1 = median;
    else wall4 = wall, q4 = quality, m4 = median;
    std::printf("%-8d %12.2f %11.2fx %14.4f %14.4f\n", slots, wall, wall1 / wall, quality, median);
  }
  std::printf("\nquality: true throughput of the recommended configuration / exhaustive optimum, mean (and median) over seeds\n");
  std::printf("N=4 against N=1: %.2fx faster, quality %+.2f%% (median %+.2f%%)\n", wall1 / wall4, 100.0 * (q4 - q1) / q1,
              100.0 * (m4 - m1) / m1);
  std::filesystem::remove_all(dir);
  return 0;
}
