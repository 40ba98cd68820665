#include "workloads/synthetic.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "core/metric_names.hpp"
#include "workloads/pipeline_knobs.hpp"
#include "workloads/workloads.hpp"

namespace autotune {

const std::vector<SyntheticProfile>& synthetic_profiles() {
  static const std::vector<SyntheticProfile> profiles = [] {
    std::vector<SyntheticProfile> v;
    SyntheticProfile balanced;
    balanced.name = "balanced";
    balanced.summary = "compute and loading comparable; the optimum mixes workers, bf16 and a large batch";
    v.push_back(balanced);

    SyntheticProfile loader = balanced;
    loader.name = "loader_bound";
    loader.summary = "heavy preprocessing: workers and prefetch matter most, precision little";
    loader.c_preprocess = 4.0e-3;
    loader.cores = 12;
    loader.jitter = 0.4;
    v.push_back(loader);

    SyntheticProfile compute = balanced;
    compute.name = "compute_bound";
    compute.summary = "light preprocessing, a big model: precision and batch size dominate";
    compute.c_sample = 200e-6;
    compute.c_preprocess = 0.25e-3;
    compute.act_bytes = 70e6;
    compute.device_bytes = 40e9;
    v.push_back(compute);

    SyntheticProfile tight = balanced;
    tight.name = "memory_tight";
    tight.summary = "an 8 GB card and 16 GB of RAM: only about a quarter of the space fits";
    tight.device_bytes = 8e9;
    tight.host_bytes = 16e9;
    tight.act_bytes = 220e6;
    tight.sample_bytes = 1.5e6;
    v.push_back(tight);
    return v;
  }();
  return profiles;
}

const SyntheticProfile* find_synthetic_profile(const std::string& name) {
  for (const auto& p : synthetic_profiles())
    if (p.name == name) return &p;
  return nullptr;
}

Outcome synthetic_evaluate(const SyntheticProfile& p, const Assignment& config) {
  const double B = static_cast<double>(std::max<std::int64_t>(1, config.get_int("batch_size", 32)));
  const double W = static_cast<double>(std::max<std::int64_t>(0, config.get_int("num_workers", 0)));
  const double P = static_cast<double>(std::max<std::int64_t>(1, config.get_int("prefetch_factor", 2)));
  const bool pin = config.get_bool("pin_memory", false);
  const std::string precision = config.get_string("precision", "fp32");
  const double A = static_cast<double>(std::max<std::int64_t>(1, config.get_int("grad_accum", 1)));

  double speed = 1.0, act_scale = 1.0;
  if (precision == "tf32") speed = p.speed_tf32;
  else if (precision == "fp16") speed = p.speed_fp16, act_scale = 0.5;
  else if (precision == "bf16") speed = p.speed_bf16, act_scale = 0.5;
  else if (precision != "fp32") return Outcome::failure(Status::error, "unknown precision " + precision);

  // Memory first: a configuration that does not fit never produces a number.
  const double vram = p.model_bytes + B * p.act_bytes * act_scale + (pin ? 2.0 : 1.0) * B * p.sample_bytes;
  const double queued = (W > 0 ? W * P : 1.0) * B * p.sample_bytes * 4.0;  // float32 batches in flight
  const double ram = 2.0e9 + W * 0.35e9 + queued + (pin ? B * p.sample_bytes * 2.0 : 0.0);
  if (vram > p.device_bytes)
    return Outcome::failure(Status::oom, fmt::format("device memory: needs {:.1f} GB of {:.1f} GB",
                                                     vram / 1e9, p.device_bytes / 1e9));
  if (ram > p.host_bytes)
    return Outcome::failure(Status::host_oom, fmt::format("host memory: needs {:.1f} GB of {:.1f} GB",
                                                          ram / 1e9, p.host_bytes / 1e9));

  const double eff = B / (B + p.b_half);
  const double t_compute = p.launch + B * p.c_sample / speed / eff;
  const double t_opt = p.t_opt / A;
  const double t_copy = B * p.sample_bytes / (pin ? p.bw_pinned : p.bw_pageable);
  double step = 0.0;
  if (W == 0) {
    step = B * p.c_preprocess + t_copy + t_compute + t_opt;
  } else {
    // Oversubscribed workers still add some throughput, then contention wins.
    const double over = std::max(0.0, W - p.cores);
    const double par = std::min(W, p.cores) + 0.25 * std::min(over, 2.0) - 0.08 * over;
    const double t_load = B * p.c_preprocess / std::max(0.5, par);
    const double t_device = t_compute + t_opt + (pin ? 0.05 * t_copy : t_copy);
    const double stall = p.jitter * t_load / (W * P);
    step = std::max(t_device, t_load) + stall;
  }
  Outcome o = Outcome::success(B / step);
  o.set(metric::gpu_busy, t_compute / step);
  o.set(metric::vram_bytes, vram);
  o.set(metric::ram_bytes, ram);
  return o;
}

namespace {

class SyntheticWorkload final : public Workload {
 public:
  SyntheticWorkload(SyntheticProfile p, double noise, std::uint64_t seed, double trial_seconds, VirtualClock clock)
      : m_profile(std::move(p)), m_noise(noise), m_seed(seed), m_trial_seconds(trial_seconds), m_clock(clock) {}
  std::string_view kind() const override { return "synthetic"; }
  std::optional<Outcome> expected(const Assignment& config) const override {
    return synthetic_evaluate(m_profile, config);
  }

  Outcome measure(const Assignment& config, const TrialContext& ctx) override {
    if (m_trial_seconds > 0)  // stands in for the time a real measurement takes
      std::this_thread::sleep_for(std::chrono::duration<double>(m_trial_seconds));
    Outcome o = synthetic_evaluate(m_profile, config);
    if (m_clock.on && !o.ok()) o.seconds = m_clock.startup_s;  // a failure shows at start-up
    if (!o.ok()) return o;
    std::mt19937_64 rng(m_seed * 0x9E3779B97F4A7C15ULL + ctx.seed);
    if (m_noise > 0) {
      std::normal_distribution<double> z(0.0, m_noise);
      o.throughput *= std::exp(z(rng));  // this run's level: differs run to run
      o.set(metric::throughput_rsd, m_noise);
    }
    if (m_clock.on) measure_on_virtual_clock(o, config, ctx, rng(), m_clock);
    return o;
  }

 private:
  SyntheticProfile m_profile;
  double m_noise;
  std::uint64_t m_seed;
  double m_trial_seconds;
  VirtualClock m_clock;
};

}  // namespace

WorkloadInfo synthetic_workload_info() {
  std::vector<std::string> names;
  for (const auto& p : synthetic_profiles()) names.push_back(p.name);
  WorkloadInfo info;
  info.kind = "synthetic";
  info.simulated = true;
  info.summary = "analytic pipeline model with noise, for tests and strategy studies";
  info.options = {
      {"profile", OptionType::string, OptionValue{std::string("balanced")}, "landscape shape", names},
      {"noise", OptionType::number, OptionValue{0.03}, "relative noise (log-normal sigma) of a measurement",
       {}, 0.0, 1.0},
      {"seed", OptionType::integer, OptionValue{std::int64_t{0}}, "noise seed (mixed with the trial's)"},
      {"trial_seconds", OptionType::duration, OptionValue{0.0},
       "sleep this long per trial, to stand in for a real measurement", {}, 0.0},
  };
  for (auto& spec : virtual_clock_option_specs(
           "measure with the harness's rule (warm-up, windows, cap, racing) on a virtual clock and report the "
           "seconds that would take, without waiting",
           "with simulated_time: seconds a trial spends before its warm-up (process, model, loader)"))
    info.options.push_back(std::move(spec));
  info.make = [](const Options& o, const WorkloadEnv&) -> std::unique_ptr<Workload> {
    const SyntheticProfile* p = find_synthetic_profile(o.get_string("profile"));
    if (!p) throw WorkloadConfigError("unknown synthetic profile '" + o.get_string("profile") + "'");
    return std::make_unique<SyntheticWorkload>(*p, o.get_number("noise"),
                                               static_cast<std::uint64_t>(o.get_int("seed")),
                                               o.get_number("trial_seconds"), read_virtual_clock(o));
  };
  return info;
}

}  // namespace autotune
