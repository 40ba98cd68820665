// A stand-in for the driver's libnvidia-ml.so.1 (tuner/run/nvml_reader.hpp),
// loaded through AUTOTUNE_NVML_LIBRARY by tests/tuner/run/nvml_reader_test.cpp
// and scheduler_test.cpp. Fixed values: two devices; on device 0 a foreign
// process (pid 4242, 1 GiB) and the process that loaded this library (512
// MiB, its own), on device 1 none. Device 0's utilization samples: pid 4242
// at 30% and 50% SM (a mean of 40%) and the loader at 30% stamped now, and
// pid 4242 at 100% stamped long ago, which a reader asking for the samples
// since a recent time never sees. With AUTOTUNE_FAKE_NVML_FAIL=init, NVML
// does not start (as without a driver); with =utilization, the samples are
// not supported.
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <vector>

// nvml.h's layouts, as NVML's API reference gives them.
struct nvmlDevice_st {
  unsigned index;
};
using nvmlDevice_t = nvmlDevice_st*;
struct ProcessInfoV1 {
  unsigned int pid;
  unsigned long long usedGpuMemory;
};
struct ProcessUtilizationSample {
  unsigned int pid;
  unsigned long long timeStamp;
  unsigned int smUtil, memUtil, encUtil, decUtil;
};

namespace {

constexpr int kSuccess = 0, kInvalidArgument = 2, kNotSupported = 3, kNotFound = 6, kInsufficientSize = 7,
              kDriverNotLoaded = 9;
nvmlDevice_st g_devices[2] = {{0}, {1}};
int g_started = 0;

bool failing(const char* what) {
  const char* v = std::getenv("AUTOTUNE_FAKE_NVML_FAIL");
  return v && std::strcmp(v, what) == 0;
}

unsigned long long now_us() {
  timeval tv{};
  ::gettimeofday(&tv, nullptr);
  return static_cast<unsigned long long>(tv.tv_sec) * 1000000ull + static_cast<unsigned long long>(tv.tv_usec);
}

// NVML's list protocol: too small a buffer answers the size needed.
template <class T>
int give(const std::vector<T>& items, unsigned int* count, T* out) {
  if (!count) return kInvalidArgument;
  if (items.empty()) {
    *count = 0;
    return kSuccess;
  }
  if (!out || *count < items.size()) {
    *count = static_cast<unsigned int>(items.size());
    return kInsufficientSize;
  }
  for (std::size_t i = 0; i < items.size(); ++i) out[i] = items[i];
  *count = static_cast<unsigned int>(items.size());
  return kSuccess;
}

}  // namespace

extern "C" {

int nvmlInit_v2() {
  if (failing("init")) return kDriverNotLoaded;
  ++g_started;
  return kSuccess;
}

int nvmlShutdown() {
  if (g_started == 0) return 1;  // NVML_ERROR_UNINITIALIZED
  --g_started;
  return kSuccess;
}

int nvmlDeviceGetCount_v2(unsigned int* n) {
  if (!g_started) return 1;
  *n = 2;
  return kSuccess;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t* d) {
  if (!g_started) return 1;
  if (i >= 2) return kInvalidArgument;
  *d = &g_devices[i];
  return kSuccess;
}

int nvmlDeviceGetUUID(nvmlDevice_t d, char* uuid, unsigned int length) {
  const char* id = d->index == 0 ? "GPU-aaaa1111-0000-0000-0000-000000000000" : "GPU-bbbb2222-0000-0000-0000-000000000000";
  if (length < std::strlen(id) + 1) return kInsufficientSize;
  std::strcpy(uuid, id);
  return kSuccess;
}

int nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d, unsigned int* count, ProcessInfoV1* infos) {
  if (!g_started) return 1;
  std::vector<ProcessInfoV1> procs;
  if (d->index == 0)
    procs = {{4242, 1ull << 30}, {static_cast<unsigned int>(::getpid()), 512ull << 20}};
  return give(procs, count, infos);
}

int nvmlDeviceGetProcessUtilization(nvmlDevice_t d, ProcessUtilizationSample* samples, unsigned int* count,
                                    unsigned long long last_seen) {
  if (!g_started) return 1;
  if (failing("utilization")) return kNotSupported;
  std::vector<ProcessUtilizationSample> all;
  if (d->index == 0) {
    const unsigned long long now = now_us();
    all = {{4242, 1000, 100, 0, 0, 0},
           {4242, now, 30, 0, 0, 0},
           {4242, now, 50, 0, 0, 0},
           {static_cast<unsigned int>(::getpid()), now, 30, 0, 0, 0}};
  }
  std::vector<ProcessUtilizationSample> since;
  for (const auto& s : all)
    if (s.timeStamp > last_seen) since.push_back(s);
  if (since.empty()) return kNotFound;  // as the driver says it: no sample since then
  return give(since, count, samples);
}

}  // extern "C"
