#include "tuner/run/slots.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

namespace autotune {

std::vector<int> allowed_cpus() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? std::to_string(cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out;
}

SlotPlan plan_slots(int parallel, const std::vector<std::string>& gpus, const std::vector<int>& cpus,
                    bool pin_cpus) {
  SlotPlan plan;
  const auto n = static_cast<std::size_t>(std::max(1, parallel));
  if (!gpus.empty() && gpus.size() < n)
    throw std::invalid_argument(fmt::format("{} parallel slots but {} GPU entr{}: trials would share a device",
                                            n, gpus.size(), gpus.size() == 1 ? "y" : "ies"));
  // Disjoint, contiguous CPU sets when there are at least as many CPUs as slots.
  const bool pin = pin_cpus && n > 1 && cpus.size() >= n;
  const std::size_t per = pin ? cpus.size() / n : 0;
  for (std::size_t i = 0; i < n; ++i) {
    Slot s;
    if (!gpus.empty()) {
      s.gpus = gpus[i];
      s.env["CUDA_VISIBLE_DEVICES"] = gpus[i];
    }
    if (pin)
      s.cpus.assign(cpus.begin() + static_cast<std::ptrdiff_t>(i * per),
                    cpus.begin() + static_cast<std::ptrdiff_t>((i + 1) * per));
    plan.slots.push_back(std::move(s));
  }
  std::string gpu_part = gpus.empty() ? "no GPU" : "one GPU entry each";
  std::string cpu_part = pin ? fmt::format("{} CPUs each (pinned)", per)
                             : (n > 1 ? fmt::format("{} CPUs shared", cpus.size()) : "");
  plan.summary = fmt::format("{} slot{}, {}{}{}", n, n == 1 ? "" : "s", gpu_part, cpu_part.empty() ? "" : ", ",
                             cpu_part);
  return plan;
}

}  // namespace autotune
