#include "workloads/workload.hpp"

namespace autotune {

const WorkloadInfo* find_workload(std::string_view kind) {
  for (const auto& w : workload_catalog())
    if (w.kind == kind) return &w;
  return nullptr;
}

std::vector<std::string> workload_kinds() {
  std::vector<std::string> out;
  for (const auto& w : workload_catalog()) out.push_back(w.kind);
  return out;
}

}  // namespace autotune
