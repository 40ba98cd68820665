#include "tuner/record/journal_study.hpp"

#include "tuner/record/confirm.hpp"
#include "tuner/record/drift.hpp"
#include "tuner/record/explain.hpp"
#include "tuner/record/setup_stop.hpp"

#include <algorithm>
#include <chrono>
#include <set>

#include <fmt/format.h>

#include "search/strategy.hpp"

namespace autotune {
namespace {

// A domain value as the header wrote it (to_string), typed as the trials'
// configurations have it; a parameter no trial shows is read as an integer
// or a boolean where it looks like one.
Value typed_value(const std::string& text, const std::string& name, const JournalContents& j) {
  for (const auto& t : j.trials)
    if (const Value* v = t.config.find(name)) {
      if (is_int(*v)) return Value{static_cast<std::int64_t>(std::stoll(text))};
      if (is_bool(*v)) return Value{text == "true"};
      return Value{text};
    }
  if (text == "true" || text == "false") return Value{text == "true"};
  std::size_t used = 0;
  try {
    const long long n = std::stoll(text, &used);
    if (used == text.size()) return Value{static_cast<std::int64_t>(n)};
  } catch (const std::exception&) {
  }
  return Value{text};
}

Scale scale_named(const std::string& s) {
  for (Scale x : {Scale::linear, Scale::log, Scale::categorical})
    if (to_string(x) == s) return x;
  throw JournalError("unknown scale '" + s + "'");
}

SearchSpace space_of(const JournalContents& j) {
  std::vector<Parameter> params;
  for (const auto& p : j.header.at("parameters")) {
    Parameter param;
    param.name = p.at("name").get<std::string>();
    param.scale = scale_named(p.at("scale").get<std::string>());
    for (const auto& v : p.at("values")) param.values.push_back(typed_value(v.get<std::string>(), param.name, j));
    params.push_back(std::move(param));
  }
  SearchSpace space(std::move(params), j.header.value("rules", std::vector<std::string>{}),
                    j.header.value("rule_facts", std::map<std::string, double>{}));
  if (space.hash() != j.header.value("space_hash", ""))
    throw JournalError("the header's parameters do not match its space_hash; not a journal this tool wrote");
  return space;
}

Spec spec_of(const std::filesystem::path& path, const JournalContents& j) {
  const auto& h = j.header;
  Spec spec;
  spec.file = h.value("spec_file", "");
  spec.workload.kind = h.value("workload", "");
  spec.space = space_of(j);
  spec.search.strategy = h.value("strategy", "");
  spec.search.seed = h.value("seed", std::uint64_t{0});
  if (h.contains("budget")) {
    spec.search.budget_trials = h["budget"].value("trials", 0);
    spec.search.budget_seconds = h["budget"].value("seconds", 0.0);
  }
  for (const auto& a : h.value("initial", nlohmann::json::array()))
    if (auto c = spec.space.from_assignment(assignment_from_json(a))) spec.search.initial.push_back(*c);
  spec.search.confirm = h.value("confirm", 0);
  spec.search.explain = h.value("explain", false);  // journals from before it knew no explanation
  if (h.contains("effective_batch") && h["effective_batch"].is_number_integer())
    spec.effective_batch = h["effective_batch"].get<std::int64_t>();
  spec.ranks = h.value("ranks", std::int64_t{1});
  if (h.contains("limits")) {
    spec.limits.vram_bytes = h["limits"].value("vram_bytes", 0.0);
    spec.limits.ram_bytes = h["limits"].value("ram_bytes", 0.0);
  }
  spec.output.journal = path;
  return spec;
}

Config config_in(const SearchSpace& space, const JournalTrial& t) {
  auto c = space.from_assignment(t.config);
  if (!c) throw JournalError("trial " + std::to_string(t.trial) + " has a configuration outside the journal's space");
  return *c;
}

// The run's own word on its answer (the last `answer` record) over what
// the rule, replayed, gives: a build whose rule changed still reports the
// answer the run printed. Its figure is its latest ok measurement.
void read_answer(const SearchSpace& space, const JournalAnswer& a, Study& r, std::string& rule) {
  if (!a.rule.empty()) rule = a.rule;
  if (!a.config) return;
  const auto c = space.from_assignment(*a.config);
  if (!c) throw JournalError("the answer record's configuration is outside the journal's space");
  if (r.best == c) return;
  std::optional<Outcome> seen;
  for (const auto* records : {&r.trials, &r.confirmations})
    for (const TrialRecord& t : *records)
      if (t.config == *c && t.outcome.ok()) seen = t.outcome;
  if (!seen) throw JournalError("the answer record names a configuration with no ok measurement");
  r.best = *c;
  r.best_outcome = *seen;
  r.nearer_than.reset();
}

// run_tuning's ending, from the record: the strategy's recommendation, then
// the confirmations, then the baseline.
std::string decide_answer(const Spec& spec, const JournalContents& j, Study& r) {
  std::string strategy_named;  // empty: a strategy this build does not know
  bool explanation_moved = false;
  std::unique_ptr<Strategy> strategy;
  // A journal that says what the strategy recommended needs no replay.
  if (!j.recommendation && find_strategy(spec.search.strategy))
    strategy = make_strategy(spec.search.strategy,
                             strategy_context(spec.space, spec.search.seed, spec.search.budget_trials,
                                              spec.search.initial, spec.limits,
                                              spec.search.options_of(spec.search.strategy)));
  for (const JournalTrial* t : finished_search_trials(j))
    r.add(t->trial, config_in(spec.space, *t), Phase::search, *t->outcome, true);
  // The search's trials as the run read them: against the control measured nearest each.
  for (const auto& t : j.trials)
    if (t.phase == Phase::control && t.outcome) r.add(t.trial, config_in(spec.space, t), Phase::control, *t.outcome, true);
  if (const auto control = drift_control_config(r, spec.search.initial); control && !r.controls.empty())
    apply_drift_control(r, *control);
  if (strategy)
    for (const auto& t : r.trials) strategy->tell(t.config, t.outcome);
  std::optional<Config> recommended;
  if (j.recommendation || strategy) {
    if (!j.recommendation) {
      recommended = strategy->recommend();
    } else if (*j.recommendation) {
      recommended = spec.space.from_assignment(**j.recommendation);
      if (!recommended) throw JournalError("the recommended configuration is outside the journal's space");
    }
    strategy_named = spec.search.strategy;
  }
  r.choose_answer(recommended, spec.search.initial, spec.space.index_of("precision"));

  // The measurements after the search, each where the run kept it.
  for (const auto& t : j.trials)
    if (after_search_records(r, t.phase) && t.outcome && t.phase != Phase::control)
      r.add(t.trial, config_in(spec.space, t), t.phase, *t.outcome, true);
  std::vector<Config> confirmed_configs;
  for (const auto& t : r.confirmations)
    if (std::find(confirmed_configs.begin(), confirmed_configs.end(), t.config) == confirmed_configs.end())
      confirmed_configs.push_back(t.config);
  if (!r.confirmations.empty()) {
    // An older journal does not say how many were to be confirmed: those it measured.
    const int n = spec.search.confirm > 0 ? spec.search.confirm : static_cast<int>(confirmed_configs.size());
    choose_confirmed(confirm_candidates(r.trials, r.best, n), r);
  }
  if (!spec.search.initial.empty()) r.find_baseline(spec.search.initial.front());
  if (spec.search.explain && r.baseline) {
    const std::optional<Config> before = r.best;
    explain_answer(r, spec.space, [&r](const Config& c) { return earlier_measurement(r, c); });
    explanation_moved = r.best != before;
  }
  r.keep_baseline_unless_shown_faster();
  std::string rule = answer_rule_words(strategy_named, r, explanation_moved);
  if (!j.answers.empty()) read_answer(spec.space, j.answers.back(), r, rule);
  return rule;
}

RunState state_of(const std::filesystem::path& path, const Spec& spec, const JournalContents& j,
                  const Study& r) {
  RunState s;
  s.torn_last_line = j.dropped_torn_line;
  s.in_flight = r.trials_in(TrialState::running);
  // A measurement after the search that a later session did not take
  // again (it measured what its own answer needed) is not due: a search
  // trial cut short is, and so is the last trial started.
  int last = 0;
  for (const TrialEntry& e : r.log) last = std::max(last, e.trial);
  for (const TrialEntry& e : r.log)
    if (e.state == TrialState::cut_short && (e.phase == Phase::search || e.trial == last))
      s.cut_short.push_back(e.trial);
  SearchSpec search = spec.search;
  // The run's own word on how it ended, with the budget then in force (a
  // resume may have changed it); an older journal's end is inferred.
  const JournalEnd* end = j.ends.empty() ? nullptr : &j.ends.back();
  // Anything started after the last end belongs to a run still going (or killed).
  if (end && !s.in_flight.empty()) end = nullptr;
  if (end) {
    search.budget_trials = end->budget_trials;
    search.budget_seconds = end->budget_seconds;
  }
  const double last_time = r.elapsed_s;
  std::set<Config> distinct;
  for (const auto& t : r.trials) distinct.insert(t.config);
  const auto all = spec.space.enumerate();
  const std::optional<SetupFault> setup = setup_stop(r.trials, search.budget_trials);
  if (end) {
    s.stopped_by = run_end_named(end->reason);
  } else if (setup) {
    s.stopped_by = RunEnd::setup_failed;
  } else if (search.budget_trials > 0 && static_cast<int>(r.trials.size()) >= search.budget_trials) {
    s.stopped_by = RunEnd::budget;
  } else if (search.budget_seconds > 0 && last_time >= search.budget_seconds) {
    s.stopped_by = RunEnd::time;
  } else if (all && distinct.size() >= all->size()) {
    s.stopped_by = RunEnd::exhausted;
  } else {
    s.stopped_by = RunEnd::unfinished;
  }
  const bool ended_whole = s.stopped_by != RunEnd::unfinished && s.stopped_by != RunEnd::interrupted &&
                           s.stopped_by != RunEnd::failed && s.stopped_by != RunEnd::setup_failed;
  const std::size_t confirm_due =
      std::min<std::size_t>(static_cast<std::size_t>(std::max(0, search.confirm)),
                            static_cast<std::size_t>(std::count_if(r.trials.begin(), r.trials.end(),
                                                                   [](const TrialRecord& t) { return t.outcome.ok(); })));
  const bool confirm_done = r.confirmations.size() >= confirm_due;
  s.complete = ended_whole && s.in_flight.empty() && s.cut_short.empty() && !s.torn_last_line && confirm_done;

  std::error_code ec;
  const auto written = std::filesystem::last_write_time(path, ec);
  if (!ec)
    s.seconds_since_write =
        std::chrono::duration<double>(std::filesystem::file_time_type::clock::now() - written).count();

  if (setup && s.stopped_by == RunEnd::setup_failed)
    s.notes.push_back(fmt::format("{}; to fix: {}", describe_setup_stop(*setup, search.budget_trials),
                                  setup_fix(*setup)));
  else if (s.stopped_by == RunEnd::budget)
    s.notes.push_back(fmt::format("the trial budget ({}) was spent", search.budget_trials));
  else if (s.stopped_by == RunEnd::time)
    s.notes.push_back(fmt::format("the time budget ({:.0f} s) was spent", search.budget_seconds));
  else if (s.stopped_by == RunEnd::exhausted)
    s.notes.push_back("every valid configuration was measured");
  else if (s.stopped_by == RunEnd::converged)
    s.notes.push_back("the strategy converged (budget: until_converged)");
  else if (s.stopped_by == RunEnd::interrupted)
    s.notes.push_back(fmt::format("interrupted after {} search trial{}; --resume carries on", r.trials.size(),
                                  r.trials.size() == 1 ? "" : "s"));
  else if (s.stopped_by == RunEnd::failed)
    s.notes.push_back("the tool itself failed" + (end && !end->failure.empty() ? ": " + end->failure : std::string()) +
                      "; every finished trial is kept");
  else
    s.notes.push_back(fmt::format("cut short: {} of {} search trials finished; the run was interrupted or is "
                                  "still going",
                                  r.trials.size(),
                                  search.budget_trials > 0 ? std::to_string(search.budget_trials) : "?"));
  if (!s.in_flight.empty()) {
    std::string ids;
    for (int t : s.in_flight) ids += (ids.empty() ? "" : ", ") + std::to_string(t);
    s.notes.push_back(fmt::format("{} trial{} started and never finished (trial {}): still running, or stopped "
                                  "with the tuner; --resume runs {} again",
                                  s.in_flight.size(), s.in_flight.size() == 1 ? "" : "s", ids,
                                  s.in_flight.size() == 1 ? "it" : "them"));
  }
  if (!s.cut_short.empty()) {
    std::string ids;
    for (int t : s.cut_short) ids += (ids.empty() ? "" : ", ") + std::to_string(t);
    s.notes.push_back(fmt::format("{} trial{} cut short when the run ended (trial {}); --resume runs {} again",
                                  s.cut_short.size(), s.cut_short.size() == 1 ? " was" : "s were", ids,
                                  s.cut_short.size() == 1 ? "it" : "them"));
  }
  if (s.torn_last_line)
    s.notes.push_back("the journal's last line is torn (a write in progress, or the tuner died mid-write); it was "
                      "left out");
  if (!confirm_done && ended_whole)
    s.notes.push_back(fmt::format("the re-measurements after the search ({} of {}) had not finished",
                                  r.confirmations.size(), confirm_due));
  if (!s.complete && !end && s.seconds_since_write && *s.seconds_since_write < 120)
    s.notes.push_back(fmt::format("the journal was written {:.0f} s before this report was made: the run may still "
                                  "be going",
                                  *s.seconds_since_write));
  return s;
}

}  // namespace

std::vector<const JournalTrial*> finished_search_trials(const JournalContents& j) {
  std::vector<const JournalTrial*> out;
  for (const auto& t : j.trials)
    if (t.outcome && t.phase == Phase::search) out.push_back(&t);
  std::stable_sort(out.begin(), out.end(),
                   [](const JournalTrial* a, const JournalTrial* b) { return a->finish_time < b->finish_time; });
  return out;
}

JournalStudy read_journal_study(const std::filesystem::path& path) {
  JournalStudy s;
  s.path = path;
  s.journal = read_journal(path);
  try {
    s.spec = spec_of(path, s.journal);
  } catch (const JournalError& e) {
    throw JournalError(path.string() + ": " + e.what());
  } catch (const std::exception& e) {
    throw JournalError(path.string() + ": bad header: " + e.what());
  }
  try {
    s.answer_rule = decide_answer(s.spec, s.journal, s.result);
  } catch (const JournalError& e) {
    throw JournalError(path.string() + ": " + e.what());
  }
  for (const auto& t : s.journal.trials)
    s.result.elapsed_s = std::max({s.result.elapsed_s, t.start_time, t.finish_time});
  add_unfinished_trials(s.result, s.journal, s.spec.space);
  s.state = state_of(path, s.spec, s.journal, s.result);
  s.result.stopped_by = s.state.stopped_by;
  if (s.state.stopped_by == RunEnd::setup_failed)
    s.result.setup_failure = setup_stop(s.result.trials, s.spec.search.budget_trials);
  return s;
}

}  // namespace autotune
