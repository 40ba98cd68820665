#pragma once
// `autotune report`: a tuning run's journal as one self-contained HTML page
// (tuner/report/html_page.hpp) with its plots drawn by gnuplot (tuner/report/report_plots.hpp),
// and the same facts as a compact terminal table.
#include <filesystem>
#include <string>

#include "tuner/record/journal_study.hpp"

namespace autotune {

// The panels' ids, in page order (knob panels are "knob-<name>").
inline constexpr const char* kReportPanels[] = {"answer", "best-by-trial", "best-by-time", "time-split",
                                                "failure-map", "trials"};

// The page. `warning` gets a line when the plots could not be drawn (the
// page is still whole, and says so).
std::string render_report_html(const JournalStudy& s, std::string* warning);

// The terminal table.
std::string render_report_text(const JournalStudy& s);

// Reads the journal and writes its page to `out` through a temp file and a
// rename. Throws JournalError for bad input (nothing is written) and
// std::runtime_error when the page cannot be written.
void write_report(const std::filesystem::path& journal, const std::filesystem::path& out, std::string* warning);

}  // namespace autotune
