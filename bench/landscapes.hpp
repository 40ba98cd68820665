#pragma once
// Analytic pipeline landscapes for studying strategies (tests and benches),
// independent of the synthetic workload: a step is bounded by compute, by the
// loader (workers against a fixed number of cores, hidden by the prefetch
// queue) and by host-to-device copies; device memory grows with the batch and
// precision, host memory with workers x prefetch x batch. Multiplicative
// noise (2% by default); OOM when a memory exceeds its limit.
#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "search/outcome.hpp"
#include "search/space.hpp"

namespace autotune::bench {

// The six knobs of DESIGN.md with batch_size * grad_accum <= 1024: 11,424
// valid configurations with workers 0..16 (21,504 with max_workers = 31).
inline SearchSpace pipeline_space(std::int64_t max_workers = 16) {
  auto ints = [](std::initializer_list<std::int64_t> xs) {
    std::vector<Value> v;
    for (auto x : xs) v.emplace_back(x);
    return v;
  };
  std::vector<Value> workers;
  for (std::int64_t w = 0; w <= max_workers; ++w) workers.emplace_back(w);
  return SearchSpace(
      {
          {"batch_size", ints({16, 32, 64, 128, 256, 512}), Scale::log},
          {"num_workers", workers, Scale::linear},
          {"prefetch_factor", ints({1, 2, 4, 8}), Scale::log},
          {"pin_memory", {Value{false}, Value{true}}, Scale::linear},
          {"precision",
           {Value{std::string("fp32")}, Value{std::string("tf32")}, Value{std::string("fp16")},
            Value{std::string("bf16")}},
           Scale::categorical},
          {"grad_accum", ints({1, 2, 4, 8}), Scale::log},
      },
      {"batch_size * grad_accum <= 1024"});
}

struct Landscape {
  std::string name;
  double compute_us = 20;      // per sample at fp32, full efficiency
  double load_us = 200;        // per sample on one worker
  double copy_us = 5;          // per sample, pinned
  double launch_us = 2000;     // per micro-batch
  double optimizer_us = 8000;  // per optimizer step
  int cores = 8;
  double act_mb = 40;          // device MB per sample at fp32
  double vram_limit_mb = 40000;
  double sample_mb = 0.6;      // host MB per queued sample
  double ram_limit_mb = 32000;
  double noise = 0.02;

  struct Eval {
    double throughput = 0;  // noise-free
    double vram_mb = 0, ram_mb = 0;
    Status status = Status::ok;
  };

  Eval model(const SearchSpace& s, const Config& c) const {
    const auto a = s.to_assignment(c);
    const double b = static_cast<double>(a.get_int("batch_size", 64));
    const double w = static_cast<double>(a.get_int("num_workers", 0));
    const double p = static_cast<double>(a.get_int("prefetch_factor", 2));
    const bool pin = a.get_bool("pin_memory", false);
    const std::string prec = a.get_string("precision", "fp32");
    const double acc = static_cast<double>(a.get_int("grad_accum", 1));
    const double speed = prec == "fp32" ? 1.0 : prec == "tf32" ? 0.5 : prec == "fp16" ? 0.3 : 0.32;
    const double mem = (prec == "fp32" || prec == "tf32") ? 1.0 : (prec == "fp16" ? 0.55 : 0.56);
    const double efficiency = b / (b + 48.0);  // small batches underuse the device
    const double micro = launch_us + b * compute_us * speed / efficiency;
    const double compute = acc * micro + optimizer_us;
    const double copy = acc * b * copy_us * (pin ? 1.0 : 2.5);
    double step = 0;
    if (w == 0) {
      step = compute + copy + acc * b * load_us;  // the main thread loads inline
    } else {
      const double eff_workers = w <= cores ? w : cores - 0.04 * (w - cores) * cores / 2.0;
      const double overlap = 1.0 - 0.35 / p;
      const double load = acc * b * load_us / std::max(0.5, eff_workers) / overlap;
      step = std::max(compute + (pin ? 0.0 : copy), load) + (pin ? 0.1 * copy : 0.0);
    }
    Eval e;
    e.throughput = acc * b / step * 1e6;
    e.vram_mb = 1500 + b * act_mb * mem + 0.2 * w * p * b * sample_mb * (pin ? 1.0 : 0.0);
    e.ram_mb = 3000 + w * 300 + w * p * b * sample_mb * (pin ? 1.3 : 1.0);
    if (e.vram_mb > vram_limit_mb)
      e.status = Status::oom;
    else if (e.ram_mb > ram_limit_mb)
      e.status = Status::host_oom;
    return e;
  }

  std::optional<double> true_throughput(const SearchSpace& s, const Config& c) const {
    const Eval e = model(s, c);
    if (e.status != Status::ok) return std::nullopt;
    return e.throughput;
  }

  Outcome measure(const SearchSpace& s, const Config& c, std::mt19937_64& rng) const {
    const Eval e = model(s, c);
    if (e.status != Status::ok) return Outcome::failure(e.status, "over the memory limit");
    std::normal_distribution<double> n(0.0, noise);
    Outcome o = Outcome::success(e.throughput * std::exp(n(rng)));
    o.metrics["vram_bytes"] = e.vram_mb * 1048576.0;
    o.metrics["ram_bytes"] = e.ram_mb * 1048576.0;
    return o;
  }
};

inline std::vector<Landscape> landscapes() {
  std::vector<Landscape> out;
  Landscape loader;  // expensive preprocessing: workers and prefetch matter most
  loader.name = "loader-bound";
  loader.load_us = 900;
  loader.compute_us = 15;
  loader.cores = 12;
  loader.act_mb = 60;
  out.push_back(loader);
  Landscape compute;  // a big model: precision and batch matter most
  compute.name = "compute-bound";
  compute.load_us = 60;
  compute.compute_us = 120;
  compute.act_mb = 70;
  compute.vram_limit_mb = 30000;
  out.push_back(compute);
  Landscape tight;  // only about a quarter of the space fits
  tight.name = "memory-tight";
  tight.load_us = 300;
  tight.compute_us = 40;
  tight.cores = 10;
  tight.act_mb = 200;
  tight.vram_limit_mb = 10000;
  tight.sample_mb = 2.0;
  tight.ram_limit_mb = 8000;
  out.push_back(tight);
  return out;
}

}  // namespace autotune::bench
