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
#include <vector>

#include "tuner/run/executor.hpp"
#include "tuner/spec/executor_kind.hpp"
#include "workloads/workload.hpp"

namespace autotune {

// The kind: its options are each step's resources and extra srun options.
ExecutorKind slurm_executor_kind();

struct SlurmSettings {
  int gpus_per_trial = 0;                // each step's --gpus; 0: none asked
  int cpus_per_trial = 0;                // --cpus-per-task; 0: Slurm's default
  std::string mem_per_trial;             // --mem as written ("16G"); empty: Slurm's default
  std::vector<std::string> srun_args;    // extra srun options, as written
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
