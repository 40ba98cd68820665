#pragma once
// Trial executors: how one configuration is measured, honouring isolation,
// the timeout and repeats.
//
//   auto exec = make_process_executor(workload, spec.workload.repeats);
//   Outcome o = exec->run(assignment, ctx);   // ctx.timeout_s, ctx.limits, ctx.log_dir, ctx.env, ctx.cpus
//
// Contract of run():
// - Never throws for a failed trial: a hang, a crash, an OOM, a workload that
//   throws, garbage output are Outcomes (timeout, crash, oom/host_oom, error).
// - Outcome.seconds is the wall time of all repeats; `ram_bytes` is the
//   runner's own measurement (peak of the summed VmHWM of the trial's process
//   group) when the workload did not report it; an ok outcome over
//   ctx.limits becomes `invalid` (apply_limits).
// - repeats > 1: the configuration is measured that many times (seed varied
//   per repeat, logs in log_dir/repeat-<k>); the first failure ends the
//   repeats and is the outcome; if all are ok the median throughput is kept,
//   with the metrics of the median run, `throughput_rsd` (sample standard
//   deviation / mean) across repeats, and ram_bytes / vram_bytes as the
//   maximum over the repeats (feasibility is judged on the worst run).
// - Thread-safe: parallel slots may call run() on one executor at once.
// - While the tuner is interrupted (Ctrl-C), a running trial is stopped like a
//   timeout (reason says so), which the tuning loop re-runs on --resume.
#include <functional>
#include <memory>

#include "workloads/workload.hpp"

namespace autotune {

class TrialExecutor {
 public:
  virtual ~TrialExecutor() = default;
  virtual Outcome run(const Assignment& config, const TrialContext& ctx) = 0;
};

// Calls workload.measure() in this process (cheap workloads: synthetic,
// replay). A workload with an external_command() (command) still runs it as
// its own process group from measure().
std::unique_ptr<TrialExecutor> make_inline_executor(Workload& w, int repeats);

// The repeats policy every executor shares (above): `once` measures one
// repeat with the context it is given (seed and log folder varied per repeat).
Outcome measure_repeated(int repeats, const TrialContext& ctx,
                         const std::function<Outcome(const TrialContext&)>& once);

// Every trial in its own child process group: an external_command() is
// exec'd (`shell -c ...`); any other workload is measured by a forked child
// that calls measure() and sends the Outcome back as JSON. On timeout the
// group gets SIGTERM, `term_grace_s` later SIGKILL. Forking a multi-threaded
// tuner is safe for the built-in workloads (glibc resets malloc's locks in the
// child); a CUDA workload must not have touched the device in the parent.
std::unique_ptr<TrialExecutor> make_process_executor(Workload& w, int repeats, double term_grace_s = 5.0);

}  // namespace autotune
