#pragma once
// Trial runners: how one measurement of one configuration is taken, with its
// isolation and timeout. The scheduler (tuner/run/scheduler.hpp) puts repeats and
// limits around a runner, and an executor (tuner/run/executor.hpp) runs several
// at once.
//
//   auto runner = make_process_runner(workload);
//   Outcome o = runner->once(assignment, ctx);   // ctx.timeout_s, ctx.log_dir, ctx.env, ctx.cpus, ctx.stop
//
// Contract of once():
// - Never throws for a failed trial: a hang, a crash, an OOM, a workload that
//   throws, garbage output are Outcomes (timeout, crash, oom/host_oom, error).
// - `ram_bytes` is the runner's own measurement (peak of the summed VmHWM of
//   the trial's process group) when the workload did not report it.
// - Thread-safe: parallel slots may call once() on one runner at once.
// - While the tuner is interrupted (Ctrl-C) or ctx.stop says so, a running
//   trial is stopped like a timeout (the reason says so).
#include <functional>
#include <memory>
#include <string_view>

#include "tuner/run/builtin_worker.hpp"
#include "workloads/workload.hpp"

namespace autotune {

class TrialRunner {
 public:
  virtual ~TrialRunner() = default;
  virtual Outcome once(const Assignment& config, const TrialContext& ctx) = 0;
};

// Calls workload.measure() in this process (cheap workloads: synthetic,
// replay). A workload with an external_command() (command) still runs it as
// its own process group from measure().
std::unique_ptr<TrialRunner> make_inline_runner(Workload& w);

// Every trial in its own child process group: an external_command() is
// exec'd (`shell -c ...`); any other workload is measured by a forked child
// that calls measure() and sends the Outcome back in the wire format
// (tuner/run/wire.hpp). On timeout the group gets SIGTERM, `term_grace_s` later
// SIGKILL. Forking a multi-threaded tuner is safe for the built-in workloads
// (glibc resets malloc's locks in the child); a CUDA workload must not have
// touched the device in the parent. With `builtin` (tuner/run/builtin_worker.hpp),
// a workload without an external_command() is measured instead in its
// slot's warm worker: one `autotune __worker` process that serves trial after
// trial and is replaced after any failed one.
std::unique_ptr<TrialRunner> make_process_runner(Workload& w, double term_grace_s = 5.0,
                                                 std::optional<BuiltinWorker> builtin = std::nullopt);


// Whether the trial should stop now: the tuner was interrupted, or ctx.stop
// is set (the scheduler stops its trials when the tool itself fails).
bool trial_cancelled(const TrialContext& ctx);

}  // namespace autotune
