#include "workloads/pipeline_knobs.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <utility>

#include "core/metric_names.hpp"

namespace autotune {

namespace {
// The stop on the windows' spread, for the harness and the virtual clock
// alike: one default and one range.
OptionSpec target_rsd_option(std::string help) {
  return {"target_rsd", OptionType::number, OptionValue{MeasureConfig{}.target_rsd}, std::move(help), {}, 1e-6, 10.0};
}
OptionSpec stop_on_scatter_option(std::string help) {
  return {"stop_on_scatter", OptionType::boolean, OptionValue{MeasureConfig{}.stop_on_scatter}, std::move(help)};
}
OptionSpec fewest_windows_option() {
  return {"fewest_windows",
          OptionType::integer,
          OptionValue{std::int64_t{MeasureConfig{}.fewest_windows}},
          "the fewest timed windows a steady measurement stops after (3: when even the 90% bound on their spread "
          "gives the precision 5 windows at target_rsd give); 5 or more: only the last 5 windows' spread decides",
          {},
          3.0,
          1000.0};
}
}  // namespace

std::vector<OptionSpec> pipeline_option_specs(const PipelineDefaults& d) {
  using I = std::int64_t;
  return {
      {"sample_bytes", OptionType::bytes, OptionValue{d.sample_bytes},
       "raw bytes per synthetic sample; decoding expands them to twice as many", {}, 1.0, 1e9},
      {"preprocess_passes", OptionType::integer, OptionValue{d.preprocess_passes},
       "smoothing passes over each decoded sample: the CPU cost knob of preprocessing", {}, 0.0, 10000.0},
      {"dataset_samples", OptionType::integer, OptionValue{d.dataset_samples},
       "raw samples held in host memory (drawn with replacement)", {}, 1.0, 1e9},
      {"warmup_seconds", OptionType::duration, OptionValue{1.5},
       "minimum warm-up; it also lasts at least the steps the prefetched batches feed (a step takes grad_accum "
       "of them)",
       {},
       0.0},
      {"warmup_until_drained", OptionType::boolean, OptionValue{true},
       "end the warm-up after 0.5 s instead of warmup_seconds once a step has found the loader's queue empty "
       "(the prefetched backlog is gone), or three steps in a row found it full (the workers keep ahead)"},
      {"window_seconds", OptionType::duration, OptionValue{d.window_seconds}, "minimum length of a timed window", {}, 0.0},
      target_rsd_option("stop when the relative spread of the last 5 window throughputs is at or under this"),
      fewest_windows_option(),
      stop_on_scatter_option("stop after 5 windows that spread more than target_rsd but show no trend (no "
                             "significant slope): running on to max_seconds would report the same 5 windows' mean"),
      {"target_ci90", OptionType::number, OptionValue{MeasureConfig{}.target_ci90},
       "above 0: measure until the throughput is known to +-this share at 90% confidence (0.03: +-3%), or "
       "max_seconds, instead of the stops on the spread",
       {},
       0.0,
       1.0},
      {"max_seconds", OptionType::duration, OptionValue{d.max_seconds},
       "time cap of one measurement (warm-up included)", {}, 0.01},
      {"seed", OptionType::integer, OptionValue{I{0}}, "seed of the synthetic data, mixed with the trial's"},
      {"warm", OptionType::boolean, OptionValue{true},
       "one worker process per slot measures trial after trial (the CUDA context and cuBLAS handle kept), "
       "replaced after any failed trial; false: a fresh process per trial"},
  };
}

std::string read_pipeline_knobs(const Options& opts, const Assignment& config, const TrialContext& ctx,
                                std::int64_t input_dim, int classes, PipelineKnobs& out) {
  const std::int64_t batch = config.get_int("batch_size", 64);
  const std::int64_t workers = config.get_int("num_workers", 0);
  const std::int64_t prefetch = config.get_int("prefetch_factor", 2);
  out.grad_accum = config.get_int("grad_accum", 1);
  out.pin_memory = config.get_bool("pin_memory", false);
  out.precision = config.get_string("precision", "fp32");
  if (batch < 1) return "batch_size must be at least 1";
  if (workers < 0 || workers > 1024) return "num_workers must be in [0, 1024]";
  if (prefetch < 1 || prefetch > 1024) return "prefetch_factor must be in [1, 1024]";
  if (out.grad_accum < 1) return "grad_accum must be at least 1";
  if (input_dim < 1 || classes < 1) return "input_dim and classes must be at least 1";
  if (classes > std::numeric_limits<int>::max() / 2) return "classes too large";

  LoaderConfig& l = out.loader;
  l.batch_size = batch;
  l.num_workers = static_cast<int>(workers);
  l.prefetch_factor = static_cast<int>(prefetch);
  l.dataset_samples = opts.get_int("dataset_samples");
  l.sample_bytes = opts.get_int("sample_bytes");
  l.input_dim = input_dim;
  l.classes = classes;
  l.preprocess_passes = static_cast<int>(std::min<std::int64_t>(opts.get_int("preprocess_passes"), 1 << 20));
  l.seed = static_cast<std::uint64_t>(opts.get_int("seed")) * 0x9E3779B97F4A7C15ULL + ctx.seed;
  if (auto why = validate(l); !why.empty()) return why;

  MeasureConfig& m = out.measure;
  m.warmup_seconds = opts.get_number("warmup_seconds");
  m.warmup_until_drained = opts.get_bool("warmup_until_drained");
  set_warmup_steps(m, workers, prefetch, out.grad_accum);
  m.window_seconds = opts.get_number("window_seconds");
  m.target_rsd = opts.get_number("target_rsd");
  m.fewest_windows = static_cast<int>(opts.get_int("fewest_windows"));
  m.stop_on_scatter = opts.get_bool("stop_on_scatter");
  m.target_ci90 = opts.get_number("target_ci90");
  m.max_seconds = opts.get_number("max_seconds");
  if (ctx.timeout_s > 0) m.max_seconds = std::min(m.max_seconds, 0.8 * ctx.timeout_s);
  // The floor never outlasts the warm-up it shortens, nor the cap's half.
  m.warmup_floor_seconds = std::min({m.warmup_floor_seconds, m.warmup_seconds, 0.5 * m.max_seconds});
  m.stop_below = ctx.stop_below;
  return validate(m);
}

std::int64_t batches_before_first_step(std::int64_t workers, std::int64_t prefetch) {
  return std::max<std::int64_t>(1, workers * (prefetch + 1));
}

namespace {
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
}  // namespace

void set_warmup_steps(MeasureConfig& m, std::int64_t workers, std::int64_t prefetch, std::int64_t grad_accum) {
  const std::int64_t per_step = std::max<std::int64_t>(1, grad_accum);
  m.warmup_min_steps = std::max<std::int64_t>(1, ceil_div(batches_before_first_step(workers, prefetch), per_step));
  m.ahead_min_steps = workers <= 0 ? 0 : ceil_div(workers, per_step);  // each queue's first read finds the stock
}

void add_measure_metrics(const MeasureResult& r, Outcome& o) {
  o.set(metric::throughput_rsd, r.throughput_rsd);
  // The measurement's precision: the half-width of the 90% confidence
  // interval of the mean throughput, relative (0.03: +-3% at 90%).
  if (r.mean_windows >= 2) o.set(metric::throughput_ci90, r.throughput_ci90);
  o.set(metric::stopped_by_rsd, r.stopped_by_rsd);
  if (r.stopped_on_precision) o.set(metric::stopped_on_precision, true);
  if (r.settled_early) o.set(metric::settled_early, true);
  if (r.stopped_on_scatter) o.set(metric::stopped_on_scatter, true);
  o.set(metric::warmup_complete, r.warmup_complete);
  o.set(metric::warmup_drained, r.warmup_drained);
  o.set(metric::warmup_ahead, r.warmup_ahead);
  o.set(metric::warmup_steps, r.warmup_steps);
  o.set(metric::timed_steps, r.timed_steps);
  o.set(metric::windows, r.windows);
  o.set(metric::mean_windows, r.mean_windows);
  o.set(metric::measure_seconds, r.elapsed_seconds);
  o.set(metric::warmup_seconds, r.warmup_seconds);
  if (r.raced) o.mark_raced();
  o.set(metric::cpu_cores, r.cpu_cores);
}

void measure_on_virtual_clock(Outcome& o, const Assignment& config, const TrialContext& ctx, std::uint64_t seed,
                              const VirtualClock& clock, double window_rsd) {
  MeasureConfig c;  // the cpu harness's defaults (pipeline_option_specs)
  c.window_seconds = PipelineDefaults{}.window_seconds;
  c.max_seconds = PipelineDefaults{}.max_seconds;
  c.stop_below = ctx.stop_below;
  c.warmup_until_drained = clock.warmup_until_drained;
  c.target_rsd = clock.target_rsd;
  c.fewest_windows = clock.fewest_windows;
  c.stop_on_scatter = clock.stop_on_scatter;
  const std::int64_t workers = std::max<std::int64_t>(0, config.get_int("num_workers", 0));
  const std::int64_t prefetch = std::max<std::int64_t>(1, config.get_int("prefetch_factor", 2));
  const std::int64_t accum = std::max<std::int64_t>(1, config.get_int("grad_accum", 1));
  set_warmup_steps(c, workers, prefetch, accum);  // as read_pipeline_knobs
  // The loader: the share of a step spent waiting for data (measured, or
  // what the model's busy fraction leaves), and the batches prepared before
  // the first step (the queues plus one in each worker's hands). A recorded
  // measurement whose loader was found empty on under half of its calls
  // (starved_share) kept ahead: its data wait was the trainer descheduled
  // inside the loader's call, not an empty queue, so it never starves here.
  SimulatedLoader loader;
  if (auto w = o.get(metric::data_wait_fraction))
    loader.wait_fraction = *w;
  else if (auto busy = o.get(metric::gpu_busy))
    loader.wait_fraction = 1 - *busy;
  if (auto starved = o.get(metric::starved_share); starved && *starved < 0.5) loader.wait_fraction = 0;
  // Workers that keep ahead find their queues full: as the recorded warm-up
  // found them, else wherever the loader never waits.
  if (auto ahead = o.get(metric::warmup_ahead))
    loader.keeps_ahead = *ahead;
  else
    loader.keeps_ahead = workers > 0 && loader.wait_fraction == 0;
  loader.queued_batches = workers > 0 ? static_cast<double>(batches_before_first_step(workers, prefetch)) : 0.0;
  loader.batches_per_step = static_cast<double>(accum);
  const double batch = static_cast<double>(std::max<std::int64_t>(1, config.get_int("batch_size", 32)));
  const double samples_per_step = batch * loader.batches_per_step;
  double step_jitter = 0.15;
  if (window_rsd > 0) {  // steps that scatter as much as the recorded windows did
    const double steps_per_window =
        std::max(static_cast<double>(c.window_min_steps), c.window_seconds * o.throughput / samples_per_step);
    step_jitter = std::clamp(window_rsd * std::sqrt(steps_per_window), 0.01, 1.0);
  }
  const MeasureResult r = simulate_measurement(c, o.throughput, samples_per_step, seed, loader, step_jitter);
  o.throughput = r.throughput;
  add_measure_metrics(r, o);
  o.seconds = clock.startup_s + r.elapsed_seconds;
  o.set(metric::startup_seconds, clock.startup_s);
}

std::vector<OptionSpec> virtual_clock_option_specs(const std::string& simulated_help,
                                                   const std::string& startup_help) {
  const VirtualClock d;
  return {
      {"simulated_time", OptionType::boolean, OptionValue{d.on}, simulated_help},
      {"warmup_until_drained", OptionType::boolean, OptionValue{d.warmup_until_drained},
       "with simulated_time: the harness's warm-up ends early once the virtual queue is drained or stays full "
       "(as the cpu workload's option of that name)"},
      {"startup_seconds", OptionType::duration, OptionValue{d.startup_s}, startup_help, {}, 0.0},
      target_rsd_option("with simulated_time: the harness's stop on the spread of the last 5 windows (as the cpu "
                        "workload's option of that name)"),
      fewest_windows_option(),
      stop_on_scatter_option("with simulated_time: the harness's stop after 5 windows that scatter without a "
                             "trend (as the cpu workload's option of that name)"),
  };
}

VirtualClock read_virtual_clock(const Options& o) {
  return {o.get_bool("simulated_time"), o.get_bool("warmup_until_drained"), o.get_number("startup_seconds"),
          o.get_number("target_rsd"), static_cast<int>(o.get_int("fewest_windows")), o.get_bool("stop_on_scatter")};
}

std::vector<OptionSpec> model_option_specs(const ModelDefaults& d) {
  using I = std::int64_t;
  return {
      {"depth", OptionType::integer, OptionValue{I{d.depth}}, "hidden layers of the MLP", {}, 0.0, d.max_depth},
      {"width", OptionType::integer, OptionValue{I{d.width}}, "units per hidden layer", {}, 1.0, d.max_width},
      {"input_dim", OptionType::integer, OptionValue{I{d.input_dim}},
       "floats per prepared sample (at most 2 * sample_bytes)", {}, 1.0, 1e7},
      {"classes", OptionType::integer, OptionValue{I{d.classes}}, "output classes", {}, 1.0, 1e6},
      {"optimizer", OptionType::string, OptionValue{std::string("adam")}, "optimizer step on FP32 master weights",
       {"adam", "sgd"}},
      {"learning_rate", OptionType::number, OptionValue{d.learning_rate}, "optimizer learning rate", {}, 0.0, 10.0},
  };
}

void check_model_fits_samples(const Options& o, std::string_view kind) {
  if (o.get_int("input_dim") > 2 * o.get_int("sample_bytes"))
    throw WorkloadConfigError(std::string(kind) + " workload: input_dim must not exceed 2 * sample_bytes");
}

void mark_if_over_ram_limit(Outcome& o, double ram_bytes, double ram_limit) {
  judge_limits(o, Limits{0, ram_limit}, std::nullopt, ram_bytes);
}

}  // namespace autotune
