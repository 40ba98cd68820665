#pragma once
// Move-only RAII owners of CUDA resources, and the accounting of the
// harness's own device memory against a budget (the spec's `vram` limit
// minus what the context and libraries took before the first allocation).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

namespace autotune::cuda {

// Counts device bytes allocated through it; refuses (CudaError with
// out_of_memory) an allocation that would take the total past the budget.
class DeviceArena {
 public:
  explicit DeviceArena(double budget_bytes = 0) : m_budget(budget_bytes) {}  // 0: no budget
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;

  void* allocate(std::size_t bytes);
  void deallocate(void* p, std::size_t bytes) noexcept;
  double in_use() const { return m_in_use; }
  double peak() const { return m_peak; }
  double budget() const { return m_budget; }

 private:
  double m_budget;
  double m_in_use = 0;
  double m_peak = 0;
};

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceArena& arena, std::size_t bytes);
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      swap(o);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return m_ptr; }
  template <class T>
  T* as() const { return static_cast<T*>(m_ptr); }
  std::size_t bytes() const { return m_bytes; }
  void reset() noexcept;

 private:
  void swap(DeviceBuffer& o) noexcept {
    std::swap(m_arena, o.m_arena);
    std::swap(m_ptr, o.m_ptr);
    std::swap(m_bytes, o.m_bytes);
  }
  DeviceArena* m_arena = nullptr;
  void* m_ptr = nullptr;
  std::size_t m_bytes = 0;
};

// Page-locked host memory (cudaHostAlloc).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t bytes);
  ~PinnedBuffer() { reset(); }
  PinnedBuffer(PinnedBuffer&& o) noexcept : m_ptr(std::exchange(o.m_ptr, nullptr)), m_bytes(o.m_bytes) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      m_ptr = std::exchange(o.m_ptr, nullptr);
      m_bytes = o.m_bytes;
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* get() const { return m_ptr; }
  template <class T>
  T* as() const { return static_cast<T*>(m_ptr); }
  void reset() noexcept;

 private:
  void* m_ptr = nullptr;
  std::size_t m_bytes = 0;
};

// A stream that synchronises with the legacy default stream (cudaStreamCreate),
// so that a plain cudaMemcpy orders itself after the work queued on it.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(Stream&& o) noexcept : m_stream(std::exchange(o.m_stream, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return m_stream; }

 private:
  cudaStream_t m_stream = nullptr;
};

class Event {
 public:
  // blocking_sync: cudaEventSynchronize puts the host thread to sleep rather
  // than spinning a core the loader's workers could use.
  explicit Event(bool timing = true, bool blocking_sync = false);
  ~Event();
  Event(Event&& o) noexcept : m_event(std::exchange(o.m_event, nullptr)) {}
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return m_event; }

 private:
  cudaEvent_t m_event = nullptr;
};

class CublasHandle {
 public:
  CublasHandle();
  ~CublasHandle();
  CublasHandle(CublasHandle&& o) noexcept : m_handle(std::exchange(o.m_handle, nullptr)) {}
  CublasHandle& operator=(CublasHandle&& o) noexcept;
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return m_handle; }

 private:
  cublasHandle_t m_handle = nullptr;
};

// Host-released gates on a stream (kernels.hpp, launch_gate): hold() queues
// a gate, open() lets every gate queued so far through. Work queued between
// them starts on the device only once the host has queued all of it, so
// events around it time device execution, not the host's launches. The
// destructor opens every gate, so that no exception leaves a stream waiting.
class LaunchGate {
 public:
  LaunchGate();
  ~LaunchGate();
  LaunchGate(const LaunchGate&) = delete;
  LaunchGate& operator=(const LaunchGate&) = delete;

  void hold(cudaStream_t s);
  void open() noexcept;
  // Gates that gave up waiting (the host took longer than the timeout).
  unsigned timeouts() const noexcept;

 private:
  unsigned* m_host = nullptr;  // mapped page-locked: [0] flag, [1] timeouts
  unsigned* m_device = nullptr;
  unsigned m_issued = 0;
};

// Milliseconds between two completed events.
float elapsed_ms(const Event& start, const Event& end);

}  // namespace autotune::cuda
