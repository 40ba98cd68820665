#pragma once
// The report's plots, as gnuplot scripts and their data (drawn by gnuplot's
// SVG terminal, tuner/report/gnuplot_svg.hpp): best-so-far against trial and
// against time, one panel per knob, where the time went, the failure map.
// Failed trials sit in a band under the axis, marked by status.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/outcome.hpp"
#include "tuner/report/gnuplot_svg.hpp"
#include "tuner/record/journal_study.hpp"

namespace autotune {

// The plots' names, as render_svg returns them.
inline constexpr const char* kPlotByTrial = "best_by_trial";
inline constexpr const char* kPlotByTime = "best_by_time";
inline constexpr const char* kPlotTimeSplit = "time_split";
inline constexpr const char* kPlotFailureMap = "failure_map";
std::string knob_plot_name(std::size_t dim);

// Every plot the study has data for (no time split when neither the baseline
// nor the answer reported one).
std::vector<GnuplotPlot> report_plots(const JournalStudy& s);

// The parameters the failure map spreads the trials over: one that grows
// device memory and one that grows host memory (the knob table), else the
// first two; the second is absent in a one-knob space.
std::pair<std::size_t, std::optional<std::size_t>> failure_map_axes(const SearchSpace& space);

// The colour a status is drawn in, on the plots and in the page.
std::string_view status_colour(Status s);

}  // namespace autotune
