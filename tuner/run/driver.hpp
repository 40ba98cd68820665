#pragma once
// The trial driver: the one loop that runs trials, whichever command asks
// (tune, compare, sweep, the bench programs). A source proposes trials (a
// strategy, a grid); the driver keeps the scheduler's slots full, and hands
// each finished trial to its observers (journal, progress, a CSV, compare's
// rows), then back to the source. Phases after the search (confirmation,
// explanation, re-measurement) measure one trial at a time through it.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/space.hpp"
#include "tuner/run/scheduler.hpp"
#include "tuner/record/study.hpp"

namespace autotune {

// One trial to run.
struct Proposal {
  Config config;
  std::string proposed_as;                // the strategy's word for it ("rerun", "explain", ...)
  Phase phase = Phase::search;
  std::optional<std::uint64_t> seed_key;  // default: the trial number
  double stop_below = 0;                  // its racing bar (0: measured in full)
  double ask_ms = 0;                      // what proposing it took
};

struct Finished {
  int trial = 0;
  Proposal proposal;
  Assignment config;
  Outcome outcome;  // repeats combined, limits applied
};

// Where a run's trials come from.
class TrialSource {
 public:
  virtual ~TrialSource() = default;
  // Why no trial may start now (budget, time, convergence), or none.
  virtual std::optional<RunEnd> stop_reason() { return std::nullopt; }
  // The next trial, or none for now: the driver waits for a trial in flight
  // and asks again; with none in flight the source is exhausted.
  virtual std::optional<Proposal> next() = 0;
  // A trial it proposed finished (told after the observers saw it).
  virtual void tell(const Finished&) {}
};

// What is told of each trial. Anything an observer throws stops every trial
// in flight and goes on to the driver's caller: a failure of the tool itself.
class TrialObserver {
 public:
  virtual ~TrialObserver() = default;
  virtual void started(int /*trial*/, const Proposal&, const Assignment&) {}
  virtual void finished(const Finished&) {}
};

class Driver {
 public:
  Driver(Scheduler& scheduler, const SearchSpace& space, std::vector<TrialObserver*> observers, int first_trial = 1);

  // Trials from `source` in every free slot until it stops or runs dry;
  // then waits for those in flight. Returns why it ended: the source's
  // stop reason, `interrupted` (Ctrl-C, or a trial cut short by it), else
  // `exhausted`.
  RunEnd run(TrialSource& source);
  // One trial alone, waited for; none when the run is interrupted, before
  // it or during it.
  std::optional<Finished> measure_one(Proposal p);

  int next_trial() const { return m_next_trial; }
  // Whether a trial of this configuration is in flight.
  bool running(const Config& c) const;
  int cut_short() const { return m_cut_short; }  // trials an interrupt cut short: observers never see them

 private:
  void start(int trial, Proposal p);
  std::optional<Finished> take(Scheduler::Done d);
  void abandon();  // stops every trial in flight, for a failure of the tool

  Scheduler& m_scheduler;
  const SearchSpace& m_space;
  std::vector<TrialObserver*> m_observers;
  std::map<int, Proposal> m_in_flight;
  int m_next_trial;
  int m_cut_short = 0;
};

}  // namespace autotune
