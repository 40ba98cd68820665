#pragma once
// A self-contained HTML page of captioned panels: inline CSS, inline SVG, and
// one small inline script that makes tables sortable; nothing is fetched, so
// the page reads offline and can be attached to a ticket. `autotune report`
// and `autotune compare` write their pages with it.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autotune {

std::string html_escape(std::string_view s);

struct HtmlCell {
  std::string html;                 // already escaped
  std::optional<double> sort_key;   // numeric order for sorting; text order without
  std::string css_class;
};
// An escaped text cell, optionally with a numeric sort key.
HtmlCell cell(std::string_view text, std::optional<double> sort_key = std::nullopt, std::string css_class = {});

struct HtmlTable {
  std::vector<std::string> headers;  // plain text
  std::vector<std::vector<HtmlCell>> rows;
  bool sortable = false;             // click a header to sort by that column
};
std::string render_table(const HtmlTable& t);

class HtmlPage {
 public:
  HtmlPage(std::string title, std::string subtitle);
  // A line above the panels; warnings stand out (a run cut short, plots missing).
  void notice(std::string html, bool warning);
  // A panel: heading, a caption in plain words, and the body (HTML). `wide`
  // panels take the page's width; the others pair up side by side.
  void panel(std::string id, std::string heading, std::string caption, std::string body, bool wide = true);
  // The document. The inline script marks <html data-rendered="yes"> once it
  // has run, which a headless browser's dumped DOM shows.
  std::string render() const;

 private:
  struct Panel {
    std::string id, heading, caption, body;
    bool wide;
  };
  std::string m_title, m_subtitle;
  std::vector<std::pair<std::string, bool>> m_notices;
  std::vector<Panel> m_panels;
};

}  // namespace autotune
