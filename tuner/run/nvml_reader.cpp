#include "tuner/run/nvml_reader.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace autotune {
namespace nvml {

// The few declarations of nvml.h used here, so that this builds without the
// header. Layouts and signatures as NVML's API reference gives them
// (docs.nvidia.com/deploy/nvml-api): nvmlReturn_t is a C enum (an int).
using Return = int;
constexpr Return kSuccess = 0;
constexpr Return kNotFound = 6;          // NVML_ERROR_NOT_FOUND: no sample since the time asked
constexpr Return kInsufficientSize = 7;  // NVML_ERROR_INSUFFICIENT_SIZE: the count says how many
struct DeviceSt;                         // opaque: nvmlDevice_t is a pointer to it
using Device = DeviceSt*;
// nvmlProcessInfo_v1_t: what the un-versioned nvmlDeviceGetComputeRunningProcesses fills
// (the library keeps that symbol for binaries built against older headers).
struct ProcessInfoV1 {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes; NVML_VALUE_NOT_AVAILABLE (all ones) when unknown
};
// nvmlProcessUtilizationSample_t
struct ProcessUtilizationSample {
  unsigned int pid;
  unsigned long long timeStamp;  // CPU time stamp, microseconds
  unsigned int smUtil;           // percent
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
};
constexpr unsigned kUuidBufferSize = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE

using InitFn = Return (*)();
using ShutdownFn = Return (*)();
using CountFn = Return (*)(unsigned int*);
using HandleFn = Return (*)(unsigned int, Device*);
using UuidFn = Return (*)(Device, char*, unsigned int);
using ProcessesFn = Return (*)(Device, unsigned int*, ProcessInfoV1*);
using UtilizationFn = Return (*)(Device, ProcessUtilizationSample*, unsigned int*, unsigned long long);

// Calls `fill(count, buffer)` the way NVML's list calls want it: asked with
// a count of 0, it answers the size; the list may grow between two calls,
// so a short buffer is retried. The entries, or nullopt on an error (a
// `kNotFound` is an empty list).
template <class T, class Fill>
std::optional<std::vector<T>> read_list(Fill fill) {
  unsigned int count = 0;
  Return r = fill(&count, nullptr);
  for (int attempt = 0; attempt < 4; ++attempt) {
    if (r == kNotFound || (r == kSuccess && count == 0)) return std::vector<T>();
    if (r != kSuccess && r != kInsufficientSize) return std::nullopt;
    std::vector<T> items(count + 8);  // room for a few that start meanwhile
    count = static_cast<unsigned int>(items.size());
    r = fill(&count, items.data());
    if (r == kSuccess) {
      items.resize(std::min<std::size_t>(count, items.size()));
      return items;
    }
    if (r == kNotFound) return std::vector<T>();
  }
  return std::nullopt;
}

}  // namespace nvml

struct NvmlReader::Api {
  void* library = nullptr;
  nvml::ShutdownFn shutdown = nullptr;
  nvml::ProcessesFn processes = nullptr;
  nvml::UtilizationFn utilization = nullptr;
  std::vector<std::pair<std::string, std::string>> devices;  // (index, UUID)
  std::vector<nvml::Device> handles;                         // the devices', in that order
};

std::optional<NvmlReader> NvmlReader::open() {
  std::string path = "libnvidia-ml.so.1";
  if (const char* v = std::getenv("AUTOTUNE_NVML_LIBRARY"); v && *v) path = v;
  void* library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) return std::nullopt;
  auto api = std::make_unique<Api>();
  api->library = library;
  auto find = [&](const char* name) { return ::dlsym(library, name); };
  const auto init = reinterpret_cast<nvml::InitFn>(find("nvmlInit_v2"));
  api->shutdown = reinterpret_cast<nvml::ShutdownFn>(find("nvmlShutdown"));
  const auto count = reinterpret_cast<nvml::CountFn>(find("nvmlDeviceGetCount_v2"));
  const auto handle = reinterpret_cast<nvml::HandleFn>(find("nvmlDeviceGetHandleByIndex_v2"));
  const auto uuid = reinterpret_cast<nvml::UuidFn>(find("nvmlDeviceGetUUID"));
  api->processes = reinterpret_cast<nvml::ProcessesFn>(find("nvmlDeviceGetComputeRunningProcesses"));
  api->utilization = reinterpret_cast<nvml::UtilizationFn>(find("nvmlDeviceGetProcessUtilization"));
  if (!init || !api->shutdown || !count || !handle || !uuid || !api->processes || !api->utilization ||
      init() != nvml::kSuccess) {
    ::dlclose(library);
    return std::nullopt;
  }
  NvmlReader reader(std::move(api));  // from here its destructor shuts NVML down
  Api& a = *reader.m_api;
  unsigned int n = 0;
  if (count(&n) != nvml::kSuccess) return std::nullopt;
  for (unsigned int i = 0; i < n; ++i) {
    // A device NVML may not open (no permission, lost) is left out: no
    // trial can be measured against it here either.
    nvml::Device d = nullptr;
    char id[nvml::kUuidBufferSize] = {};
    if (handle(i, &d) != nvml::kSuccess || uuid(d, id, sizeof id) != nvml::kSuccess) continue;
    a.devices.emplace_back(std::to_string(i), std::string(id));
    a.handles.push_back(d);
  }
  return std::optional<NvmlReader>(std::move(reader));
}

NvmlReader::NvmlReader(std::unique_ptr<Api> api) : m_api(std::move(api)) {}
NvmlReader::NvmlReader(NvmlReader&&) noexcept = default;
NvmlReader& NvmlReader::operator=(NvmlReader&& other) noexcept {
  if (this != &other) {
    NvmlReader gone(std::move(*this));  // shuts this one down
    m_api = std::move(other.m_api);
  }
  return *this;
}

NvmlReader::~NvmlReader() {
  if (!m_api) return;
  m_api->shutdown();
  ::dlclose(m_api->library);
}

std::optional<GpuSnapshot> NvmlReader::snapshot() const {
  GpuSnapshot s;
  s.devices = m_api->devices;
  const std::vector<long> ours = autotune_pids();
  for (std::size_t i = 0; i < m_api->handles.size(); ++i) {
    const nvml::Device d = m_api->handles[i];
    const auto procs = nvml::read_list<nvml::ProcessInfoV1>(
        [&](unsigned int* n, nvml::ProcessInfoV1* p) { return m_api->processes(d, n, p); });
    if (!procs) return std::nullopt;
    for (const nvml::ProcessInfoV1& p : *procs) {
      const long pid = static_cast<long>(p.pid);
      if (pid <= 0 || std::find(ours.begin(), ours.end(), pid) != ours.end()) continue;
      const bool known = p.usedGpuMemory != ~0ull;  // NVML_VALUE_NOT_AVAILABLE
      s.others.push_back({pid, known ? static_cast<double>(p.usedGpuMemory) : 0.0, m_api->devices[i].second});
    }
  }
  return s;
}

std::optional<double> NvmlReader::foreign_busy(std::string_view devices, std::uint64_t since_us) const {
  const std::vector<std::string> named = named_gpus(m_api->devices, devices);
  const std::vector<long> ours = autotune_pids();
  double sum = 0;
  int counted = 0;
  for (std::size_t i = 0; i < m_api->handles.size(); ++i) {
    if (!named.empty() && std::find(named.begin(), named.end(), m_api->devices[i].second) == named.end()) continue;
    const nvml::Device d = m_api->handles[i];
    const auto samples = nvml::read_list<nvml::ProcessUtilizationSample>(
        [&](unsigned int* n, nvml::ProcessUtilizationSample* p) { return m_api->utilization(d, p, n, since_us); });
    if (!samples) return std::nullopt;
    std::map<long, std::pair<double, int>> per_pid;  // pid -> (sum of smUtil, samples)
    for (const nvml::ProcessUtilizationSample& x : *samples) {
      const long pid = static_cast<long>(x.pid);
      // The time is asked of the driver, checked again here; a reading
      // above 100% is the garbage some drivers return for exited processes
      // (nvtop and nvitop drop those too).
      if (x.timeStamp <= since_us || x.smUtil > 100 || pid <= 0) continue;
      if (std::find(ours.begin(), ours.end(), pid) != ours.end()) continue;
      auto& [util, n] = per_pid[pid];
      util += x.smUtil;
      ++n;
    }
    double device = 0;
    for (const auto& [pid, v] : per_pid) device += v.first / v.second / 100.0;
    sum += std::min(device, 1.0);
    ++counted;
  }
  if (counted == 0) return std::nullopt;
  return sum / counted;
}

std::uint64_t wall_clock_us() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

}  // namespace autotune
