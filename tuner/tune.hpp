#pragma once
// The tuning loop: ask the strategy, measure, journal, tell; stop on budget,
// time, exhaustion or Ctrl-C. Knows nothing of YAML or the command line.
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "search/outcome.hpp"
#include "search/space.hpp"
#include "search/strategy.hpp"
#include <nlohmann/json.hpp>

#include "tuner/confirm.hpp"
#include "tuner/spec.hpp"

namespace autotune {

struct TrialRecord {
  int trial = 0;
  Config config;
  Outcome outcome;
  bool replayed = false;  // came from the journal on --resume
};

struct TuneResult {
  std::vector<TrialRecord> trials;     // every finished search trial, journal's first
  std::optional<Config> best;          // the strategy's recommendation among measured ones, or the confirmed choice
  std::optional<Outcome> best_outcome; // what was measured for it (confirmed: its re-measurement)
  std::vector<TrialRecord> confirmations;  // search.confirm: re-measurements after the search, journal's first
  std::vector<ConfirmRow> confirmed;       // search.confirm: each candidate with all its measurements
  std::optional<TrialRecord> baseline; // the first `initial` configuration, when measured
  double elapsed_s = 0;                // this process plus earlier sessions of the journal
  std::string stopped_by;              // budget | time | exhausted | interrupted
};

struct TuneOptions {
  bool resume = false;
  std::ostream* progress = nullptr;  // nullptr: silent
  bool live = false;                 // rewrite one progress line (a terminal) instead of a line per trial
  // Gives a trial what its parallel slot owns (GPU environment, CPU set).
  std::function<void(int slot, TrialContext& ctx)> prepare_slot;
};

// Measures one configuration; never throws for a failed trial.
using MeasureFn = std::function<Outcome(const Assignment&, const TrialContext&)>;

struct TuneError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws TuneError when the journal cannot be used (another space, corrupt).
TuneResult run_tuning(const Spec& spec, const MeasureFn& measure, const TuneOptions& options);

// What a strategy is given for one run over `space`.
StrategyContext strategy_context(const SearchSpace& space, std::uint64_t seed, int budget,
                                 std::vector<Config> initial, const Limits& limits);

// A measured outcome that breaks a limit becomes `invalid`, naming the limit.
Outcome apply_limits(Outcome o, const Limits& limits);

// The journal header for a spec (space hash, parameters, strategy, seed).
nlohmann::json journal_header(const Spec& spec);

}  // namespace autotune
