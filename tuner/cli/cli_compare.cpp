// `autotune compare --config space.yaml --strategies bo,anneal,random,heuristic
//  --repeats 20 --budget 40 --out DIR`: every strategy with many seeds on the
// spec's workload (replay and synthetic make this cheap); writes trials.csv,
// summary.csv/.md and the plots.
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "search/strategy.hpp"
#include "tuner/cli/cli.hpp"
#include "tuner/cli/cli_commands.hpp"
#include "tuner/cli/cli_common.hpp"
#include "tuner/run/compare.hpp"
#include "tuner/report/compare_page.hpp"
#include "tuner/run/scheduler.hpp"
#include "tuner/spec/spec_checks.hpp"

namespace autotune {

namespace {

struct CompareArgs {
  std::string config, strategies = "bo,anneal,random,heuristic", out = "compare", budgets = "15,30,60";
  int repeats = 20, budget = 40;
  std::optional<std::string> seed;  // `--seed=` is given, and refused
  double race_margin = -1;
  bool until_converged = false;
  int confirm = -1;  // the spec's search.confirm
};

int run_compare_command(const CompareArgs& args) {
  auto spec = load_spec_or_report(args.config);
  if (!spec) return kExitBadInput;
  CompareOptions opt;
  std::stringstream ss(args.strategies);
  for (std::string s; std::getline(ss, s, ',');) {
    if (s.empty()) continue;
    if (!find_strategy(s)) {
      std::string known;
      for (const auto& n : strategy_names()) known += (known.empty() ? "" : ", ") + n;
      std::cerr << "--strategies: expected names from " << known << ", found '" << s << "'\n";
      return kExitBadInput;
    }
    opt.strategies.push_back(s);
  }
  if (opt.strategies.empty()) {
    std::cerr << "--strategies: expected at least one strategy\n";
    return kExitBadInput;
  }
  std::stringstream bs(args.budgets);
  for (std::string b; std::getline(bs, b, ',');) {
    try {
      opt.budgets.push_back(std::stoi(b));
    } catch (...) {
      std::cerr << "--budgets: expected integers separated by commas, found '" << b << "'\n";
      return kExitBadInput;
    }
  }
  opt.repeats = args.repeats;
  opt.budget = args.budget;
  opt.seed = spec->search.seed;
  if (args.seed) {
    auto v = check_seed(*args.seed);
    if (!v.value) {
      std::cerr << "--seed: expected " << v.error.expected << ", found " << v.error.found << "\n";
      return kExitBadInput;
    }
    opt.seed = *v.value;
  }
  opt.initial = spec->search.initial;
  opt.limits = spec->limits;
  opt.strategy_options = spec->search.strategy_options;
  opt.race_margin = args.race_margin;
  opt.until_converged = args.until_converged;
  opt.confirm = args.confirm >= 0 ? args.confirm : spec->search.confirm;
  auto workload = make_workload_or_report(*spec);
  if (!workload) return kExitBadInput;
  std::cerr << fmt::format("compare: {} strategies x {} seeds x {} trials on the {} workload\n",
                           opt.strategies.size(), opt.repeats, opt.budget, spec->workload.kind);
  auto executor = make_executor_or_report(*spec, *workload, "compare");
  if (!executor) return kExitBadInput;
  TrialSettings settings = trial_settings(*spec);
  settings.log_root.clear();  // thousands of trials: no log folders
  CompareResult r = run_compare(spec->space, *workload, *executor, settings, opt);
  std::string warning;
  std::string table;
  try {
    table = write_compare_report(r, opt, args.out, &warning);
    write_compare_page(args.out, &warning);
  } catch (const std::exception& e) {
    std::cerr << "compare: " << e.what() << "\n";
    return kExitFailure;
  }
  std::cout << table;
  if (!warning.empty()) std::cerr << "compare: " << warning << "\n";
  std::cerr << "compare: wrote " << args.out << "/{trials.csv, summary.csv, summary.md, best_so_far.png, best_so_far_time.png, evals_to_95.png, compare.html}\n";
  return kExitOk;
}

}  // namespace

std::function<int()> add_compare_command(CLI::App& app) {
  auto args = std::make_shared<CompareArgs>();
  app.add_option("config,--config,-c", args->config, "the space.yaml (space, constraints, workload)")->required();
  app.add_option("--strategies", args->strategies, "comma-separated strategies")->capture_default_str();
  app.add_option("--repeats", args->repeats, "seeds per strategy")->check(CLI::Range(1, 10000))->capture_default_str();
  app.add_option("--budget", args->budget, "trials per run")->check(CLI::Range(1, 100000))->capture_default_str();
  app.add_option("--budgets", args->budgets, "budgets to report, comma-separated")->capture_default_str();
  app.add_option("--seed", args->seed, "first seed, a non-negative integer (default: the spec's)");
  app.add_option("--out,-o", args->out, "folder for the CSV, tables and plots")->capture_default_str();
  app.add_option("--race", args->race_margin,
                 "race trials as tuning does: stop a trial surely below (1 - MARGIN) x the run's incumbent "
                 "(e.g. 0.10, the spec's default); off when not given");
  app.add_flag("--until-converged", args->until_converged,
               "end a run when its strategy says it converged, as budget: {until_converged: true} does");
  app.add_option("--confirm", args->confirm,
                 "after each run, measure the best N once more and choose on all their runs, as tuning does "
                 "(default: the spec's search.confirm)")
      ->check(CLI::Range(0, 100));
  return [args] { return run_compare_command(*args); };
}

}  // namespace autotune
