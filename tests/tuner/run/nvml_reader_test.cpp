// Other processes on the GPUs read through NVML, here a stand-in library
// (tests/support/fake_nvml.cpp, loaded through AUTOTUNE_NVML_LIBRARY): two
// devices, on the first a foreign process (pid 4242, 1 GiB, 30% and 50% SM
// since a recent time, 100% long before) and this test's own process, which
// is autotune's tree and must not count.
#include "tuner/run/nvml_reader.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace autotune {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

// Sets an environment variable for the test's length.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : m_name(name) {
    if (const char* old = std::getenv(name)) m_old = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (m_old) ::setenv(m_name, m_old->c_str(), 1);
    else ::unsetenv(m_name);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* m_name;
  std::optional<std::string> m_old;
};

TEST(NvmlReader, ReadsTheForeignProcessItsMemoryAndItsBusyShareOnTheNamedDeviceOnly) {
  ScopedEnv lib("AUTOTUNE_NVML_LIBRARY", AUTOTUNE_FAKE_NVML);
  const auto nvml = NvmlReader::open();
  ASSERT_TRUE(nvml);
  const std::uint64_t since = wall_clock_us() - 10'000'000;  // the trial started 10 s ago

  const auto s = nvml->snapshot();
  ASSERT_TRUE(s);
  ASSERT_EQ(s->devices.size(), 2u);
  EXPECT_EQ(s->devices[0].first, "0");
  EXPECT_EQ(s->devices[1].second, "GPU-bbbb2222-0000-0000-0000-000000000000");
  ASSERT_EQ(s->others.size(), 1u) << "this test's own process is autotune's tree";
  EXPECT_EQ(s->others[0].pid, 4242);
  EXPECT_DOUBLE_EQ(s->others[0].bytes, kGiB);
  EXPECT_EQ(s->others[0].gpu, s->devices[0].second);

  EXPECT_EQ(foreign_gpu_use(*s, "0").processes, 1);
  EXPECT_DOUBLE_EQ(foreign_gpu_use(*s, "0").bytes, kGiB);
  EXPECT_EQ(foreign_gpu_use(*s, "1").processes, 0);
  EXPECT_EQ(foreign_gpu_use(*s, "GPU-bbbb").processes, 0);

  // 4242's mean over its samples since then; ours (30%) left out.
  ASSERT_TRUE(nvml->foreign_busy("0", since));
  EXPECT_NEAR(*nvml->foreign_busy("0", since), 0.40, 1e-9);
  EXPECT_NEAR(nvml->foreign_busy("GPU-aaaa1111", since).value_or(-1), 0.40, 1e-9);
  EXPECT_NEAR(nvml->foreign_busy("1", since).value_or(-1), 0.0, 1e-9);
  EXPECT_NEAR(nvml->foreign_busy("", since).value_or(-1), 0.20, 1e-9) << "every device: the mean over the two";
}

TEST(NvmlReader, OnlyTheSamplesSinceTheTrialsStartCount) {
  ScopedEnv lib("AUTOTUNE_NVML_LIBRARY", AUTOTUNE_FAKE_NVML);
  const auto nvml = NvmlReader::open();
  ASSERT_TRUE(nvml);
  // From the epoch: the 100% sample of long ago too, (100 + 30 + 50) / 3.
  EXPECT_NEAR(nvml->foreign_busy("0", 0).value_or(-1), 0.60, 1e-9);
  // From a time after every sample: the driver has none (NVML_ERROR_NOT_FOUND), nobody used it.
  EXPECT_NEAR(nvml->foreign_busy("0", wall_clock_us() + 3'600'000'000ull).value_or(-1), 0.0, 1e-9);
}

TEST(NvmlReader, WithoutTheLibraryOrADriverThereIsNoReaderAndTheCallerFallsBack) {
  {
    ScopedEnv lib("AUTOTUNE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1");
    EXPECT_FALSE(NvmlReader::open());
  }
  ScopedEnv lib("AUTOTUNE_NVML_LIBRARY", AUTOTUNE_FAKE_NVML);
  ScopedEnv fail("AUTOTUNE_FAKE_NVML_FAIL", "init");
  EXPECT_FALSE(NvmlReader::open()) << "NVML that does not start is no reader";
}

TEST(NvmlReader, ADeviceWithoutPerProcessSamplesStillListsTheProcesses) {
  ScopedEnv lib("AUTOTUNE_NVML_LIBRARY", AUTOTUNE_FAKE_NVML);
  ScopedEnv fail("AUTOTUNE_FAKE_NVML_FAIL", "utilization");
  const auto nvml = NvmlReader::open();
  ASSERT_TRUE(nvml);
  EXPECT_FALSE(nvml->foreign_busy("0", 0)) << "not supported: no figure, rather than 0";
  const auto s = nvml->snapshot();
  ASSERT_TRUE(s);
  EXPECT_EQ(foreign_gpu_use(*s, "0").processes, 1);
}

TEST(NvmlReader, AMovedReaderStillReads) {
  ScopedEnv lib("AUTOTUNE_NVML_LIBRARY", AUTOTUNE_FAKE_NVML);
  auto a = NvmlReader::open();
  auto b = NvmlReader::open();
  ASSERT_TRUE(a && b);
  *a = std::move(*b);  // a's NVML shut down, b's kept
  const auto s = a->snapshot();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->others.size(), 1u);
}

}  // namespace
}  // namespace autotune
