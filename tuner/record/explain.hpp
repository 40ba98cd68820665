#pragma once
// search.explain: what each knob the answer moved from the baseline is worth.
// The answer is measured with one knob at a time put back to the baseline's
// value; a knob worth less than the noise (tuner/record/study.hpp, within_noise),
// or that costs throughput, goes back to the baseline's value in the
// answer, which is then measured as it is emitted. So every change the
// answer makes bought something, and the output says what.
#include <functional>
#include <optional>
#include <string>

#include "core/space.hpp"
#include "tuner/record/study.hpp"

namespace autotune {

// A measurement of `config` for the explanation: an earlier one (the
// journal's, a search trial's) or a new trial; nullopt when none can be had
// (the run was interrupted, or a replay that only reads the journal).
using ExplainMeasure = std::function<std::optional<Outcome>(const Config& config)>;

// Fills study.knobs, and puts the knobs worth less than the noise back in
// study.best when the answer with them put back is valid and measured ok.
// Needs a measured baseline and an answer that differs from it; does
// nothing otherwise.
void explain_answer(Study& study, const SearchSpace& space, const ExplainMeasure& measure);

// An earlier measurement of `config`: an explanation trial, else a search
// trial measured in full (or failed). nullopt when there is none.
std::optional<Outcome> earlier_measurement(const Study& study, const Config& config);

// "num_workers 0 -> 2: +110%", "pin_memory false -> true: +0.4% (within noise; kept at false)"
std::string describe(const KnobRow& row);

// The why: line the knob table gives: the kept change worth the most
// ("most of it: num_workers 0 -> 8, +336.4% on its own"), or empty when no
// kept change was measured.
std::string biggest_gain(const std::vector<KnobRow>& knobs);

// The why: sentences after where the time went: that the answer is the
// baseline; else which way the bottleneck moved (when both splits are
// known) and the knob that bought the most. The summary and the report's
// text print them.
std::vector<std::string> what_moved(const Study& r);

}  // namespace autotune
