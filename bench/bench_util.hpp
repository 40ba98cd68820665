#pragma once
// Small helpers the benchmark programs share: what machine they ran on,
// quantiles of their samples, and running a source's trials through the
// trial driver.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "core/space.hpp"
#include "tuner/run/driver.hpp"
#include "tuner/run/executor.hpp"
#include "tuner/spec/spec.hpp"
#include "workloads/workload.hpp"

namespace autotune::bench {

// The CPU's model name from /proc/cpuinfo, for the figures' header.
// "a,b,,c" -> {"a", "b", "c"}: a comma-separated command-line list.
inline std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

inline std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string l; std::getline(in, l);)
    if (l.rfind("model name", 0) == 0) return l.substr(l.find(':') + 2);
  return "unknown";
}

// Linear interpolation between order statistics; 0 for no samples.
inline double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

// The best noise-free throughput over every valid configuration of `space`
// (a workload that knows its expected values: synthetic, replay); 0 when
// none is known.
inline double exhaustive_optimum(const Workload& w, const SearchSpace& space) {
  double best = 0;
  const auto all = space.enumerate();
  if (!all) return 0;
  for (const auto& c : *all)
    if (auto o = w.expected(space.to_assignment(c)); o && o->ok()) best = std::max(best, o->throughput);
  return best;
}

// A spec for run_tuning over a synthetic workload built in code: `space`,
// `strategy`, `budget` trials, `seed`, journal at `journal`; the caller sets
// anything else (parallel, confirm).
inline Spec synthetic_spec(const SearchSpace& space, const std::string& strategy, int budget, std::uint64_t seed,
                           const std::filesystem::path& journal) {
  Spec spec;
  spec.file = "bench";
  spec.workload.kind = "synthetic";
  spec.space = space;
  spec.search.strategy = strategy;
  spec.search.budget_trials = budget;
  spec.search.seed = seed;
  spec.output.journal = journal;
  return spec;
}

// `source`'s trials through the one trial driver (tuner/run/driver.hpp), as
// tune and compare run theirs, with `measure` in one local slot: it is
// called in the order the trials are proposed, so a landscape draws its
// noise in that order. Blocks until the source stops or runs dry.
inline RunEnd drive(const SearchSpace& space, TrialSource& source, std::function<Outcome(const Config&)> measure) {
  auto executor = make_local_executor(
      [&space, measure = std::move(measure)](const Assignment& a, const TrialContext&) {
        const auto c = space.from_assignment(a);
        return c ? measure(*c) : Outcome::failure(Status::error, "not in the space: " + a.describe());
      },
      1);
  Scheduler scheduler(*executor, TrialSettings{});
  Driver driver(scheduler, space, {});
  return driver.run(source);
}

}  // namespace autotune::bench
