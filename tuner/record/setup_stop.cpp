#include "tuner/record/setup_stop.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace autotune {
namespace {

int setup_trials_needed(int budget_trials) {
  return budget_trials > 0 ? std::min(kSetupTrials, budget_trials) : kSetupTrials;
}

}  // namespace

std::optional<SetupFault> setup_stop(const std::vector<TrialRecord>& trials, int budget_trials) {
  const auto last_ok =
      std::find_if(trials.rbegin(), trials.rend(), [](const TrialRecord& t) { return t.outcome.ok(); });
  const auto first = last_ok.base();  // the first failure after it
  const auto needed = static_cast<std::ptrdiff_t>(setup_trials_needed(budget_trials));
  if (std::distance(first, trials.end()) < needed) return std::nullopt;
  const std::optional<SetupFault> fault = setup_failure_of(first->outcome);
  if (!fault) return std::nullopt;
  for (auto t = first + 1; t != first + needed; ++t)
    if (setup_failure_of(t->outcome) != fault) return std::nullopt;
  return fault;
}

std::string describe_setup_stop(const SetupFault& f, int budget_trials) {
  const int n = setup_trials_needed(budget_trials);
  return fmt::format("{} failed alike before measuring anything, so the set-up is broken, not the "
                     "configurations: {}",
                     n == 1 ? std::string("the trial") : fmt::format("{} trials in a row", n), setup_cause(f));
}

}  // namespace autotune
