#pragma once
// Analytic pipeline landscapes for studying strategies (tests and benches):
// three profiles of the step-and-memory model of bench/pipeline_model.hpp, on
// the six knobs of DESIGN.md with the rule batch_size * grad_accum <= 1024.
// Noise 2%; OOM when a memory exceeds its limit.
#include <cstdint>
#include <vector>

#include "bench/pipeline_model.hpp"
#include "core/space.hpp"

namespace autotune::bench {

// The six knobs of DESIGN.md with batch_size * grad_accum <= 1024: 11,424
// valid configurations with workers 0..16 (21,504 with max_workers = 31).
inline SearchSpace pipeline_space(std::int64_t max_workers = 16) {
  Landscape l;
  l.max_workers = static_cast<int>(max_workers);
  return l.space();
}

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
