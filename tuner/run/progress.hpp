#pragma once
// What a tuning run prints as it goes: a line per trial (or one live line on
// a terminal), a line per confirmation, and with --verbose the search's notes.
#include <optional>
#include <ostream>
#include <string>

#include "tuner/record/study.hpp"

namespace autotune {


class Progress {
 public:
  // out: nullptr for silence; live: rewrite one line (a terminal).
  Progress(std::ostream* out, bool live, bool verbose, int budget)
      : m_out(out), m_live(live), m_verbose(verbose), m_budget(budget) {}
  void trial(const TrialRecord& t, const std::optional<double>& best, double elapsed, int done);
  // A re-measurement after the search (search.confirm).
  void confirm(const TrialRecord& t, double search_throughput, int i, int n, double elapsed);
  void note(const std::string& text);
  // An explanation trial: the answer with a knob put back (tuner/record/explain.hpp).
  void explain(const TrialRecord& t, const std::string& config, double elapsed);
  // A side-by-side re-measurement of the baseline or the answer (search.remeasure), i of n.
  void remeasure(const TrialRecord& t, const std::string& which, int i, int n, double elapsed);
  // A line the user should see whatever --verbose says ("autotune: ...").
  void say(const std::string& text);
  void finish();

 private:
  std::ostream* m_out;
  bool m_live;
  bool m_verbose;
  int m_budget;
  bool m_dirty = false;
};

}  // namespace autotune
