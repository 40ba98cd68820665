#pragma once
// The study: the record of one tuning run (its trials and their outcomes, the
// confirmations, the answer, the baseline, how it ended). The journal replays
// into it, the tuning loop adds to it, and everything that reports on a run
// (tuned.yaml, the summary, confirmation) reads from it.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/outcome.hpp"
#include "core/space.hpp"
#include "workloads/setup_failure.hpp"

namespace autotune {

struct JournalContents;

// What a trial was measured for: the search, or one of the measurements
// after it (journaled as "confirm":true, "explain":true, "remeasure":"baseline"|"answer").
// control: the control configuration measured again during the search, so
// that trials are compared under the conditions nearest them (tuner/record/drift.hpp).
enum class Phase { search, confirm, explain, remeasure_baseline, remeasure_answer, control };

struct TrialRecord {
  int trial = 0;
  Config config;
  Outcome outcome;
  bool replayed = false;  // came from the journal on --resume
};

// Where a trial is in its life, as Optuna's trial states say it for a run
// that can be interrupted and resumed:
//   pending     to be run: a resumed run's re-run of a trial an earlier
//               session left unfinished (no number yet);
//   running     started, not finished, and its run has not ended;
//   finished    measured: it has an outcome, whatever its status;
//   cut_short   unfinished when its run ended (Ctrl-C, a failure);
//   superseded  unfinished, and run again as a later trial.
enum class TrialState { pending, running, finished, cut_short, superseded };
std::string_view trial_state_name(TrialState s);

// Whether a trial started so may run again one an earlier session left
// unfinished (then it supersedes the first such trial of its configuration
// and phase): a search trial proposed as a re-run, or any measurement after
// the search, which a resumed run takes again as its answer needs it. The
// live run (Study::start) and the journal's reader both ask it.
bool runs_again(Phase phase, std::string_view proposed_as);

// One trial of the run, whatever its phase and state (Study::log).
struct TrialEntry {
  int trial = 0;  // 0 while pending
  Config config;
  Phase phase = Phase::search;
  TrialState state = TrialState::running;
  std::optional<Outcome> outcome;    // finished
  std::optional<int> superseded_by;  // superseded: the trial that ran it again
  bool replayed = false;             // came from the journal
};

// A configuration re-measured after the search (search.confirm), with every
// measurement of it, the search trial first.
struct ConfirmRow {
  Config config;
  std::vector<Outcome> measurements;
  bool all_ok = false;  // every measurement ok: a configuration that fails when run again is never chosen
  double mean = 0;      // mean throughput over the measurements, when all_ok
  bool chosen = false;
};

// What one knob the answer moved from the baseline is worth: the answer's
// throughput over the answer's with that knob put back (tuner/record/explain.hpp).
struct KnobRow {
  std::string knob, baseline, best;  // the knob and its two values
  std::optional<double> worth;       // answer / put back - 1; none when it could not be measured
  std::string note;                  // "within noise", "the baseline's value fails (oom)", a rule, ...
  bool put_back = false;             // worth less than the noise: the answer keeps the baseline's value
};

// How a run ended, as tuned.yaml's `stopped_by` names it (run_end_name).
// `unfinished`: not at an end (still running, or a journal cut short).
// `setup_failed`: its first trials failed alike for a broken set-up
// (tuner/record/setup_stop.hpp), not for their configurations.
enum class RunEnd { unfinished, budget, time, converged, exhausted, interrupted, failed, setup_failed };
std::string_view run_end_name(RunEnd e);
// The end a name stands for (a journal's `end` record); unfinished for none.
RunEnd run_end_named(std::string_view name);

struct Study {
  // Every trial of the run, of every phase and state, in the order they
  // started (by number), the pending ones last. The lists below hold the
  // finished ones by phase; add() files a finished trial in both.
  std::vector<TrialEntry> log;
  // A trial started. `rerun` (runs_again): the pending entry of its
  // configuration goes, and the first unfinished trial of its configuration
  // and phase is superseded by it.
  void start(int trial, const Config& config, Phase phase, bool rerun = false);
  // A trial finished: its entry in the log, and its record in its phase's list.
  void add(int trial, const Config& config, Phase phase, const Outcome& outcome, bool replayed = false);
  // A trial the journal records unfinished (running, cut short or superseded).
  void add_unfinished(int trial, const Config& config, Phase phase, TrialState state,
                      std::optional<int> superseded_by = std::nullopt);
  // A re-run to come of `config` (pending), once per configuration.
  void add_pending(const Config& config);
  // The run ended: what is still running was cut short.
  void end_running();
  // The trials in `state`, by number; the configurations pending.
  std::vector<int> trials_in(TrialState state) const;
  std::vector<Config> pending() const;
  const TrialEntry* entry(int trial) const;

  std::vector<TrialRecord> trials;         // every finished search trial, the journal's first
  std::vector<TrialRecord> confirmations;  // search.confirm: re-measurements after the search, the journal's first
  std::vector<ConfirmRow> confirmed;       // search.confirm: each candidate with all its measurements
  std::vector<TrialRecord> explanations;   // search.explain: the answer with a knob put back, the journal's first
  std::vector<KnobRow> knobs;              // search.explain: what each knob the answer moved is worth
  std::vector<TrialRecord> baseline_again;  // search.remeasure: the baseline measured again, side by side
  std::vector<TrialRecord> answer_again;    // ... with the answer, interleaved after the search
  std::vector<TrialRecord> controls;        // the control configuration measured again during the search
  std::optional<Config> best;              // the strategy's recommendation among measured ones, or the confirmed choice
  std::optional<Outcome> best_outcome;     // what was measured for it (confirmed: its re-measurement)
  std::optional<TrialRecord> baseline;     // the first `initial` configuration, when measured
  double elapsed_s = 0;                    // this process plus earlier sessions of the journal
  RunEnd stopped_by = RunEnd::unfinished;
  std::string failure;                     // stopped_by failed: what failed in the tool itself, one line
  std::optional<SetupFault> setup_failure;  // stopped_by setup_failed: what the first trials failed of
  std::vector<std::string> notes;          // the search's diagnostics (also journaled as notes)

  // The throughput of a configuration's ok search trial (0 when none).
  double search_throughput(const Config& c) const;
  // Sets `baseline` to the search trial of `initial` (the user's baseline).
  void find_baseline(const Config& initial);
  // The answer from the strategy's recommendation: its ok search trial,
  // unless that trial was raced (stopped below its bar, tuner/record/racing.hpp);
  // then the fastest trial measured in full. None when nothing ran.
  void settle_answer(const std::optional<Config>& recommended);
  // Occam's answer: among the search trials measured in full that the
  // measurements cannot tell apart from the answer, the one closest to
  // `baseline` (fewest knobs changed; a change of the knob at
  // `precision_dim` counts as two: it changes the numerics). Sets
  // `nearer_than` to the faster trial it was preferred to, if any.
  void prefer_closest_to(const Config& baseline, std::optional<std::size_t> precision_dim);
  std::optional<TrialRecord> nearer_than;  // the fastest trial, when Occam's answer is another
  // The search's answer rule, the one tune, compare and the report use:
  // settle_answer on the strategy's recommendation, then, with a baseline
  // (`initial`'s first), prefer_closest_to it. Confirmation, explanation
  // and the side-by-side re-measurement refine it after the search.
  void choose_answer(const std::optional<Config>& recommended, const std::vector<Config>& initial,
                     std::optional<std::size_t> precision_dim);

  // The answer against the baseline: the medians of their side-by-side
  // re-measurements (search.remeasure) when every one of those is ok, else
  // their search measurements. None without an ok baseline and answer.
  //
  // Re-measured, the ratio is the geometric mean of the pairs' ratios
  // (baseline_again[i] with answer_again[i], taken one after the other), and
  // with two pairs or more it carries its 90% interval (Student's t on the
  // log ratios): the drift between pairs is in it, not only the noise
  // inside a trial.
  struct Speedup {
    double ratio = 0, answer = 0, baseline = 0;
    int runs = 1;             // measurements of each behind the figures
    bool remeasured = false;  // the figures are the re-measurements' medians
    std::optional<double> low, high;  // the 90% interval of the ratio
    // Other processes' cores while the pairs ran (their mean), where read.
    std::optional<double> others;
    // The interval reaches 1 or below: the answer is not shown to be faster.
    bool not_shown_faster() const { return low && *low <= 1.0; }
  };
  std::optional<Speedup> speedup() const;
  // The figures every output shows for the answer and the baseline: the
  // medians of their side-by-side re-measurements where those were made
  // (`remeasured`), else the answer's own trial and the baseline's. None
  // without an answer.
  struct Shown {
    double answer = 0;
    std::optional<double> baseline;
    bool remeasured = false;
    int runs = 1;
  };
  std::optional<Shown> shown() const;
  // After the side-by-side re-measurement: an answer not shown to be faster
  // than the baseline gives way to the baseline (nothing changed is the
  // simplest answer). Sets `kept_baseline_over` to the answer it replaced.
  void keep_baseline_unless_shown_faster();
  std::optional<Config> kept_baseline_over;
  // Before the side-by-side re-measurement: where Occam's step kept the
  // baseline over a faster search trial that the search's measurements could
  // not tell from it (a scattered trial on a busy machine reads as noise),
  // that trial becomes the answer and the pairs decide: shown faster, it
  // stays; else keep_baseline_unless_shown_faster puts the baseline back.
  // True when it did so.
  bool let_pairs_decide_over_occam();
  bool pairs_overruled_occam = false;  // the pairs showed faster the trial Occam's step had set aside
};

// How the study's answer was chosen, in words: the strategy's
// recommendation (`strategy` empty: the fastest measured, the strategy
// unknown to this build), then Occam's step, the confirmations, the
// explanation (`explanation_moved`: it put knobs back) and the side-by-side
// re-measurement, as far as each applied.
std::string answer_rule_words(std::string_view strategy, const Study& r, bool explanation_moved);

// ln(answer / baseline) of each side-by-side pair (baseline_again[i],
// answer_again[i]); nullopt when a measurement of a pair is not ok.
std::optional<std::vector<double>> paired_log_ratios(const Study& s);

// The 90% interval half-width, in log ratio, of paired log ratios `logs`
// (Student's t, n - 1 degrees of freedom); nullopt under two pairs.
std::optional<double> paired_half_width(const std::vector<double>& logs);

// Where a study keeps the measurements taken after the search in `phase`
// (confirmations, explanations, the side-by-side re-measurements); null for
// the search's own trials.
std::vector<TrialRecord>* after_search_records(Study& s, Phase phase);

// Whether two measurements of throughput cannot be told apart: their
// difference is within twice its standard error, each one's from its
// windows' spread (throughput_rsd over the square root of mean_windows);
// measurements that report no spread only when equal.
bool within_noise(const Outcome& a, const Outcome& b);

// Knobs that differ between two configurations, a change at `precision_dim` counting two.
int distance(const Config& a, const Config& b, std::optional<std::size_t> precision_dim);

// What a journal holds for `space`: its finished trials (replayed), its
// confirmations, every unfinished trial in the log with its state, and the
// search trials to run again first on resume as pending entries
// (Study::pending), the next trial number and the seconds already spent.
struct Replay {
  Study study;
  int next_trial = 1;
  double earlier_s = 0;
};
struct StudyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The unfinished trials of a journal into `s`'s log, each with its state
// (running, cut short, superseded); those whose configuration is outside
// `space` are left out.
void add_unfinished_trials(Study& s, const JournalContents& journal, const SearchSpace& space);

// Throws StudyError naming the journal when it records another space or a
// configuration outside this one.
Replay replay_journal(const JournalContents& journal, const SearchSpace& space, const std::filesystem::path& path);

}  // namespace autotune
