// The default Workload::interpret: the command contract (docs/guide.md, "The
// command workload" and "How a trial ends") applied to what an external trial
// produced.
#include <cmath>
#include <csignal>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/metric_names.hpp"
#include "proc/failure_reading.hpp"
#include "proc/subprocess.hpp"
#include "workloads/setup_failure.hpp"
#include "workloads/workload.hpp"

namespace autotune {
namespace {

using nlohmann::json;

std::optional<json> parse_object(std::string_view text) {
  const std::string marked = mark_nonfinite(text);
  json j = json::parse(marked, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) return j;
  return std::nullopt;
}

// The last line of standard output that parses as a JSON object: a script's
// result line may be followed by a logger's farewell.
std::optional<json> last_json_line(const std::string& out) {
  std::size_t end = out.size();
  while (end > 0) {
    std::size_t start = out.rfind('\n', end - 1);
    start = (start == std::string::npos) ? 0 : start + 1;
    std::string_view line(out.data() + start, end - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (!line.empty() && line.front() == '{')
      if (auto j = parse_object(line)) return j;
    if (start == 0) break;
    end = start - 1;
  }
  return std::nullopt;
}

void collect_metrics(const json& j, std::map<std::string, double>& metrics) {
  for (const auto& [k, v] : j.items()) {
    if (k == "throughput" || k == "status") continue;
    if (v.is_number()) {
      const double d = v.get<double>();
      if (std::isfinite(d)) metrics[k] = d;
    } else if (k == "metrics" && v.is_object()) {
      collect_metrics(v, metrics);
    }
  }
}

// Bounds on what a result may say. A job's figures pass into the journal,
// the strategy's model and the answer: one absurd number (1e308 samples/s)
// would be the best configuration, and thousands of keys would be copied
// into every record.
constexpr std::size_t kMaxMetrics = 256;
constexpr double kMaxThroughput = 1e12;  // samples/s: far above any real input pipeline
constexpr double kMaxBytes = 1LL << 60;  // a memory figure above 1 EiB is no measurement

// The first number of the result (and its `metrics`) that is not finite, as
// "the result's loss is NaN"; and how many numbers it holds.
void scan_numbers(const json& j, const std::string& prefix, std::size_t& count, std::string& nonfinite) {
  for (const auto& [k, v] : j.items()) {
    if (k == "metrics" && v.is_object() && prefix.empty()) {
      scan_numbers(v, "metrics.", count, nonfinite);
      continue;
    }
    if (v.is_number()) {
      ++count;
      if (nonfinite.empty() && !std::isfinite(v.get<double>()))
        nonfinite = fmt::format("the result's {}{} is {}", prefix, k, v.get<double>());
    } else if (v.is_string() && v.get<std::string>().rfind(kNonFiniteMark, 0) == 0) {
      ++count;
      if (nonfinite.empty())
        nonfinite = fmt::format("the result's {}{} is {}", prefix, k,
                                v.get<std::string>().substr(std::string_view(kNonFiniteMark).size()));
    }
  }
}

// Why a parsed result cannot be taken as a measurement: a number that is not
// finite (Python's json writes NaN and Infinity), too many metrics, a figure
// no job measures. Nullopt when it can.
std::optional<std::string> implausible_result(const json& j) {
  std::size_t count = 0;
  std::string nonfinite;
  scan_numbers(j, "", count, nonfinite);
  if (!nonfinite.empty()) return nonfinite + ": a result's numbers must be finite";
  if (count > kMaxMetrics) return fmt::format("the result has {} metrics, at most {}", count, kMaxMetrics);
  if (j.contains("throughput") && j["throughput"].is_number() && j["throughput"].get<double>() > kMaxThroughput)
    return fmt::format("the result's throughput {:g} samples/s is beyond any real job (at most {:g})",
                       j["throughput"].get<double>(), kMaxThroughput);
  for (const metric::Real m : {metric::ram_bytes, metric::vram_bytes})
    if (const char* key = m.name;
        j.contains(key) && j[key].is_number() && (j[key].get<double>() < 0 || j[key].get<double>() > kMaxBytes))
      return fmt::format("the result's {} {:g} is not a memory size (0 to 2^60 bytes)", key, j[key].get<double>());
  return std::nullopt;
}

std::string reported_reason(const json& j) {
  for (const char* key : {"reason", "message", "error"})
    if (j.contains(key) && j[key].is_string()) return j[key].get<std::string>();
  return {};
}

// The kernel's own word that host memory ran out while the job ran: an OOM
// kill of one of its processes (from the kernel log), or failing that, of any
// process on the machine (/proc/vmstat) at the time the job failed. Where
// the log names only processes outside the trial's group, the kill is the
// trial's only if it exited as a killed process does (137: a container's
// runtime, `docker run`, passes on its process's SIGKILL so); else it was
// another job's on a shared machine, and the trial failed of something else.
std::optional<std::string> kernel_oom_reason(const ExternalRun& run) {
  if (!run.oom_killed.empty())
    return fmt::format("the kernel's OOM killer killed {} of this trial", run.oom_killed);
  if (run.oom_kills <= 0) return std::nullopt;
  if (run.oom_kills_elsewhere > 0 && run.exit_code != 128 + SIGKILL) return std::nullopt;
  return fmt::format("the kernel's OOM killer killed {} process{} while this trial ran (/proc/vmstat oom_kill){}",
                     run.oom_kills, run.oom_kills == 1 ? "" : "es",
                     run.oom_kills_elsewhere > 0 ? "; the kernel log names none of the trial's own processes, "
                                                   "and it exited with 137 (a container's kill?)"
                                                 : "");
}

// Said of a failure not read as memory while the OOM killer took another
// process on the machine: what the user may want to know of it.
std::string elsewhere_note(const ExternalRun& run) {
  if (run.oom_kills_elsewhere <= 0 || !run.oom_killed.empty()) return {};
  return fmt::format(" (meanwhile the kernel's OOM killer killed {} process{} outside this trial, by the kernel log)",
                     run.oom_kills_elsewhere, run.oom_kills_elsewhere == 1 ? "" : "es");
}

// Stopped at its timeout after printing its result line (no result file):
// a teardown that hangs (NCCL's destroy, DataLoader workers that never
// join) must not cost what it measured, as with a written result. A line
// is a result when it has a throughput or a status (a progress line with
// neither leaves the timeout a timeout).
std::optional<json> printed_before_timeout(const ExternalRun& run) {
  std::optional<json> printed;
  if (run.timed_out && !run.cancelled && !run.result && run.spawn_error.empty()) {
    printed = last_json_line(run.stdout_tail);
    if (printed && !printed->contains("throughput") && !printed->contains("status")) printed.reset();
  }
  return printed;
}

// Why the trial failed, read in the contract's order: the
// result's own status, an out-of-memory message, the exit status, no result,
// no usable throughput. Nullopt when it measured.
std::optional<Outcome> external_failure(const ExternalRun& run, const TrialContext& ctx,
                                        const std::optional<json>& result, bool after_result) {
  const auto fail = [](Status s, std::string why) { return Outcome::failure(s, std::move(why)); };
  std::optional<Status> reported;
  if (result && result->contains("status")) {
    const json& st = (*result)["status"];
    reported = st.is_string() ? parse_status(st.get<std::string>()) : std::nullopt;
    if (!reported)
      return fail(Status::error, fmt::format("the result's status {} is not one of ok, oom, host_oom, timeout, "
                                             "crash, error, invalid",
                                             st.dump()));
    if (*reported != Status::ok) {
      std::string why = reported_reason(*result);
      return fail(*reported, why.empty() ? fmt::format("the script reported {}", to_string(*reported)) : why);
    }
  }
  // An out-of-memory message wins over the exit status (a traceback exits 1),
  // unless the script said explicitly that it measured fine.
  if (!reported) {
    std::string what;
    if (auto s = find_oom_message(run.stderr_tail, &what))
      return fail(*s, fmt::format("standard error says '{}'", what) + output_tails(run, ctx.log_dir));
  }
  const std::optional<std::string> kernel_oom = kernel_oom_reason(run);
  if (run.exit_code != 0 && !after_result) {
    // A shell, torchrun or a DataLoader may report a signal or a memory
    // failure on the job's behalf: read it as what it names.
    if (auto r = read_reported_failure(run.stderr_tail, run.exit_code, run.via_shell)) {
      // The kernel's log, where readable, confirms which process it took.
      if (r->status == Status::host_oom && !run.oom_killed.empty())
        r->reason += "; the kernel's OOM killer killed " + run.oom_killed;
      return fail(r->status, r->reason + output_tails(run, ctx.log_dir));
    }
    if (kernel_oom)
      return fail(Status::host_oom, *kernel_oom + fmt::format("; it exited with status {}", run.exit_code) +
                                        stderr_said(run) + output_tails(run, ctx.log_dir));
    return fail(Status::error, fmt::format("exited with status {}", run.exit_code) + elsewhere_note(run) +
                                   stderr_said(run) + output_tails(run, ctx.log_dir));
  }
  if (!result && kernel_oom)
    return fail(Status::host_oom,
                *kernel_oom + "; no JSON result" + stderr_said(run) + output_tails(run, ctx.log_dir));
  if (!result)
    return fail(Status::error, "no JSON result: $AUTOTUNE_RESULT not written and no standard output line is a "
                               "JSON object" + elsewhere_note(run) + stderr_said(run) + output_tails(run, ctx.log_dir));
  if (!result->contains("throughput") || !(*result)["throughput"].is_number())
    return fail(Status::error, "the result has no numeric 'throughput': " + tail_for_reason(result->dump(), 500));
  const double tp = (*result)["throughput"].get<double>();
  if (!std::isfinite(tp) || tp < 0)
    return fail(Status::error, fmt::format("the result's throughput {} is not a finite number >= 0", tp));
  return std::nullopt;
}

}  // namespace

Outcome Workload::interpret(const ExternalRun& run, const TrialContext& ctx) const {
  const std::optional<json> printed = printed_before_timeout(run);
  const bool after_result = run.stopped_after_result || printed.has_value();
  if (!printed) {
    if (auto o = classify_termination(run)) {
      if (o->status != Status::timeout) o->reason += stderr_said(run) + output_tails(run, ctx.log_dir);
      return *o;
    }
  }

  // The result file was something else (a link, a FIFO, a device, too
  // big): not read, and not replaced by what standard output says.
  if (!printed && !run.result_refused.empty())
    return Outcome::failure(Status::error, run.result_refused + output_tails(run, ctx.log_dir));

  std::optional<json> result = printed;
  if (!result && run.result) {
    result = parse_object(*run.result);
    if (!result)
      return Outcome::failure(Status::error, "the result file is not a JSON object: " +
                                                 tail_for_reason(*run.result, 500) + output_tails(run, ctx.log_dir));
  } else if (!result) {
    result = last_json_line(run.stdout_tail);
  }

  if (result)
    if (auto why = implausible_result(*result))
      return Outcome::failure(Status::error, *why + output_tails(run, ctx.log_dir));
  std::map<std::string, double> metrics;
  if (result) collect_metrics(*result, metrics);
  if (auto failed = external_failure(run, ctx, result, after_result)) {
    failed->metrics = std::move(metrics);
    // A set-up that fails every trial alike (a program or module not found):
    // said so, for the run to stop on it (tuner/record/setup_stop.hpp).
    if (failed->status == Status::error && !after_result && !(result && result->contains("status")))
      if (auto setup = read_setup_failure(run.exit_code, run.stderr_tail, result.has_value()))
        mark_setup_failure(*failed, *setup);
    return *failed;
  }
  Outcome o = Outcome::success((*result)["throughput"].get<double>());
  o.metrics = std::move(metrics);
  // The knobs the job says it ignored ("pin_memory, precision"): explain puts them back unmeasured.
  if (result->contains("ignored") && (*result)["ignored"].is_string())
    o.labels["ignored"] = (*result)["ignored"].get<std::string>();
  // It wrote or printed its result, then did not exit (a teardown that
  // hung): stopped, and what it measured stands.
  if (after_result) o.set(metric::stopped_after_result, true);
  return o;
}

Outcome with_run_facts(Outcome o, const ExternalRun& run) {
  if (!o.ram_bytes() && run.peak_ram_bytes > 0) o.set(metric::ram_bytes, run.peak_ram_bytes);
  if (o.seconds <= 0) o.seconds = run.wall_s;  // a forked workload may report its own (simulated) seconds
  if (run.worker_replaced) o.set(metric::worker_replaced, true);
  return o;
}

}  // namespace autotune
