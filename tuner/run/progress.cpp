#include "tuner/run/progress.hpp"

#include <cmath>

#include <fmt/format.h>

#include "core/metric_names.hpp"
#include "core/printable.hpp"
#include "core/text.hpp"
#include "tuner/record/tuning_time.hpp"

namespace autotune {
namespace {

// "  <first line of a failure's reason>", cut to a readable length, its
// control characters shown as text (the job's words: core/printable.hpp).
std::string reason_suffix(const Outcome& o) {
  if (o.ok() || o.reason.empty()) return {};
  std::string line = printable(first_line(o.reason));
  if (line.size() > 200) line = line.substr(0, 197) + "...";
  return "  " + line;
}

// A trial's figure: its throughput, or its status when it failed.
std::string figure(const Outcome& o) {
  return o.ok() ? fmt::format("{:.1f} samples/s", o.throughput) : std::string(to_string(o.status));
}

}  // namespace

void Progress::trial(const TrialRecord& t, const std::optional<double>& best, double elapsed, int done) {
  if (!m_out) return;
  std::string what = figure(t.outcome);
  if (t.outcome.raced()) what += fmt::format(" (raced, {:.1f}s)", t.outcome.seconds);
  if (t.outcome.ok() && t.outcome.has(metric::stopped_after_result))
    what += " (gave its result but did not exit: stopped, result kept)";
  std::string eta;
  if (m_budget > 0 && done > 0 && done < m_budget) eta = "  eta " + format_duration(elapsed / done * (m_budget - done));
  // The trial's own number, as in the journal and its log folder
  // (trial-N/); then how many of the budget are done.
  const std::string count = m_budget > 0 ? fmt::format("{}/{}", done, m_budget) : std::to_string(done);
  const std::string best_s = best ? fmt::format("{:.1f}", *best) : "-";
  if (m_live) {
    *m_out << fmt::format("\r\033[Ktrial {} ({})  {}  best {}  elapsed {}{}", t.trial, count, what, best_s,
                          format_duration(elapsed), eta)
           << std::flush;
  } else {
    // A failure's reason comes last, its first line only (the job's own
    // words: the trial's log folder has the whole output).
    *m_out << fmt::format("trial {} ({})  {}{}  best {}  elapsed {}{}{}\n", t.trial, count, what,
                          t.replayed ? "  (from the journal)" : "", best_s, format_duration(elapsed), eta,
                          reason_suffix(t.outcome));
  }
  m_dirty = m_live;
}

void Progress::confirm(const TrialRecord& t, double search_throughput, int i, int n, double elapsed) {
  if (!m_out) return;
  finish();
  *m_out << fmt::format("confirm {}/{}  {}  (in the search {:.1f}){}  elapsed {}{}\n", i, n, figure(t.outcome),
                        search_throughput,
                        t.replayed ? "  (from the journal)" : "", format_duration(elapsed), reason_suffix(t.outcome));
}

void Progress::note(const std::string& text) {
  if (!m_out || !m_verbose) return;
  finish();
  *m_out << "note: " << printable(text) << "\n";
}

void Progress::explain(const TrialRecord& t, const std::string& config, double elapsed) {
  if (!m_out) return;
  finish();
  *m_out << fmt::format("explain trial {}  {}  ({})  elapsed {}{}\n", t.trial, figure(t.outcome), printable(config),
                        format_duration(elapsed), reason_suffix(t.outcome));
}

void Progress::remeasure(const TrialRecord& t, const std::string& which, int i, int n, double elapsed) {
  if (!m_out) return;
  finish();
  *m_out << fmt::format("again {}/{}  {:<8}  {}  elapsed {}{}\n", i, n, which, figure(t.outcome),
                        format_duration(elapsed), reason_suffix(t.outcome));
}

void Progress::say(const std::string& text) {
  if (!m_out) return;
  finish();
  *m_out << "autotune: " << printable(text) << "\n";
}

void Progress::finish() {
  if (m_out && m_dirty) *m_out << "\n";
  m_dirty = false;
}

}  // namespace autotune
