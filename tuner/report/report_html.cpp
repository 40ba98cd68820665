#include "tuner/report/report_html.hpp"

#include "core/metric_names.hpp"
#include "tuner/record/explain.hpp"
#include "tuner/record/same_training.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "tuner/record/emitter.hpp"
#include "tuner/report/html_page.hpp"
#include "tuner/record/racing.hpp"
#include "tuner/report/report_facts.hpp"
#include "tuner/report/report_plots.hpp"
#include "tuner/record/time_split.hpp"

namespace autotune {
namespace {

std::string plot_or_note(const GnuplotResult& plots, const std::string& name) {
  if (auto it = plots.svg.find(name); it != plots.svg.end()) return it->second;
  return "<p class=\"caption\">(plot missing: " + html_escape(plots.error.empty() ? "no data" : plots.error) + ")</p>";
}

std::string status_cell_class(Status s) { return "status-" + std::string(to_string(s)); }

std::string answer_panel(const JournalStudy& s) {
  const Study& r = s.result;
  if (!r.best || !r.best_outcome)
    return "<p class=\"big\">No configuration ran successfully yet.</p><p>" + html_escape(describe_counts(r)) + "</p>";
  const Study::Shown shown = *r.shown();
  std::string out = fmt::format("<p class=\"big\">{:.1f} samples/s", shown.answer);
  if (auto x = r.speedup())
    out += fmt::format(" &middot; {:.2f}&times; the baseline{}", x->ratio,
                       !x->remeasured ? std::string()
                       : x->low && x->high
                           ? fmt::format(" ({:.2f}&ndash;{:.2f}&times; at 90%, {} pairs measured again side by side)",
                                         *x->low, *x->high, x->runs)
                           : std::string(" (measured again side by side)"));
  if (auto x = r.speedup(); x && x->remeasured && x->others && *x->others >= metric::kBusyCores)
    out += fmt::format("</p><p>The pairs ran while other processes used {:.1f} cores: the speedup of a machine that "
                       "busy; on a quiet one it may differ.",
                       *x->others);
  out += "</p><p>Chosen as " + html_escape(s.answer_rule) + ".</p>";

  HtmlTable t;
  t.headers = {"knob", "answer"};
  if (r.baseline) t.headers.push_back("baseline");
  const Assignment best = s.spec.space.to_assignment(*r.best);
  const std::optional<Assignment> base =
      r.baseline ? std::optional<Assignment>(s.spec.space.to_assignment(r.baseline->config)) : std::nullopt;
  for (std::size_t d = 0; d < best.items().size(); ++d) {
    const auto& [name, value] = best.items()[d];
    std::vector<HtmlCell> row = {cell(name), cell(to_string(value))};
    if (base) row.push_back(cell(to_string(base->items()[d].second)));
    t.rows.push_back(std::move(row));
  }
  std::vector<HtmlCell> rate = {
      cell(shown.remeasured ? fmt::format("samples/s (medians of {} side-by-side runs)", shown.runs) : "samples/s"),
      cell(fmt::format("{:.1f}", shown.answer))};
  if (base)
    rate.push_back(cell(shown.baseline ? fmt::format("{:.1f}", *shown.baseline)
                                       : std::string(to_string(r.baseline->outcome.status))));
  t.rows.push_back(std::move(rate));
  out += render_table(t);
  if (!r.baseline)
    out += "<p class=\"caption\">No baseline: the run gave no <code>search.initial</code> configuration (or never "
           "measured it).</p>";
  for (const ConfirmRow& row : r.confirmed)
    if (row.chosen)
      out += fmt::format("<p>Measured {} times; mean {:.1f} samples/s. The figure above is its last "
                         "re-measurement, which no selection inflated.</p>",
                         row.measurements.size(), row.mean);
  if (!r.knobs.empty()) {
    // The same table as the summary's `knobs:` and tuned.yaml's (tuner/record/explain.hpp).
    HtmlTable k;
    k.headers = {"knob", "baseline", "answer measured", "worth", "note"};
    for (const KnobRow& row : r.knobs)
      k.rows.push_back({cell(row.knob), cell(row.baseline), cell(row.best),
                        cell(row.worth ? fmt::format("{:+.1f}%", *row.worth * 100.0) : std::string("-"), row.worth),
                        cell(row.note)});
    out += "<h3>What each change bought</h3><p>The answer measured with each knob it moved put back to the "
           "baseline's value, one at a time.</p>" +
           render_table(k);
  }
  if (const auto change = training_change(s.spec, r))
    for (const std::string& line : describe(*change)) out += "<p>" + html_escape(line) + "</p>";
  out += "<h3>Exports to copy</h3><pre>" + html_escape(exports_of(s)) + "</pre>";
  return out;
}

std::string time_split_panel(const JournalStudy& s, const GnuplotResult& plots) {
  const Study& r = s.result;
  const std::optional<TimeSplit> after =
      r.best_outcome ? std::optional<TimeSplit>(time_split(*r.best_outcome)) : std::nullopt;
  const std::optional<TimeSplit> before =
      r.baseline && r.baseline->outcome.ok() ? std::optional<TimeSplit>(time_split(r.baseline->outcome)) : std::nullopt;
  if ((!after || !after->known()) && (!before || !before->known()))
    return "<p>This workload reported no data-wait or busy figures (<code>data_wait_fraction</code>, "
           "<code>compute_busy</code>, <code>gpu_busy</code>), so there is no split to show.</p>";
  std::string out = plot_or_note(plots, kPlotTimeSplit) + "<ul>";
  if (before && before->known()) out += "<li>baseline: " + html_escape(describe(*before)) + "</li>";
  if (after && after->known()) out += "<li>answer: " + html_escape(describe(*after)) + "</li>";
  if (before)
    if (const std::string ranks = rank_starved(r.baseline->outcome); !ranks.empty())
      out += "<li>baseline: " + html_escape(ranks) + "</li>";
  if (after)
    if (const std::string ranks = rank_starved(*r.best_outcome); !ranks.empty())
      out += "<li>answer: " + html_escape(ranks) + "</li>";
  out += "</ul>";
  if (before && after && before->known() && after->known())
    out += "<p><b>What moved:</b> " + html_escape(explain_speedup(*before, *after)) + ".</p>";
  return out;
}

std::string failure_panel(const JournalStudy& s, const GnuplotResult& plots) {
  const auto groups = failure_groups(s);
  std::string out = plot_or_note(plots, kPlotFailureMap);
  if (groups.empty()) return out + "<p>No trial failed.</p>";
  HtmlTable t;
  t.headers = {"status", "trials", "where", "what the trials said"};
  for (const FailureGroup& g : groups) {
    std::string where, reasons;
    for (const auto& r : g.region) where += (where.empty() ? "" : "<br>") + html_escape(r);
    for (const auto& [why, n] : g.reasons) reasons += (reasons.empty() ? "" : "<br>") + fmt::format("{}&times; ", n) +
                                                      html_escape(why);
    t.rows.push_back({cell(to_string(g.status), std::nullopt, status_cell_class(g.status)),
                      cell(std::to_string(g.count), g.count), {where.empty() ? "anywhere tried" : where, {}, {}},
                      {reasons, {}, "reason"}});
  }
  return out + render_table(t);
}

std::string trials_panel(const JournalStudy& s) {
  const SearchSpace& space = s.spec.space;
  HtmlTable t;
  t.sortable = true;
  t.headers = {"trial", "proposed as"};
  for (const auto& p : space.params()) t.headers.push_back(p.name);
  for (const char* h : {"status", "samples/s", "device mem", "host mem", "seconds", "finished at s", "note"})
    t.headers.emplace_back(h);
  const std::optional<Config>& best = s.result.best;
  for (const JournalTrial& j : s.journal.trials) {
    std::vector<HtmlCell> row = {cell(std::to_string(j.trial), j.trial), cell(j.proposed_as)};
    const auto c = space.from_assignment(j.config);
    for (std::size_t d = 0; d < space.dims(); ++d) {
      const Value* v = j.config.find(space.param(d).name);
      // Sorted by their place in the domain (fp32 < tf32 < fp16 as declared), not as text.
      row.push_back(cell(v ? to_string(*v) : "", c ? std::optional<double>((*c)[d]) : std::nullopt));
    }
    std::string note;
    switch (j.phase) {
      case Phase::search: note = best && c == best ? "the answer" : ""; break;
      case Phase::confirm: note = "re-measurement"; break;
      case Phase::explain: note = "a knob put back (explain)"; break;
      case Phase::remeasure_baseline: note = "the baseline again, beside the answer"; break;
      case Phase::remeasure_answer: note = "the answer again, beside the baseline"; break;
      case Phase::control: note = "the control again (drift)"; break;
    }
    if (!j.outcome) {
      row.push_back(cell(unfinished_status(j), std::nullopt, j.cut_short ? "" : "status-running"));
      for (int k = 0; k < 4; ++k) row.push_back(cell(""));
      row.push_back(cell(fmt::format("started {:.0f}", j.start_time)));
      row.push_back(cell(j.cut_short ? "started, cut short when its run ended" : "started, never finished"));
    } else {
      const Outcome& o = *j.outcome;
      row.push_back(cell(to_string(o.status), std::nullopt, status_cell_class(o.status)));
      row.push_back(o.ok() ? cell(fmt::format("{:.1f}", o.throughput), o.throughput) : cell("", -1.0));
      row.push_back(cell(memory_of(o, metric::vram_bytes), o.vram_bytes().value_or(0)));
      row.push_back(cell(memory_of(o, metric::ram_bytes), o.ram_bytes().value_or(0)));
      row.push_back(cell(fmt::format("{:.1f}", o.seconds), o.seconds));
      row.push_back(cell(fmt::format("{:.0f}", j.finish_time), j.finish_time));
      if (!o.ok()) note += (note.empty() ? "" : "; ") + o.reason.substr(0, 200);
      if (o.raced()) note += (note.empty() ? "" : "; ") + std::string("raced: stopped early, surely below the bar");
      if (const auto f = o.get(metric::foreign_cores); f && *f >= metric::kBusyCores)
        note += (note.empty() ? "" : "; ") + fmt::format("other processes used {:.1f} cores meanwhile", *f);
      if (const std::string gpu = foreign_gpu_busy_note(o); !gpu.empty()) note += (note.empty() ? "" : "; ") + gpu;
      if (const auto d = o.get(metric::drift); d && *d != 1.0)
        note += (note.empty() ? "" : "; ") + fmt::format("read x{:.2f} against the control measured nearest it", *d);
      row.push_back(cell(note, std::nullopt, "reason"));
    }
    t.rows.push_back(std::move(row));
  }
  return render_table(t);
}

std::string knob_caption(const JournalStudy& s, std::size_t dim) {
  return fmt::format("Every trial's throughput against {}: the line joins the best at each value; failed trials sit "
                     "in the band at the bottom, by status.",
                     s.spec.space.param(dim).name);
}

std::string knob_panel(const JournalStudy& s, const GnuplotResult& plots, std::size_t dim) {
  return plot_or_note(plots, knob_plot_name(dim)) + "<p class=\"caption\">Best at each value: " +
         html_escape(knob_effect(s, dim)) + "</p>";
}

}  // namespace

std::string render_report_html(const JournalStudy& s, std::string* warning) {
  const GnuplotResult plots = render_svg(report_plots(s));
  if (!plots.error.empty() && warning) *warning = plots.error;
  const Study& r = s.result;
  const auto& h = s.journal.header;
  HtmlPage page("autotune report: " + s.path.filename().string(),
                fmt::format("{} workload, {} strategy, seed {} · {} search trials ({}){} · {:.0f} s · journal {}",
                            h.value("workload", "?"), h.value("strategy", "?"), s.spec.search.seed, r.trials.size(),
                            describe_counts(r),
                            r.confirmations.empty() ? "" : fmt::format(" + {} re-measurements", r.confirmations.size()),
                            r.elapsed_s, s.path.string()));
  for (std::size_t i = 0; i < s.state.notes.size(); ++i)
    page.notice((i == 0 ? std::string(s.state.complete ? "Finished: " : "Not finished: ") : "") +
                    html_escape(s.state.notes[i]),
                !s.state.complete);
  if (!plots.error.empty()) page.notice(html_escape(plots.error), true);

  page.panel("answer", "The answer",
             "The fastest configuration that fits, decided as tuned.yaml decides it, against the baseline (the "
             "run's first initial configuration), and the same answer in other tools' own keys.",
             answer_panel(s));
  page.panel("best-by-trial", "Best so far, by trial",
             "How the search went: each dot is a trial that ran, the line the best measured so far, the star the "
             "answer. Failed trials are marked under the axis by kind.",
             plot_or_note(plots, kPlotByTrial), false);
  page.panel("best-by-time", "Best so far, by time",
             "The same against the wall clock: how soon the search got close, and what the failures cost in time.",
             plot_or_note(plots, kPlotByTime), false);
  for (std::size_t d = 0; d < s.spec.space.dims(); ++d)
    page.panel("knob-" + s.spec.space.param(d).name, "Knob: " + s.spec.space.param(d).name, knob_caption(s, d),
               knob_panel(s, plots, d), false);
  page.panel("time-split", "Where the time went",
             "For the baseline and the answer: the share of the wall time the trainer waited for the next batch "
             "against the share it computed, and how busy the device was where known; the bottleneck that moved.",
             time_split_panel(s, plots));
  page.panel("failure-map", "Failure map",
             "Which regions of the space ran out of device or host memory, timed out, crashed or broke a limit, "
             "and the reasons as the trials reported them. Points are spread a little so that trials of one value "
             "do not hide each other.",
             failure_panel(s, plots));
  page.panel("trials", "Every trial",
             "All trials in the journal, re-measurements and unfinished ones included. Click a column's header to "
             "sort by it.",
             trials_panel(s));
  return page.render();
}

void write_report(const std::filesystem::path& journal, const std::filesystem::path& out, std::string* warning) {
  const JournalStudy s = read_journal_study(journal);
  write_file_atomically(out, render_report_html(s, warning));
}

}  // namespace autotune
