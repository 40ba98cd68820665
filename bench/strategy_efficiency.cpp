// How close each strategy's recommendation gets to the optimum, on the
// analytic landscapes of bench/landscapes.hpp.
//
// For each landscape x strategy x budget and each seed: run `budget` trials
// through the trial driver (bench::drive), take recommend(), and score its
// TRUE (noise-free) throughput as a fraction of the best feasible
// configuration (0 when it recommends nothing or something infeasible).
// Prints the median and 10th percentile over seeds, the mean number of
// failed trials and the mean time per proposal.
//
// Usage: bench_strategy_efficiency [--seeds N] [--first-seed 0] [--strategies a,b] [--budgets 15,30,60]
//                                  [--landscapes name,...] [--no-memory-metrics]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_util.hpp"
#include "bench/landscapes.hpp"
#include "search/strategy.hpp"
#include "tuner/run/tune.hpp"

using namespace autotune;

namespace {

// One seed's run as a trial source: the strategy proposes (each ask timed),
// and each finished trial is counted, traced and told back.
class SeedRun final : public TrialSource {
 public:
  SeedRun(std::unique_ptr<Strategy> strategy, int budget, const SearchSpace& space, const bench::Landscape& land,
          double optimum, int seed, bool trace)
      : m_strategy(std::move(strategy)),
        m_budget(budget),
        m_space(space),
        m_land(land),
        m_optimum(optimum),
        m_seed(seed),
        m_trace(trace) {}

  std::optional<RunEnd> stop_reason() override {
    return m_started >= m_budget ? std::optional(RunEnd::budget) : std::nullopt;
  }

  std::optional<Proposal> next() override {
    const auto t0 = std::chrono::steady_clock::now();
    auto c = m_strategy->ask();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ask_ms += ms;
    ++asks;
    if (!c) return std::nullopt;
    ++m_started;
    Proposal p;
    p.config = std::move(*c);
    p.proposed_as = m_strategy->proposed_as();
    p.ask_ms = ms;
    return p;
  }

  void tell(const Finished& f) override {
    const Config& c = f.proposal.config;
    const Outcome& o = f.outcome;
    if (!o.ok()) ++failed;
    if (m_trace) {
      const auto tt = m_land.true_throughput(m_space, c);
      std::printf("  seed %d trial %2d %-8s %.3f  %s\n", m_seed, m_told, std::string(to_string(o.status)).c_str(),
                  tt ? *tt / m_optimum : 0.0, f.config.describe().c_str());
    }
    ++m_told;
    m_strategy->tell(c, o);
  }

  std::optional<Config> recommend() const { return m_strategy->recommend(); }

  double ask_ms = 0;  // every ask's time, the last (empty) one included
  int asks = 0;
  int failed = 0;

 private:
  std::unique_ptr<Strategy> m_strategy;
  int m_budget;
  const SearchSpace& m_space;
  const bench::Landscape& m_land;
  double m_optimum;
  int m_seed;
  bool m_trace;
  int m_started = 0, m_told = 0;
};

}  // namespace

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
          SeedRun run(
              make_strategy(name, strategy_context(space, 1000 + static_cast<std::uint64_t>(seed), budget, {}, given)),
              budget, space, land, optimum, seed, trace);
          std::mt19937_64 noise(77 + static_cast<std::uint64_t>(seed));
          bench::drive(space, run, [&](const Config& c) {
            Outcome o = land.measure(space, c, noise);
            if (!memory_metrics) o.metrics.clear();
            return o;
          });
          failed += run.failed;
          ask_ms += run.ask_ms;
          asks += run.asks;
          const auto rec = run.recommend();
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
