// `autotune report JOURNAL --text`: the page's facts as a compact table for a
// terminal.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/printable.hpp"
#include "core/metric_names.hpp"
#include "tuner/record/racing.hpp"
#include "tuner/report/report_facts.hpp"
#include "tuner/report/report_html.hpp"
#include "tuner/record/explain.hpp"
#include "tuner/record/same_training.hpp"
#include "tuner/record/time_split.hpp"

namespace autotune {
namespace {

constexpr std::size_t kTrialRowsShown = 40;  // the fastest ones, with every failure; the page has them all

std::string improvements(const JournalStudy& s) {
  std::string out;
  double best = 0;
  // Each new best with its trial's own number, as the trial table shows it.
  for (const JournalTrial* t : finished_search_trials(s.journal)) {
    if (t->outcome->ok() && t->outcome->throughput > best) {
      best = t->outcome->throughput;
      out += fmt::format("{}{} (trial {})", out.empty() ? "" : " -> ", format_rate(best), t->trial);
    }
  }
  return out.empty() ? "no trial ran successfully" : out;
}

std::string trials_table(const JournalStudy& s) {
  const SearchSpace& space = s.spec.space;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> head = {"trial", "proposed"};
  for (const auto& p : space.params()) head.push_back(p.name);
  for (const char* h : {"status", "samples/s", "dev mem", "host mem", "seconds", "others"}) head.emplace_back(h);
  // Fastest first, failures and unfinished after: the table answers "what was fast".
  std::vector<const JournalTrial*> order;
  for (const auto& t : s.journal.trials) order.push_back(&t);
  auto rate = [](const JournalTrial* t) { return t->outcome && t->outcome->ok() ? t->outcome->throughput : -1.0; };
  std::stable_sort(order.begin(), order.end(), [&](auto* a, auto* b) { return rate(a) > rate(b); });
  std::size_t ok_shown = 0;
  for (const JournalTrial* t : order) {
    if (rate(t) >= 0 && ++ok_shown > kTrialRowsShown) continue;
    std::vector<std::string> row = {std::to_string(t->trial) + (t->phase == Phase::confirm ? "c" : t->phase == Phase::explain ? "e" : ""), t->proposed_as};
    for (const auto& p : space.params()) {
      const Value* v = t->config.find(p.name);
      row.push_back(v ? to_string(*v) : "");
    }
    if (!t->outcome) {
      row.insert(row.end(), {unfinished_status(*t), "", "", "", "", ""});
    } else {
      const Outcome& o = *t->outcome;
      row.insert(row.end(), {std::string(to_string(o.status)) + (o.raced() ? " (raced)" : ""),
                             o.ok() ? fmt::format("{:.1f}", o.throughput) : "",
                             memory_of(o, metric::vram_bytes), memory_of(o, metric::ram_bytes),
                             fmt::format("{:.1f}", o.seconds),
                             // cores other processes used meanwhile (tuner/run/machine_load.hpp)
                             o.get(metric::foreign_cores) ? fmt::format("{:.1f}", *o.get(metric::foreign_cores)) : ""});
    }
    rows.push_back(std::move(row));
  }
  std::vector<std::size_t> width(head.size());
  for (std::size_t c = 0; c < head.size(); ++c) {
    width[c] = head[c].size();
    for (const auto& r : rows) width[c] = std::max(width[c], r[c].size());
  }
  auto line = [&](const std::vector<std::string>& r) {
    std::string out = " ";
    for (std::size_t c = 0; c < r.size(); ++c) out += fmt::format(" {:<{}}", r[c], width[c]);
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(head);
  for (const auto& r : rows) out += line(r);
  if (ok_shown > kTrialRowsShown)
    out += fmt::format("  ({} slower ok trials not shown; the HTML report lists every trial)\n",
                       ok_shown - kTrialRowsShown);
  return out;
}

}  // namespace

std::string render_report_text(const JournalStudy& s) {
  const Study& r = s.result;
  const auto& h = s.journal.header;
  std::string out = fmt::format("autotune report: {}\n", s.path.string());
  out += fmt::format("run:      {} workload, {} strategy, seed {}; {} search trials ({}){} in {:.1f} s\n",
                     h.value("workload", "?"), h.value("strategy", "?"), s.spec.search.seed, r.trials.size(),
                     describe_counts(r),
                     r.confirmations.empty() ? "" : fmt::format(" + {} re-measurements", r.confirmations.size()),
                     r.elapsed_s);
  for (std::size_t i = 0; i < s.state.notes.size(); ++i)
    out += fmt::format("{}{}{}\n", i == 0 ? "state:    " : "          ",
                       i == 0 ? (s.state.complete ? "finished: " : "NOT FINISHED: ") : "", s.state.notes[i]);
  if (r.best && r.best_outcome) {
    out += "answer:   " + s.spec.space.to_assignment(*r.best).describe() + "\n";
    out += fmt::format("          {:.1f} samples/s", r.shown()->answer);
    if (auto x = r.speedup())
      out += fmt::format(", {:.2f}x the baseline ({:.1f} samples/s: {}){}", x->ratio, x->baseline,
                         s.spec.space.to_assignment(r.baseline->config).describe(),
                         x->remeasured ? fmt::format("; both measured again side by side, medians of {} runs: {:.1f} "
                                                     "against {:.1f}{}",
                                                     x->runs, x->answer, x->baseline,
                                                     x->low && x->high
                                                         ? fmt::format("; {:.2f}-{:.2f}x at 90% over {} pairs", *x->low,
                                                                       *x->high, x->runs)
                                                         : std::string())
                                       : "");
    if (auto x = r.speedup(); x && x->remeasured && x->others && *x->others >= metric::kBusyCores)
      out += fmt::format("\n          the pairs ran while other processes used {:.1f} cores: a machine that busy's "
                         "speedup; on a quiet one it may differ",
                         *x->others);
    out += "\n          chosen as " + s.answer_rule + "\n";
    for (std::size_t i = 0; i < r.knobs.size(); ++i)
      out += (i == 0 ? "moved:    " : "          ") + describe(r.knobs[i]) + "\n";
    if (const auto change = training_change(s.spec, r))
      for (const std::string& line : describe(*change)) out += "train:    " + line + "\n";
    const TimeSplit after = time_split(*r.best_outcome);
    const std::optional<TimeSplit> before =
        r.baseline && r.baseline->outcome.ok() ? std::optional<TimeSplit>(time_split(r.baseline->outcome)) : std::nullopt;
    if (before && before->known()) out += "why:      baseline " + describe(*before) + "\n";
    if (after.known()) out += std::string(before && before->known() ? "          " : "why:      ") + "answer   " +
                              describe(after) + "\n";
    for (const std::string& line : what_moved(r)) out += "          " + line + "\n";
    if (before)
      if (const std::string ranks = rank_starved(r.baseline->outcome); !ranks.empty() && *r.best != r.baseline->config)
        out += "          baseline: " + ranks + "\n";
    if (const std::string ranks = rank_starved(*r.best_outcome); !ranks.empty())
      out += std::string("          ") + (r.baseline && *r.best != r.baseline->config ? "answer: " : "") + ranks + "\n";
  } else {
    out += "answer:   none yet: no configuration ran successfully\n";
  }
  out += "progress: best " + improvements(s) + "\n";
  out += "knobs:    best samples/s at each value, failures by status\n";
  for (std::size_t d = 0; d < s.spec.space.dims(); ++d)
    out += fmt::format("  {:<16} {}\n", s.spec.space.param(d).name, knob_effect(s, d));
  const auto groups = failure_groups(s);
  out += groups.empty() ? "failures: none\n" : "failures:\n";
  for (const FailureGroup& g : groups) {
    std::string where;
    for (const auto& x : g.region) where += (where.empty() ? "" : ", ") + x;
    out += fmt::format("  {:<9} {:>3}  {}\n", to_string(g.status), g.count, where.empty() ? "anywhere tried" : where);
    for (const auto& [why, n] : g.reasons) out += fmt::format("  {:>13}x {}\n", n, why);
  }
  out += "trials:\n" + trials_table(s);
  if (const std::string ex = exports_of(s); !ex.empty()) out += ex.back() == '\n' ? ex : ex + "\n";
  // The table holds the jobs' words (failure reasons, proposals' notes):
  // none of their escape codes reach the terminal.
  return printable(out);
}

}  // namespace autotune
