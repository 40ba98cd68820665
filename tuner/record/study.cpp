#include "tuner/record/study.hpp"

#include <algorithm>
#include <set>
#include <cmath>
#include <string_view>

#include <fmt/format.h>

#include "core/metric_names.hpp"
#include "tuner/record/journal.hpp"
#include "tuner/record/racing.hpp"

namespace autotune {

std::string_view run_end_name(RunEnd e) {
  switch (e) {
    case RunEnd::budget: return "budget";
    case RunEnd::time: return "time";
    case RunEnd::converged: return "converged";
    case RunEnd::exhausted: return "exhausted";
    case RunEnd::interrupted: return "interrupted";
    case RunEnd::failed: return "failed";
    case RunEnd::setup_failed: return "setup_failed";
    case RunEnd::unfinished: break;
  }
  return "unfinished";
}

RunEnd run_end_named(std::string_view name) {
  for (RunEnd e : {RunEnd::budget, RunEnd::time, RunEnd::converged, RunEnd::exhausted, RunEnd::interrupted,
                   RunEnd::failed, RunEnd::setup_failed})
    if (run_end_name(e) == name) return e;
  return RunEnd::unfinished;
}

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
      if (t.config == *recommended && t.outcome.ok() && !t.outcome.raced()) {
        best = t.config;
        best_outcome = t.outcome;
      }
  if (best_outcome) return;
  if (const TrialRecord* full = best_full_trial(trials)) {
    best = full->config;
    best_outcome = full->outcome;
  }
}

namespace {

// The standard error of a measurement's throughput, in samples/s (0 when it
// reports no spread).
double standard_error(const Outcome& o) {
  const double rsd = o.get(metric::throughput_rsd).value_or(0.0);
  const double windows = std::max(
      1.0, static_cast<double>(o.get(metric::mean_windows).value_or(o.get(metric::windows).value_or(1))));
  return rsd * o.throughput / std::sqrt(windows);
}

}  // namespace

bool within_noise(const Outcome& a, const Outcome& b) {
  const double se = std::hypot(standard_error(a), standard_error(b));
  const double diff = std::fabs(a.throughput - b.throughput);
  return se > 0 ? diff <= 2.0 * se : diff <= 1e-9 * std::max(a.throughput, b.throughput);
}

int distance(const Config& a, const Config& b, std::optional<std::size_t> precision_dim) {
  int d = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (a[i] != b[i]) d += precision_dim && *precision_dim == i ? 2 : 1;
  return d;
}

void Study::prefer_closest_to(const Config& baseline, std::optional<std::size_t> precision_dim) {
  nearer_than.reset();
  if (!best || !best_outcome) return;
  const TrialRecord* chosen = nullptr;
  for (const auto& t : trials)
    if (t.config == *best && t.outcome.ok()) chosen = &t;
  if (!chosen) return;
  const TrialRecord* nearest = chosen;
  for (const auto& t : trials) {
    if (!t.outcome.ok() || t.outcome.raced() || !within_noise(t.outcome, chosen->outcome)) continue;
    const int d = distance(t.config, baseline, precision_dim), dn = distance(nearest->config, baseline, precision_dim);
    if (d < dn || (d == dn && t.outcome.throughput > nearest->outcome.throughput)) nearest = &t;
  }
  if (nearest == chosen) return;
  nearer_than = *chosen;
  best = nearest->config;
  best_outcome = nearest->outcome;
}

namespace {
std::optional<double> median_ok(const std::vector<TrialRecord>& runs) {
  std::vector<double> v;
  for (const auto& t : runs) {
    if (!t.outcome.ok()) return std::nullopt;
    v.push_back(t.outcome.throughput);
  }
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
}  // namespace

std::optional<std::vector<double>> paired_log_ratios(const Study& s) {
  std::vector<double> logs;
  for (std::size_t i = 0; i < std::min(s.baseline_again.size(), s.answer_again.size()); ++i) {
    const Outcome &b = s.baseline_again[i].outcome, &a = s.answer_again[i].outcome;
    if (!a.ok() || !b.ok() || a.throughput <= 0 || b.throughput <= 0) return std::nullopt;
    logs.push_back(std::log(a.throughput / b.throughput));
  }
  return logs;
}

std::optional<double> paired_half_width(const std::vector<double>& logs) {
  const std::size_t n = logs.size();
  if (n < 2) return std::nullopt;
  double mean = 0;
  for (double x : logs) mean += x;
  mean /= static_cast<double>(n);
  double ss = 0;
  for (double x : logs) ss += (x - mean) * (x - mean);
  const double sd = std::sqrt(ss / static_cast<double>(n - 1));
  // t(0.95, df) for df = 1..30, then the normal's 1.645.
  static constexpr double kT95[] = {6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812,
                                    1.796, 1.782, 1.771, 1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725,
                                    1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701, 1.699, 1.697};
  const std::size_t df = n - 1;
  const double t = df <= 30 ? kT95[df - 1] : 1.645;
  return t * sd / std::sqrt(static_cast<double>(n));
}

std::optional<Study::Speedup> Study::speedup() const {
  if (!baseline || !baseline->outcome.ok() || !best_outcome || !best_outcome->ok()) return std::nullopt;
  const auto a = median_ok(answer_again), b = median_ok(baseline_again);
  if (a && b && *b > 0) {
    const std::size_t n = std::min(answer_again.size(), baseline_again.size());
    Speedup x{*a / *b, *a, *b, static_cast<int>(n), true};
    double others = 0;
    int read = 0;
    for (const auto* again : {&baseline_again, &answer_again})
      for (const TrialRecord& t : *again)
        if (const auto f = t.outcome.get(metric::foreign_cores)) {
          others += *f;
          ++read;
        }
    if (read > 0) x.others = others / read;
    if (const auto logs = paired_log_ratios(*this); logs && !logs->empty()) {
      double mean = 0;
      for (double l : *logs) mean += l;
      mean /= static_cast<double>(logs->size());
      x.ratio = std::exp(mean);
      if (const auto h = paired_half_width(*logs)) {
        x.low = std::exp(mean - *h);
        x.high = std::exp(mean + *h);
      }
    }
    return x;
  }
  if (baseline->outcome.throughput <= 0) return std::nullopt;
  return Speedup{best_outcome->throughput / baseline->outcome.throughput, best_outcome->throughput,
                 baseline->outcome.throughput, 1, false};
}

void Study::choose_answer(const std::optional<Config>& recommended, const std::vector<Config>& initial,
                          std::optional<std::size_t> precision_dim) {
  settle_answer(recommended);
  if (!initial.empty()) prefer_closest_to(initial.front(), precision_dim);
}

std::optional<Study::Shown> Study::shown() const {
  if (!best_outcome) return std::nullopt;
  Shown f;
  f.answer = best_outcome->throughput;
  if (baseline && baseline->outcome.ok()) f.baseline = baseline->outcome.throughput;
  if (const auto x = speedup(); x && x->remeasured) {
    // The baseline kept over an answer not shown faster: the answer is the baseline.
    f.answer = kept_baseline_over ? x->baseline : x->answer;
    f.baseline = x->baseline;
    f.remeasured = true;
    f.runs = x->runs;
  }
  return f;
}

std::vector<TrialRecord>* after_search_records(Study& s, Phase phase) {
  switch (phase) {
    case Phase::search: return nullptr;
    case Phase::confirm: return &s.confirmations;
    case Phase::explain: return &s.explanations;
    case Phase::remeasure_baseline: return &s.baseline_again;
    case Phase::remeasure_answer: return &s.answer_again;
    case Phase::control: return &s.controls;
  }
  return nullptr;
}

std::string_view trial_state_name(TrialState s) {
  switch (s) {
    case TrialState::pending: return "pending";
    case TrialState::running: return "running";
    case TrialState::finished: return "finished";
    case TrialState::cut_short: return "cut short";
    case TrialState::superseded: return "superseded";
  }
  return "?";
}

bool runs_again(Phase phase, std::string_view proposed_as) {
  return phase != Phase::search || proposed_as == "rerun";
}

namespace {
// The log's entry of `trial`, made where there is none; the log stays in
// order of number, the pending entries (number 0) last.
TrialEntry& entry_of(std::vector<TrialEntry>& log, int trial) {
  const auto at = std::find_if(log.begin(), log.end(),
                               [&](const TrialEntry& e) { return e.trial == 0 || e.trial >= trial; });
  if (at != log.end() && at->trial == trial) return *at;
  TrialEntry e;
  e.trial = trial;
  return *log.insert(at, std::move(e));
}
}  // namespace

void Study::start(int trial, const Config& config, Phase phase, bool rerun) {
  if (rerun) {
    std::erase_if(log, [&](const TrialEntry& e) { return e.state == TrialState::pending && e.config == config; });
    for (TrialEntry& e : log)
      if ((e.state == TrialState::running || e.state == TrialState::cut_short) && e.config == config &&
          e.phase == phase) {
        e.state = TrialState::superseded;
        e.superseded_by = trial;
        break;
      }
  }
  TrialEntry& e = entry_of(log, trial);
  e.config = config;
  e.phase = phase;
  e.state = TrialState::running;
}

void Study::add(int trial, const Config& config, Phase phase, const Outcome& outcome, bool replayed) {
  TrialEntry& e = entry_of(log, trial);
  e.config = config;
  e.phase = phase;
  e.state = TrialState::finished;
  e.outcome = outcome;
  e.replayed = replayed;
  auto* into = after_search_records(*this, phase);
  (into ? *into : trials).push_back({trial, config, outcome, replayed});
}

void Study::add_unfinished(int trial, const Config& config, Phase phase, TrialState state,
                           std::optional<int> superseded_by) {
  TrialEntry& e = entry_of(log, trial);
  e.config = config;
  e.phase = phase;
  e.state = state;
  e.superseded_by = superseded_by;
  e.replayed = true;
}

void Study::add_pending(const Config& config) {
  if (std::any_of(log.begin(), log.end(),
                  [&](const TrialEntry& e) { return e.state == TrialState::pending && e.config == config; }))
    return;
  TrialEntry e;
  e.config = config;
  e.state = TrialState::pending;
  log.push_back(std::move(e));
}

void Study::end_running() {
  for (TrialEntry& e : log)
    if (e.state == TrialState::running) e.state = TrialState::cut_short;
}

std::vector<int> Study::trials_in(TrialState state) const {
  std::vector<int> out;
  for (const TrialEntry& e : log)
    if (e.state == state) out.push_back(e.trial);
  return out;
}

std::vector<Config> Study::pending() const {
  std::vector<Config> out;
  for (const TrialEntry& e : log)
    if (e.state == TrialState::pending) out.push_back(e.config);
  return out;
}

const TrialEntry* Study::entry(int trial) const {
  for (const TrialEntry& e : log)
    if (e.trial == trial) return &e;
  return nullptr;
}

void add_unfinished_trials(Study& s, const JournalContents& j, const SearchSpace& space) {
  for (const JournalTrial& t : j.trials) {
    if (t.outcome) continue;
    const auto c = space.from_assignment(t.config);
    if (!c) continue;
    const TrialState state = t.superseded_by ? TrialState::superseded
                             : t.cut_short   ? TrialState::cut_short
                                             : TrialState::running;
    s.add_unfinished(t.trial, *c, t.phase, state, t.superseded_by);
  }
}

Replay replay_journal(const JournalContents& j, const SearchSpace& space, const std::filesystem::path& path) {
  if (j.header.value("space_hash", "") != space.hash())
    throw StudyError(path.string() + " records another search space (hash " + j.header.value("space_hash", "?") +
                     ", this spec " + space.hash() +
                     "); refusing to resume.");
  Replay r;
  for (const auto& t : j.trials) {
    r.next_trial = std::max(r.next_trial, t.trial + 1);
    auto c = space.from_assignment(t.config);
    if (!c)
      throw StudyError(path.string() + ": trial " + std::to_string(t.trial) + " has a configuration outside this space");
    if (!t.outcome) continue;
    r.earlier_s += t.outcome->seconds;
    // After-search measurements are never told to a strategy: it saw the
    // configuration's search trial.
    r.study.add(t.trial, *c, t.phase, *t.outcome, true);
  }
  add_unfinished_trials(r.study, j, space);
  for (const auto& note : j.notes) r.study.notes.push_back(note);
  // The search trials left unfinished (not yet run again) are run again
  // first, once per configuration, unless it finished since.
  std::set<Config> finished;
  for (const auto& t : r.study.trials) finished.insert(t.config);
  for (const TrialEntry& e : r.study.log)
    if (e.phase == Phase::search && (e.state == TrialState::running || e.state == TrialState::cut_short) &&
        !finished.count(e.config))
      r.study.add_pending(e.config);
  return r;
}

}  // namespace autotune

namespace autotune {

void Study::keep_baseline_unless_shown_faster() {
  const auto x = speedup();
  if (!baseline || !best || *best == baseline->config) {
    pairs_overruled_occam = false;
    return;
  }
  // The trial Occam's step set aside must be shown faster (pairs measured,
  // an interval above 1); any other answer gives way only when shown not to be.
  const bool shown_faster = x && x->remeasured && x->low && !x->not_shown_faster();
  const bool shown_not = x && x->remeasured && x->not_shown_faster();
  if (pairs_overruled_occam ? shown_faster : !shown_not) return;
  kept_baseline_over = best;
  pairs_overruled_occam = false;
  best = baseline->config;
  best_outcome = baseline->outcome;
}

bool Study::let_pairs_decide_over_occam() {
  if (!baseline || !best || *best != baseline->config || !nearer_than || nearer_than->config == baseline->config)
    return false;
  best = nearer_than->config;
  best_outcome = nearer_than->outcome;
  nearer_than.reset();
  pairs_overruled_occam = true;  // until the pairs say otherwise
  return true;
}

std::string answer_rule_words(std::string_view strategy, const Study& r, bool explanation_moved) {
  std::string rule = strategy.empty()
                         ? std::string("the fastest measured (the journal names a strategy this build does not know)")
                         : fmt::format("the {} strategy's recommendation among the measured configurations", strategy);
  if (r.nearer_than) rule += ", then among those within the noise of it the one closest to the baseline";
  if (!r.confirmations.empty()) rule += ", re-measured after the search and chosen on the mean of its runs";
  if (explanation_moved) rule += ", with the knobs worth less than the noise put back to the baseline's";
  if (r.kept_baseline_over)
    rule += "; measured again side by side it was not shown to be faster than the baseline, which is kept";
  else if (r.pairs_overruled_occam)
    rule += "; the search could not tell it from the baseline, measured again side by side it was shown faster";
  return rule;
}

}  // namespace autotune
