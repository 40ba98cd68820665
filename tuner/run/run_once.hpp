#pragma once
// `autotune validate --run-once`: a tuning run's first trial (the baseline)
// measured once, as the run would measure it (the spec's executor, timeout
// and limits), to check the set-up before a session. Writes no journal, no
// tuned.yaml and no trial logs: what the job printed comes back in the
// outcome's reason.
#include <optional>

#include "tuner/run/driver.hpp"
#include "tuner/spec/spec.hpp"

namespace autotune {

// The configuration a tuning run of `spec` measures first: the first
// `initial` configuration, else its strategy's first proposal.
Config first_trial_config(const Spec& spec);

// Measures first_trial_config(spec) once on `executor`; none when the run
// is interrupted (Ctrl-C).
std::optional<Finished> run_first_trial_once(const Spec& spec, Executor& executor);

}  // namespace autotune
