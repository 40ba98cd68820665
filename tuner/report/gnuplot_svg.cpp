#include "tuner/report/gnuplot_svg.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace autotune {
namespace {

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Into a new string, in one pass: replacing in place moves the rest of the
// text at every match, quadratic in a plot of many points.
void replace_all(std::string& s, const std::string& from, const std::string& to) {
  std::string out;
  out.reserve(s.size());
  std::size_t done = 0;
  for (std::size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, done)) {
    out.append(s, done, pos - done);
    out += to;
    done = pos + from.size();
  }
  out.append(s, done, std::string::npos);
  s = std::move(out);
}

// The <svg> element alone, its ids made unique to this plot: every gnuplot
// SVG defines the same ids (gnuplot_canvas, gpPt0, ...), and one HTML page
// must not hold two elements with one id.
std::string inline_svg(std::string svg, const std::string& name) {
  const auto start = svg.find("<svg");
  if (start == std::string::npos) return {};
  svg.erase(0, start);
  for (const char* q : {"'", "\""}) {
    replace_all(svg, std::string("id=") + q, std::string("id=") + q + name + "_");
    replace_all(svg, std::string("href=") + q + "#", std::string("href=") + q + "#" + name + "_");
  }
  replace_all(svg, "url(#", "url(#" + name + "_");
  return svg;
}

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "autotune-plots-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("cannot make a temporary folder for the plots");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

std::string gnuplot_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

GnuplotResult render_svg(const std::vector<GnuplotPlot>& plots) {
  GnuplotResult result;
  if (plots.empty()) return result;
  TempDir dir;
  std::ofstream script(dir.path / "plots.gp");
  // Each plot in its own folder, so that plots may name their data files alike.
  for (const auto& p : plots) {
    std::filesystem::create_directory(dir.path / p.name);
    for (const auto& [file, text] : p.data) std::ofstream(dir.path / p.name / file) << text;
    script << "reset\ncd " << gnuplot_quote((dir.path / p.name).string()) << "\n"
           << fmt::format("set terminal svg size {},{} noenhanced font 'Helvetica,12' background '#ffffff'\n",
                          p.width, p.height)
           << "set output " << gnuplot_quote(p.name + ".svg") << "\n"
           << p.script << "\nunset output\n";
  }
  script.close();
  const std::string cmd = "cd '" + dir.path.string() + "' && gnuplot plots.gp >gnuplot.log 2>&1";
  const int rc = std::system(cmd.c_str());
  for (const auto& p : plots) {
    const auto file = dir.path / p.name / (p.name + ".svg");
    if (std::filesystem::exists(file)) {
      std::string svg = inline_svg(read_text(file), p.name);
      if (svg.find("</svg>") != std::string::npos) result.svg[p.name] = std::move(svg);
    }
  }
  if (rc != 0) {
    std::string log = read_text(dir.path / "gnuplot.log");
    if (log.size() > 400) log = "..." + log.substr(log.size() - 400);
    result.error = log.find("not found") != std::string::npos || rc == 127 * 256
                       ? "gnuplot is not installed (Debian: apt-get install gnuplot-nox); the plots are missing"
                       : "gnuplot failed: " + log;
  }
  return result;
}

}  // namespace autotune
