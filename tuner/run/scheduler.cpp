#include "tuner/run/scheduler.hpp"

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "core/metric_names.hpp"
#include "tuner/record/journal.hpp"
#include "tuner/spec/devices.hpp"
#include "tuner/spec/spec.hpp"
#include "workloads/workload.hpp"

namespace autotune {

TrialSettings trial_settings(const Spec& spec) {
  TrialSettings s;
  s.timeout_s = spec.workload.timeout_s;
  s.limits = spec.limits;
  s.repeats = std::max(1, spec.workload.repeats);
  s.seed = spec.search.seed;
  const WorkloadInfo* kind = find_workload(spec.workload.kind);
  s.watch_machine = !(kind && kind->simulated);
  s.watch_gpus = s.watch_machine && !probe_gpus().ids.empty();
  if (!spec.output.journal.empty())
    s.log_root = trial_log_folder(spec.output.journal);
  return s;
}

std::uint64_t trial_seed(std::uint64_t run_seed, std::uint64_t key) { return run_seed * 1000003ULL + key; }

TrialContext make_trial_context(const TrialSettings& s, int trial, std::uint64_t seed_key) {
  TrialContext ctx;
  ctx.trial = trial;
  ctx.seed = trial_seed(s.seed, seed_key);
  ctx.timeout_s = s.timeout_s;
  ctx.limits = s.limits;
  if (!s.log_root.empty()) ctx.log_dir = s.log_root / ("trial-" + std::to_string(trial));
  return ctx;
}

Outcome apply_limits(Outcome o, const Limits& limits) {
  judge_limits(o, limits, o.get(metric::vram_bytes), o.get(metric::ram_bytes));
  return o;
}

Outcome combine_repeats(std::vector<Outcome> runs) {
  if (runs.size() == 1) return std::move(runs[0]);
  std::vector<double> tp;
  for (const auto& o : runs) tp.push_back(o.throughput);
  const double mean = std::accumulate(tp.begin(), tp.end(), 0.0) / static_cast<double>(tp.size());
  double ss = 0;
  for (double x : tp) ss += (x - mean) * (x - mean);
  const double sd = std::sqrt(ss / static_cast<double>(tp.size() - 1));
  double peak_ram = 0, peak_vram = 0;
  for (const auto& o : runs) {
    peak_ram = std::max(peak_ram, o.ram_bytes().value_or(0));
    peak_vram = std::max(peak_vram, o.vram_bytes().value_or(0));
  }
  std::sort(runs.begin(), runs.end(), [](const Outcome& a, const Outcome& b) { return a.throughput < b.throughput; });
  const std::size_t n = runs.size();
  Outcome m = runs[(n - 1) / 2];  // the lower middle run for an even count: a run that happened
  m.throughput = n % 2 ? m.throughput : 0.5 * (runs[n / 2 - 1].throughput + runs[n / 2].throughput);
  m.set(metric::throughput_rsd, mean > 0 ? sd / mean : 0.0);
  m.set(metric::repeats, n);
  if (peak_ram > 0) m.set(metric::ram_bytes, peak_ram);
  if (peak_vram > 0) m.set(metric::vram_bytes, peak_vram);
  return m;
}

Scheduler::Scheduler(Executor& executor, TrialSettings settings)
    : m_executor(executor), m_settings(std::move(settings)) {
  m_settings.repeats = std::max(1, m_settings.repeats);
  if (m_settings.watch_gpus) m_nvml = NvmlReader::open();
}

std::optional<GpuSnapshot> Scheduler::gpu_snapshot() const {
  if (m_nvml)
    if (auto s = m_nvml->snapshot()) return s;
  return take_gpu_snapshot();
}

void Scheduler::start_repeat(int trial, InFlight& t) {
  TrialContext rc = t.ctx;
  const int r = static_cast<int>(t.runs.size());
  if (m_settings.repeats > 1) {
    // Distinct noise per repeat (a repeat with the same seed would measure
    // nothing new on the noisy workloads), and a log folder each.
    rc.seed = t.ctx.seed + static_cast<std::uint64_t>(r) * 0x9E3779B97F4A7C15ull;
    if (!t.ctx.log_dir.empty()) rc.log_dir = t.ctx.log_dir / fmt::format("repeat-{}", r + 1);
  }
  m_executor.submit(trial, t.config, std::move(rc));
}

void Scheduler::submit(int trial, const Assignment& config, std::optional<std::uint64_t> seed_key, double stop_below) {
  TrialContext ctx = make_trial_context(m_settings, trial, seed_key.value_or(static_cast<std::uint64_t>(trial)));
  ctx.stop_below = stop_below;
  submit(trial, config, ctx);
}

void Scheduler::submit(int trial, const Assignment& config, const TrialContext& ctx) {
  InFlight t;
  t.config = config;
  t.ctx = ctx;
  if (m_settings.watch_machine) t.load_from = take_load_snapshot();
  if (m_settings.watch_gpus) {
    t.started_us = wall_clock_us();
    t.gpus_from = gpu_snapshot();
  }
  auto [it, fresh] = m_trials.emplace(trial, std::move(t));
  if (!fresh) throw std::logic_error(fmt::format("trial {} is already running", trial));
  start_repeat(trial, it->second);
}

std::optional<Scheduler::Done> Scheduler::wait_any(std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    auto run = m_executor.wait_any(std::max(left, std::chrono::milliseconds(0)));
    if (!run) return std::nullopt;
    auto it = m_trials.find(run->ticket);
    if (it == m_trials.end()) continue;  // stopped and forgotten
    InFlight& t = it->second;
    t.seconds += run->outcome.seconds;
    const int r = static_cast<int>(t.runs.size());
    Outcome o = std::move(run->outcome);
    const bool raced = o.raced();
    if (o.ok() && !raced && r + 1 < m_settings.repeats) {
      t.runs.push_back(std::move(o));
      start_repeat(run->ticket, t);  // its slot just came free
      continue;
    }
    if (!o.ok()) {
      // The first failure ends the repeats and is the outcome.
      if (m_settings.repeats > 1) o.reason = fmt::format("repeat {} of {}: {}", r + 1, m_settings.repeats, o.reason);
    } else if (raced) {
      // Surely below the bar: what the repeats so far add is no reason to go on.
      t.runs.push_back(std::move(o));
      const bool several = t.runs.size() > 1;
      o = combine_repeats(std::move(t.runs));
      if (several) o.mark_raced();
    } else {
      t.runs.push_back(std::move(o));
      o = combine_repeats(std::move(t.runs));
    }
    o.seconds = t.seconds;
    if (const auto foreign = t.load_from.valid ? foreign_cores(t.load_from, take_load_snapshot()) : std::nullopt)
      o.set(metric::foreign_cores, *foreign);
    if (m_settings.watch_gpus) {
      // The trial's devices: its slot's, else autotune's own view.
      std::string devices;
      if (const auto g = o.labels.find("gpus"); g != o.labels.end()) devices = g->second;
      else if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) devices = v;
      if (const auto snapshot = gpu_snapshot()) {
        const GpuOthers then = t.gpus_from ? foreign_gpu_use(*t.gpus_from, devices) : GpuOthers{};
        const GpuOthers now = foreign_gpu_use(*snapshot, devices);
        o.set(metric::foreign_gpu_processes, std::max(then.processes, now.processes));
        o.set(metric::foreign_gpu_bytes, std::max(then.bytes, now.bytes));
      }
      if (m_nvml)
        if (const auto busy = m_nvml->foreign_busy(devices, t.started_us))
          o.set(metric::foreign_gpu_busy, *busy);
    }
    Done d{run->ticket, std::move(t.config), apply_limits(std::move(o), m_settings.limits)};
    m_trials.erase(it);
    return d;
  }
}

Scheduler::Done Scheduler::wait_next() {
  while (true)
    if (auto d = wait_any(std::chrono::milliseconds(100))) return std::move(*d);
}

void Scheduler::stop_all() {
  m_executor.stop_all();
  m_trials.clear();
}

}  // namespace autotune
