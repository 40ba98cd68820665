#include "tuner/report/html_page.hpp"

#include <fmt/format.h>

namespace autotune {
namespace {

constexpr const char* kStyle = R"(
:root { --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --panel: #ffffff; --bg: #f6f8fa; --accent: #0969da; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
       font: 15px/1.45 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; }
header { padding: 22px 32px 10px; }
header h1 { margin: 0 0 4px; font-size: 24px; }
header p { margin: 0; color: var(--muted); }
nav { padding: 0 32px 8px; font-size: 13px; }
nav a { color: var(--accent); margin-right: 14px; text-decoration: none; }
main { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 16px; padding: 8px 32px 32px; }
section { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 14px 18px; min-width: 0; }
section.wide { grid-column: 1 / -1; }
section h2 { margin: 0 0 2px; font-size: 17px; }
section p.caption { margin: 0 0 10px; color: var(--muted); font-size: 13.5px; }
.notice { margin: 6px 32px; padding: 8px 14px; border-radius: 6px; background: #ddf4ff; border: 1px solid #54aeff; }
.notice.warning { background: #fff8c5; border-color: #d4a72c; }
svg { max-width: 100%; height: auto; display: block; }
table { border-collapse: collapse; font-size: 13px; width: 100%; }
th, td { padding: 4px 8px; border-bottom: 1px solid var(--line); text-align: left; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.reason { white-space: normal; color: var(--muted); min-width: 320px; }
table.sortable th { cursor: pointer; user-select: none; background: var(--bg); position: sticky; top: 0; }
table.sortable th[data-dir=up]::after { content: " \25B2"; }
table.sortable th[data-dir=down]::after { content: " \25BC"; }
.scroll { max-height: 560px; overflow: auto; }
pre { background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: 10px; overflow-x: auto;
      font-size: 12.5px; }
.big { font-size: 28px; font-weight: 600; }
.status-ok { color: #1a7f37; } .status-oom { color: #cf222e; } .status-host_oom { color: #bc4c00; }
.status-timeout { color: #8250df; } .status-crash { color: #1f2328; font-weight: 600; }
.status-error { color: #9a6700; } .status-invalid { color: #bf3989; } .status-running { color: #0969da; }
)";

// Sorting by a header's column: numbers by data-v, other cells by text.
constexpr const char* kScript = R"(
(function () {
  document.querySelectorAll('table.sortable').forEach(function (table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      th.addEventListener('click', function () {
        var up = th.dataset.dir !== 'up';
        Array.prototype.forEach.call(heads, function (h) { delete h.dataset.dir; });
        th.dataset.dir = up ? 'up' : 'down';
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[col], y = b.cells[col];
          var nx = parseFloat(x.dataset.v), ny = parseFloat(y.dataset.v);
          var d = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.textContent.localeCompare(y.textContent);
          return up ? d : -d;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  document.documentElement.dataset.rendered = 'yes';
})();
)";

}  // namespace

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

HtmlCell cell(std::string_view text, std::optional<double> sort_key, std::string css_class) {
  return {html_escape(text), sort_key, std::move(css_class)};
}

std::string render_table(const HtmlTable& t) {
  std::string out = t.sortable ? "<div class=\"scroll\"><table class=\"sortable\">" : "<div><table>";
  out += "<thead><tr>";
  for (const auto& h : t.headers) out += "<th>" + html_escape(h) + "</th>";
  out += "</tr></thead><tbody>";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (const auto& c : row) {
      std::string cls = c.css_class;
      if (c.sort_key) cls += cls.empty() ? "num" : " num";
      out += "<td";
      if (!cls.empty()) out += " class=\"" + cls + "\"";
      if (c.sort_key) out += fmt::format(" data-v=\"{}\"", *c.sort_key);
      out += ">" + c.html + "</td>";
    }
    out += "</tr>";
  }
  return out + "</tbody></table></div>";
}

HtmlPage::HtmlPage(std::string title, std::string subtitle)
    : m_title(std::move(title)), m_subtitle(std::move(subtitle)) {}

void HtmlPage::notice(std::string html, bool warning) { m_notices.emplace_back(std::move(html), warning); }

void HtmlPage::panel(std::string id, std::string heading, std::string caption, std::string body, bool wide) {
  m_panels.push_back({std::move(id), std::move(heading), std::move(caption), std::move(body), wide});
}

std::string HtmlPage::render() const {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
                    html_escape(m_title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<header><h1>" +
                    html_escape(m_title) + "</h1><p>" + html_escape(m_subtitle) + "</p></header>\n<nav>";
  for (const auto& p : m_panels) out += "<a href=\"#" + p.id + "\">" + html_escape(p.heading) + "</a>";
  out += "</nav>\n";
  for (const auto& [html, warning] : m_notices)
    out += std::string("<div class=\"notice") + (warning ? " warning" : "") + "\">" + html + "</div>\n";
  out += "<main>\n";
  for (const auto& p : m_panels)
    out += "<section id=\"" + p.id + "\"" + (p.wide ? " class=\"wide\"" : "") + "><h2>" + html_escape(p.heading) +
           "</h2><p class=\"caption\">" + html_escape(p.caption) + "</p>\n" + p.body + "\n</section>\n";
  out += "</main>\n<script>" + std::string(kScript) + "</script>\n</body></html>\n";
  return out;
}

}  // namespace autotune
