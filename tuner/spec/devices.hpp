#pragma once
// The one GPU probe: which devices this process was given. `workload.kind:
// auto`, `executor.gpus: auto` and the parallel slots all ask it, so a tuner
// started inside a Slurm allocation or a container that restricts devices
// never hands a trial a GPU the user was not given. It reads the environment
// and device files only: CUDA is never initialised here (the tuner forks
// trials afterwards).
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace autotune {

struct GpuProbe {
  // The entries a child may be given in CUDA_VISIBLE_DEVICES, as this
  // process's own environment names them ("2", "GPU-5e1c...", "MIG-..."), so
  // a slot given entry i sees exactly the i-th device this process was given.
  std::vector<std::string> ids;
  std::string source;  // CUDA_VISIBLE_DEVICES | SLURM_STEP_GPUS | SLURM_JOB_GPUS | /dev | none
};

// None without a /dev/nvidiaN device file (no driver here, whatever the
// environment says). Then, in order: CUDA_VISIBLE_DEVICES when set (CUDA's own reading: the list ends
// at the first negative entry; empty, -1, none or NoDevFiles mean no device);
// else Slurm's GPU list for the step or job; else one id per device file
// (numbered as CUDA will number them, 0..n-1).
GpuProbe probe_gpus();
// The same over a given environment and /dev folder (for tests).
GpuProbe probe_gpus(const std::function<const char*(const char*)>& getenv, const std::filesystem::path& dev_dir);

// Whether `kind: auto` picks cuda here: the binary has the cuda workload and
// the probe finds a device.
bool cuda_device_present();

}  // namespace autotune
