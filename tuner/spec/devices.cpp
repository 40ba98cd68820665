#include "tuner/spec/devices.hpp"

#include <cstdlib>
#include <sstream>

#include "workloads/workload.hpp"

namespace autotune {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// A comma-separated device list as CUDA reads CUDA_VISIBLE_DEVICES.
std::vector<std::string> device_list(const std::string& text) {
  std::vector<std::string> out;
  const std::string all = trim(text);
  if (all.empty() || all == "none" || all == "NoDevFiles") return out;
  std::stringstream ss(all);
  for (std::string entry; std::getline(ss, entry, ',');) {
    entry = trim(entry);
    if (entry.empty() || entry[0] == '-') break;  // CUDA ignores this entry and every one after it
    out.push_back(entry);
  }
  return out;
}

std::size_t device_files(const std::filesystem::path& dev_dir) {
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& d : std::filesystem::directory_iterator(dev_dir, ec)) {
    const std::string name = d.path().filename().string();
    if (name.size() > 6 && name.rfind("nvidia", 0) == 0 &&
        name.find_first_not_of("0123456789", 6) == std::string::npos)
      ++n;
  }
  return n;
}

}  // namespace

GpuProbe probe_gpus(const std::function<const char*(const char*)>& getenv, const std::filesystem::path& dev_dir) {
  GpuProbe p;
  const std::size_t n = device_files(dev_dir);
  if (n == 0) {  // no driver device here, whatever the environment says
    p.source = "none";
    return p;
  }
  for (const char* var : {"CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS", "SLURM_JOB_GPUS"}) {
    if (const char* v = getenv(var)) {
      p.ids = device_list(v);
      p.source = var;
      return p;
    }
  }
  for (std::size_t i = 0; i < n; ++i) p.ids.push_back(std::to_string(i));
  p.source = "/dev";
  return p;
}

GpuProbe probe_gpus() {
  return probe_gpus([](const char* k) { return static_cast<const char*>(std::getenv(k)); }, "/dev");
}

bool cuda_device_present() { return find_workload("cuda") && !probe_gpus().ids.empty(); }

}  // namespace autotune
