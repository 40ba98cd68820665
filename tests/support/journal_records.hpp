#pragma once
// The finish records of a journal as JSON, in order: what tests through the
// autotune binary read back of a run. Drift control's re-measurements of the
// control ("control": true) come and go with the machine's load: left out
// unless asked for.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace autotune::testing {

inline std::vector<nlohmann::json> finish_records(const std::filesystem::path& journal, bool with_controls = false) {
  std::ifstream in(journal);
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["type"] == "finish" && (with_controls || !j.value("control", false))) out.push_back(std::move(j));
  }
  return out;
}

// Every record of a journal as JSON, in order.
inline std::vector<nlohmann::json> journal_records(const std::filesystem::path& journal) {
  std::ifstream in(journal);
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

}  // namespace autotune::testing
