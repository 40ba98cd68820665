#pragma once
// CSV tables (replay files, sweep output) read and written with libcsv, so
// quoting follows RFC 4180. Rows keep their line number for messages.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace autotune {

struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<int> row_lines;  // 1-based line of each row in the file
};

// Throws std::runtime_error "<file>:<line>: <what>" when the file cannot be
// read, does not parse, or a row's width differs from the header's.
CsvTable read_csv(const std::filesystem::path& path);

// Writes one row (fields quoted only where needed) and a newline.
void write_csv_row(std::FILE* f, const std::vector<std::string>& fields);

}  // namespace autotune
