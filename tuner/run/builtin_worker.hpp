#pragma once
// The built-in harness (the cpu and cuda workloads) in a warm worker: one
// `autotune` process per parallel slot that measures trial after trial, so
// the CUDA context, cuBLAS's handle and the loaded cuda module are paid for
// once, not on every trial. It speaks the protocol of autotune_trial.trials()
// (proc/subprocess.hpp WarmWorker): the first trial's environment starts
// it, it writes the trial's Outcome (the wire line, tuner/run/wire.hpp) to
// $AUTOTUNE_RESULT and `ready-<trial>` to $AUTOTUNE_WARM_DIR, then waits for
// `next.json` or `stop`. Isolation is a cold trial's: its own process group,
// the timeout, and a fresh worker after any failed trial.
//
//   auto worker = builtin_worker_for(spec);          // nullopt: trials stay forked
//   auto runner = make_process_runner(workload, 5.0, worker);
//
// The worker is the `autotune` executable (this one, or the one beside a test
// binary) run as `autotune __worker`; what it measures travels in its
// environment: AUTOTUNE_WORKER_WORKLOAD (kind, options, spec folder),
// AUTOTUNE_WORKER_VALUES (the configuration), AUTOTUNE_WORKER_CONTEXT (the
// trial's seed, limits, racing bar, slot), AUTOTUNE_TRIAL_START.
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "tuner/spec/spec.hpp"
#include "workloads/workload.hpp"

namespace autotune {

struct BuiltinWorker {
  std::filesystem::path program;  // the autotune executable
  nlohmann::json workload;        // {"kind", "options", "spec_dir", "parameters"}
};

// The first argument that makes `autotune` a worker.
inline constexpr const char* kWorkerArgument = "__worker";

// A warm worker for this spec: the cpu and cuda workloads under process
// isolation with `warm: true` (their default), when the autotune executable
// is found; nullopt otherwise (trials are forked children, as before).
std::optional<BuiltinWorker> builtin_worker_for(const Spec& spec);

// The command that measures `config` in the worker (ExternalCommand::warm).
ExternalCommand builtin_worker_command(const BuiltinWorker& worker, const Assignment& config,
                                       const TrialContext& ctx);

// `autotune __worker`: measures the trial in its environment, then, under
// AUTOTUNE_WARM_DIR, the next ones until told to stop. Returns the exit status.
int run_builtin_worker();

}  // namespace autotune
