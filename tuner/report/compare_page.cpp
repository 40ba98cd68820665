#include "tuner/report/compare_page.hpp"

#include <fstream>
#include <sstream>

#include "core/csv_table.hpp"
#include "tuner/record/emitter.hpp"
#include "tuner/report/gnuplot_svg.hpp"
#include "tuner/report/html_page.hpp"

namespace autotune {
namespace {

// plots.gp's plots, one per `set output 'NAME.png'`, without their terminal,
// output and reset lines: the same drawing, for the SVG terminal. Every .dat
// file of the folder goes with each.
std::vector<GnuplotPlot> plots_of(const std::filesystem::path& dir) {
  std::map<std::string, std::string> data;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".dat") {
      std::ifstream in(e.path());
      std::stringstream ss;
      ss << in.rdbuf();
      data[e.path().filename().string()] = ss.str();
    }
  std::vector<GnuplotPlot> plots;
  std::ifstream gp(dir / "plots.gp");
  for (std::string line; std::getline(gp, line);) {
    if (line.starts_with("set output '")) {
      GnuplotPlot p;
      p.name = line.substr(12, line.find(".png") - 12);
      p.width = 1000;
      p.height = 560;
      p.data = data;
      plots.push_back(std::move(p));
    } else if (!plots.empty() && !line.starts_with("set terminal") && line != "reset") {
      plots.back().script += line + "\n";
    }
  }
  return plots;
}

std::string summary_table(const std::filesystem::path& dir) {
  const CsvTable csv = read_csv(dir / "summary.csv");
  HtmlTable t;
  t.sortable = true;
  t.headers = csv.header;
  for (const auto& row : csv.rows) {
    std::vector<HtmlCell> cells;
    for (const auto& v : row) {
      std::optional<double> key;
      try {
        std::size_t used = 0;
        const double x = std::stod(v, &used);
        if (used == v.size()) key = x;
      } catch (const std::exception&) {
      }
      cells.push_back(cell(v, key));
    }
    t.rows.push_back(std::move(cells));
  }
  return render_table(t);
}

}  // namespace

void write_compare_page(const std::filesystem::path& dir, std::string* warning) {
  const GnuplotResult plots = render_svg(plots_of(dir));
  if (!plots.error.empty() && warning) *warning = plots.error;
  HtmlPage page("autotune compare: " + std::filesystem::absolute(dir).filename().string(),
                "strategies x seeds on one workload; the data is in trials.csv and summary.csv beside this page");
  if (!plots.error.empty()) page.notice(html_escape(plots.error), true);
  page.panel("summary", "Summary",
             "Per strategy: the fraction of the optimum its recommendation reached at each budget (median and 10th "
             "percentile over seeds), the trials it took to reach 90/95/99% of it, the failed trials it spent, its "
             "time per proposal, and whether it beat random (one-sided Mann-Whitney U). Click a header to sort.",
             summary_table(dir));
  const auto svg = [&](const char* name) {
    auto it = plots.svg.find(name);
    return it != plots.svg.end() ? it->second : "<p class=\"caption\">(plot missing)</p>";
  };
  page.panel("best-so-far", "Quality of the recommendation, by trial",
             "The median fraction of the optimum each strategy's recommended configuration reaches after each "
             "trial, with the band between the quartiles over seeds.",
             svg("best_so_far"));
  page.panel("best-so-far-time", "Quality of the recommendation, by seconds spent",
             "The same against the seconds the trials took (summed): what a time budget buys. Racing and a "
             "converged stop move these curves left.",
             svg("best_so_far_time"));
  page.panel("evals-to-95", "Trials to reach 95% of the optimum",
             "The distribution over seeds of the trials each strategy needed until its recommendation reached 95% "
             "of the optimum (the top of the axis: never, within the budget).",
             svg("evals_to_95"));
  write_file_atomically(dir / "compare.html", page.render());
}

}  // namespace autotune
