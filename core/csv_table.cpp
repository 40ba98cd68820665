#include "core/csv_table.hpp"

#include <csv.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace autotune {
namespace {

struct ParseState {
  CsvTable table;
  std::vector<std::string> current;
  int line = 1;          // line being fed to the parser
  const std::string* text = nullptr;
  std::size_t consumed = 0;
};

void on_field(void* s, std::size_t len, void* data) {
  auto* st = static_cast<ParseState*>(data);
  st->current.emplace_back(static_cast<const char*>(s), len);
}

void on_row(int /*terminator*/, void* data) {
  auto* st = static_cast<ParseState*>(data);
  // Skip blank lines (libcsv reports a record with one empty field or none).
  const bool blank = st->current.empty() || (st->current.size() == 1 && st->current[0].empty());
  if (!blank) {
    if (st->table.header.empty()) {
      st->table.header = std::move(st->current);
    } else {
      st->table.rows.push_back(std::move(st->current));
      st->table.row_lines.push_back(st->line);
    }
  }
  st->current.clear();
}

}  // namespace

CsvTable read_csv(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open the file");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();

  csv_parser parser{};
  if (csv_init(&parser, CSV_STRICT | CSV_APPEND_NULL | CSV_STRICT_FINI) != 0)
    throw std::runtime_error("libcsv: cannot initialise a parser");
  ParseState st;
  // Feed line by line so that a parse error can name its line.
  std::size_t pos = 0;
  int line = 1;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    end = end == std::string::npos ? text.size() : end + 1;
    if (csv_parse(&parser, text.data() + pos, end - pos, on_field, on_row, &st) != end - pos) {
      std::string why = csv_strerror(csv_error(&parser));
      csv_free(&parser);
      throw std::runtime_error(path.string() + ":" + std::to_string(line) + ": " + why);
    }
    st.line = line + 1;
    pos = end;
    ++line;
  }
  if (csv_fini(&parser, on_field, on_row, &st) != 0) {
    std::string why = csv_strerror(csv_error(&parser));
    csv_free(&parser);
    throw std::runtime_error(path.string() + ":" + std::to_string(line) + ": " + why);
  }
  csv_free(&parser);
  if (st.table.header.empty()) throw std::runtime_error(path.string() + ":1: the file has no header row");
  for (std::size_t i = 0; i < st.table.rows.size(); ++i)
    if (st.table.rows[i].size() != st.table.header.size())
      throw std::runtime_error(path.string() + ":" + std::to_string(st.table.row_lines[i]) + ": " +
                               std::to_string(st.table.rows[i].size()) + " fields, the header has " +
                               std::to_string(st.table.header.size()));
  return st.table;
}

void write_csv_row(std::FILE* f, const std::vector<std::string>& fields) {
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) std::fputc(',', f);
    const auto& s = fields[i];
    if (s.find_first_of(",\"\n\r") != std::string::npos)
      csv_fwrite(f, s.data(), s.size());
    else
      std::fwrite(s.data(), 1, s.size(), f);
  }
  std::fputc('\n', f);
}

}  // namespace autotune
