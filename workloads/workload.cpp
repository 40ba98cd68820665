#include "workloads/workload.hpp"

#include <fmt/format.h>

#include "core/options.hpp"
#include "core/text.hpp"

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

void judge_limits(Outcome& o, const Limits& limits, std::optional<double> vram_peak, std::optional<double> ram_peak) {
  if (!o.ok()) return;
  auto over = [&](std::optional<double> peak, double limit, const char* what, const char* key) {
    if (limit <= 0 || !peak || *peak <= limit) return false;
    o.status = Status::invalid;
    o.reason = fmt::format("{} {} over the limit {} (the spec's {} limit)", what, format_bytes(*peak),
                           format_bytes(limit), key);
    return true;
  };
  if (!over(vram_peak, limits.vram_bytes, "device memory", "vram")) over(ram_peak, limits.ram_bytes, "host memory", "ram");
}

}  // namespace autotune
