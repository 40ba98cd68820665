#pragma once
// The replay workload: a table of recorded measurements (CSV), so strategies
// can be compared on real data without the hardware. `autotune sweep` writes
// such tables from any workload.
//
// Columns: one per space parameter (values as the space writes them:
// 64, true, bf16), `status` (optional; ok when absent or empty), the metric
// column (default `throughput`) and any other numeric columns, kept as
// metrics. Several rows for one configuration are repeats: a trial replays one
// of them, chosen by the trial seed. A configuration missing from the table is
// an `error` outcome.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "workloads/workload.hpp"

namespace autotune {

class ReplayTable {
 public:
  // Throws WorkloadConfigError naming the file and line on any problem.
  ReplayTable(const std::filesystem::path& file, const std::vector<std::string>& parameters,
              const std::string& metric = "throughput");

  std::size_t size() const { return m_rows.size(); }
  // All recorded repeats of a configuration (empty when not recorded).
  const std::vector<Outcome>* find(const Assignment& config) const;
  // The mean over repeats, the table's noise-free answer.
  std::optional<Outcome> mean(const Assignment& config) const;

 private:
  std::string key(const Assignment& config) const;
  std::vector<std::string> m_parameters;
  std::map<std::string, std::vector<Outcome>> m_rows;
};

}  // namespace autotune
