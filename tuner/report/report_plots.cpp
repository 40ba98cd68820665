#include "tuner/report/report_plots.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/knobs.hpp"
#include "tuner/report/report_facts.hpp"
#include "tuner/record/time_split.hpp"

namespace autotune {
namespace {

constexpr const char* kOkColour = "#8c959f";
constexpr const char* kBestColour = "#0969da";
constexpr const char* kAnswerColour = "#d4a72c";

int status_code(Status s) { return static_cast<int>(s); }

int point_type(Status s) {
  switch (s) {
    case Status::ok: return 7;        // filled circle
    case Status::oom: return 9;       // filled triangle
    case Status::host_oom: return 11; // filled triangle down
    case Status::timeout: return 5;   // filled square
    case Status::crash: return 3;     // star
    case Status::error: return 2;     // cross
    case Status::invalid: return 13;  // filled diamond
  }
  return 7;
}

// Failures are drawn in a band under the axis: no throughput, but a place.
struct YScale {
  double top = 1;
  double floor() const { return -0.09 * top; }
};

YScale y_scale(const std::vector<const JournalTrial*>& trials) {
  YScale y;
  for (const JournalTrial* t : trials)
    if (t->outcome->ok()) y.top = std::max(y.top, t->outcome->throughput);
  return y;
}

// A readable tick step for [0, top].
double tick_step(double top) {
  const double raw = top / 5;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

// The y axis: throughput from 0, a shaded "failed" band beneath it.
std::string y_axis(const YScale& y) {
  return fmt::format(
      "set yrange [{0}:{1}]\nset ytics 0,{2}\nset ylabel 'samples/s'\nset format y '{5}'\n"
      "set object 1 rect from graph 0, first {0} to graph 1, first {3} fc rgb '#ffebe9' fs solid 0.6 noborder behind\n"
      "set label 1 'failed' at graph 0.005, first {4} left font ',10' tc rgb '#cf222e'\n"
      "set grid ytics lc rgb '#d8dee4'\nset border 3 lc rgb '#57606a'\nset tics nomirror\n",
      1.6 * y.floor(), 1.12 * y.top, tick_step(y.top), 0.45 * y.floor(), 1.3 * y.floor(),
      tick_step(y.top) >= 1 ? "%.0f" : "%.3g");
}

// Each failed status present, as points in the band: "'f' using X:(floor) ..."
std::string failure_series(const std::vector<const JournalTrial*>& trials, const std::string& file,
                           const std::string& x, const YScale& y) {
  std::string out;
  for (Status s : kAllStatuses) {
    if (s == Status::ok) continue;
    if (std::none_of(trials.begin(), trials.end(), [&](const JournalTrial* t) { return t->outcome->status == s; }))
      continue;
    out += fmt::format(", \\\n  '{}' using {}:($3=={} ? {} : 1/0) with points pt {} ps 1.1 lc rgb '{}' title '{}'",
                       file, x, status_code(s), y.floor(), point_type(s), status_colour(s), to_string(s));
  }
  return out;
}

// Spreads points that share a value, the same way on every render.
double jitter(int trial, double width) {
  const auto h = static_cast<std::uint32_t>(trial) * 2654435761U;
  return (static_cast<double>(h % 1000) / 999.0 - 0.5) * width;
}

std::string number(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : "NaN"; }

GnuplotPlot history(const JournalStudy& s, bool by_time) {
  const auto trials = finished_search_trials(s.journal);
  const YScale y = y_scale(trials);
  const bool minutes = s.result.elapsed_s > 600;
  std::string data = "# n time throughput best status\n";
  std::string answer;
  double best = NAN;
  int n = 0;
  for (const JournalTrial* t : trials) {
    ++n;
    const Outcome& o = *t->outcome;
    if (o.ok()) best = std::isnan(best) ? o.throughput : std::max(best, o.throughput);
    const double time = minutes ? t->finish_time / 60 : t->finish_time;
    data += fmt::format("{} {} {} {} {}\n", n, number(time), o.ok() ? number(o.throughput) : "NaN", number(best),
                        status_code(o.status));
    if (s.result.best && o.ok() && answer.empty() && s.spec.space.from_assignment(t->config) == s.result.best)
      answer = fmt::format("{} {}\n", by_time ? time : n, number(o.throughput));
  }
  const std::string x = by_time ? "2" : "1";
  GnuplotPlot p;
  p.name = by_time ? kPlotByTime : kPlotByTrial;
  p.width = 600;
  p.data["history.dat"] = data;
  p.data["answer.dat"] = answer.empty() ? "NaN NaN\n" : answer;
  p.script = y_axis(y) +
             (by_time ? fmt::format("set xlabel 'elapsed {} when the trial finished'\nset xrange [0:*]\n",
                                    minutes ? "minutes" : "seconds")
                      : fmt::format("set xlabel 'trial, in the order they finished'\nset xrange [0:{}]\n", n + 1)) +
             "set key outside right top vertical Left reverse noautotitle font ',11'\n" +
             fmt::format("plot 'history.dat' using {0}:3 with points pt 7 ps 0.7 lc rgb '{1}' title 'a trial (ok)', \\\n"
                         "  'history.dat' using {0}:4 with steps lw 2.5 lc rgb '{2}' title 'best so far', \\\n"
                         "  'answer.dat' using 1:2 with points pt 3 ps 2.2 lw 2 lc rgb '{3}' title 'the answer'",
                         x, kOkColour, kBestColour, kAnswerColour) +
             failure_series(trials, "history.dat", x, y) + "\n";
  return p;
}

// Positions 0..n-1 on axis 'x' or 'y', labelled with the values; at most ~20 labels.
std::string tics_of(const Parameter& p, char axis) {
  const std::size_t n = p.values.size();
  const std::size_t every = std::max<std::size_t>(1, (n + 19) / 20);
  std::string tics;
  for (std::size_t k = 0; k < n; k += every)
    tics += fmt::format("{}{} {}", tics.empty() ? "" : ", ", gnuplot_quote(to_string(p.values[k])), k);
  return fmt::format("set {0}tics ({1})\nset {0}range [-0.6:{2}]\n", axis, tics, static_cast<double>(n) - 0.4);
}

GnuplotPlot knob(const JournalStudy& s, std::size_t dim) {
  const SearchSpace& space = s.spec.space;
  const Parameter& param = space.param(dim);
  const auto trials = finished_search_trials(s.journal);
  const YScale y = y_scale(trials);
  std::string data = "# position throughput status\n";
  std::vector<double> best(param.values.size(), NAN);
  for (const JournalTrial* t : trials) {
    const Value* v = t->config.find(param.name);
    const auto k = v ? space.index_of_value(dim, *v) : std::nullopt;
    if (!k) continue;
    const Outcome& o = *t->outcome;
    data += fmt::format("{} {} {}\n", *k + jitter(t->trial, 0.36), o.ok() ? number(o.throughput) : "NaN",
                        status_code(o.status));
    if (o.ok()) {
      double& b = best[static_cast<std::size_t>(*k)];
      b = std::isnan(b) ? o.throughput : std::max(b, o.throughput);
    }
  }
  std::string envelope;
  for (std::size_t k = 0; k < best.size(); ++k)
    if (!std::isnan(best[k])) envelope += fmt::format("{} {}\n", k, number(best[k]));
  GnuplotPlot p;
  p.name = knob_plot_name(dim);
  p.width = 560;
  p.height = 320;
  p.data["knob.dat"] = data;
  p.data["best.dat"] = envelope.empty() ? "NaN NaN\n" : envelope;
  std::string answer_mark;
  if (s.result.best)
    answer_mark = fmt::format("set arrow 2 from first {0}, graph 0 to first {0}, graph 1 nohead dt 2 lw 1.5 lc rgb "
                              "'{1}'\nset label 2 'answer' at first {0}, graph 0.97 offset 0.5,0 left font ',10' tc "
                              "rgb '#9a6700'\n",
                              (*s.result.best)[dim], kAnswerColour);
  p.script = y_axis(y) + tics_of(param, 'x') + answer_mark + "set xlabel " + gnuplot_quote(param.name) + "\n" +
             "set key outside bottom center horizontal font ',10' samplen 1.5 width -1\n" +
             fmt::format("plot 'knob.dat' using 1:2 with points pt 7 ps 0.7 lc rgb '{}' title 'ok', \\\n"
                         "  'best.dat' using 1:2 with linespoints lw 2 pt 7 ps 0.5 lc rgb '{}' title 'best at "
                         "each value'",
                         kOkColour, kBestColour) +
             failure_series(trials, "knob.dat", "1", y) + "\n";
  return p;
}

std::optional<GnuplotPlot> time_split_plot(const JournalStudy& s) {
  struct Row {
    std::string label;
    TimeSplit split;
  };
  std::vector<Row> rows;
  const auto shown = s.result.shown();
  if (shown)
    rows.push_back({"answer\\n" + format_rate(shown->answer) + "/s", time_split(*s.result.best_outcome)});
  if (shown && shown->baseline)
    rows.push_back({"baseline\\n" + format_rate(*shown->baseline) + "/s", time_split(s.result.baseline->outcome)});
  std::erase_if(rows, [](const Row& r) { return !r.split.known(); });
  if (rows.empty()) return std::nullopt;
  std::string data = "# row wait compute busy\n", tics;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const TimeSplit& t = rows[i].split;
    data += fmt::format("{} {} {} {}\n", i, 100 * *t.data_wait, 100 * *t.compute,
                        t.device_busy ? number(100 * *t.device_busy) : "NaN");
    tics += fmt::format("{}\"{}\" {}", tics.empty() ? "" : ", ", rows[i].label, i);
  }
  const bool busy_known = std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.split.device_busy; });
  GnuplotPlot p;
  p.name = kPlotTimeSplit;
  p.height = 110 + 70 * static_cast<int>(rows.size());
  p.data["split.dat"] = data;
  p.script = fmt::format(
      "set xrange [0:100]\nset yrange [-0.6:{}]\nset ytics ({})\nset xlabel '% of the wall time'\n"
      "set border 1 lc rgb '#57606a'\nset tics nomirror\nset grid xtics lc rgb '#d8dee4'\n"
      "set key outside bottom center horizontal font ',11'\nset style fill solid 0.9 noborder\n"
      "plot 'split.dat' using ($2/2):1:(0):2:($1-0.32):($1+0.32) with boxxyerror lc rgb '#fb8f44' title 'waiting "
      "for data', \\\n"
      "  'split.dat' using (($2+100)/2):1:2:(100):($1-0.32):($1+0.32) with boxxyerror lc rgb '#54aeff' title "
      "'computing', \\\n"
      "  'split.dat' using ($2/2):1:(sprintf('%.0f%%', $2)) with labels font ',11' notitle, \\\n"
      "  'split.dat' using (($2+100)/2):1:(sprintf('%.0f%%', $3)) with labels font ',11' notitle{}\n",
      static_cast<double>(rows.size()) - 0.4, tics,
      busy_known ? ", \\\n  'split.dat' using 4:1 with points pt 13 ps 2 lc rgb '#1f2328' title 'device busy'" : "");
  return p;
}

GnuplotPlot failure_map(const JournalStudy& s) {
  const SearchSpace& space = s.spec.space;
  const auto [xd, yd] = failure_map_axes(space);
  const auto trials = finished_search_trials(s.journal);
  std::string data = "# x y status\n";
  for (const JournalTrial* t : trials) {
    const auto c = space.from_assignment(t->config);
    if (!c) continue;
    const double x = (*c)[xd] + jitter(t->trial, 0.5);
    const double y = yd ? (*c)[*yd] + jitter(t->trial * 7 + 3, 0.5) : jitter(t->trial * 7 + 3, 0.5);
    data += fmt::format("{} {} {}\n", x, y, status_code(t->outcome->status));
  }
  GnuplotPlot p;
  p.name = kPlotFailureMap;
  p.height = 400;
  p.data["map.dat"] = data;
  std::string series = fmt::format("plot 'map.dat' using 1:($3==0 ? $2 : 1/0) with points pt 6 ps 0.8 lc rgb '{}' "
                                   "title 'ok'",
                                   kOkColour);
  for (Status st : kAllStatuses) {
    if (st == Status::ok ||
        std::none_of(trials.begin(), trials.end(), [&](const JournalTrial* t) { return t->outcome->status == st; }))
      continue;
    series += fmt::format(", \\\n  'map.dat' using 1:($3=={} ? $2 : 1/0) with points pt {} ps 1.3 lc rgb '{}' "
                          "title '{}'",
                          status_code(st), point_type(st), status_colour(st), to_string(st));
  }
  std::string y_axis_text = "set ytics ('' 0)\nset yrange [-0.6:0.6]\nset ylabel ''\n";
  if (yd) y_axis_text = tics_of(space.param(*yd), 'y') + "set ylabel " + gnuplot_quote(space.param(*yd).name) + "\n";
  p.script = tics_of(space.param(xd), 'x') + y_axis_text + "set xlabel " + gnuplot_quote(space.param(xd).name) + "\n" +
             "set grid lc rgb '#eaeef2'\nset border 3 lc rgb '#57606a'\nset tics nomirror\n"
             "set key outside right top vertical Left reverse font ',11'\n" +
             series + "\n";
  return p;
}

}  // namespace

std::string knob_plot_name(std::size_t dim) { return fmt::format("knob_{}", dim); }

std::string_view status_colour(Status s) {
  switch (s) {
    case Status::ok: return "#1a7f37";
    case Status::oom: return "#cf222e";
    case Status::host_oom: return "#bc4c00";
    case Status::timeout: return "#8250df";
    case Status::crash: return "#1f2328";
    case Status::error: return "#9a6700";
    case Status::invalid: return "#bf3989";
  }
  return "#1f2328";
}

std::pair<std::size_t, std::optional<std::size_t>> failure_map_axes(const SearchSpace& space) {
  const auto memory = knob_memory(space);
  std::optional<std::size_t> device, host;
  for (std::size_t d = 0; d < memory.size(); ++d) {
    if (!device && memory[d].device()) device = d;
    else if (!host && memory[d].host() && !memory[d].device()) host = d;
  }
  if (!device) device = 0;
  if (!host)
    for (std::size_t d = 0; d < space.dims(); ++d)
      if (d != *device) {
        host = d;
        break;
      }
  return {*device, host};
}

std::vector<GnuplotPlot> report_plots(const JournalStudy& s) {
  std::vector<GnuplotPlot> plots = {history(s, false), history(s, true)};
  for (std::size_t d = 0; d < s.spec.space.dims(); ++d) plots.push_back(knob(s, d));
  if (auto p = time_split_plot(s)) plots.push_back(std::move(*p));
  plots.push_back(failure_map(s));
  return plots;
}

}  // namespace autotune
