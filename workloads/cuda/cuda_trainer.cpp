#include "workloads/cuda/cuda_trainer.hpp"

#include <algorithm>
#include <new>
#include <utility>

#include "workloads/cuda/cuda_check.hpp"

namespace autotune::cuda {

double device_used_bytes(double* total_out) {
  std::size_t free = 0, total = 0;
  AUTOTUNE_CUDA_CALL(cudaMemGetInfo(&free, &total));
  if (total_out) *total_out = static_cast<double>(total);
  return static_cast<double>(total - free);
}

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

DeviceFeeder::DeviceFeeder(DeviceArena& arena, Loader& loader, cudaStream_t compute, bool pinned)
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

DeviceFeeder::~DeviceFeeder() { AUTOTUNE_CUDA_CALL_NOEXCEPT(cudaStreamSynchronize(m_copy.get())); }

bool DeviceFeeder::next(int& slot, std::int64_t& samples) {
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

bool DeviceFeeder::after_compute(int slot) {
  if (!m_pinned) return true;
  const auto s = static_cast<std::size_t>(slot);
  AUTOTUNE_CUDA_CALL(cudaEventRecord(m_consumed[s].get(), m_compute));
  const bool more = enqueue_copy(m_next_slot);
  // The copy of this slot was queued a micro-batch ago; usually long done.
  AUTOTUNE_CUDA_CALL(cudaEventSynchronize(m_copied[s].get()));
  m_current.reset();
  return more;
}

bool DeviceFeeder::enqueue_copy(int slot) {
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

CudaTrainer::CudaTrainer(GpuMlp& mlp, DeviceFeeder& feeder, Loader& loader, LaunchGate& gate, cudaStream_t compute,
                         float grad_scale, std::int64_t grad_accum, double peak_used)
    : m_mlp(mlp),
      m_feeder(feeder),
      m_loader(loader),
      m_gate(gate),
      m_compute(compute),
      m_grad_scale(grad_scale),
      m_grad_accum(grad_accum),
      m_peak_used(peak_used) {}

bool CudaTrainer::micro_batch(StepResult& s) {
  int slot = 0;
  std::int64_t samples = 0;
  if (!m_feeder.next(slot, samples)) return false;
  m_mlp.accumulate(m_feeder.x(slot), m_feeder.y(slot), samples, m_grad_scale);
  m_feeder.after_compute(slot);  // an end of data shows at the next micro-batch
  s.samples += samples;
  return true;
}

void CudaTrainer::optimizer_step(StepResult& s) {
  const int slot = static_cast<int>(m_steps & 1);
  m_mlp.step(slot);
  AUTOTUNE_CUDA_CALL(cudaEventRecord(m_step_done[slot].get(), m_compute));
  m_step_samples[slot] = s.samples;
  if (m_steps > 0) {
    // The previous step, a step late: usually finished while this one was queued.
    const int prev = 1 - slot;
    AUTOTUNE_CUDA_CALL(cudaEventSynchronize(m_step_done[prev].get()));
    m_last = m_mlp.report(prev);
    m_last_samples = m_step_samples[prev];
  }
  m_last_slot = slot;
  if (++m_steps == 1) m_peak_used = std::max(m_peak_used, device_used_bytes());  // cuBLAS may allocate lazily
}

void CudaTrainer::after_measure(const MeasureResult& r) {
  AUTOTUNE_CUDA_CALL(cudaStreamSynchronize(m_compute));
  if (m_steps > 0) {
    m_last = m_mlp.report(m_last_slot);
    m_last_samples = m_step_samples[m_last_slot];
  }
  // gpu_busy's numerator: one optimizer step's device time, each part
  // behind a host-released gate so that events time execution only (the
  // timed windows ran ungated, so this costs them nothing). Best of three,
  // on the loader's next batches; skipped when the loader stopped early.
  if (r.windows > 0 && !m_loader.failed()) {
    Event start, end;
    for (int trial = 0; trial < 3; ++trial) {
      double seconds = 0;
      bool complete = true;
      for (std::int64_t a = 0; a <= m_grad_accum && complete; ++a) {
        int slot = 0;
        std::int64_t samples = 0;
        if (a < m_grad_accum && !m_feeder.next(slot, samples)) {
          complete = false;
          break;
        }
        m_gate.hold(m_compute);
        AUTOTUNE_CUDA_CALL(cudaEventRecord(start.get(), m_compute));
        if (a < m_grad_accum) m_mlp.accumulate(m_feeder.x(slot), m_feeder.y(slot), samples, m_grad_scale);
        else m_mlp.step(0);
        AUTOTUNE_CUDA_CALL(cudaEventRecord(end.get(), m_compute));
        m_gate.open();
        if (a < m_grad_accum) m_feeder.after_compute(slot);
        AUTOTUNE_CUDA_CALL(cudaEventSynchronize(end.get()));
        seconds += elapsed_ms(start, end) / 1000.0;
      }
      if (!complete) break;
      m_step_device_seconds = trial == 0 ? seconds : std::min(m_step_device_seconds, seconds);
    }
  }
}

double CudaTrainer::loss() const {
  return m_last_samples > 0 ? static_cast<double>(m_last.loss_sum) / static_cast<double>(m_last_samples) : 0;
}

}  // namespace autotune::cuda
