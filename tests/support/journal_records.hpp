#pragma once
// The finish records of a journal as JSON, in order: what tests through the
// autotune binary read back of a run.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace autotune::testing {

inline std::vector<nlohmann::json> finish_records(const std::filesystem::path& journal) {
  std::ifstream in(journal);
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["type"] == "finish") out.push_back(std::move(j));
  }
  return out;
}

}  // namespace autotune::testing
