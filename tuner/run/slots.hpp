#pragma once
// Local parallel slots: which GPU(s) and CPUs each slot owns. Trials that run
// side by side on one machine share its PCIe and memory bandwidth; giving
// each slot its own GPU and a disjoint CPU set keeps them from also fighting
// over cores, and every trial records what it had (labels `gpus`, `cpus`).
#include <map>
#include <string>
#include <vector>

#include "tuner/spec/spec.hpp"

namespace autotune {

struct Slot {
  std::map<std::string, std::string> env;  // CUDA_VISIBLE_DEVICES when GPUs are assigned
  std::vector<int> cpus;                   // empty: not pinned (shared)
  std::string gpus;                        // for labels: "1" or "0,1"; empty: none
};

struct SlotPlan {
  std::vector<Slot> slots;
  std::string summary;  // one line for the log, e.g. "4 slots, GPU 0..3, 4 CPUs each"
};

// CPUs this process may run on (its affinity mask).
std::vector<int> allowed_cpus();

// Splits GPUs and CPUs over `parallel` slots. gpus: the spec's list (`auto`
// is expanded by the loader, tuner/spec/devices.hpp); fewer GPU entries than slots is an error
// (std::invalid_argument) since two trials would share a device.
SlotPlan plan_slots(int parallel, const std::vector<std::string>& gpus, const std::vector<int>& cpus,
                    bool pin_cpus);

std::string format_cpu_list(const std::vector<int>& cpus);  // "0-3,8"

}  // namespace autotune
