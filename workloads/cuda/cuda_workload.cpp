#include "workloads/cuda/cuda_workload.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <new>
#include <optional>

#include <fmt/format.h>

#include "search/metric_names.hpp"
#include "workloads/cuda/cuda_arch.hpp"
#include "workloads/cuda/cuda_check.hpp"
#include "workloads/cuda/cuda_handles.hpp"
#include "workloads/cuda/gpu_mlp.hpp"
#include "workloads/cuda/trial_outcome.hpp"
#include "workloads/cuda_module.hpp"
#include "workloads/loader.hpp"
#include "workloads/measure.hpp"
#include "workloads/pipeline_knobs.hpp"

namespace autotune {

int cuda_device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

namespace {

using namespace autotune::cuda;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Device memory in use on the current device (all processes), bytes.
double device_used_bytes(double* total_out = nullptr) {
  std::size_t free = 0, total = 0;
  AUTOTUNE_CUDA_CALL(cudaMemGetInfo(&free, &total));
  if (total_out) *total_out = static_cast<double>(total);
  return static_cast<double>(total - free);
}

// Page-locked loader buffers; a failed cudaHostAlloc is a host allocation failure.
HostAllocator pinned_allocator() {
  HostAllocator a;
  a.allocate = [](std::size_t bytes) {
    void* p = nullptr;
    const cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      throw std::bad_alloc();
    }
    AUTOTUNE_CUDA_CALL(e);
    return p;
  };
  a.deallocate = [](void* p, std::size_t) { AUTOTUNE_CUDA_CALL_NOEXCEPT(cudaFreeHost(p)); };
  return a;
}

// Moves loader batches to the device: two device slots, a copy stream and
// events when pinned; one slot and a synchronous copy when not.
class DeviceFeeder {
 public:
  DeviceFeeder(DeviceArena& arena, Loader& loader, cudaStream_t compute, bool pinned)
      : m_loader(loader), m_compute(compute), m_pinned(pinned) {
    const auto& c = loader.config();
    m_input_bytes = static_cast<std::size_t>(c.batch_size * c.input_dim) * sizeof(float);
    m_label_bytes = static_cast<std::size_t>(c.batch_size) * sizeof(std::int32_t);
    for (int s = 0; s < (pinned ? 2 : 1); ++s) {
      m_x.emplace_back(arena, m_input_bytes);
      m_y.emplace_back(arena, m_label_bytes);
      m_copied.emplace_back(false);
      m_consumed.emplace_back(false);
    }
  }
  // The copy stream may still read the page-locked buffers of the leases
  // held here (after an exception, or when the loader stopped): wait for it
  // before the members give them back to the loader, which refills them.
  ~DeviceFeeder() { AUTOTUNE_CUDA_CALL_NOEXCEPT(cudaStreamSynchronize(m_copy.get())); }
  DeviceFeeder(const DeviceFeeder&) = delete;
  DeviceFeeder& operator=(const DeviceFeeder&) = delete;

  // Makes the next batch's slot ready for compute on the compute stream and
  // returns it; false when the loader stopped.
  bool next(int& slot, std::int64_t& samples) {
    if (!m_pinned) {
      BatchLease b = m_loader.next();
      if (!b) return false;
      // Legacy default stream: waits for the compute queued on blocking streams.
      AUTOTUNE_CUDA_CALL(cudaMemcpy(m_x[0].get(), b->inputs, m_input_bytes, cudaMemcpyHostToDevice));
      AUTOTUNE_CUDA_CALL(cudaMemcpy(m_y[0].get(), b->labels, m_label_bytes, cudaMemcpyHostToDevice));
      slot = 0;
      samples = b->size;
      return true;
    }
    if (!m_pending && !enqueue_copy(m_next_slot)) return false;  // the very first batch
    slot = m_next_slot;
    samples = m_pending_samples;
    AUTOTUNE_CUDA_CALL(cudaStreamWaitEvent(m_compute, m_copied[static_cast<std::size_t>(slot)].get(), 0));
    m_current = std::move(m_pending);  // held until its copy is known complete
    m_current_slot = slot;
    m_next_slot = 1 - slot;
    return true;
  }

  // After the compute reading `slot` is queued: record that, prefetch the
  // following batch into the other slot, and return the host buffer of this one.
  bool after_compute(int slot) {
    if (!m_pinned) return true;
    const auto s = static_cast<std::size_t>(slot);
    AUTOTUNE_CUDA_CALL(cudaEventRecord(m_consumed[s].get(), m_compute));
    const bool more = enqueue_copy(m_next_slot);
    // The copy of this slot was queued a micro-batch ago; usually long done.
    AUTOTUNE_CUDA_CALL(cudaEventSynchronize(m_copied[s].get()));
    m_current.reset();
    return more;
  }

 private:
  bool enqueue_copy(int slot) {
    m_pending = m_loader.next();
    if (!m_pending) return false;
    const auto s = static_cast<std::size_t>(slot);
    // Do not overwrite a slot that compute may still read.
    AUTOTUNE_CUDA_CALL(cudaStreamWaitEvent(m_copy.get(), m_consumed[s].get(), 0));
    AUTOTUNE_CUDA_CALL(cudaMemcpyAsync(m_x[s].get(), m_pending->inputs, m_input_bytes, cudaMemcpyHostToDevice,
                                       m_copy.get()));
    AUTOTUNE_CUDA_CALL(cudaMemcpyAsync(m_y[s].get(), m_pending->labels, m_label_bytes, cudaMemcpyHostToDevice,
                                       m_copy.get()));
    AUTOTUNE_CUDA_CALL(cudaEventRecord(m_copied[s].get(), m_copy.get()));
    m_pending_samples = m_pending->size;
    return true;
  }

 public:
  const float* x(int slot) const { return m_x[static_cast<std::size_t>(slot)].as<float>(); }
  const std::int32_t* y(int slot) const { return m_y[static_cast<std::size_t>(slot)].as<std::int32_t>(); }

 private:
  Loader& m_loader;
  cudaStream_t m_compute;
  bool m_pinned;
  std::size_t m_input_bytes = 0, m_label_bytes = 0;
  std::vector<DeviceBuffer> m_x, m_y;
  std::vector<Event> m_copied, m_consumed;  // per slot, no timing
  Stream m_copy;
  BatchLease m_pending, m_current;
  std::int64_t m_pending_samples = 0;
  int m_next_slot = 0, m_current_slot = 0;
};

// Reads the device's name and compute capability for error messages; an
// unknown card when the runtime cannot say.
CardInfo card_info(int device) noexcept {
  CardInfo c;
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return c;
  }
  c.name = p.name;
  c.cc = p.major * 10 + p.minor;
  return c;
}

class CudaWorkload final : public Workload {
 public:
  explicit CudaWorkload(Options o) : m_opts(std::move(o)) {}
  std::string_view kind() const override { return "cuda"; }

  Outcome measure(const Assignment& config, const TrialContext& ctx) override {
    const auto t0 = std::chrono::steady_clock::now();
    Outcome o;
    m_card = CardInfo{};
    try {
      o = run(config, ctx);
    } catch (...) {
      // Nothing crosses the module's boundary: a trial reports, never dies.
      o = outcome_of_exception(std::current_exception(), m_card);
    }
    o.seconds = seconds_since(t0);
    return o;
  }

 private:
  Outcome run(const Assignment& config, const TrialContext& ctx) {
    MlpShape shape;
    shape.input_dim = m_opts.get_int("input_dim");
    shape.width = m_opts.get_int("width");
    shape.depth = m_opts.get_int("depth");
    shape.classes = m_opts.get_int("classes");
    PipelineKnobs k;
    if (auto why = read_pipeline_knobs(m_opts, config, ctx, shape.input_dim, static_cast<int>(shape.classes), k);
        !why.empty())
      return Outcome::failure(Status::error, why);
    const std::optional<Precision> precision = parse_precision(k.precision);
    if (!precision)
      return Outcome::failure(Status::error, "precision must be fp32, tf32, fp16 or bf16, not '" + k.precision + "'");
    const std::optional<Fp32Math> fp32_math = parse_fp32_math(m_opts.get_string("fp32_math"));
    if (!fp32_math) return Outcome::failure(Status::error, "fp32_math must be default or pedantic");
    const bool adam = m_opts.get_string("optimizer") == "adam";
    if (k.loader.batch_size > (1 << 21))
      return Outcome::failure(Status::error, "batch_size beyond the harness's kernels' grid (2^21)");
    k.loader.consumer_slots = 2;  // the batch computing and the one being copied

    // No device, no driver: a clear error, never a crash.
    int devices = 0;
    if (const cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess || devices == 0) {
      (void)cudaGetLastError();
      return Outcome::failure(Status::error, fmt::format("no CUDA device: {}",
                                                         e != cudaSuccess ? cudaGetErrorString(e)
                                                                          : "the runtime reports none"));
    }
    const int device = static_cast<int>(m_opts.get_int("device"));
    if (device >= devices)
      return Outcome::failure(Status::error, fmt::format("device {} requested, {} visible", device, devices));

    const double ram_limit = ctx.limits.ram_bytes;
    const double ram_estimate = loader_host_bytes(k.loader);
    if (ram_limit > 0 && ram_estimate > ram_limit)
      return Outcome::failure(Status::invalid, fmt::format("estimated host memory {} exceeds the ram limit {}",
                                                           format_bytes(ram_estimate), format_bytes(ram_limit)));

    AUTOTUNE_CUDA_CALL(cudaSetDevice(device));
    AUTOTUNE_CUDA_CALL(cudaFree(nullptr));  // creates the context now, so that it is measured here
    m_card = card_info(device);
    // Before any work: a module without code for this card fails every
    // launch, so say so once, naming the card and what was built.
    if (const cudaError_t e = kernel_image_status(); e != cudaSuccess)
      return Outcome::failure(Status::error, no_kernel_image_message(m_card, built_architectures(),
                                                                     cudaGetErrorName(e)));
    reset_peak_host_bytes();
    // What the process held before the trial (the tuner's own code, cuBLAS
    // and the CUDA context): part of ram_bytes, reported apart.
    const double ram_baseline = current_host_bytes();
    Stream compute;
    // The cuBLAS handle outlives the trial (a warm worker serves the next one
    // with it: its set-up is paid once per process); it is unbound from this
    // trial's stream and workspace (GpuMlp's) before they go.
    if (!m_blas || m_blas_device != device) {
      m_blas.emplace();
      m_blas_device = device;
    }
    struct Unbind {
      cublasHandle_t h;
      ~Unbind() {
        (void)cublasSetWorkspace(h, nullptr, 0);
        (void)cublasSetStream(h, nullptr);
      }
    } unbind{m_blas->get()};
    const CublasHandle& blas = *m_blas;
    double total = 0;
    const double context_bytes = device_used_bytes(&total);

    // The spec's vram limit, when below the card: what the context left of it
    // is the harness's budget, checked before allocating and on every allocation.
    const double vram_limit = ctx.limits.vram_bytes > 0 && ctx.limits.vram_bytes < total ? ctx.limits.vram_bytes : 0;
    const double budget = vram_limit > 0 ? std::max(1.0, vram_limit - context_bytes) : 0;
    const double feeder_bytes = (k.pin_memory ? 2.0 : 1.0) * static_cast<double>(k.loader.batch_size) *
                                (static_cast<double>(shape.input_dim) * 4 + 4);
    const double device_estimate = gpu_mlp_bytes(shape, k.loader.batch_size, *precision, adam) + feeder_bytes;
    if (budget > 0 && device_estimate > budget) {
      Outcome o = Outcome::failure(Status::oom, fmt::format("estimated device memory {} + context {} exceeds the vram "
                                                            "limit {}",
                                                            format_bytes(device_estimate), format_bytes(context_bytes),
                                                            format_bytes(vram_limit)));
      o.metrics[metric::vram_estimate_bytes] = device_estimate + context_bytes;
      return o;
    }
    DeviceArena arena(budget);

    // Declaration order is destruction order in reverse: the gate opens
    // first (nothing may wait on it), then the feeder (which waits for its
    // copies before its leases return to the loader), the loader (its pinned
    // buffers and threads), the model's device buffers, the handle, the stream.
    GpuMlp mlp(arena, blas.get(), compute.get(), shape, k.loader.batch_size, *precision, *fp32_math, adam,
               static_cast<float>(m_opts.get_number("learning_rate")), k.loader.seed ^ 0x5851F42D4C957F2DULL);
    const double gemm_tflops = mlp.probe_gemm_tflops(k.loader.batch_size, 10);
    Loader loader(k.loader, k.pin_memory ? pinned_allocator() : HostAllocator::heap());
    DeviceFeeder feeder(arena, loader, compute.get(), k.pin_memory);
    LaunchGate gate;

    const float grad_scale = 1.0f / static_cast<float>(k.loader.batch_size * k.grad_accum);
    double peak_used = device_used_bytes();
    // One event and one report slot per step parity: the host queues step n,
    // then waits for step n - 1 and reads its loss, so the device always has
    // the next step queued and the host never waits for the step it just queued.
    // The wait sleeps (blocking sync): a GPU-bound run spends most of its host
    // time here, and a spinning thread would take a core from the workers.
    Event step_done[2] = {Event(false, true), Event(false, true)};
    std::int64_t steps = 0;
    std::int64_t step_samples[2] = {0, 0};
    TrainState last{};
    std::int64_t last_samples = 0;
    int last_slot = 0;

    // One micro-batch on the compute stream; false when the loader stopped.
    auto micro_batch = [&](std::int64_t& samples) {
      int slot = 0;
      if (!feeder.next(slot, samples)) return false;
      mlp.accumulate(feeder.x(slot), feeder.y(slot), samples, grad_scale);
      feeder.after_compute(slot);  // an end of data shows at the next micro-batch
      return true;
    };

    auto step = [&]() -> StepResult {
      StepResult s;
      const LoaderStats stats0 = loader.stats();
      for (std::int64_t a = 0; a < k.grad_accum; ++a) {
        std::int64_t samples = 0;
        if (!micro_batch(samples)) {
          s.failed = true;
          return s;
        }
        s.samples += samples;
      }
      const int slot = static_cast<int>(steps & 1);
      mlp.step(slot);
      AUTOTUNE_CUDA_CALL(cudaEventRecord(step_done[slot].get(), compute.get()));
      step_samples[slot] = s.samples;
      if (steps > 0) {
        // The previous step, a step late: usually finished while this one was queued.
        const int prev = 1 - slot;
        AUTOTUNE_CUDA_CALL(cudaEventSynchronize(step_done[prev].get()));
        last = mlp.report(prev);
        last_samples = step_samples[prev];
      }
      last_slot = slot;
      if (++steps == 1) peak_used = std::max(peak_used, device_used_bytes());  // cuBLAS may allocate lazily
      mark_queue_state(stats0, loader.stats(), s);
      return s;
    };
    const auto measure_began = std::chrono::steady_clock::now();
    const MeasureResult r = measure_steps(k.measure, step);
    AUTOTUNE_CUDA_CALL(cudaStreamSynchronize(compute.get()));
    if (steps > 0) {
      last = mlp.report(last_slot);
      last_samples = step_samples[last_slot];
    }
    const double loss = last_samples > 0 ? static_cast<double>(last.loss_sum) / static_cast<double>(last_samples) : 0;

    // gpu_busy's numerator: one optimizer step's device time, each part
    // behind a host-released gate so that events time execution only (the
    // timed windows ran ungated, so this costs them nothing). Best of three,
    // on the loader's next batches; skipped when the loader stopped early.
    double step_device_seconds = 0;
    if (r.windows > 0 && !loader.failed()) {
      Event start, end;
      for (int trial = 0; trial < 3; ++trial) {
        double seconds = 0;
        bool complete = true;
        for (std::int64_t a = 0; a <= k.grad_accum && complete; ++a) {
          int slot = 0;
          std::int64_t samples = 0;
          if (a < k.grad_accum && !feeder.next(slot, samples)) {
            complete = false;
            break;
          }
          gate.hold(compute.get());
          AUTOTUNE_CUDA_CALL(cudaEventRecord(start.get(), compute.get()));
          if (a < k.grad_accum) mlp.accumulate(feeder.x(slot), feeder.y(slot), samples, grad_scale);
          else mlp.step(0);
          AUTOTUNE_CUDA_CALL(cudaEventRecord(end.get(), compute.get()));
          gate.open();
          if (a < k.grad_accum) feeder.after_compute(slot);
          AUTOTUNE_CUDA_CALL(cudaEventSynchronize(end.get()));
          seconds += elapsed_ms(start, end) / 1000.0;
        }
        if (!complete) break;
        step_device_seconds = trial == 0 ? seconds : std::min(step_device_seconds, seconds);
      }
    }
    loader.stop();
    AUTOTUNE_CUDA_CALL(cudaStreamSynchronize(compute.get()));
    peak_used = std::max(peak_used, device_used_bytes());

    if (loader.failed()) return Outcome::failure(Status::host_oom, "a loader worker failed to allocate its buffers");
    if (r.failed || r.windows == 0) return Outcome::failure(Status::error, "the measurement produced no timed window");
    Outcome o = Outcome::success(r.throughput);
    add_measure_metrics(r, o);
    o.metrics[metric::startup_seconds] = seconds_between(ctx.started, measure_began);
    const double ram = peak_host_bytes();
    const std::int64_t samples_per_step = k.loader.batch_size * k.grad_accum;
    o.metrics[metric::gpu_busy] = gpu_busy_fraction(step_device_seconds, r.throughput, samples_per_step);
    o.metrics["step_device_seconds"] = step_device_seconds;
    o.metrics["gate_timeouts"] = gate.timeouts();
    o.metrics[metric::vram_bytes] = peak_used;
    o.metrics[metric::vram_own_bytes] = arena.peak();
    o.metrics[metric::vram_context_bytes] = context_bytes;
    o.metrics[metric::vram_estimate_bytes] = device_estimate + context_bytes;
    o.metrics["gemm_tflops"] = gemm_tflops;
    o.metrics["model_tflops"] = shape.flops_per_sample() * r.throughput / 1e12;
    o.metrics[metric::ram_bytes] = ram;
    o.metrics[metric::ram_baseline_bytes] = ram_baseline;
    o.metrics[metric::loss] = loss;
    if (*precision == Precision::fp16) {
      o.metrics["skipped_steps"] = static_cast<double>(last.skipped_steps);
      o.metrics["loss_scale"] = last.loss_scale;
    }
    judge_trial_end(o, TrialEnd{loss, peak_used, vram_limit, ram, ram_limit});
    return o;
  }

  Options m_opts;
  CardInfo m_card;  // the current trial's, for the error of an exception
  std::optional<CublasHandle> m_blas;  // kept across this process's trials
  int m_blas_device = -1;
};

}  // namespace

}  // namespace autotune

// The module's one entry point (workloads/cuda_module.hpp). No exception
// crosses it: nullptr when the workload cannot be made.
extern "C" autotune::Workload* autotune_cuda_create(const autotune::Options* options) {
  try {
    return new autotune::CudaWorkload(*options);
  } catch (...) {
    return nullptr;
  }
}
