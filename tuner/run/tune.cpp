#include "tuner/run/tune.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <thread>

#include <fmt/format.h>

#include "core/metric_names.hpp"
#include "core/text.hpp"
#include "tuner/record/confirm.hpp"
#include "tuner/run/after_search.hpp"
#include "tuner/record/drift.hpp"
#include "tuner/run/driver.hpp"
#include "tuner/record/explain.hpp"
#include "tuner/run/interrupt.hpp"
#include "tuner/run/machine_load.hpp"
#include "tuner/record/journal.hpp"
#include "tuner/run/progress.hpp"
#include "tuner/record/racing.hpp"
#include "tuner/record/setup_stop.hpp"
#include "tuner/run/runner.hpp"
#include "tuner/run/scheduler.hpp"

namespace autotune {
namespace {

using Clock = std::chrono::steady_clock;
// One run of the loop: the study it fills, the journal it writes, the
// strategy it asks. Its trials run through the driver; it is the driver's
// source (the strategy, and the re-runs of a resumed journal) and its
// observer (the journal, the study, the progress line).
class TuningRun final : public TrialSource, public TrialObserver {
 public:
  TuningRun(const Spec& spec, Executor& executor, const TuneOptions& options)
      : m_spec(spec),
        m_space(spec.space),
        m_strategy(make_strategy(spec.search.strategy,
                                 strategy_context(spec.space, spec.search.seed, spec.search.budget_trials,
                                                  spec.search.initial, spec.limits,
                                                  spec.search.options_of(spec.search.strategy)))),
        m_scheduler(executor, trial_settings(spec)),
        m_progress(options.progress, options.live, options.verbose, spec.search.budget_trials),
        m_watch_machine(trial_settings(spec).watch_machine && spec.search.busy != "ignore") {
    const bool resuming = options.resume && std::filesystem::exists(spec.output.journal);
    int next_trial = 1;
    if (resuming) next_trial = replay();
    if (resuming) {
      std::optional<std::filesystem::path> aside;
      try {
        aside = cut_bad_tail(spec.output.journal, m_good_bytes);
      } catch (const JournalError& e) {
        throw TuneError(e.what());
      }
      if (aside)
        m_progress.say(fmt::format("the journal's last line was not a whole record: cut from {} and kept in {}",
                                   spec.output.journal.string(), aside->string()));
    }
    m_journal.emplace(spec.output.journal, /*fresh=*/!resuming);
    if (!resuming) m_journal->header(journal_header(spec));
    m_driver.emplace(m_scheduler, m_space, std::vector<TrialObserver*>{this}, next_trial);
  }

  Study run() {
    m_t0 = Clock::now();
    for (const auto& t : m_study.trials) m_progress.trial(t, best_of(t), elapsed(), ++m_done);
    guarded([&] {
      m_started = static_cast<int>(m_study.trials.size());
      m_study.stopped_by = m_driver->run(*this);
      // Trials in flight when the budget ran out may show the broken set-up.
      if (m_study.setup_failure && m_study.stopped_by != RunEnd::interrupted)
        m_study.stopped_by = RunEnd::setup_failed;
      release_held();
    });
    std::optional<Config> recommended;
    // Journaled, so that the report reads the answer rather than replaying the strategy.
    if (m_study.stopped_by != RunEnd::failed)
      guarded([&] {
        recommended = m_strategy->recommend();
        m_journal->recommended(recommended ? std::optional<Assignment>(m_space.to_assignment(*recommended))
                                           : std::nullopt,
                               m_strategy->name(), elapsed());
      });
    m_study.choose_answer(recommended, m_spec.search.initial, m_space.index_of("precision"));
    // The measurements after the search, each while the run was neither interrupted nor failed.
    auto going_on = [&] {
      return m_study.stopped_by != RunEnd::interrupted && m_study.stopped_by != RunEnd::failed &&
             m_study.stopped_by != RunEnd::setup_failed;
    };
    if (m_spec.search.confirm > 0 && going_on()) guarded([&] { confirm(); });
    if (!m_spec.search.initial.empty()) m_study.find_baseline(m_spec.search.initial.front());
    const int rounds = remeasure_rounds(m_spec);
    if (rounds > 0 && going_on()) m_study.let_pairs_decide_over_occam();
    const std::optional<Config> before_explaining = m_study.best;
    if (m_spec.search.explain && going_on()) guarded([&] { explain(); });
    const bool explanation_moved = m_study.best != before_explaining;
    if (rounds > 0 && going_on()) guarded([&] { remeasure(rounds); });
    if (rounds > 0) m_study.keep_baseline_unless_shown_faster();
    m_study.end_running();  // those an interrupt or a failure cut short
    m_progress.finish();
    m_study.elapsed_s = elapsed();
    // Journaled, so that the report reads the answer as printed, and how the run ended.
    if (m_study.stopped_by != RunEnd::failed)
      guarded([&] { m_journal->answered(answer_record(explanation_moved)); });
    guarded([&] {
      m_journal->ended({std::string(run_end_name(m_study.stopped_by)), m_spec.search.budget_trials,
                        m_spec.search.budget_seconds, m_study.elapsed_s, m_study.failure});
    });
    return std::move(m_study);
  }

  // The answer as the summary prints it (JournalAnswer).
  JournalAnswer answer_record(bool explanation_moved) const {
    JournalAnswer a;
    if (m_study.best) a.config = m_space.to_assignment(*m_study.best);
    a.rule = answer_rule_words(m_strategy->name(), m_study, explanation_moved);
    if (const auto shown = m_study.shown()) {
      a.throughput = shown->answer;
      a.baseline_throughput = shown->baseline;
      a.runs = shown->runs;
      a.remeasured = shown->remeasured;
    }
    if (const auto x = m_study.speedup()) {
      a.speedup = x->ratio;
      a.low = x->low;
      a.high = x->high;
      a.others_cores = x->others;
    }
    if (m_study.kept_baseline_over) a.kept_baseline_over = m_space.to_assignment(*m_study.kept_baseline_over);
    a.time = elapsed();
    return a;
  }

  // The source: re-runs first, then the strategy.
  std::optional<RunEnd> stop_reason() override {
    if (m_study.setup_failure) return RunEnd::setup_failed;
    if (m_spec.search.budget_trials > 0 && m_started >= m_spec.search.budget_trials) return RunEnd::budget;
    if (m_spec.search.budget_seconds > 0 && elapsed() >= m_spec.search.budget_seconds) return RunEnd::time;
    if (m_spec.search.until_converged && m_strategy->converged()) return RunEnd::converged;
    return std::nullopt;
  }

  std::optional<Proposal> next() override {
    std::optional<Proposal> p;
    if (m_control_due && !m_control_in_flight && m_control) {
      m_control_due = false;
      m_control_in_flight = true;
      return Proposal{*m_control, "control", Phase::control};
    }
    if (m_control_in_flight) return std::nullopt;  // the trials after it wait for it
    if (const std::vector<Config> pending = m_study.pending(); !pending.empty()) {
      p = Proposal{pending.front(), "rerun"};  // its pending entry goes as it starts
    } else {
      // The strategy does not know of a re-run in flight and may propose its
      // configuration: that trial's outcome will answer this proposal too.
      while (auto c = m_strategy->ask()) {
        if (!m_driver->running(*c)) {
          p = Proposal{std::move(*c), std::string(m_strategy->proposed_as())};
          break;
        }
      }
    }
    if (!p) return std::nullopt;
    const std::optional<double> load = recent_foreign_cores();
    if (m_spec.search.busy == "wait" && load && *load >= kBusyCores) wait_for_quiet(*load);
    p->stop_below = race_bar(m_study.trials, m_spec.search.race_margin);
    // Trials are read against the control (tuner/record/drift.hpp): the bar,
    // in those terms, is put back in the terms of the latest control
    // measurement. Beyond it, under more load than the bar was measured
    // with, the bar is lowered by the share of the cores the load takes,
    // and with (almost) no core left the trial is measured in full.
    std::optional<double> bar_load;
    if (const TrialRecord* bar = best_full_trial(m_study.trials)) bar_load = bar->outcome.get(metric::foreign_cores);
    if (m_control && !m_study.controls.empty()) {
      p->stop_below /= drift_factor_now(m_study, *m_control);
      bar_load = m_study.controls.back().outcome.get(metric::foreign_cores);
    }
    if (p->stop_below > 0 && load && bar_load) {
      const double cores = usable_cores();
      const double then = *bar_load;
      if (*load >= then + kBusyCores) {
        const double left = cores - std::min(*load, cores);
        p->stop_below = left < 0.5 ? 0 : p->stop_below * std::min(1.0, left / std::max(0.5, cores - then));
        if (!m_said_no_race) {
          m_said_no_race = true;
          m_progress.say(fmt::format("the machine is busier ({:.1f} of {:.0f} cores used by other processes) than "
                                     "when the incumbent was measured ({:.1f}): trials are raced against a bar "
                                     "lowered to match, or measured in full",
                                     *load, cores, then));
        }
      }
    }
    ++m_started;
    return p;
  }

  // A search trial is told to the strategy as read against the control;
  // while a control measurement is due or running, the trials wait for it,
  // so that the one that saw the load change is read with it.
  void tell(const Finished& f) override {
    if (f.proposal.phase == Phase::control) {
      m_control_in_flight = false;
      m_since_control = 0;
      m_last_changed = false;
      m_control_load = f.outcome.get(metric::foreign_cores).value_or(m_control_load);
      release_held();
      return;
    }
    if (f.proposal.phase != Phase::search) return tell_strategy(f.proposal.config, f.outcome);
    if (!m_control && m_watch_machine) {
      m_control = drift_control_config(m_study, m_spec.search.initial);
      if (m_control)
        for (const auto& t : m_study.trials)
          if (t.config == *m_control) m_control_load = t.outcome.get(metric::foreign_cores).value_or(0);
    }
    ++m_since_control;
    // A change of load counts once it held over the last two trials (one
    // trial's reading may be a burst), and at most every third trial.
    const double load = f.outcome.get(metric::foreign_cores).value_or(m_control_load);
    const bool changed = std::abs(load - m_control_load) >= kBusyCores;
    const bool held = changed && m_last_changed;
    m_last_changed = changed;
    if (m_control && !m_control_due && !m_control_in_flight)
      m_control_due = m_since_control >= kControlEvery || (held && m_since_control >= kControlAfterChange);
    m_held.push_back(f.trial);
    if (!m_control_due && !m_control_in_flight) release_held();
  }

  // The held search trials, told as read against the controls measured so far.
  void release_held() {
    if (m_held.empty()) return;
    if (m_control) apply_drift_control(m_study, *m_control);
    for (const int trial : m_held)
      for (const auto& t : m_study.trials)
        if (t.trial == trial) tell_strategy(t.config, t.outcome);
    m_held.clear();
  }

  void tell_strategy(const Config& c, const Outcome& o) {
    m_strategy->tell(c, o);
    for (auto& note : m_strategy->take_notes()) {
      m_journal->note(note, elapsed());
      m_progress.note(note);
      m_study.notes.push_back(std::move(note));
    }
  }

  // The observer: every trial journaled; a search trial also goes to the
  // study and the progress line.
  void started(int trial, const Proposal& p, const Assignment& a) override {
    m_journal->started(trial, a, elapsed(), p.phase, p.proposed_as);
    m_study.start(trial, p.config, p.phase, runs_again(p.phase, p.proposed_as));
  }

  void finished(const Finished& f) override {
    m_journal->finished(f.trial, f.config, f.outcome, elapsed(), f.proposal.phase);
    if (f.proposal.phase == Phase::control) {
      m_study.add(f.trial, f.proposal.config, Phase::control, f.outcome);
      const double before = m_control ? drift_factor_now(m_study, *m_control) : 1.0;
      m_progress.say(fmt::format("control trial {}: {} ({}){}", f.trial,
                                 f.outcome.ok() ? fmt::format("{:.1f} samples/s", f.outcome.throughput)
                                                : std::string(to_string(f.outcome.status)),
                                 m_space.to_assignment(f.proposal.config).describe(),
                                 before != 1.0 ? fmt::format("; later trials read x{:.2f} against it", before)
                                               : std::string()));
      return;
    }
    if (f.proposal.phase != Phase::search) return;
    m_study.add(f.trial, f.proposal.config, Phase::search, f.outcome);
    if (!m_study.setup_failure) m_study.setup_failure = setup_stop(m_study.trials, m_spec.search.budget_trials);
    m_progress.trial(m_study.trials.back(), best_of(m_study.trials.back()), elapsed(), ++m_done);
    if (f.outcome.has(metric::warm_ran_cold) && !m_said_cold) {
      m_said_cold = true;
      m_progress.say("warm: true, but the script never entered autotune_trial.trials(): each trial starts it "
                     "anew (cold)");
    }
  }

 private:
  // Resume: replay finished trials through tell(); queue unfinished ones.
  // Returns the next trial's number.
  int replay() {
    Replay r;
    try {
      JournalContents contents = read_journal(m_spec.output.journal);
      m_good_bytes = contents.good_bytes;
      const nlohmann::json header = contents.header;
      r = replay_journal(std::move(contents), m_space, m_spec.output.journal);
      if (const auto change = workload_change(header, m_spec))
        throw TuneError(fmt::format("{} was measured with another workload ({}); refusing to resume: its figures "
                                    "would mix with this workload's",
                                    m_spec.output.journal.string(), *change));
    } catch (const JournalError& e) {
      throw TuneError(e.what());
    } catch (const StudyError& e) {
      throw TuneError(e.what());
    }
    m_study = std::move(r.study);
    m_earlier_s = r.earlier_s;
    if (m_watch_machine) m_control = drift_control_config(m_study, m_spec.search.initial);
    if (m_control) {
      apply_drift_control(m_study, *m_control);
      for (const auto& t : m_study.trials)
        if (t.config == *m_control) m_control_load = t.outcome.get(metric::foreign_cores).value_or(0);
      if (!m_study.controls.empty())
        m_control_load = m_study.controls.back().outcome.get(metric::foreign_cores).value_or(m_control_load);
    }
    for (const auto& t : m_study.trials) m_strategy->tell(t.config, t.outcome);
    return r.next_trial;
  }

  // Other processes' cores since the last look (nullopt: not watched, or too soon to say).
  std::optional<double> recent_foreign_cores() {
    if (!m_watch_machine) return std::nullopt;
    const LoadSnapshot now = take_load_snapshot();
    std::optional<double> f = foreign_cores(m_last_look, now);
    const double since = std::chrono::duration<double>(now.at - m_last_look.at).count();
    if (!f || since < 0.5) {
      std::optional<double> last;  // too soon: what the last trial read
      for (const auto& t : m_study.trials)
        if (auto x = t.outcome.get(metric::foreign_cores)) last = x;
      if (last) return last;
      // Before the first trial: a short look.
      std::this_thread::sleep_for(std::chrono::duration<double>(0.5 - std::max(0.0, since)));
      const LoadSnapshot later = take_load_snapshot();
      f = foreign_cores(m_last_look, later);
      m_last_look = later;
      return f;
    }
    m_last_look = now;
    return f;
  }

  // search.busy: wait: the next trial starts once the machine has been quiet
  // for two looks of a second, or after a minute (then it is measured anyway,
  // and the summary says how busy the machine was).
  // Returns whether the machine became quiet.
  bool wait_for_quiet(double load, double max_wait_s = 60, std::string_view before = "the next trial (search.busy: wait)") {
    const double kMaxWaitS = max_wait_s;
    m_progress.say(fmt::format("the machine is busy ({:.1f} cores used by other processes): waiting up to {:.0f}s "
                               "for it to be quiet before {}",
                               load, kMaxWaitS, before));
    const auto t0 = Clock::now();
    int quiet = 0;
    while (quiet < 2 && !interrupted() && std::chrono::duration<double>(Clock::now() - t0).count() < kMaxWaitS) {
      const auto f = sample_foreign_cores(1.0);
      quiet = f && *f < kBusyCores ? quiet + 1 : 0;
    }
    m_last_look = take_load_snapshot();
    const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
    m_progress.say(quiet >= 2 ? fmt::format("the machine is quiet again after {:.0f}s; carrying on", waited)
                              : fmt::format("still busy after {:.0f}s; measuring anyway", waited));
    return quiet >= 2;
  }

  double elapsed() const { return m_earlier_s + std::chrono::duration<double>(Clock::now() - m_t0).count(); }

  std::optional<double> best_of(const TrialRecord& t) {
    if (t.outcome.ok() && (!m_best || t.outcome.throughput > *m_best)) m_best = t.outcome.throughput;
    return m_best;
  }

  // A failure of the tool itself (a journal write, the strategy, a bug) ends
  // the run as a value: new trials stop, running ones are stopped, every
  // finished record stays.
  void guarded(const std::function<void()>& step) {
    try {
      step();
    } catch (const std::exception& e) {
      fail(e.what());
    } catch (...) {
      fail("an unknown exception");
    }
  }
  void fail(const std::string& what) {
    m_scheduler.stop_all();
    m_study.stopped_by = RunEnd::failed;
    m_study.failure = std::string(first_line(what));
  }

  // The measurements after the search (tuner/run/after_search.hpp), each a
  // source the driver runs; an interrupt ends the run there.
  void run_after_search(TrialSource& source) {
    if (m_driver->run(source) == RunEnd::interrupted) m_study.stopped_by = RunEnd::interrupted;
  }

  // search.confirm: re-measure the best few, one at a time; those the
  // journal already has (a resumed run) are not measured again.
  void confirm() {
    const std::vector<Config> candidates = confirm_candidates(m_study.trials, m_study.best, m_spec.search.confirm);
    ConfirmSource source(m_study, candidates, [&](const TrialRecord& t, int i, int n) {
      m_progress.confirm(t, m_study.search_throughput(t.config), i, n, elapsed());
    });
    run_after_search(source);
    choose_confirmed(candidates, m_study);
  }

  // search.explain: the answer with each moved knob put back, measured
  // where no earlier measurement (the journal's, a search trial's) serves.
  void explain() {
    ExplainSource source(m_study, m_space, [&](const TrialRecord& t) {
      m_progress.explain(t, m_space.to_assignment(t.config).describe(), elapsed());
    });
    run_after_search(source);
    if (m_study.stopped_by == RunEnd::interrupted) source.finish();
  }

  // search.remeasure: the baseline and the answer side by side in pairs
  // (PairsSource). The speedup reported is theirs, not the search's single
  // runs minutes apart (and the fastest of many, which selection inflates).
  void remeasure(int max_pairs) {
    if (!m_study.baseline || !m_study.best || *m_study.best == m_study.baseline->config) return;
    // A pair starts on a quiet machine where it can: the speedup printed is
    // then the one a quiet machine gives. Once a wait ends with the machine
    // still busy, the load is taken as lasting and the pairs go on under it
    // (the summary says how busy it was).
    std::function<bool()> before_pair;
    if (m_spec.search.busy != "ignore")
      before_pair = [&] {
        const auto load = recent_foreign_cores();
        return !load || *load < kBusyCores ||
               wait_for_quiet(*load, m_spec.search.busy == "wait" ? 60 : 30, "the next side-by-side pair");
      };
    PairsSource source(m_study, max_pairs, before_pair, [&](const TrialRecord& t, const char* which, int done, int of) {
      m_progress.remeasure(t, which, done, of, elapsed());
    });
    run_after_search(source);
  }

  const Spec& m_spec;
  const SearchSpace& m_space;
  std::unique_ptr<Strategy> m_strategy;
  Scheduler m_scheduler;
  std::optional<Driver> m_driver;
  Progress m_progress;
  std::optional<JournalWriter> m_journal;
  Study m_study;
  double m_earlier_s = 0;
  std::size_t m_good_bytes = 0;  // the resumed journal's whole records
  Clock::time_point m_t0 = Clock::now();
  std::optional<double> m_best;
  int m_done = 0;
  int m_started = 0;
  bool m_said_cold = false;
  bool m_said_no_race = false;
  // Drift control (tuner/record/drift.hpp): the control, whether a
  // measurement of it is due or running, the search trials since the last
  // one, the load it was measured under, the trials told once it is back.
  static constexpr int kControlEvery = 10;
  static constexpr int kControlAfterChange = 3;
  bool m_last_changed = false;  // the last search trial's load differed from the control's
  std::optional<Config> m_control;
  bool m_control_due = false, m_control_in_flight = false;
  int m_since_control = 0;
  double m_control_load = 0;
  std::vector<int> m_held;
  bool m_watch_machine = false;
  LoadSnapshot m_last_look = take_load_snapshot();
};

}  // namespace

Study run_tuning(const Spec& spec, Executor& executor, const TuneOptions& options) {
  return TuningRun(spec, executor, options).run();
}

Study run_tuning(const Spec& spec, const MeasureFn& measure, const TuneOptions& options) {
  auto executor = make_local_executor(measure, std::max(1, spec.search.parallel));
  return run_tuning(spec, *executor, options);
}

}  // namespace autotune
