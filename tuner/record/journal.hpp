#pragma once
// The journal: one JSON object per line, appended and fsync'd per record, so
// that nothing measured is lost when the tuner dies.
//
//   {"type":"header","version":1,"space_hash":"...","spec":{...},"started":"..."}
//   {"type":"start","trial":3,"config":{...},"time":12.5,"proposed_as":"model"}
//   {"type":"finish","trial":3,"config":{...},"status":"ok","throughput":812.4,
//    "metrics":{...},"reason":"","seconds":9.8,"time":22.3}
//
//   {"type":"note","text":"...","time":40.1}      the search's diagnostics
//
// "proposed_as" says why the search chose the configuration
// (Strategy::proposed_as(): "initial", bo's "design", "fill", "model",
// "final", "polish", anneal's "probe", "move", "jump"; "rerun" for a trial
// a stopped run started and never finished).
//
// A re-measurement of a finished configuration after the search
// (`search.confirm`) carries "confirm":true on both records, a measurement
// of what a knob of the answer is worth (`search.explain`) "explain":true;
// neither is ever a search trial.
//
// Reading: a torn last line (the tuner died mid-write) is dropped; a line that
// does not parse anywhere else is an error. `time` is seconds since the run began.
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/outcome.hpp"
#include "core/value.hpp"
#include "tuner/record/study.hpp"

namespace autotune {

struct JournalTrial {
  int trial = 0;
  Assignment config;
  std::optional<Outcome> outcome;  // empty: started, never finished
  Phase phase = Phase::search;     // what it was measured for
  std::string proposed_as;         // the start record's word ("model", ...); empty in older journals
  double start_time = 0;           // the records' `time`: seconds since the run began
  double finish_time = 0;
  // Unfinished: the run it belonged to ended (an `end` record followed its
  // start) with it cut short; a resumed run's re-run of it, where one ran.
  bool cut_short = false;
  std::optional<int> superseded_by;
};

// An unfinished trial's state in words: "running", "cut short", or "run
// again as trial N".
std::string unfinished_status(const JournalTrial& t);

// {"type": "end"}: how a run (or a resumed run) ended: the reason
// (run_end_name: budget, time, converged, exhausted, interrupted, failed),
// the budget in force, the time, and the failure in words.
struct JournalEnd {
  std::string reason;
  int budget_trials = 0;
  double budget_seconds = 0;
  double time = 0;
  std::string failure;
};

// {"type": "answer"}: the run's answer as it printed it, written as the run
// ends (before its `end`; a resumed run appends its own): the configuration
// (none when nothing ran), how it was chosen in words, and the figures the
// summary showed: the answer's and the baseline's throughput (the
// side-by-side medians where they were measured again), the speedup, its
// 90% interval and pairs, and other processes' cores while the pairs ran.
struct JournalAnswer {
  std::optional<Assignment> config;
  std::string rule;
  std::optional<double> throughput, baseline_throughput, speedup, low, high, others_cores;
  int runs = 1;
  bool remeasured = false;
  std::optional<Assignment> kept_baseline_over;  // the search's answer, where the baseline was kept over it
  double time = 0;
};

struct JournalContents {
  nlohmann::json header;
  std::vector<JournalTrial> trials;  // in order of start
  std::vector<std::string> notes;    // the search's diagnostics, in order
  // The strategy's recommendation at the end of the search, as the run
  // journaled it (the last one, after a resume): the report and a resumed
  // run read it instead of replaying the strategy. Absent from older
  // journals; present and empty when the strategy recommended nothing.
  std::optional<std::optional<Assignment>> recommendation;
  std::vector<JournalEnd> ends;  // one per run and resumed run that ended; none in older journals
  std::vector<JournalAnswer> answers;  // likewise: one per run that reached its answer
  bool dropped_torn_line = false;
  // Bytes from the start of the file through the last whole record: what a
  // resume keeps (cut_bad_tail) before it appends.
  std::size_t good_bytes = 0;
};

struct JournalError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws JournalError ("<file>:<line>: ...") for a corrupt middle line or a
// missing header.
JournalContents read_journal(const std::filesystem::path& path);

// The trials of the journal at `path` that finished (a measurement, confirmations
// included), and how many of those measured (status ok); 0 when there is no
// such file. Throws JournalError as read_journal.
struct JournalTally {
  std::size_t finished = 0;
  std::size_t ok = 0;
};
JournalTally tally_trials(const std::filesystem::path& path);

// The folder that holds the trial logs of the run journaled at `journal`:
// `<dir>/<stem>.trials` (tuned.journal.jsonl -> tuned.journal.trials).
std::filesystem::path trial_log_folder(const std::filesystem::path& journal);

nlohmann::json to_json(const Assignment& a);
Assignment assignment_from_json(const nlohmann::json& j);
nlohmann::json to_json(const Outcome& o);
Outcome outcome_from_json(const nlohmann::json& j);

// A resume appends after the last whole record: what follows it (a line the
// tuner died writing, a block of zeros a crash left, anything appended by
// hand) is cut from the journal and kept in `<journal>.cut` (appended, so
// nothing is ever lost). Returns that file when something was cut. Throws
// JournalError when the file cannot be cut.
std::optional<std::filesystem::path> cut_bad_tail(const std::filesystem::path& path, std::size_t good_bytes);

// A record that cannot be written whole (a full disk) throws JournalError
// after cutting the file back to its last whole record.
class JournalWriter {
 public:
  // Opens for appending, never truncating. A new run's journal (`fresh`)
  // must be absent or empty: a file that holds anything throws JournalError,
  // as does a file that cannot be opened.
  JournalWriter(const std::filesystem::path& path, bool fresh);
  ~JournalWriter();
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;

  void header(const nlohmann::json& header);
  // proposed_as: what the strategy proposed it as (Strategy::proposed_as(),
  // or "rerun"); not written when empty.
  void started(int trial, const Assignment& config, double time_s, Phase phase = Phase::search,
               std::string_view proposed_as = {});
  void finished(int trial, const Assignment& config, const Outcome& outcome, double time_s,
                Phase phase = Phase::search);
  void note(const std::string& text, double time_s);
  // {"type": "recommended", "strategy": ..., "config": {...} or null}: what
  // the strategy recommended among the measured configurations when the
  // search ended.
  void recommended(const std::optional<Assignment>& config, std::string_view strategy, double time_s);
  // The run's end (JournalEnd); a resumed run appends its own.
  void ended(const JournalEnd& end);
  // The run's answer (JournalAnswer), written before its end.
  void answered(const JournalAnswer& answer);
  const std::filesystem::path& path() const { return m_path; }

 private:
  void append(const nlohmann::json& record);
  std::filesystem::path m_path;
  int m_fd = -1;
};

struct Spec;
// The journal header for a spec (space hash, parameters, strategy, seed).
nlohmann::json journal_header(const Spec& spec);

// What the run measures: the workload's kind and its options (the command,
// its folder and environment, ...; not `warm`, which is how trials start).
nlohmann::json workload_identity(const Spec& spec);
// How `spec`'s workload differs from the one a journal's header records, in
// words ("`command` was '...', now '...'"); nullopt when it is the same or
// the journal predates the record.
std::optional<std::string> workload_change(const nlohmann::json& header, const Spec& spec);

}  // namespace autotune
