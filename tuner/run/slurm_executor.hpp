#pragma once
// The Slurm executor: inside an existing allocation (salloc or a batch job),
// each trial is one `srun --exact -n1` step with the spec's per-trial
// resources. We never ship a launcher of our own: the cluster's Slurm places
// the steps. The tuner keeps its own timeouts: on timeout srun gets SIGTERM
// (which cancels the step), then SIGKILL, and any step of that trial still
// listed by squeue is scancel'ed, since a SIGKILLed srun leaves its step
// running. srun's exit status and standard error are classified as for local
// trials; each trial records the node it ran on (label `node`). A built-in
// workload's step runs `autotune trial`, whose last line of output is the
// Outcome in the wire format (tuner/run/wire.hpp): it journals exactly what a
// local trial does.
#include <filesystem>
#include <memory>
#include <string>

#include "tuner/run/executor.hpp"
#include "tuner/spec/spec.hpp"

namespace autotune {

struct SlurmSettings {
  ExecutorSpec executor;                 // per-trial resources, extra srun options
  std::filesystem::path spec_file;       // what `autotune trial` re-loads on the node (built-in workloads)
  std::filesystem::path self_exe;        // this binary, as the nodes see it (a shared path)
  std::string run_tag;                   // distinguishes this run's step names
  double term_grace_s = 10.0;
};

// Throws std::runtime_error saying what to do when this process is not inside
// a Slurm allocation (no SLURM_JOB_ID) or srun is not on PATH.
void require_slurm_allocation();

// `steps` trials at once, each its own step (no placement of ours: Slurm's).
std::unique_ptr<Executor> make_slurm_executor(Workload& w, SlurmSettings settings, int steps);

// The srun command line for one trial (exposed for tests).
std::vector<std::string> srun_argv(const SlurmSettings& s, const std::string& step_name,
                                   const std::vector<std::string>& inner);

}  // namespace autotune
