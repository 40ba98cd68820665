#pragma once
// The training state that stays on the device between optimizer steps: the
// step's loss sum, the fp16 loss scale and its overflow decision, as
// PyTorch's GradScaler keeps them (found_inf and the scale are device
// tensors there too), so that no step waits for the host. The update rule is
// a __host__ __device__ function: the device applies it in one thread after
// the optimizer (kernels.cu), the tests run it on the CPU.
//
// A copy of the state after each step (the report) goes to page-locked host
// memory asynchronously; the host reads it a step late.
#include <cstdint>

#if defined(__CUDACC__)
#define AUTOTUNE_HOST_DEVICE __host__ __device__
#else
#define AUTOTUNE_HOST_DEVICE
#endif

namespace autotune::cuda {

struct TrainState {
  float loss_sum = 0;           // summed cross-entropy of this step's samples (unscaled)
  int found_inf = 0;            // a gradient of this step was not finite (fp16 only)
  float loss_scale = 1;         // multiplies the loss before the backward pass (fp16 only)
  int growth_tracker = 0;       // consecutive good steps since the scale last moved
  std::int64_t skipped_steps = 0;
  std::int64_t applied_steps = 0;  // Adam's t
};

// Dynamic loss scaling (Micikevicius et al., "Mixed Precision Training",
// 2018; torch.cuda.amp.GradScaler's defaults): halve and skip on overflow,
// double after `growth_interval` good steps, within [1, 2^24].
struct LossScaleRule {
  float initial = 65536.0f;
  float backoff = 0.5f;
  float growth = 2.0f;
  int growth_interval = 2000;
  float min_scale = 1.0f;
  float max_scale = 16777216.0f;
};

// Ends an optimizer step: applies the rule when `scaled` (fp16), counts the
// step as applied or skipped, and clears the per-step fields.
AUTOTUNE_HOST_DEVICE inline void end_step(TrainState& s, bool scaled, const LossScaleRule& r = {}) {
  if (scaled && s.found_inf) {
    const float down = s.loss_scale * r.backoff;
    s.loss_scale = down < r.min_scale ? r.min_scale : down;
    s.growth_tracker = 0;
    ++s.skipped_steps;
  } else {
    if (scaled && ++s.growth_tracker >= r.growth_interval) {
      const float up = s.loss_scale * r.growth;
      s.loss_scale = up > r.max_scale ? r.max_scale : up;
      s.growth_tracker = 0;
    }
    ++s.applied_steps;
  }
  s.found_inf = 0;
  s.loss_sum = 0;
}

// end_step(), returning what the host reads of the step: its loss_sum and
// found_inf, and the scale and counters after it.
AUTOTUNE_HOST_DEVICE inline TrainState end_step_report(TrainState& s, bool scaled, const LossScaleRule& r = {}) {
  const float loss_sum = s.loss_sum;
  const int found_inf = s.found_inf;
  end_step(s, scaled, r);
  TrainState report = s;
  report.loss_sum = loss_sum;
  report.found_inf = found_inf;
  return report;
}

}  // namespace autotune::cuda
