#pragma once
// A workload measures one configuration and reports an Outcome.
//
// measure() runs in the calling process; the tuner's runner decides whether
// that process is the tuner itself (inline, for cheap workloads) or a child
// per trial (isolation). measure() never throws for a failed trial: an
// out-of-memory, a bad configuration or a missing device is an Outcome with a
// status and a reason. It may throw only for bugs.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "search/outcome.hpp"
#include "search/value.hpp"
#include "workloads/options.hpp"

namespace autotune {

struct Limits {
  double vram_bytes = 0;  // 0 = no limit
  double ram_bytes = 0;   // 0 = no limit
};

struct TrialContext {
  int trial = 0;                    // 1-based trial number in the run
  std::uint64_t seed = 0;           // per-trial seed for any noise the workload adds
  double timeout_s = 0;             // 0 = none; the runner enforces it, workloads may use it as a cap
  Limits limits;                    // the spec's constraints
  std::filesystem::path log_dir;    // per-trial folder for logs; empty = keep none
  int slot = 0;                     // the parallel slot running it (0-based)
  // Extra environment for a trial's child process (e.g. CUDA_VISIBLE_DEVICES
  // of its slot); in-process workloads ignore it.
  std::map<std::string, std::string> env;
  // CPUs a trial's child process is pinned to (empty: not pinned).
  std::vector<int> cpus;
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::string_view kind() const = 0;
  virtual Outcome measure(const Assignment& config, const TrialContext& ctx) = 0;
  // The noise-free answer, where the workload knows it (synthetic, replay):
  // lets `compare` and the tests know the exact optimum. nullopt otherwise.
  virtual std::optional<Outcome> expected(const Assignment& /*config*/) const { return std::nullopt; }
};

// What a workload factory gets besides its options.
struct WorkloadEnv {
  std::vector<std::string> parameter_names;  // the space's parameters, in order
  std::filesystem::path spec_dir;            // folder of the spec file
};

// Thrown by a factory when its options are unusable (e.g. a replay table that
// does not parse); the message says what and where.
struct WorkloadConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct WorkloadInfo {
  std::string kind;
  std::string summary;
  std::vector<OptionSpec> options;
  std::function<std::unique_ptr<Workload>(const Options&, const WorkloadEnv&)> make;
  // Whether running it inline (in the tuner's process) is sensible by default.
  bool cheap = false;
};

// Every workload kind built into this binary, in a stable order.
const std::vector<WorkloadInfo>& workload_catalog();
const WorkloadInfo* find_workload(std::string_view kind);
std::vector<std::string> workload_kinds();

}  // namespace autotune
