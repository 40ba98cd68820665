#pragma once
// Plots drawn by gnuplot's SVG terminal, to be inlined in an HTML page. One
// gnuplot process renders a whole batch (a page's plots in tens of
// milliseconds, not one process each); the SVGs come back as text.
#include <map>
#include <string>
#include <vector>

namespace autotune {

struct GnuplotPlot {
  std::string name;  // [a-z0-9_]; also prefixes the SVG's ids, so that many can share one page
  int width = 760;
  int height = 340;
  std::string script;                       // what follows `set terminal` and `set output`
  std::map<std::string, std::string> data;  // data file name (as the script names it) -> contents
};

struct GnuplotResult {
  std::map<std::string, std::string> svg;  // name -> "<svg ...>...</svg>"
  std::string error;                       // gnuplot missing or failed: why (the plots are then missing)
};

// Renders in a private temporary folder, removed afterwards. Never throws for
// a gnuplot failure: that is reported in `error`.
GnuplotResult render_svg(const std::vector<GnuplotPlot>& plots);

// A string as a gnuplot single-quoted literal ('it''s').
std::string gnuplot_quote(const std::string& s);

}  // namespace autotune
