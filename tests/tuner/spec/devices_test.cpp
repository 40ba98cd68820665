#include "tuner/spec/devices.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "tests/support/proc_util.hpp"

namespace autotune {
namespace {

// A /dev with `n` GPU device files (and the control file, which is no GPU).
std::filesystem::path fake_dev(const testing::ScratchDir& dir, int n) {
  const auto dev = dir.path() / "dev";
  std::filesystem::create_directories(dev);
  std::ofstream(dev / "nvidiactl");
  std::ofstream(dev / "nvidia-uvm");
  for (int i = 0; i < n; ++i) std::ofstream(dev / ("nvidia" + std::to_string(i)));
  return dev;
}

GpuProbe probe(const std::map<std::string, std::string>& env, const std::filesystem::path& dev) {
  return probe_gpus(
      [&](const char* k) -> const char* {
        auto it = env.find(k);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      dev);
}

using Ids = std::vector<std::string>;

TEST(Devices, WithoutARestrictionEveryDeviceFileIsAGpu) {
  testing::ScratchDir d;
  const GpuProbe p = probe({}, fake_dev(d, 4));
  EXPECT_EQ(p.ids, (Ids{"0", "1", "2", "3"}));
  EXPECT_EQ(p.source, "/dev");
}

TEST(Devices, CudaVisibleDevicesRestrictsToTheEntriesAsWritten) {
  testing::ScratchDir d;
  const auto dev = fake_dev(d, 8);
  // A slot given entry i must see the i-th device this process was given:
  // the entries themselves, never 0..n-1 renumbered.
  EXPECT_EQ(probe({{"CUDA_VISIBLE_DEVICES", "2,3"}}, dev).ids, (Ids{"2", "3"}));
  EXPECT_EQ(probe({{"CUDA_VISIBLE_DEVICES", "GPU-5e1c2a9d, GPU-77aa"}}, dev).ids, (Ids{"GPU-5e1c2a9d", "GPU-77aa"}));
  EXPECT_EQ(probe({{"CUDA_VISIBLE_DEVICES", "4,-1,5"}}, dev).ids, (Ids{"4"})) << "CUDA stops at a negative entry";
  for (const char* none : {"", "-1", "none", "NoDevFiles"})
    EXPECT_TRUE(probe({{"CUDA_VISIBLE_DEVICES", none}}, dev).ids.empty()) << "'" << none << "'";
}

TEST(Devices, SlurmsGpuListCountsWhenCudaVisibleDevicesIsUnset) {
  testing::ScratchDir d;
  const auto dev = fake_dev(d, 8);
  EXPECT_EQ(probe({{"SLURM_STEP_GPUS", "5,6"}, {"SLURM_JOB_GPUS", "4,5,6,7"}}, dev).ids, (Ids{"5", "6"}));
  EXPECT_EQ(probe({{"SLURM_JOB_GPUS", "4,5,6,7"}}, dev).source, "SLURM_JOB_GPUS");
  EXPECT_EQ(probe({{"CUDA_VISIBLE_DEVICES", "1"}, {"SLURM_JOB_GPUS", "4,5"}}, dev).ids, (Ids{"1"}));
}

TEST(Devices, NoDeviceFileMeansNoGpuWhateverTheEnvironmentSays) {
  testing::ScratchDir d;
  const GpuProbe p = probe({{"CUDA_VISIBLE_DEVICES", "0,1"}}, fake_dev(d, 0));
  EXPECT_TRUE(p.ids.empty());
  EXPECT_EQ(p.source, "none");
}

}  // namespace
}  // namespace autotune
