// Strategies on the failure-heavy landscapes of bench/failure_landscapes.hpp
// (issue 12), and the same landscapes exported as tables for a peer tuner
// (bench/optuna_peers.py).
//
// For each landscape x strategy x budget and each seed: ask/tell for `budget`
// trials (in waves of --parallel asks before their tells), score recommend()'s
// TRUE throughput as a fraction of the exhaustive optimum (0 when it
// recommends nothing or something that fails). Prints median, 10th percentile
// and minimum over seeds, the share of the trials run that failed, the same
// share after the first third of the budget (the initial design), and the
// mean time per ask.
//
// Usage: bench_failure_efficiency [--seeds 40] [--strategies bo,anneal,random]
//          [--budgets 15,30] [--landscapes a,b] [--parallel 1] [--limits]
//          [--no-memory-metrics] [--runs FILE.csv] [--export DIR] [--trace]
//          [--first-seed 0] [--random N] [--busy] [--free-failures[=STATUS]]
// --random N: instead of the named landscapes, N drawn at random from the
// same model (random_failure_landscapes: held out from any choice of method).
// Trials report vram_bytes and ram_bytes (as the runner and the harness do)
// unless --no-memory-metrics; the spec's limits reach the strategies only
// with --limits (by default they must learn the capacity from failures).
// --busy: each ok trial also reports compute_busy (1 - its data wait, with
// the throughput's noise), as the cpu and cuda harnesses and autotune_trial
// do, so that bo's surrogate reads throughput as compute rate x busy share.
// --free-failures: a failed trial does not count against the budget (a run
// ends after `budget` ok trials, or 3 x budget asks): what a strategy would
// reach if walls cost nothing, so the share of its short-fall that failures
// cause (the rest is the search itself). The strategy is still told the
// budget, so its last-trials rules start as they would. The CSV's tool
// column gets "/free". --free-failures=STATUS frees only the failures of
// that status (error: a precision the card lacks; host_oom; oom), and the
// column gets "/free-STATUS".
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/bench_util.hpp"
#include "bench/failure_landscapes.hpp"
#include "search/strategy.hpp"
#include "tuner/tune.hpp"

using namespace autotune;

namespace {

// The whole landscape as a table: one row per configuration, the parameters'
// values, then status, noise-free throughput, memory and the failure reason.
// A second file lists each parameter's domain in order (name,kind,values...).
void export_table(const bench::Landscape& land, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const SearchSpace space = land.space();
  std::ofstream dom(dir / (land.name + ".space.csv"));
  for (const auto& p : space.params()) {
    dom << p.name << ',' << (p.scale == Scale::categorical || is_bool(p.values[0]) ? "categorical" : "ordered");
    for (const auto& v : p.values) dom << ',' << to_string(v);
    dom << '\n';
  }
  std::ofstream out(dir / (land.name + ".csv"));
  for (const auto& p : space.params()) out << p.name << ',';
  out << "status,throughput,vram_bytes,ram_bytes,reason\n";
  const auto all = space.enumerate();
  for (const auto& c : *all) {
    const auto e = land.model(space, c);
    for (std::size_t d = 0; d < c.size(); ++d) out << to_string(space.param(d).values[static_cast<std::size_t>(c[d])]) << ',';
    out << to_string(e.status) << ',' << (e.status == Status::ok ? e.throughput : 0.0) << ','
        << static_cast<long long>(e.vram_mb * 1048576.0) << ',' << static_cast<long long>(e.ram_mb * 1048576.0)
        << ",\"" << e.reason << "\"\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  int seeds = 40;
  std::vector<std::string> strategies = {"bo", "anneal", "random"};
  std::vector<int> budgets = {15, 30};
  std::vector<std::string> only;
  int parallel = 1;
  int first_seed = 0;  // seeds first_seed .. first_seed + seeds - 1 (a fresh set for a check)
  bool limits = false, metrics = true, trace = false, busy = false, free_failures = false;
  std::optional<Status> free_status;  // with --free-failures=STATUS: only these are free
  std::string runs_path, export_dir;
  int random_landscapes = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool more = i + 1 < argc;
    if (a == "--seeds" && more) seeds = std::stoi(argv[++i]);
    else if (a == "--strategies" && more) strategies = bench::split(argv[++i]);
    else if (a == "--budgets" && more) {
      budgets.clear();
      for (const auto& b : bench::split(argv[++i])) budgets.push_back(std::stoi(b));
    } else if (a == "--landscapes" && more) only = bench::split(argv[++i]);
    else if (a == "--parallel" && more) parallel = std::max(1, std::stoi(argv[++i]));
    else if (a == "--limits") limits = true;
    else if (a == "--no-memory-metrics") metrics = false;
    else if (a == "--busy") busy = true;
    else if (a == "--free-failures") free_failures = true;
    else if (constexpr std::string_view prefix = "--free-failures="; a.rfind(prefix, 0) == 0) {
      const std::string named = a.substr(prefix.size());
      free_status = parse_status(named);
      if (!free_status || *free_status == Status::ok) {
        std::fprintf(stderr, "--free-failures=STATUS: expected a failure status (oom, host_oom, error, ...), found '%s'\n",
                     named.c_str());
        return 2;
      }
      free_failures = true;
    }
    else if (a == "--runs" && more) runs_path = argv[++i];
    else if (a == "--export" && more) export_dir = argv[++i];
    else if (a == "--trace") trace = true;
    else if (a == "--first-seed" && more) first_seed = std::stoi(argv[++i]);
    else if (a == "--random" && more) random_landscapes = std::stoi(argv[++i]);
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }

  const std::vector<bench::Landscape> landscapes =
      random_landscapes > 0 ? bench::random_failure_landscapes(random_landscapes, 2026) : bench::failure_landscapes();
  if (!export_dir.empty()) {
    for (const auto& land : landscapes)
      if (only.empty() || std::find(only.begin(), only.end(), land.name) != only.end())
        export_table(land, export_dir);
    return 0;
  }

  std::ofstream runs;
  if (!runs_path.empty()) {
    runs.open(runs_path);
    runs << "landscape,tool,budget,seed,fraction,failed,failed_after_design,ms_per_ask\n";
  }
  // What is free, named once for the header and the CSV's tool column.
  const std::string freed = !free_failures ? std::string()
                            : free_status  ? std::string(to_string(*free_status))
                                           : std::string("failed");
  const std::string free_note = freed.empty() ? freed : fmt::format("; {} trials free (not counted in the budget)", freed);
  const std::string tool_suffix = (parallel > 1 ? "/p" + std::to_string(parallel) : std::string()) +
                                  (!free_failures ? std::string() : free_status ? "/free-" + freed : "/free");
  std::printf("machine: %s, %u hardware threads; %d seeds; parallel %d; memory metrics %s; limits %s%s\n",
              bench::cpu_model().c_str(), std::thread::hardware_concurrency(), seeds, parallel,
              metrics ? "reported" : "withheld", limits ? "given" : "withheld",
              free_note.c_str());
  std::printf("%-13s %7s %-9s %6s %7s %7s %7s %7s %9s %8s\n", "landscape", "configs", "strategy", "budget", "median",
              "p10", "min", "failed", "fail>1/3", "ms/ask");
  for (const auto& land : landscapes) {
    if (!only.empty() && std::find(only.begin(), only.end(), land.name) == only.end()) continue;
    const SearchSpace space = land.space();
    const auto all = *space.enumerate();
    double optimum = 0;
    std::size_t failing = 0;
    for (const auto& c : all) {
      if (auto t = land.true_throughput(space, c)) optimum = std::max(optimum, *t);
      else ++failing;
    }
    for (const auto& name : strategies) {
      for (int budget : budgets) {
        std::vector<double> fraction;
        double failed = 0, failed_late = 0, trials = 0, late_trials = 0, ask_ms = 0;
        int asks = 0;
        for (int seed = first_seed; seed < first_seed + seeds; ++seed) {
          const Limits given = limits ? Limits{land.vram_limit_mb * 1048576.0, land.ram_limit_mb * 1048576.0}
                                      : Limits{};
          auto strategy =
              make_strategy(name, strategy_context(space, 1000 + static_cast<std::uint64_t>(seed), budget, {}, given));
          std::mt19937_64 noise(77 + static_cast<std::uint64_t>(seed));
          int t = 0, run_failed = 0, run_late = 0, run_told = 0, run_told_late = 0;
          double run_ms = 0;
          int run_asks = 0;
          while (t < budget) {
            std::vector<Config> wave;
            std::vector<std::string> proposed_as;
            for (int k = 0; k < parallel && t + static_cast<int>(wave.size()) < budget; ++k) {
              const auto t0 = std::chrono::steady_clock::now();
              auto c = strategy->ask();
              run_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
              ++run_asks;
              if (!c) break;
              wave.push_back(*c);
              proposed_as.emplace_back(strategy->proposed_as());
            }
            if (wave.empty()) break;
            for (std::size_t k = 0; k < wave.size(); ++k) {
              const Config& c = wave[k];
              const Outcome o = land.measure(space, c, noise, metrics, busy);
              if (!o.ok()) {
                ++run_failed;
                if (t >= budget / 3) ++run_late;
              }
              if (trace) {
                const auto tt = land.true_throughput(space, c);
                std::printf("  seed %d trial %2d %-7s %-8s %.3f  %s\n", seed, t, proposed_as[k].c_str(),
                            std::string(to_string(o.status)).c_str(), tt ? *tt / optimum : 0.0,
                            space.to_assignment(c).describe().c_str());
              }
              strategy->tell(c, o);
              ++run_told;
              if (t >= budget / 3) ++run_told_late;
              const bool free = free_failures && !o.ok() && (!free_status || o.status == *free_status);
              if (!free || run_asks >= 3 * budget) ++t;
            }
          }
          const auto rec = strategy->recommend();
          const auto tt = rec ? land.true_throughput(space, *rec) : std::nullopt;
          const double f = tt ? *tt / optimum : 0.0;
          fraction.push_back(f);
          failed += run_failed;
          failed_late += run_late;
          trials += run_told;  // the budget, unless the run ended early or failures were free
          late_trials += run_told_late;
          ask_ms += run_ms;
          asks += run_asks;
          if (trace)
            std::printf("  seed %d recommends %.3f %s\n", seed, f, rec ? space.to_assignment(*rec).describe().c_str() : "-");
          if (runs.is_open())
            runs << land.name << ',' << name << tool_suffix << ','
                 << budget << ',' << seed << ',' << f << ',' << run_failed << ',' << run_late << ','
                 << run_ms / std::max(1, run_asks) << '\n';
        }
        std::printf("%-13s %7zu %-9s %6d %7.3f %7.3f %7.3f %7.2f %9.3f %8.2f\n", land.name.c_str(), all.size(),
                    name.c_str(), budget, bench::quantile(fraction, 0.5), bench::quantile(fraction, 0.1),
                    *std::min_element(fraction.begin(), fraction.end()), failed / std::max(1.0, trials),
                    failed_late / std::max(1.0, late_trials), ask_ms / asks);
        std::fflush(stdout);
      }
    }
    std::printf("%-13s %zu of %zu configurations fail (%.0f%%)%s%s\n", land.name.c_str(), failing, all.size(),
                100.0 * static_cast<double>(failing) / static_cast<double>(all.size()),
                random_landscapes > 0 ? "; " : "", random_landscapes > 0 ? land.summary.c_str() : "");
  }
  return 0;
}
