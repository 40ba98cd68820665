#include "tuner/run/runner.hpp"

#include <unistd.h>

#include <cerrno>
#include <map>
#include <memory>
#include <mutex>

#include "core/metric_names.hpp"
#include "proc/subprocess.hpp"
#include "tuner/run/interrupt.hpp"
#include "tuner/run/wire.hpp"

namespace autotune {
namespace {

Outcome safe_measure(Workload& w, const Assignment& config, const TrialContext& ctx) {
  try {
    return w.measure(config, ctx);
  } catch (const std::exception& e) {
    return Outcome::failure(Status::error, std::string("workload threw: ") + e.what());
  } catch (...) {
    return Outcome::failure(Status::error, "workload threw a non-standard exception");
  }
}

// A forked child's Outcome, in the wire format, down the result pipe.
int send_outcome(const Outcome& o, int fd) {
  const std::string text = outcome_wire_line(o);
  const char* p = text.data();
  std::size_t n = text.size();
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return 3;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return 0;
}

class InlineRunner final : public TrialRunner {
 public:
  explicit InlineRunner(Workload& w) : m_w(w) {}
  Outcome once(const Assignment& config, const TrialContext& ctx) override { return safe_measure(m_w, config, ctx); }

 private:
  Workload& m_w;
};

class ProcessRunner final : public TrialRunner {
 public:
  ProcessRunner(Workload& w, double grace, std::optional<BuiltinWorker> builtin)
      : m_w(w), m_grace(grace), m_builtin(std::move(builtin)) {}

  Outcome once(const Assignment& config, const TrialContext& ctx) override {
    ChildOptions opt;
    opt.timeout_s = ctx.timeout_s;
    opt.term_grace_s = m_grace;
    opt.cpus = ctx.cpus;
    opt.log_dir = ctx.log_dir;
    opt.cancel = [&ctx] { return trial_cancelled(ctx); };
    std::optional<ExternalCommand> cmd;
    try {
      cmd = m_w.external_command(config, ctx);
    } catch (const std::exception& e) {
      return Outcome::failure(Status::error, std::string("workload threw: ") + e.what());
    }
    if (cmd && cmd->warm)
      return warm(*cmd, ctx, opt, [&](const ExternalRun& run) { return m_w.interpret(run, ctx); }, true);
    if (!cmd && m_builtin)  // the cpu and cuda harness in its warm worker: the wire line in the result file
      return warm(builtin_worker_command(*m_builtin, config, ctx), ctx, opt,
                  [&](const ExternalRun& run) { return outcome_from_wire(run, run.result.value_or(""), ctx); },
                  false);
    if (cmd) {
      const ExternalRun run = run_external(*cmd, ctx.env, opt);
      return with_run_facts(m_w.interpret(run, ctx), run);
    }
    Workload& w = m_w;
    const ExternalRun run = run_forked(
        [&](int fd) {
          // In the child: the slot's environment applies to this process.
          for (const auto& [k, v] : ctx.env) ::setenv(k.c_str(), v.c_str(), 1);
          return send_outcome(safe_measure(w, config, ctx), fd);
        },
        opt);
    return with_run_facts(outcome_from_wire(run, run.result.value_or(""), ctx), run);
  }

 private:
  // A trial in its slot's warm worker (one per slot: a slot runs one trial
  // at a time). The trial that starts a worker pays its start-up
  // (worker_started); after any failed trial the worker is replaced.
  // `says_entered`: the worker is a script whose autotune_trial.trials()
  // says when it is entered (the built-in harness's worker does not).
  Outcome warm(const ExternalCommand& cmd, const TrialContext& ctx, const ChildOptions& opt,
               const std::function<Outcome(const ExternalRun&)>& interpret, bool says_entered) {
    WarmWorker* worker = nullptr;
    {
      const std::lock_guard<std::mutex> lock(m_workers_mutex);
      auto& w = m_workers[ctx.slot];
      if (!w) w = std::make_unique<WarmWorker>();
      worker = w.get();
    }
    const bool alive = worker->alive();
    const ExternalRun run = worker->run(cmd, ctx.env, opt);
    const bool fresh = !alive || run.worker_replaced;
    Outcome o = with_run_facts(interpret(run), run);
    if (fresh && run.spawn_error.empty()) o.set(metric::worker_started, true);
    // The script never entered trials(): a good trial's worker exits by
    // itself; a failed one's never said it entered (a script that writes no
    // result at all is told so too, not only one that measures itself).
    const bool ended_by_itself = run.spawn_error.empty() && !run.timed_out && !run.cancelled;
    if (fresh && !run.worker_kept && ended_by_itself && (o.ok() || (says_entered && !run.worker_entered)))
      o.set(metric::warm_ran_cold, true);
    if (!o.ok()) worker->stop();
    return o;
  }

  Workload& m_w;
  double m_grace;
  std::optional<BuiltinWorker> m_builtin;
  std::mutex m_workers_mutex;
  std::map<int, std::unique_ptr<WarmWorker>> m_workers;
};

}  // namespace

bool trial_cancelled(const TrialContext& ctx) { return interrupted() || (ctx.stop && ctx.stop->load()); }

std::unique_ptr<TrialRunner> make_inline_runner(Workload& w) { return std::make_unique<InlineRunner>(w); }

std::unique_ptr<TrialRunner> make_process_runner(Workload& w, double term_grace_s,
                                                 std::optional<BuiltinWorker> builtin) {
  return std::make_unique<ProcessRunner>(w, term_grace_s, std::move(builtin));
}

}  // namespace autotune
