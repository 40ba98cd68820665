#pragma once
// Drift control: trials minutes apart on a shared machine are not measured
// under the same conditions. One configuration, the control (the baseline,
// else the first trial that ran ok), is measured again during the search at
// intervals and whenever the load from other processes changes; each search
// trial is then read against the control measured nearest it:
//
//   throughput = measured x (control's first figure / control nearest the trial)
//
// so that a load that starts mid-session does not make every later trial
// lose to those before it. The measured figure is kept in the metric
// `throughput_measured`, the factor in `drift`. A drift within the noise of
// the two control figures (5% at least), or between two figures taken under
// the same load from other processes (within half a core), is no drift: the
// factor is then 1.
#include <optional>
#include <vector>

#include "core/space.hpp"
#include "tuner/record/study.hpp"

namespace autotune {

// The control of a study: the baseline (`initial`'s first) when its search
// trial ran ok, else the configuration of the first search trial that did.
std::optional<Config> drift_control_config(const Study& s, const std::vector<Config>& initial);

// Reads every ok search trial against the control measured nearest it (in
// trial numbers; the earlier on a tie): the figures above. Idempotent; a
// study with no control re-measurement is left as it is.
void apply_drift_control(Study& s, const Config& control);

// The factor a trial starting now would be read with (against the latest
// control measurement), 1 when there is none.
double drift_factor_now(const Study& s, const Config& control);

// The largest drift applied (|factor - 1|), 0 when none.
double largest_drift(const Study& s);

}  // namespace autotune
