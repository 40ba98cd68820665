// `autotune trial --config space.yaml --values '{"batch_size": 64, ...}'`:
// measures one configuration in this process and prints its Outcome as one
// JSON line in the wire format (tuner/run/wire.hpp: the journal's). It is what a
// remote step runs for the built-in workloads (the Slurm executor), and a
// quick way to measure one point by hand.
#include <iostream>

#include <nlohmann/json.hpp>

#include "tuner/cli/cli.hpp"
#include "tuner/cli/cli_commands.hpp"
#include "tuner/cli/cli_common.hpp"
#include "tuner/record/journal.hpp"
#include "tuner/run/scheduler.hpp"
#include "tuner/spec/spec_checks.hpp"
#include "tuner/run/wire.hpp"

namespace autotune {

std::function<int()> add_trial_command(CLI::App& app) {
  struct Args {
    std::string config, values;
    int trial = 1;
    std::optional<std::string> seed;
  };
  auto args = std::make_shared<Args>();
  app.add_option("config,--config,-c", args->config, "the space.yaml (workload and space)")->required();
  app.add_option("--values", args->values, "the configuration, as a JSON object")->required();
  app.add_option("--trial", args->trial, "trial number (for logs and seeds)");
  app.add_option("--seed", args->seed, "the trial's seed (a non-negative integer)");
  return [args]() -> int {
    std::optional<std::uint64_t> seed;
    if (args->seed) {  // checked as search.seed and tune's --seed are
      auto v = check_seed(*args->seed);
      if (!v.value) {
        std::cerr << "--seed: expected " << v.error.expected << ", found " << v.error.found << "\n";
        return kExitBadInput;
      }
      seed = *v.value;
    }
    auto spec = load_spec_or_report(args->config);
    if (!spec) return kExitBadInput;
    Assignment named;
    try {
      named = assignment_from_json(nlohmann::json::parse(args->values));
    } catch (const std::exception& e) {
      std::cerr << "--values: expected a JSON object of parameter values: " << e.what() << "\n";
      return kExitBadInput;
    }
    auto config = spec->space.from_assignment(named);
    if (!config) {
      std::cerr << "--values: not a configuration of this space (every parameter, values from its domain)\n";
      return kExitBadInput;
    }
    auto workload = make_workload_or_report(*spec);
    if (!workload) return kExitBadInput;
    TrialSettings settings = trial_settings(*spec);
    settings.log_root.clear();  // the tuner that started this step keeps the logs
    TrialContext ctx = make_trial_context(settings, args->trial, static_cast<std::uint64_t>(args->trial));
    if (seed) ctx.seed = *seed;  // the tuner's seed for this trial
    Outcome o;
    try {
      o = workload->measure(spec->space.to_assignment(*config), ctx);
    } catch (const std::exception& e) {
      o = Outcome::failure(Status::error, std::string("workload threw: ") + e.what());
    }
    // As measured: the tuner that asked applies the limits (tuner/run/scheduler.hpp).
    std::cout << outcome_wire_line(o) << std::endl;
    return kExitOk;
  };
}

}  // namespace autotune
