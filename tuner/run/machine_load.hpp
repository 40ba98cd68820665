#pragma once
// What the rest of the machine does while autotune measures: the CPU time
// of every process outside autotune's own tree (autotune, its trials, their
// workers, and what they reaped), in cores, between two snapshots.
//
//   foreign cores = (busy CPU time of the machine - CPU time of our tree) / wall time
//
// The machine's busy time is /proc/stat's `cpu` line (user, nice, system,
// irq, softirq, steal); our tree's is the sum over our live processes of
// their own and their reaped children's time (/proc/PID/stat utime, stime,
// cutime, cstime). A trial's figure is the snapshot at its start against
// the one at its end, so a job that another job slows is seen as such.
// Without /proc (not Linux) every reading is empty.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/machine.hpp"  // usable_cores
#include "core/metric_names.hpp"

namespace autotune {

using metric::kBusyCores;

struct LoadSnapshot {
  std::chrono::steady_clock::time_point at;
  double machine_busy_s = 0;  // CPU seconds the machine spent busy since boot
  double ours_s = 0;          // CPU seconds of autotune's tree
  bool valid = false;
};

LoadSnapshot take_load_snapshot();

// Cores' worth of CPU used by other processes between `from` and `to`
// (>= 0); nullopt when either is invalid or they are too close together
// (under 50 ms) to say.
std::optional<double> foreign_cores(const LoadSnapshot& from, const LoadSnapshot& to);

// Other processes' use of the machine's GPUs: the compute processes outside
// autotune's tree and the device memory they hold, as `nvidia-smi` lists
// them (NvmlReader::snapshot() gives the same from NVML), with the device
// each runs on. nullopt where the program is missing or fails.
struct GpuSnapshot {
  struct App {
    long pid = 0;
    double bytes = 0;
    std::string gpu;  // its device's UUID
  };
  std::vector<std::pair<std::string, std::string>> devices;  // (index, UUID)
  std::vector<App> others;
};
std::optional<GpuSnapshot> take_gpu_snapshot(const std::string& nvidia_smi = "nvidia-smi");

// Of those, the ones on `devices` (a CUDA_VISIBLE_DEVICES list: indices,
// UUIDs or UUID prefixes; empty: every device).
struct GpuOthers {
  int processes = 0;
  double bytes = 0;
};
GpuOthers foreign_gpu_use(const GpuSnapshot& s, std::string_view devices);

// The UUIDs of the devices that `names` (as foreign_gpu_use takes them)
// names among `devices` (index, UUID); empty when it names none of them.
std::vector<std::string> named_gpus(const std::vector<std::pair<std::string, std::string>>& devices,
                                    std::string_view names);

// The pids of autotune's tree: this process and its live descendants.
std::vector<long> autotune_pids();


// A look at the machine over `seconds` (a blocking sample).
std::optional<double> sample_foreign_cores(double seconds);

}  // namespace autotune
