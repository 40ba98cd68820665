#include "tuner/runner.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tuner/interrupt.hpp"
#include "tuner/journal.hpp"
#include "tuner/tune.hpp"
#include "workloads/subprocess.hpp"

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

// The Outcome a forked child sends back, and the parent's reading of it.
int send_outcome(const Outcome& o, int fd) {
  const std::string text = to_json(o).dump();
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

// The reason's first line is what a progress line shows; the tails are in
// the trial's log folder, or after that line when there is none.
Outcome outcome_of_forked(const ExternalRun& run, const TrialContext& ctx) {
  auto with_tails = [&](const std::string& why) { return why + stderr_said(run) + output_tails(run, ctx.log_dir); };
  if (auto o = classify_termination(run)) {
    if (o->status != Status::timeout) o->reason = with_tails(o->reason);
    return *o;
  }
  if (run.exit_code != 0 || !run.result)
    return Outcome::failure(Status::error,
                            with_tails(fmt::format("the trial process exited with status {} without an outcome",
                                                   run.exit_code)));
  try {
    return outcome_from_json(nlohmann::json::parse(*run.result));
  } catch (const std::exception& e) {
    return Outcome::failure(Status::error, with_tails(std::string("unreadable outcome from the trial process: ") +
                                                      e.what()));
  }
}

Outcome median_of(std::vector<Outcome> runs) {
  std::vector<double> tp;
  for (const auto& o : runs) tp.push_back(o.throughput);
  const double mean = std::accumulate(tp.begin(), tp.end(), 0.0) / static_cast<double>(tp.size());
  double ss = 0;
  for (double x : tp) ss += (x - mean) * (x - mean);
  const double sd = std::sqrt(ss / static_cast<double>(tp.size() - 1));
  double peak_ram = 0, peak_vram = 0;
  for (const auto& o : runs) {
    peak_ram = std::max(peak_ram, o.metric("ram_bytes").value_or(0));
    peak_vram = std::max(peak_vram, o.metric("vram_bytes").value_or(0));
  }
  std::sort(runs.begin(), runs.end(), [](const Outcome& a, const Outcome& b) { return a.throughput < b.throughput; });
  const std::size_t n = runs.size();
  Outcome m = runs[(n - 1) / 2];  // the lower middle run for an even count: a run that happened
  m.throughput = n % 2 ? m.throughput : 0.5 * (runs[n / 2 - 1].throughput + runs[n / 2].throughput);
  m.metrics["throughput_rsd"] = mean > 0 ? sd / mean : 0.0;
  m.metrics["repeats"] = static_cast<double>(n);
  if (peak_ram > 0) m.metrics["ram_bytes"] = peak_ram;
  if (peak_vram > 0) m.metrics["vram_bytes"] = peak_vram;
  return m;
}

class Executor : public TrialExecutor {
 public:
  Executor(Workload& w, int repeats, bool isolate, double grace)
      : m_w(w), m_repeats(std::max(1, repeats)), m_isolate(isolate), m_grace(grace) {}

  Outcome run(const Assignment& config, const TrialContext& ctx) override {
    return measure_repeated(m_repeats, ctx, [&](const TrialContext& rc) { return once(config, rc); });
  }

 private:
  Outcome once(const Assignment& config, const TrialContext& ctx) {
    if (!m_isolate) return safe_measure(m_w, config, ctx);
    ChildOptions opt;
    opt.timeout_s = ctx.timeout_s;
    opt.term_grace_s = m_grace;
    opt.cpus = ctx.cpus;
    opt.log_dir = ctx.log_dir;
    opt.cancel = [] { return interrupted(); };
    std::optional<ExternalCommand> cmd;
    try {
      cmd = m_w.external_command(config, ctx);
    } catch (const std::exception& e) {
      return Outcome::failure(Status::error, std::string("workload threw: ") + e.what());
    }
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
    return with_run_facts(outcome_of_forked(run, ctx), run);
  }

  Workload& m_w;
  int m_repeats;
  bool m_isolate;
  double m_grace;
};

}  // namespace

Outcome measure_repeated(int repeats, const TrialContext& ctx,
                         const std::function<Outcome(const TrialContext&)>& once) {
  repeats = std::max(1, repeats);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Outcome> runs;
  Outcome result;
  for (int r = 0; r < repeats; ++r) {
    TrialContext rc = ctx;
    if (repeats > 1) {
      // Distinct noise per repeat (a repeat with the same seed would
      // measure nothing new on the noisy workloads).
      rc.seed = ctx.seed + static_cast<std::uint64_t>(r) * 0x9E3779B97F4A7C15ull;
      if (!ctx.log_dir.empty()) rc.log_dir = ctx.log_dir / fmt::format("repeat-{}", r + 1);
    }
    Outcome o = once(rc);
    if (!o.ok()) {
      if (repeats > 1) o.reason = fmt::format("repeat {} of {}: {}", r + 1, repeats, o.reason);
      result = std::move(o);
      runs.clear();
      break;
    }
    runs.push_back(std::move(o));
  }
  if (!runs.empty()) result = runs.size() == 1 ? std::move(runs[0]) : median_of(std::move(runs));
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return apply_limits(std::move(result), ctx.limits);
}

std::unique_ptr<TrialExecutor> make_inline_executor(Workload& w, int repeats) {
  return std::make_unique<Executor>(w, repeats, false, 5.0);
}

std::unique_ptr<TrialExecutor> make_process_executor(Workload& w, int repeats, double term_grace_s) {
  return std::make_unique<Executor>(w, repeats, true, term_grace_s);
}

}  // namespace autotune
