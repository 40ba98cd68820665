#pragma once
// The tuning loop: ask the strategy, schedule the trial, journal it, tell the
// strategy; stop on budget, time, exhaustion, Ctrl-C or a failure of the tool
// itself; then confirm the best few. Knows nothing of YAML or the command
// line. What it measured is the Study (tuner/record/study.hpp).
#include <iosfwd>
#include <stdexcept>
#include <vector>

#include "search/strategy.hpp"
#include "tuner/run/executor.hpp"
#include "tuner/spec/spec.hpp"
#include "tuner/record/study.hpp"

namespace autotune {

struct TuneOptions {
  bool resume = false;
  std::ostream* progress = nullptr;  // nullptr: silent
  bool live = false;                 // rewrite one progress line (a terminal) instead of a line per trial
  bool verbose = false;              // also print the search's notes
};

// The journal given to --resume cannot be used (another space, corrupt): bad
// input, nothing was run.
struct TuneError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs the search on `executor`. Throws TuneError before anything runs when
// the journal cannot be resumed, and JournalError when it cannot be opened.
// A failure after that (a journal write, the strategy, anything thrown while
// trials are in flight) stops new trials, stops the running ones, keeps every
// finished record and returns with stopped_by RunEnd::failed and the reason in
// `failure`.
Study run_tuning(const Spec& spec, Executor& executor, const TuneOptions& options);
// The same on spec.search.parallel plain local slots over `measure`.
Study run_tuning(const Spec& spec, const MeasureFn& measure, const TuneOptions& options);

}  // namespace autotune
