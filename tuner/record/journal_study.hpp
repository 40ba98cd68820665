#pragma once
// The study a journal records, rebuilt from the journal alone (no spec file,
// no workload), so that a report can be made of a finished, interrupted or
// still-running run, or of one made on another machine.
//
// The answer and the baseline are decided as run_tuning decides them: the
// finished search trials are told to the run's own strategy (same name, same
// seed) and its recommendation taken; confirmations go through
// tuner/record/confirm.hpp; the baseline is the first `initial` configuration.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tuner/record/journal.hpp"
#include "tuner/spec/spec.hpp"

namespace autotune {

// How far the run got, as far as the journal can tell.
struct RunState {
  // How the run ended: its `end` record's reason; in an older journal,
  // budget, time or exhausted when the trials show it, else unfinished.
  RunEnd stopped_by = RunEnd::unfinished;
  bool complete = false;           // reached its end with nothing left in flight and no torn line
  std::vector<int> in_flight;      // trials started and never finished, with no end after them
  std::vector<int> cut_short;      // unfinished when their run ended, and not run again since
  bool torn_last_line = false;     // a write in progress, or the tuner died mid-write
  std::optional<double> seconds_since_write;  // the journal file's age when read
  // Plain words for the page and the terminal: "finished: the trial budget (40) was spent", ...
  std::vector<std::string> notes;
};

struct JournalStudy {
  std::filesystem::path path;
  JournalContents journal;  // as read: header and every trial with its times
  Spec spec;                // what the header says of the run (space, strategy, seed, budget, initial, limits)
  Study result;        // the answer, baseline and confirmations, as tuned.yaml reports them
  RunState state;
  std::string answer_rule;  // how the answer was chosen, in words
};

// Throws JournalError for a missing or corrupt journal, or a header whose
// space does not match its own hash.
JournalStudy read_journal_study(const std::filesystem::path& path);

// The finished search trials (not confirmations) in the order they finished.
std::vector<const JournalTrial*> finished_search_trials(const JournalContents& j);

}  // namespace autotune
