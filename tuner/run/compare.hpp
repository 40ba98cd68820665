#pragma once
// Comparing strategies: every strategy with many seeds on one workload, the
// quality of each one's recommendation after every trial, summarised and
// plotted. The optimum is exact when the workload knows its noise-free
// answer and the space can be listed (synthetic, replay); otherwise it is the
// best measured in the whole comparison.
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/options.hpp"
#include "core/space.hpp"
#include "tuner/run/executor.hpp"
#include "tuner/run/scheduler.hpp"
#include "tuner/run/tune.hpp"
#include "workloads/workload.hpp"

namespace autotune {

struct CompareOptions {
  std::vector<std::string> strategies;
  int repeats = 20;
  int budget = 40;
  std::vector<int> budgets;       // report points; those > budget are dropped
  std::uint64_t seed = 0;         // seeds are seed, seed+1, ... per repeat
  std::vector<Config> initial;    // the spec's initial configurations
  Limits limits;
  double race_margin = -1;        // racing as in tuning (tuner/record/racing.hpp); negative: off
  bool until_converged = false;   // a run ends when its strategy says it converged (the rest: no trials)
  // After each run, the best `confirm` configurations are measured once more
  // and the answer chosen on all their measurements, as tuning does
  // (search.confirm, tuner/record/confirm.hpp); 0: the answer after the last trial.
  int confirm = 0;
  std::map<std::string, Options> strategy_options;  // search.options: each strategy's, as given
};

// A run's end after its confirmations (confirm > 0): the answer tuning
// would write, and what measuring it again cost.
struct CompareRunEnd {
  std::string strategy;
  int repeat = 0;
  double confirmed_true = 0;      // true throughput of the confirmed answer (0: none)
  double confirmed_fraction = 0;  // confirmed_true / optimum
  double confirm_seconds = 0;     // the confirmations' own seconds
};

struct CompareTrial {
  std::string strategy;
  int repeat = 0;
  int trial = 0;                  // 1-based
  Status status = Status::error;
  double measured = 0;            // measured throughput (0 when failed)
  double recommended_true = 0;    // true throughput of the strategy's recommendation now
  double trial_true = 0;          // true throughput of the configuration this trial measured (0: failed or unknown)
  double fraction = 0;            // recommended_true / optimum
  double proposal_ms = 0;         // time in ask()
  double seconds = 0;             // what the trial took (the workload's seconds: simulated ones too)
  double elapsed_s = 0;           // the run's seconds so far, this trial included
  bool raced = false;
  std::string config;             // what this trial measured ("batch_size=64 ..."; empty once the search stopped)
  std::string answer;             // the strategy's recommendation now (empty without one)
  std::string proposed_as;        // what the strategy proposed config as (Strategy::proposed_as())
};

struct StrategySummary {
  std::string strategy;
  std::vector<int> budgets;
  std::vector<double> median_fraction, p10_fraction;  // per budget
  // Median evaluations to reach 90/95/99% of the optimum; -1 when fewer than
  // half the repeats reach it. `reached` counts the repeats that did.
  double evals_to[3] = {-1, -1, -1};
  int reached[3] = {0, 0, 0};
  // Median seconds (sum of the trials' seconds) until the recommendation
  // reaches 98% of the optimum; -1 when fewer than half the repeats reach it.
  double seconds_to_98 = -1;
  int reached_98 = 0;
  double median_total_s = 0;      // median seconds a whole run took
  double mean_raced = 0;          // raced trials per run
  double mean_failed = 0;         // failed trials spent per run
  double median_proposal_ms = 0;
  double p_vs_random = 1.0;       // one-sided Mann-Whitney U: better than random at the full budget
  // With confirmations: the fraction of the confirmed answers, and the median
  // seconds of a whole run with them; -1 without.
  double median_confirmed = -1, p10_confirmed = -1, median_total_confirmed_s = -1;
};

struct CompareResult {
  double optimum = 0;
  bool exact_optimum = false;
  std::vector<CompareTrial> trials;
  std::vector<CompareRunEnd> runs;  // one per strategy and repeat when confirm > 0
  std::vector<StrategySummary> summary;
};

// Every trial goes through a Scheduler on `executor` (one at a time), seeded
// by the run's seed and the configuration (the same noise for every strategy).
CompareResult run_compare(const SearchSpace& space, Workload& workload, Executor& executor,
                          const TrialSettings& settings, const CompareOptions& options,
                          const std::function<void(const std::string&)>& progress = {});
// The same on one local slot over `measure`, with no logs.
CompareResult run_compare(const SearchSpace& space, Workload& workload, const MeasureFn& measure,
                          const CompareOptions& options,
                          const std::function<void(const std::string&)>& progress = {});

// One-sided Mann-Whitney U test (normal approximation with tie correction):
// the p-value for "a tends to be larger than b".
double mann_whitney_p_greater(const std::vector<double>& a, const std::vector<double>& b);

// Writes trials.csv, summary.csv, summary.md, the gnuplot scripts and data, and
// renders best_so_far.png and evals_to_95.png when gnuplot is installed.
// Returns the summary table (Markdown) for printing.
std::string write_compare_report(const CompareResult& r, const CompareOptions& options,
                                 const std::filesystem::path& dir, std::string* plot_warning);

}  // namespace autotune
