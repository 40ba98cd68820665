// search.confirm: does re-measuring the best few pick a truly faster
// configuration than trusting the best single run? On the synthetic
// workload, whose noise-free value of every configuration is known, over
// many seeds, three ways to spend a run:
//   plain      budget B trials, confirm 0
//   confirm    budget B - K trials, confirm K (the same number of measurements)
//   extra      budget B trials, confirm K (K more measurements)
// Reported: the true throughput of the answer over the exhaustive optimum
// (mean, 10th percentile, share of runs under 0.95), and how far the answer's
// reported throughput overstates its true value (the winner's curse).
//
//   build/bench/bench_confirm_value [strategy] [noise] [budget] [confirm] [seeds]
//   defaults:                       bo         0.05    30       3         30
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "bench/bench_util.hpp"
#include "bench/landscapes.hpp"
#include "tuner/run/tune.hpp"
#include "workloads/synthetic.hpp"
#include "workloads/workloads.hpp"

using namespace autotune;

int main(int argc, char** argv) {
  const std::string strategy = argc > 1 ? argv[1] : "bo";
  const double noise = argc > 2 ? std::stod(argv[2]) : 0.05;
  const int budget = argc > 3 ? std::stoi(argv[3]) : 30;
  const int confirm = argc > 4 ? std::stoi(argv[4]) : 3;
  const int seeds = argc > 5 ? std::stoi(argv[5]) : 30;
  std::printf("machine: %s, %u hardware threads\n", bench::cpu_model().c_str(), std::thread::hardware_concurrency());
  std::printf("strategy %s, synthetic profile balanced, noise %.3f, budget %d, confirm %d, %d seeds\n\n",
              strategy.c_str(), noise, budget, confirm, seeds);

  auto info = synthetic_workload_info();
  auto workload = info.make(Options::with_defaults(info.options, {{"noise", OptionValue{noise}}}), {});
  const SearchSpace space = bench::pipeline_space();
  const double optimum = bench::exhaustive_optimum(*workload, space);
  const auto dir = std::filesystem::temp_directory_path() / ("autotune_bench_confirm_" + std::to_string(::getpid()));

  struct Way {
    const char* name;
    int budget, confirm;
  };
  const std::vector<Way> ways = {
      {"plain", budget, 0}, {"confirm", budget - confirm, confirm}, {"extra", budget, confirm}};
  std::printf("%-8s %7s %9s %9s %9s %9s %11s\n", "way", "trials", "measured", "mean", "p10", "<0.95", "overstated");
  for (const Way& w : ways) {
    std::vector<double> fraction, overstated;
    for (int s = 0; s < seeds; ++s) {
      Spec spec = bench::synthetic_spec(space, strategy, w.budget, static_cast<std::uint64_t>(s + 1),
                                        dir / fmt::format("{}_{}.jsonl", w.name, s));
      spec.search.confirm = w.confirm;
      Study r = run_tuning(
          spec, [&](const Assignment& a, const TrialContext& ctx) { return workload->measure(a, ctx); }, {});
      if (!r.best || !r.best_outcome) {
        fraction.push_back(0);
        continue;
      }
      const double truth = workload->expected(space.to_assignment(*r.best))->throughput;
      fraction.push_back(truth / optimum);
      overstated.push_back(r.best_outcome->throughput / truth - 1);
    }
    double mean = 0, over = 0;
    for (double f : fraction) mean += f;
    for (double o : overstated) over += o;
    const auto under = std::count_if(fraction.begin(), fraction.end(), [](double f) { return f < 0.95; });
    std::printf("%-8s %7d %9d %9.4f %9.4f %8.0f%% %10.2f%%\n", w.name, w.budget, w.budget + w.confirm,
                mean / static_cast<double>(fraction.size()), bench::quantile(fraction, 0.1),
                100.0 * static_cast<double>(under) / static_cast<double>(fraction.size()),
                overstated.empty() ? 0.0 : 100.0 * over / static_cast<double>(overstated.size()));
  }
  std::printf("\nmean, p10, <0.95: the answer's true throughput / the exhaustive optimum, over seeds\n");
  std::printf("overstated: mean of (reported throughput / true throughput - 1) for the answer\n");
  std::filesystem::remove_all(dir);
  return 0;
}
