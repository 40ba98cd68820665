#include "workloads/cuda/cuda_workload.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "core/metric_names.hpp"
#include "core/text.hpp"
#include "workloads/cuda/cuda_arch.hpp"
#include "workloads/cuda/cuda_check.hpp"
#include "workloads/cuda/cuda_handles.hpp"
#include "workloads/cuda/cuda_trainer.hpp"
#include "workloads/cuda/gpu_mlp.hpp"
#include "workloads/cuda/trial_outcome.hpp"
#include "workloads/cuda_module.hpp"
#include "workloads/harness.hpp"
#include "workloads/loader.hpp"
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

// No device, no driver, or fewer devices than `device`: a clear error, never a crash.
std::optional<Outcome> device_missing(int device) {
  int devices = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess || devices == 0) {
    (void)cudaGetLastError();
    return Outcome::failure(Status::error, fmt::format("no CUDA device: {}",
                                                       e != cudaSuccess ? cudaGetErrorString(e)
                                                                        : "the runtime reports none"));
  }
  if (device >= devices)
    return Outcome::failure(Status::error, fmt::format("device {} requested, {} visible", device, devices));
  return std::nullopt;
}

// Unbinds the kept cuBLAS handle from this trial's stream and workspace (GpuMlp's).
struct BlasUnbind {
  cublasHandle_t h;
  ~BlasUnbind() {
    (void)cublasSetWorkspace(h, nullptr, 0);
    (void)cublasSetStream(h, nullptr);
  }
};

// The trial's device memory plan: the spec's vram limit, when below the card,
// less what the context holds is the harness's budget, checked before
// allocating and on every allocation.
struct VramPlan {
  double context_bytes = 0;  // in use before the harness allocates (the context and libraries)
  double limit = 0;          // the spec's vram limit, 0: none or not below the card
  double budget = 0;         // 0: none
  double estimate = 0;       // the model's and the feeder's buffers
};
VramPlan plan_vram(double spec_limit, double estimate) {
  VramPlan p;
  double total = 0;
  p.context_bytes = device_used_bytes(&total);
  p.limit = spec_limit > 0 && spec_limit < total ? spec_limit : 0;
  p.budget = p.limit > 0 ? std::max(1.0, p.limit - p.context_bytes) : 0;
  p.estimate = estimate;
  return p;
}
std::optional<Outcome> over_vram_budget(const VramPlan& p) {
  if (!(p.budget > 0 && p.estimate > p.budget)) return std::nullopt;
  // Judged from a figure against the spec's limit: `invalid`, as every
  // limit is judged (workloads/workload.hpp judge_limits); an allocation the
  // arena refuses at the limit is an `oom`, as on a card that size.
  Outcome o = Outcome::failure(Status::invalid, fmt::format("estimated device memory {} + context {} exceeds the vram "
                                                        "limit {}",
                                                        format_bytes(p.estimate), format_bytes(p.context_bytes),
                                                        format_bytes(p.limit)));
  o.set(metric::vram_estimate_bytes, p.estimate + p.context_bytes);
  return o;
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
  // The harness's trial (workloads/harness.hpp) with the cuda workload's own
  // parts: precisions, the device, its memory, the trainer and gpu_busy.
  Outcome run(const Assignment& config, const TrialContext& ctx) {
    MlpShape shape;
    PipelineKnobs k;
    if (auto why = read_trial_knobs(m_opts, config, ctx, shape, k); !why.empty())
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
    const int device = static_cast<int>(m_opts.get_int("device"));
    if (auto o = device_missing(device)) return *o;
    const double ram_limit = ctx.limits.ram_bytes;
    if (auto o = over_ram_estimate(loader_host_bytes(k.loader), ram_limit)) return *o;

    AUTOTUNE_CUDA_CALL(cudaSetDevice(device));
    AUTOTUNE_CUDA_CALL(cudaFree(nullptr));  // creates the context now, so that it is measured here
    m_card = card_info(device);
    // Before any work: a module without code for this card fails every
    // launch, so say so once, naming the card and what was built.
    if (const cudaError_t e = kernel_image_status(); e != cudaSuccess)
      return Outcome::failure(Status::error, no_kernel_image_message(m_card, built_architectures(),
                                                                     cudaGetErrorName(e)));
    // What the process held before the trial (the tuner's own code, cuBLAS
    // and the CUDA context): part of ram_bytes, reported apart.
    const double ram_baseline = begin_host_memory();
    Stream compute;
    const CublasHandle& blas = blas_for(device);
    const BlasUnbind unbind{blas.get()};
    const double feeder_bytes = (k.pin_memory ? 2.0 : 1.0) * static_cast<double>(k.loader.batch_size) *
                                (static_cast<double>(shape.input_dim) * 4 + 4);
    const VramPlan vram = plan_vram(ctx.limits.vram_bytes,
                                    gpu_mlp_bytes(shape, k.loader.batch_size, *precision, adam) + feeder_bytes);
    if (auto o = over_vram_budget(vram)) return *o;
    DeviceArena arena(vram.budget);

    // Declaration order is destruction order in reverse: the trainer's
    // events go first, then the gate opens (nothing may wait on it), then
    // the feeder (which waits for its copies before its leases return to the
    // loader), the loader (its pinned buffers and threads), the model's
    // device buffers, the handle's binding, the stream.
    GpuMlp mlp(arena, blas.get(), compute.get(), shape, k.loader.batch_size, *precision, *fp32_math, adam,
               static_cast<float>(m_opts.get_number("learning_rate")), k.loader.seed ^ 0x5851F42D4C957F2DULL);
    const double gemm_tflops = mlp.probe_gemm_tflops(k.loader.batch_size, 10);
    Loader loader(k.loader, k.pin_memory ? pinned_allocator() : HostAllocator::heap());
    DeviceFeeder feeder(arena, loader, compute.get(), k.pin_memory);
    LaunchGate gate;
    const float grad_scale = 1.0f / static_cast<float>(k.loader.batch_size * k.grad_accum);
    CudaTrainer trainer(mlp, feeder, loader, gate, compute.get(), grad_scale, k.grad_accum, device_used_bytes());
    const TrialSteps steps = run_trial_steps(k, loader, trainer);
    AUTOTUNE_CUDA_CALL(cudaStreamSynchronize(compute.get()));
    const double peak_used = std::max(trainer.peak_used(), device_used_bytes());

    Outcome o = measured_outcome(steps, ctx, ram_baseline, trainer.loss());
    if (!o.ok()) return o;
    const std::int64_t samples_per_step = k.loader.batch_size * k.grad_accum;
    o.set(metric::gpu_busy, gpu_busy_fraction(trainer.step_device_seconds(), steps.r.throughput, samples_per_step));
    o.set(metric::step_device_seconds, trainer.step_device_seconds());
    o.set(metric::gate_timeouts, gate.timeouts());
    o.set(metric::vram_bytes, peak_used);
    o.set(metric::vram_own_bytes, arena.peak());
    o.set(metric::vram_context_bytes, vram.context_bytes);
    o.set(metric::vram_estimate_bytes, vram.estimate + vram.context_bytes);
    o.set(metric::gemm_tflops, gemm_tflops);
    o.set(metric::model_tflops, shape.flops_per_sample() * steps.r.throughput / 1e12);
    if (*precision == Precision::fp16) {
      o.set(metric::skipped_steps, trainer.last().skipped_steps);
      o.set(metric::loss_scale, trainer.last().loss_scale);
    }
    judge_trial_end(o, TrialEnd{trainer.loss(), peak_used, vram.limit, o.ram_bytes().value_or(0), ram_limit});
    return o;
  }

  // The cuBLAS handle outlives the trial (a warm worker serves the next one
  // with it: its set-up is paid once per process).
  const CublasHandle& blas_for(int device) {
    if (!m_blas || m_blas_device != device) {
      m_blas.emplace();
      m_blas_device = device;
    }
    return *m_blas;
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
