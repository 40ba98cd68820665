#include "workloads/cuda/cuda_workload.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <new>
#include <optional>
#include <system_error>

#include <fmt/format.h>

#include "workloads/cuda/cuda_check.hpp"
#include "workloads/cuda/cuda_handles.hpp"
#include "workloads/cuda/gpu_mlp.hpp"
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

class CudaWorkload final : public Workload {
 public:
  explicit CudaWorkload(Options o) : m_opts(std::move(o)) {}
  std::string_view kind() const override { return "cuda"; }

  Outcome measure(const Assignment& config, const TrialContext& ctx) override {
    const auto t0 = std::chrono::steady_clock::now();
    Outcome o;
    try {
      o = run(config, ctx);
    } catch (const CudaError& e) {
      o = Outcome::failure(e.out_of_memory() ? Status::oom : Status::error, e.what());
    } catch (const std::bad_alloc&) {
      o = Outcome::failure(Status::host_oom, "host allocation failed (pinned or pageable batch buffers)");
    } catch (const std::system_error& e) {
      o = Outcome::failure(Status::error, std::string("could not start the loader's threads: ") + e.what());
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
    reset_peak_host_bytes();
    // What the process held before the trial (the tuner's own code, cuBLAS
    // and the CUDA context): part of ram_bytes, reported apart.
    const double ram_baseline = current_host_bytes();
    CublasHandle blas;
    Stream compute;
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
      o.metrics["vram_estimate_bytes"] = device_estimate + context_bytes;
      return o;
    }
    DeviceArena arena(budget);

    // Declaration order is destruction order in reverse: the loader (and its
    // pinned buffers and threads) goes first, the device buffers after it.
    GpuMlp mlp(arena, blas.get(), compute.get(), shape, k.loader.batch_size, *precision, adam,
               static_cast<float>(m_opts.get_number("learning_rate")), k.loader.seed ^ 0x5851F42D4C957F2DULL);
    const double gemm_tflops = mlp.probe_gemm_tflops(k.loader.batch_size, 10);
    Loader loader(k.loader, k.pin_memory ? pinned_allocator() : HostAllocator::heap());
    DeviceFeeder feeder(arena, loader, compute.get(), k.pin_memory);

    // Per micro-batch timing events, plus the optimizer step.
    std::vector<Event> starts, ends;
    for (std::int64_t i = 0; i <= k.grad_accum; ++i) {
      starts.emplace_back(true);
      ends.emplace_back(true);
    }
    const float grad_scale = 1.0f / static_cast<float>(k.loader.batch_size * k.grad_accum);
    double peak_used = device_used_bytes();
    std::int64_t steps = 0;

    auto step = [&]() -> StepResult {
      StepResult s;
      for (std::int64_t a = 0; a < k.grad_accum; ++a) {
        int slot = 0;
        std::int64_t samples = 0;
        if (!feeder.next(slot, samples)) {
          s.failed = true;
          return s;
        }
        const auto i = static_cast<std::size_t>(a);
        AUTOTUNE_CUDA_CALL(cudaEventRecord(starts[i].get(), compute.get()));
        mlp.accumulate(feeder.x(slot), feeder.y(slot), samples, grad_scale);
        AUTOTUNE_CUDA_CALL(cudaEventRecord(ends[i].get(), compute.get()));
        feeder.after_compute(slot);  // an end of data shows at the next micro-batch
        s.samples += samples;
      }
      const auto last = static_cast<std::size_t>(k.grad_accum);
      AUTOTUNE_CUDA_CALL(cudaEventRecord(starts[last].get(), compute.get()));
      mlp.step();
      AUTOTUNE_CUDA_CALL(cudaEventRecord(ends[last].get(), compute.get()));
      AUTOTUNE_CUDA_CALL(cudaStreamSynchronize(compute.get()));
      mlp.finish_step(k.grad_accum, s.samples);
      for (std::size_t i = 0; i <= last; ++i) s.busy_seconds += elapsed_ms(starts[i], ends[i]) / 1000.0;
      if (++steps == 1) peak_used = std::max(peak_used, device_used_bytes());  // cuBLAS may allocate lazily
      return s;
    };
    const MeasureResult r = measure_steps(k.measure, step);
    loader.stop();
    peak_used = std::max(peak_used, device_used_bytes());

    if (loader.failed()) return Outcome::failure(Status::host_oom, "a loader worker failed to allocate its buffers");
    if (r.failed || r.windows == 0) return Outcome::failure(Status::error, "the measurement produced no timed window");
    Outcome o = Outcome::success(r.throughput);
    add_measure_metrics(r, o);
    const double ram = peak_host_bytes();
    o.metrics["gpu_busy"] = r.busy_fraction;
    o.metrics["vram_bytes"] = peak_used;
    o.metrics["vram_own_bytes"] = arena.peak();
    o.metrics["vram_context_bytes"] = context_bytes;
    o.metrics["vram_estimate_bytes"] = device_estimate + context_bytes;
    o.metrics["gemm_tflops"] = gemm_tflops;
    o.metrics["model_tflops"] = shape.flops_per_sample() * r.throughput / 1e12;
    o.metrics["ram_bytes"] = ram;
    o.metrics["ram_baseline_bytes"] = ram_baseline;
    o.metrics["loss"] = mlp.last_loss();
    if (*precision == Precision::fp16) {
      o.metrics["skipped_steps"] = static_cast<double>(mlp.skipped_steps());
      o.metrics["loss_scale"] = mlp.loss_scale();
    }
    if (!std::isfinite(mlp.last_loss()))
      return Outcome::failure(Status::error, "the loss diverged (non-finite); lower learning_rate");
    if (vram_limit > 0 && peak_used > vram_limit) {
      o.status = Status::oom;
      o.reason = fmt::format("device memory in use {} exceeded the vram limit {}", format_bytes(peak_used),
                             format_bytes(vram_limit));
    } else {
      mark_if_over_ram_limit(o, ram, ram_limit);
    }
    return o;
  }

  Options m_opts;
};

}  // namespace

}  // namespace autotune

// The module's one entry point (workloads/cuda_module.hpp).
extern "C" autotune::Workload* autotune_cuda_create(const autotune::Options* options) {
  return new autotune::CudaWorkload(*options);
}
