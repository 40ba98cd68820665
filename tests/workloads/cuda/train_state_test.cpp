// The fp16 loss scaler's rule, which the device applies after each optimizer
// step (kernels.cu): run here on the CPU, as GradScaler's defaults say.
#ifdef AUTOTUNE_HAVE_CUDA

#include "workloads/cuda/train_state.hpp"

#include <gtest/gtest.h>

namespace autotune::cuda {
namespace {

TrainState fp16_start() {
  TrainState s;
  s.loss_scale = LossScaleRule{}.initial;
  return s;
}

TEST(TrainState, AnOverflowHalvesTheScaleAndSkipsTheStep) {
  TrainState s = fp16_start();
  s.found_inf = 1;
  s.loss_sum = 12.5f;
  s.growth_tracker = 7;
  const TrainState r = end_step_report(s, true);
  EXPECT_EQ(s.loss_scale, 32768.0f);
  EXPECT_EQ(s.skipped_steps, 1);
  EXPECT_EQ(s.applied_steps, 0);  // Adam's t does not move on a skipped step
  EXPECT_EQ(s.growth_tracker, 0);
  // The per-step fields are cleared for the next step, and kept in the report.
  EXPECT_EQ(s.found_inf, 0);
  EXPECT_EQ(s.loss_sum, 0.0f);
  EXPECT_EQ(r.found_inf, 1);
  EXPECT_EQ(r.loss_sum, 12.5f);
  EXPECT_EQ(r.loss_scale, 32768.0f);
}

TEST(TrainState, TheScaleDoublesAfterTheGrowthIntervalAndStaysInItsBounds) {
  const LossScaleRule rule;
  TrainState s = fp16_start();
  for (int i = 0; i < rule.growth_interval - 1; ++i) end_step(s, true);
  EXPECT_EQ(s.loss_scale, rule.initial);
  end_step(s, true);
  EXPECT_EQ(s.loss_scale, 2 * rule.initial);
  EXPECT_EQ(s.applied_steps, rule.growth_interval);
  s.loss_scale = rule.max_scale;
  for (int i = 0; i < rule.growth_interval; ++i) end_step(s, true);
  EXPECT_EQ(s.loss_scale, rule.max_scale);
  s.loss_scale = rule.min_scale;
  s.found_inf = 1;
  end_step(s, true);
  EXPECT_EQ(s.loss_scale, rule.min_scale);
}

TEST(TrainState, WithoutScalingEveryStepIsAppliedAndTheScaleStaysOne) {
  TrainState s;
  s.found_inf = 1;  // only fp16 checks gradients; anything else never skips
  for (int i = 0; i < 3000; ++i) end_step(s, false);
  EXPECT_EQ(s.loss_scale, 1.0f);
  EXPECT_EQ(s.applied_steps, 3000);
  EXPECT_EQ(s.skipped_steps, 0);
}

}  // namespace
}  // namespace autotune::cuda

#endif  // AUTOTUNE_HAVE_CUDA
