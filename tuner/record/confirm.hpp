#pragma once
// `search.confirm: N`: after the search, the N best configurations are
// measured once more each, and the answer is chosen on all their
// measurements rather than on one lucky noisy run (DESIGN, tuned.yaml); its
// reported throughput is the re-measurement, which no selection inflated.
// These are the pure parts; the tuning loop measures and journals.
#include <optional>
#include <vector>

#include "core/space.hpp"
#include "tuner/record/study.hpp"

namespace autotune {

// Up to n distinct configurations to re-measure: the strategy's
// recommendation first (when its search trial was ok), then the other
// configurations whose search trial was ok, fastest measured first. A raced
// trial (stopped below its bar) is never a candidate.
std::vector<Config> confirm_candidates(const std::vector<TrialRecord>& trials, const std::optional<Config>& recommended,
                                       int n);

// The rows of the candidates, in their order, each with its search trial and
// its confirmations; the one with the highest mean among those all ok is
// marked chosen (none when no candidate is all ok).
std::vector<ConfirmRow> confirm_rows(const std::vector<Config>& candidates, const std::vector<TrialRecord>& trials,
                                     const std::vector<TrialRecord>& confirmations);

// After the confirmations are measured: fills r.confirmed from r.trials and
// r.confirmations, and makes the chosen row r's answer, reported as its
// re-measurement. With none chosen, r's answer stays unless it failed when
// measured again; then it is the fastest search trial that did not.
void choose_confirmed(const std::vector<Config>& candidates, Study& r);

}  // namespace autotune
