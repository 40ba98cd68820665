#pragma once
// The cuda workload's part of the harness's trial (workloads/harness.hpp):
// the batches moved to the device (DeviceFeeder) and GpuMlp's step on the
// compute stream (CudaTrainer), with the device-memory reading both need.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "workloads/cuda/cuda_handles.hpp"
#include "workloads/cuda/gpu_mlp.hpp"
#include "workloads/cuda/train_state.hpp"
#include "workloads/harness.hpp"
#include "workloads/loader.hpp"

namespace autotune::cuda {

// Device memory in use on the current device (all processes), bytes.
double device_used_bytes(double* total_out = nullptr);

// Page-locked loader buffers; a failed cudaHostAlloc is a host allocation failure.
HostAllocator pinned_allocator();

// Moves loader batches to the device: two device slots, a copy stream and
// events when pinned; one slot and a synchronous copy when not.
class DeviceFeeder {
 public:
  DeviceFeeder(DeviceArena& arena, Loader& loader, cudaStream_t compute, bool pinned);
  // The copy stream may still read the page-locked buffers of the leases
  // held here (after an exception, or when the loader stopped): wait for it
  // before the members give them back to the loader, which refills them.
  ~DeviceFeeder();
  DeviceFeeder(const DeviceFeeder&) = delete;
  DeviceFeeder& operator=(const DeviceFeeder&) = delete;

  // Makes the next batch's slot ready for compute on the compute stream and
  // returns it; false when the loader stopped.
  bool next(int& slot, std::int64_t& samples);
  // After the compute reading `slot` is queued: record that, prefetch the
  // following batch into the other slot, and return the host buffer of this one.
  bool after_compute(int slot);

  const float* x(int slot) const { return m_x[static_cast<std::size_t>(slot)].as<float>(); }
  const std::int32_t* y(int slot) const { return m_y[static_cast<std::size_t>(slot)].as<std::int32_t>(); }

 private:
  bool enqueue_copy(int slot);

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

// GpuMlp's micro-batches and optimizer steps, queued on the compute stream.
// The host queues step n, then waits for step n - 1 (an event) and reads its
// loss, so the device always has the next step queued and the host never
// waits for the step it just queued. After the measurement: the last step's
// report, then one step's device time (step_device_seconds).
class CudaTrainer final : public Trainer {
 public:
  // `peak_used`: device memory in use before the first step.
  CudaTrainer(GpuMlp& mlp, DeviceFeeder& feeder, Loader& loader, LaunchGate& gate, cudaStream_t compute,
              float grad_scale, std::int64_t grad_accum, double peak_used);

  bool micro_batch(StepResult& s) override;
  void optimizer_step(StepResult& s) override;
  void after_measure(const MeasureResult& r) override;

  const TrainState& last() const { return m_last; }
  double loss() const;  // the last step's mean; 0 before any step
  double peak_used() const { return m_peak_used; }
  double step_device_seconds() const { return m_step_device_seconds; }

 private:
  GpuMlp& m_mlp;
  DeviceFeeder& m_feeder;
  Loader& m_loader;
  LaunchGate& m_gate;
  cudaStream_t m_compute;
  float m_grad_scale;
  std::int64_t m_grad_accum;
  double m_peak_used;
  // One event and one report slot per step parity. The wait sleeps
  // (blocking sync): a GPU-bound run spends most of its host time here, and
  // a spinning thread would take a core from the workers.
  Event m_step_done[2] = {Event(false, true), Event(false, true)};
  std::int64_t m_steps = 0;
  std::int64_t m_step_samples[2] = {0, 0};
  TrainState m_last{};
  std::int64_t m_last_samples = 0;
  int m_last_slot = 0;
  double m_step_device_seconds = 0;
};

}  // namespace autotune::cuda
