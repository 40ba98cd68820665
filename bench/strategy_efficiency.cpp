// How close each strategy's recommendation gets to the optimum, on the
// analytic landscapes of bench/landscapes.hpp.
//
// For each landscape x strategy x budget and each seed: run ask/tell for
// `budget` trials, take recommend(), and score its TRUE (noise-free)
// throughput as a fraction of the best feasible configuration (0 when it
// recommends nothing or something infeasible). Prints the median and 10th
// percentile over seeds, the mean number of failed trials and the mean time
// per proposal.
//
// Usage: bench_strategy_efficiency [--seeds N] [--first-seed 0] [--strategies a,b] [--budgets 15,30,60]
//                                  [--landscapes name,...] [--no-memory-metrics]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_util.hpp"
#include "bench/landscapes.hpp"
#include "search/strategy.hpp"
#include "tuner/tune.hpp"

using namespace autotune;

int main(int argc, char** argv) {
  int seeds = 20;
  int first_seed = 0;  // seeds first_seed .. first_seed + seeds - 1: fresh ones check what others chose
  std::vector<std::string> strategies = {"random", "heuristic", "anneal", "bo"};
  std::vector<int> budgets = {15, 30, 60};
  std::vector<std::string> only;
  bool memory_metrics = true;
  bool trace = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool more = i + 1 < argc;
    if (a == "--seeds" && more) seeds = std::stoi(argv[++i]);
    else if (a == "--first-seed" && more) first_seed = std::stoi(argv[++i]);
    else if (a == "--strategies" && more) strategies = bench::split(argv[++i]);
    else if (a == "--budgets" && more) {
      budgets.clear();
      for (const auto& b : bench::split(argv[++i])) budgets.push_back(std::stoi(b));
    } else if (a == "--landscapes" && more) only = bench::split(argv[++i]);
    else if (a == "--no-memory-metrics") memory_metrics = false;
    else if (a == "--trace") trace = true;
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }

  const SearchSpace space = bench::pipeline_space();
  const auto all = *space.enumerate();
  std::printf("space: %zu valid configurations; %d seeds (%d-%d); memory metrics and limits %s\n", all.size(), seeds,
              first_seed, first_seed + seeds - 1,
              memory_metrics ? "given to the strategies" : "withheld");
  std::printf("%-14s %-10s %6s %8s %8s %8s %8s %10s\n", "landscape", "strategy", "budget", "median", "p10",
              "min", "failed", "ms/ask");
  for (const auto& land : bench::landscapes()) {
    if (!only.empty() && std::find(only.begin(), only.end(), land.name) == only.end()) continue;
    double optimum = 0;
    for (const auto& c : all)
      if (auto t = land.true_throughput(space, c)) optimum = std::max(optimum, *t);
    for (const auto& name : strategies) {
      for (int budget : budgets) {
        std::vector<double> fraction;
        double failed = 0, ask_ms = 0;
        int asks = 0;
        for (int seed = first_seed; seed < first_seed + seeds; ++seed) {
          const Limits given = memory_metrics
                                   ? Limits{land.vram_limit_mb * 1048576.0, land.ram_limit_mb * 1048576.0}
                                   : Limits{};
          auto strategy =
              make_strategy(name, strategy_context(space, 1000 + static_cast<std::uint64_t>(seed), budget, {}, given));
          std::mt19937_64 noise(77 + static_cast<std::uint64_t>(seed));
          for (int t = 0; t < budget; ++t) {
            const auto t0 = std::chrono::steady_clock::now();
            auto c = strategy->ask();
            ask_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            ++asks;
            if (!c) break;
            Outcome o = land.measure(space, *c, noise);
            if (!memory_metrics) o.metrics.clear();
            if (!o.ok()) ++failed;
            if (trace) {
              const auto tt = land.true_throughput(space, *c);
              std::printf("  seed %d trial %2d %-8s %.3f  %s\n", seed, t, std::string(to_string(o.status)).c_str(),
                          tt ? *tt / optimum : 0.0, space.to_assignment(*c).describe().c_str());
            }
            strategy->tell(*c, o);
          }
          const auto rec = strategy->recommend();
          const auto t = rec ? land.true_throughput(space, *rec) : std::nullopt;
          fraction.push_back(t ? *t / optimum : 0.0);
          if (trace)
            std::printf("  seed %d recommends %.3f %s\n", seed, t ? *t / optimum : 0.0,
                        rec ? space.to_assignment(*rec).describe().c_str() : "-");
        }
        std::printf("%-14s %-10s %6d %8.3f %8.3f %8.3f %8.1f %10.2f\n", land.name.c_str(), name.c_str(), budget,
                    bench::quantile(fraction, 0.5), bench::quantile(fraction, 0.1),
                    *std::min_element(fraction.begin(), fraction.end()), failed / seeds, ask_ms / asks);
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
