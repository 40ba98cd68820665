#pragma once
// Other processes' use of the machine's GPUs, read from NVML, the driver's
// management library (what nvidia-smi reads). The library is opened at run
// time, never linked, so that autotune runs where no driver is installed:
// libnvidia-ml.so.1, or the file $AUTOTUNE_NVML_LIBRARY names.
//
// It gives what take_gpu_snapshot() reads from nvidia-smi (each compute
// process outside autotune's tree, its device and its memory) and, beyond
// that, how much of a device's SM time those processes took since a moment,
// from the driver's per-process utilization samples. A process is ours when
// its pid is in autotune's tree (autotune_pids()); a driver that reports
// pids of another pid namespace (autotune in a container) makes every
// process look foreign.
//
// Contract: open() first; a reader that opened may still fail a call (a
// device lost, a call the driver does not support): that call answers
// nullopt and the caller falls back to nvidia-smi for it. Nothing throws.
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "tuner/run/machine_load.hpp"

namespace autotune {

class NvmlReader {
 public:
  // The library loaded and NVML started, with the devices it sees; nullopt
  // where the library is missing, lacks a call used here, or NVML fails to
  // start (no driver).
  static std::optional<NvmlReader> open();

  NvmlReader(NvmlReader&&) noexcept;
  NvmlReader& operator=(NvmlReader&&) noexcept;
  NvmlReader(const NvmlReader&) = delete;
  NvmlReader& operator=(const NvmlReader&) = delete;
  ~NvmlReader();  // shuts NVML down and unloads the library

  // The devices (index, UUID) and the compute processes outside autotune's
  // tree on each, with the device memory each holds; nullopt when a call
  // fails.
  std::optional<GpuSnapshot> snapshot() const;

  // The share of SM time that processes outside autotune's tree took on
  // `devices` (named as foreign_gpu_use() takes them; none: every device)
  // since `since_us` (wall clock, microseconds since the Unix epoch, as NVML
  // stamps its samples). Per device: the sum over those processes of each
  // one's mean SM utilization over its samples since then (drivers return
  // one or several per process), at most 1; then the mean over the
  // devices. 0..1; nullopt when a device cannot say (per-process samples
  // are not supported on it).
  std::optional<double> foreign_busy(std::string_view devices, std::uint64_t since_us) const;

 private:
  struct Api;  // the library's handle, its entry points and the devices
  explicit NvmlReader(std::unique_ptr<Api> api);
  std::unique_ptr<Api> m_api;
};

// Now on the wall clock, in microseconds since the Unix epoch: the `since_us`
// of a span that starts now.
std::uint64_t wall_clock_us();

}  // namespace autotune
