#pragma once
// The facts a report shows, shared by the HTML page and the terminal table:
// the answer's speedup, its exports as tuned.yaml writes them, the trials'
// statuses, and where in the space each kind of failure happened and why.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/outcome.hpp"
#include "tuner/record/journal_study.hpp"

namespace autotune {


// tuned.yaml as the emitter writes it for this study, and its `exports:`
// block alone (empty without an answer).
std::string tuned_yaml_of(const JournalStudy& s);
std::string exports_of(const JournalStudy& s);

std::map<Status, int> status_counts(const Study& r);
// "33 ok, 5 oom, 1 timeout"
std::string describe_counts(const Study& r);

struct FailureGroup {
  Status status = Status::error;
  int count = 0;
  // Per knob whose failed values are narrower than the values tried:
  // "batch_size 256–512", "precision fp32, tf32".
  std::vector<std::string> region;
  // The trials' own reasons (first line), most frequent first, with counts.
  std::vector<std::pair<std::string, int>> reasons;
};
// One group per failed status present, in kAllStatuses order.
std::vector<FailureGroup> failure_groups(const JournalStudy& s);

// Per value of one knob: the best throughput measured there and the failures
// seen there. "2: 812/s  4: 1.2e+03/s  8: oom×2"
std::string knob_effect(const JournalStudy& s, std::size_t dim);

// Samples per second for people: "40719", "812", "3.25".
std::string format_rate(double samples_per_s);

// A trial's memory figure ("1.5GiB"), or empty.
std::string memory_of(const Outcome& o, metric::Real bytes);

// Other processes' share of the GPU's SM time while trials ran
// (foreign_gpu_busy), from 1%: "other processes used 35% of the GPU's SM
// time during trial 7", or over several trials "other processes used the
// GPU's SM time during 3 trials, up to 35% during trial 7"; empty when no
// trial read that much.
std::string foreign_gpu_busy_words(const std::vector<TrialRecord>& trials);
// One trial's: "other processes used 35% of the GPU's SM time meanwhile", or empty.
std::string foreign_gpu_busy_note(const Outcome& o);

}  // namespace autotune
