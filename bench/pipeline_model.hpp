#pragma once
// The analytic step-and-memory model of a training input pipeline behind the
// strategy benches and tests; bench/landscapes.hpp and
// bench/failure_landscapes.hpp are profiles of it (a Landscape is one
// parameter set). A step is bounded by compute (a small batch underuses the
// device), by the loader (workers against `cores`, oversubscription slows it,
// the prefetch queue hides it) and by host-to-device copies (pinning overlaps
// them). Device memory grows with batch and precision, host memory with the
// workers and the queue (workers x prefetch x batch); past a limit the
// outcome is oom or host_oom. A precision in `lacks` fails as an error that
// names it. Multiplicative log-normal noise.
//
// Not the synthetic workload's model (workloads/synthetic.hpp): that one
// amortises the optimizer per micro-batch, divides by a precision's speed-up
// and stalls on loader jitter, so it cannot be a profile of this one without
// changing its numbers (bench/results/refactor_identity.md).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/outcome.hpp"
#include "core/space.hpp"

namespace autotune::bench {

struct Landscape {
  std::string name;
  std::string summary;
  // Step (microseconds).
  double compute_us = 20;      // per sample at fp32, full efficiency
  double load_us = 200;        // per sample on one worker
  double copy_us = 5;          // per sample, pinned
  double launch_us = 2000;     // per micro-batch
  double optimizer_us = 8000;  // per optimizer step
  int cores = 8;
  double tf32_speed = 0.5, fp16_speed = 0.3, bf16_speed = 0.32;  // time factors vs fp32
  double fp16_mem = 0.55, bf16_mem = 0.56;                        // activation factors vs fp32
  std::vector<std::string> lacks;  // precisions the card cannot run
  // Memory (MB).
  double act_mb = 40;              // device MB per sample at fp32
  double vram_base_mb = 1500;
  double pinned_queue_vram = 0.2;  // share of the pinned loader queue held on the device
  double vram_limit_mb = 40000;
  double ram_base_mb = 3000;
  double worker_mb = 300;          // host MB per worker process
  double sample_mb = 0.6;          // host MB per queued sample
  double queue_floor = 0;          // batches the host holds with no workers
  double ram_limit_mb = 32000;
  // Space.
  int max_workers = 16;
  std::vector<std::int64_t> grad_accums = {1, 2, 4, 8};
  std::vector<std::string> rules = {"batch_size * grad_accum <= 1024"};
  bool cache_knob = false;  // a decode_cache_gb knob, `memory: host`
  double noise = 0.02;

  SearchSpace space() const {
    auto ints = [](const std::vector<std::int64_t>& xs) { return std::vector<Value>(xs.begin(), xs.end()); };
    std::vector<Value> workers;
    for (std::int64_t w = 0; w <= max_workers; ++w) workers.emplace_back(w);
    std::vector<Parameter> ps = {
        {"batch_size", ints({16, 32, 64, 128, 256, 512}), Scale::log},
        {"num_workers", workers, Scale::linear},
        {"prefetch_factor", ints({1, 2, 4, 8}), Scale::log},
        {"pin_memory", {Value{false}, Value{true}}, Scale::linear},
        {"precision",
         {Value{std::string("fp32")}, Value{std::string("tf32")}, Value{std::string("fp16")},
          Value{std::string("bf16")}},
         Scale::categorical},
        {"grad_accum", ints(grad_accums), Scale::log},
    };
    if (cache_knob) {
      Parameter cache{"decode_cache_gb", ints({0, 2, 4, 8, 16}), Scale::linear};
      cache.memory = MemoryUse::host;  // what `memory: host` in space.yaml says
      ps.push_back(cache);
    }
    return SearchSpace(std::move(ps), rules);
  }

  struct Eval {
    double throughput = 0;  // noise-free
    double busy = 1.0;      // share of the step the compute is busy (1 - the data wait)
    double vram_mb = 0, ram_mb = 0;
    Status status = Status::ok;
    std::string reason;
  };

  Eval model(const SearchSpace& s, const Config& c) const {
    const auto a = s.to_assignment(c);
    const double b = static_cast<double>(a.get_int("batch_size", 64));
    const double w = static_cast<double>(a.get_int("num_workers", 0));
    const double p = static_cast<double>(a.get_int("prefetch_factor", 2));
    const bool pin = a.get_bool("pin_memory", false);
    const std::string prec = a.get_string("precision", "fp32");
    const double acc = static_cast<double>(a.get_int("grad_accum", 1));
    const double cache_gb = static_cast<double>(a.get_int("decode_cache_gb", 0));
    Eval e;
    if (std::find(lacks.begin(), lacks.end(), prec) != lacks.end()) {
      e.status = Status::error;
      e.reason = fmt::format("RuntimeError: {} is not supported on this device (compute capability 7.0)", prec);
      return e;
    }
    const double speed = prec == "fp32" ? 1.0 : prec == "tf32" ? tf32_speed : prec == "fp16" ? fp16_speed : bf16_speed;
    const double mem = (prec == "fp32" || prec == "tf32") ? 1.0 : prec == "fp16" ? fp16_mem : bf16_mem;
    // A decode cache saves up to 60% of the loading work as it grows (none: exactly load_us).
    const double load_per_sample = load_us * (1.0 - 0.6 * std::min(1.0, cache_gb / 12.0));
    const double efficiency = b / (b + 48.0);
    const double micro = launch_us + b * compute_us * speed / efficiency;
    const double compute = acc * micro + optimizer_us;
    const double copy = acc * b * copy_us * (pin ? 1.0 : 2.5);
    double step = 0;
    const double queued = w * p;  // batches in flight
    if (w == 0) {
      step = compute + copy + acc * b * load_per_sample;  // the main thread loads inline
      e.busy = (compute + copy) / step;
    } else {
      const double eff_workers = w <= cores ? w : cores - 0.04 * (w - cores) * cores / 2.0;
      const double overlap = 1.0 - 0.35 / p;
      const double load = acc * b * load_per_sample / std::max(0.5, eff_workers) / overlap;
      step = std::max(compute + (pin ? 0.0 : copy), load) + (pin ? 0.1 * copy : 0.0);
      e.busy = (compute + (pin ? 0.1 * copy : copy)) / step;
    }
    e.throughput = acc * b / step * 1e6;
    // A zero coefficient adds exactly 0.0, so profiles without a term keep their figures bit for bit.
    e.vram_mb = vram_base_mb + b * act_mb * mem + pinned_queue_vram * w * p * b * sample_mb * (pin ? 1.0 : 0.0);
    e.ram_mb = ram_base_mb + w * worker_mb + std::max(queue_floor, queued) * b * sample_mb * (pin ? 1.3 : 1.0) +
               cache_gb * 1024.0;
    if (e.vram_mb > vram_limit_mb) {
      e.status = Status::oom;
      e.reason = "CUDA out of memory";
    } else if (e.ram_mb > ram_limit_mb) {
      e.status = Status::host_oom;
      e.reason = "killed (SIGKILL) without a timeout";
    }
    return e;
  }

  std::optional<double> true_throughput(const SearchSpace& s, const Config& c) const {
    const Eval e = model(s, c);
    if (e.status != Status::ok) return std::nullopt;
    return e.throughput;
  }

  // with_metrics: report vram_bytes and ram_bytes as the trial would;
  // with_busy: compute_busy too (1 - the data wait, as the harness and
  // autotune_trial report it), with its own noise draw after the throughput's.
  Outcome measure(const SearchSpace& s, const Config& c, std::mt19937_64& rng, bool with_metrics = true,
                  bool with_busy = false) const {
    const Eval e = model(s, c);
    if (e.status != Status::ok) return Outcome::failure(e.status, e.reason);
    std::normal_distribution<double> n(0.0, noise);
    Outcome o = Outcome::success(e.throughput * std::exp(n(rng)));
    if (with_metrics) {
      o.set(metric::vram_bytes, e.vram_mb * 1048576.0);
      o.set(metric::ram_bytes, e.ram_mb * 1048576.0);
    }
    if (with_busy) o.set(metric::compute_busy, std::clamp(e.busy * std::exp(n(rng)), 0.0, 1.0));
    return o;
  }
};

}  // namespace autotune::bench
