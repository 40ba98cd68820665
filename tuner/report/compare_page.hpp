#pragma once
// `autotune compare`'s page: compare.html beside its CSV and plots, the same
// kind of self-contained page as `autotune report` (tuner/report/html_page.hpp).
// Built from the folder write_compare_report filled: summary.csv as a
// sortable table, and plots.gp's plots drawn again by gnuplot's SVG terminal.
#include <filesystem>
#include <string>

namespace autotune {

// Writes dir/compare.html (temp file + rename). `warning` gets a line when
// the plots could not be drawn. Throws std::runtime_error when the folder's
// files cannot be read or the page written.
void write_compare_page(const std::filesystem::path& dir, std::string* warning);

}  // namespace autotune
