#include "tuner/run/run_once.hpp"

#include <stdexcept>

#include "search/strategy.hpp"
#include "tuner/run/scheduler.hpp"

namespace autotune {

Config first_trial_config(const Spec& spec) {
  if (!spec.search.initial.empty()) return spec.search.initial.front();
  const auto strategy =
      make_strategy(spec.search.strategy, strategy_context(spec.space, spec.search.seed, spec.search.budget_trials,
                                                           spec.search.initial, spec.limits,
                                                           spec.search.options_of(spec.search.strategy)));
  if (auto c = strategy->ask()) return *c;
  throw std::runtime_error("the " + spec.search.strategy + " strategy proposed no configuration");
}

std::optional<Finished> run_first_trial_once(const Spec& spec, Executor& executor) {
  TrialSettings settings = trial_settings(spec);
  settings.log_root.clear();  // nothing written: the job's output tails come back in the reason
  Scheduler scheduler(executor, settings);
  Driver driver(scheduler, spec.space, {});
  return driver.measure_one(Proposal{first_trial_config(spec), "baseline"});
}

}  // namespace autotune
