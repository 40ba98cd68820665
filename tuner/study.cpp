#include "tuner/study.hpp"

#include <algorithm>

#include "tuner/journal.hpp"
#include "tuner/racing.hpp"

namespace autotune {

double Study::search_throughput(const Config& c) const {
  for (const auto& t : trials)
    if (t.config == c && t.outcome.ok()) return t.outcome.throughput;
  return 0.0;
}

void Study::find_baseline(const Config& initial) {
  for (const auto& t : trials)
    if (t.config == initial) baseline = t;
}

void Study::settle_answer(const std::optional<Config>& recommended) {
  best.reset();
  best_outcome.reset();
  if (recommended)
    for (const auto& t : trials)
      if (t.config == *recommended && t.outcome.ok() && !was_raced(t.outcome)) {
        best = t.config;
        best_outcome = t.outcome;
      }
  if (best_outcome) return;
  if (const TrialRecord* full = best_full_trial(trials)) {
    best = full->config;
    best_outcome = full->outcome;
  }
}

Replay replay_journal(const JournalContents& j, const SearchSpace& space, const std::filesystem::path& path) {
  if (j.header.value("space_hash", "") != space.hash())
    throw StudyError(path.string() + " records another search space (hash " + j.header.value("space_hash", "?") +
                     ", this spec " + space.hash() +
                     "); refusing to resume. Use another output path, or drop --resume to start anew.");
  Replay r;
  for (const auto& t : j.trials) {
    r.next_trial = std::max(r.next_trial, t.trial + 1);
    auto c = space.from_assignment(t.config);
    if (!c)
      throw StudyError(path.string() + ": trial " + std::to_string(t.trial) + " has a configuration outside this space");
    if (t.confirm) {  // never told to a strategy: it saw this configuration's search trial
      if (t.outcome) {
        r.earlier_s += t.outcome->seconds;
        r.study.confirmations.push_back({t.trial, *c, *t.outcome, true});
      }
      continue;
    }
    if (!t.outcome) {
      r.unfinished.push_back(*c);
      continue;
    }
    r.earlier_s += t.outcome->seconds;
    r.study.trials.push_back({t.trial, *c, *t.outcome, true});
  }
  for (const auto& note : j.notes) r.study.notes.push_back(note);
  // A configuration re-run after a crash must not also be finished already.
  std::erase_if(r.unfinished, [&](const Config& c) {
    return std::any_of(r.study.trials.begin(), r.study.trials.end(), [&](const TrialRecord& t) { return t.config == c; });
  });
  return r;
}

}  // namespace autotune
