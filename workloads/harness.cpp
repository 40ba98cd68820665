#include "workloads/harness.hpp"

#include <fmt/format.h>

#include "core/metric_names.hpp"
#include "core/text.hpp"

namespace autotune {

std::vector<std::int64_t> MlpShape::dims() const {
  std::vector<std::int64_t> d{input_dim};
  for (std::int64_t i = 0; i < depth; ++i) d.push_back(width);
  d.push_back(classes);
  return d;
}

double MlpShape::parameters() const {
  const auto d = dims();
  double p = 0;
  for (std::size_t l = 0; l + 1 < d.size(); ++l) p += static_cast<double>(d[l] * d[l + 1] + d[l + 1]);
  return p;
}

double MlpShape::flops_per_sample() const {
  const auto d = dims();
  double f = 0;
  for (std::size_t l = 0; l + 1 < d.size(); ++l) {
    const double mk = static_cast<double>(d[l] * d[l + 1]);
    f += 2 * mk * (l == 0 ? 2 : 3);  // forward, weight gradient, input gradient (not for layer 0)
  }
  return f;
}

std::string read_trial_knobs(const Options& opts, const Assignment& config, const TrialContext& ctx, MlpShape& shape,
                             PipelineKnobs& k) {
  shape.input_dim = opts.get_int("input_dim");
  shape.width = opts.get_int("width");
  shape.depth = opts.get_int("depth");
  shape.classes = opts.get_int("classes");
  return read_pipeline_knobs(opts, config, ctx, shape.input_dim, static_cast<int>(shape.classes), k);
}

std::optional<Outcome> over_ram_estimate(double estimate, double ram_limit) {
  if (!(ram_limit > 0 && estimate > ram_limit)) return std::nullopt;
  return Outcome::failure(Status::invalid, fmt::format("estimated host memory {} exceeds the ram limit {}",
                                                       format_bytes(estimate), format_bytes(ram_limit)));
}

double begin_host_memory() {
  reset_peak_host_bytes();
  return current_host_bytes();
}

TrialSteps run_trial_steps(const PipelineKnobs& k, Loader& loader, Trainer& t) {
  auto step = [&]() -> StepResult {
    StepResult s;
    const LoaderStats stats0 = loader.stats();
    for (std::int64_t a = 0; a < k.grad_accum; ++a) {
      if (!t.micro_batch(s)) {
        s.failed = true;
        return s;
      }
    }
    t.optimizer_step(s);
    mark_queue_state(stats0, loader.stats(), s);
    return s;
  };
  TrialSteps out;
  const LoaderStats before = loader.stats();
  out.began = std::chrono::steady_clock::now();
  out.r = measure_steps(k.measure, step);
  t.after_measure(out.r);
  loader.stop();
  out.loader_failed = loader.failed();
  const LoaderStats after = loader.stats();
  if (out.r.elapsed_seconds > 0) out.wait_fraction = (after.wait_seconds - before.wait_seconds) / out.r.elapsed_seconds;
  if (after.batches > before.batches)
    out.starved_share = static_cast<double>(after.starved - before.starved) /
                        static_cast<double>(after.batches - before.batches);
  return out;
}

Outcome measured_outcome(const TrialSteps& steps, const TrialContext& ctx, double ram_baseline, double loss) {
  if (steps.loader_failed)
    return Outcome::failure(Status::host_oom, "a loader worker failed to allocate its buffers");
  const MeasureResult& r = steps.r;
  if (r.failed || r.windows == 0) return Outcome::failure(Status::error, "the measurement produced no timed window");
  Outcome o = Outcome::success(r.throughput);
  add_measure_metrics(r, o);
  o.set(metric::startup_seconds, seconds_between(ctx.started, steps.began));
  o.set(metric::ram_bytes, peak_host_bytes());
  o.set(metric::ram_baseline_bytes, ram_baseline);
  o.set(metric::loss, loss);
  return o;
}

}  // namespace autotune
