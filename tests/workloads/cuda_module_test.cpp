// The cuda workload's module (workloads/cuda_module.hpp): loaded with dlopen
// by the process that measures a cuda trial, never linked into the tuner.
// Each test runs `autotune trial` as a fresh process, since a process loads
// the module once.
#ifdef AUTOTUNE_HAVE_CUDA

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/proc_util.hpp"

namespace autotune {
namespace {

using testing::ScratchDir;

constexpr const char* kSpace =
    "space:\n"
    "  batch_size: {values: [64]}\n"
    "  num_workers: {values: [1]}\n"
    "  prefetch_factor: {values: [2]}\n"
    "  pin_memory: {values: [true]}\n"
    "  precision: {values: [fp32]}\n"
    "  grad_accum: {values: [1]}\n";
constexpr const char* kValues =
    R"('{"batch_size": 64, "num_workers": 1, "prefetch_factor": 2, "pin_memory": true, "precision": "fp32", "grad_accum": 1}')";

class CudaModule : public ::testing::Test {
 protected:
  // `autotune trial` on a one-point space of `workload`, with `env` before
  // it (`env -u` or `env NAME=value`); its JSON outcome.
  nlohmann::json trial(const std::string& workload, const std::string& env) {
    const auto spec = m_dir.write("space.yaml", "workload: " + workload + "\n" + kSpace, false);
    const std::string cmd =
        env + " " + AUTOTUNE_BINARY + " trial --config " + spec.string() + " --values " + kValues + " 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    std::string out;
    std::array<char, 4096> buf{};
    for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
    const int st = ::pclose(p);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << out;
    // The outcome is the last line.
    const auto end = out.find_last_not_of('\n');
    const auto begin = end == std::string::npos ? std::string::npos : out.rfind('\n', end);
    auto j = nlohmann::json::parse(out.substr(begin == std::string::npos ? 0 : begin + 1), nullptr, false);
    if (!j.is_object()) ADD_FAILURE() << "no JSON outcome on the last line of: " << out;
    return j.is_object() ? j : nlohmann::json::object();
  }
  static std::string cuda_workload() { return "{kind: cuda, width: 256, depth: 1, max_seconds: 2}"; }

  ScratchDir m_dir;
};

TEST_F(CudaModule, ACudaTrialLoadsTheModuleFromTheBuildTree) {
  const auto o = trial(cuda_workload(), "env -u AUTOTUNE_CUDA_MODULE");
  const std::string reason = o.value("reason", "");
  // Loaded: the module's own answer, a measurement or its no-device error.
  EXPECT_EQ(reason.find("could not be loaded"), std::string::npos) << reason;
  if (o.value("status", "") != "ok") {
    EXPECT_EQ(o.value("status", ""), "error");
    EXPECT_NE(reason.find("no CUDA device"), std::string::npos) << reason;
  }
}

TEST_F(CudaModule, AMissingModuleIsAnErrorNamingWhereItLooked) {
  const std::string path = (m_dir.path() / "nowhere" / "libautotune_cuda.so").string();
  const auto o = trial(cuda_workload(), "env AUTOTUNE_CUDA_MODULE=" + path);
  EXPECT_EQ(o.value("status", ""), "error");
  const std::string reason = o.value("reason", "");
  EXPECT_NE(reason.find("could not be loaded"), std::string::npos) << reason;
  EXPECT_NE(reason.find(path + ": no such file"), std::string::npos) << reason;
}

TEST_F(CudaModule, AFileThatIsNotALibraryIsAnErrorWithTheLoadersReason) {
  const auto bad = m_dir.write("libautotune_cuda.so", "not an ELF file\n", false);
  const auto o = trial(cuda_workload(), "env AUTOTUNE_CUDA_MODULE=" + bad.string());
  EXPECT_EQ(o.value("status", ""), "error");
  const std::string reason = o.value("reason", "");
  EXPECT_NE(reason.find(bad.string() + ": "), std::string::npos) << reason;
  // The named file is the only place tried: no silent fallback to another copy.
  EXPECT_EQ(reason.find("no CUDA device"), std::string::npos) << reason;
}

TEST_F(CudaModule, AModuleWhoseWorkloadThrowsIsAnErrorNotADeadTrial) {
  // trial() also checks that `autotune trial` exited 0 with an outcome.
  const auto o = trial(cuda_workload(), std::string("env AUTOTUNE_CUDA_MODULE=") + AUTOTUNE_FAKE_CUDA_MODULE);
  EXPECT_EQ(o.value("status", ""), "error");
  const std::string reason = o.value("reason", "");
  EXPECT_NE(reason.find("fake module: measure threw"), std::string::npos) << reason;
}

TEST_F(CudaModule, AModuleThatCreatesNoWorkloadIsAnError) {
  const auto o = trial(cuda_workload(),
                       std::string("env AUTOTUNE_FAKE_CUDA_NULL=1 AUTOTUNE_CUDA_MODULE=") + AUTOTUNE_FAKE_CUDA_MODULE);
  EXPECT_EQ(o.value("status", ""), "error");
  const std::string reason = o.value("reason", "");
  EXPECT_NE(reason.find("could not create"), std::string::npos) << reason;
}

TEST_F(CudaModule, PedanticFp32IsAnOptionTheModuleAccepts) {
  const auto o = trial("{kind: cuda, width: 256, depth: 1, max_seconds: 2, fp32_math: pedantic}",
                       "env -u AUTOTUNE_CUDA_MODULE");
  const std::string reason = o.value("reason", "");
  if (o.value("status", "") != "ok") {
    EXPECT_EQ(o.value("status", ""), "error");
    EXPECT_NE(reason.find("no CUDA device"), std::string::npos) << reason;
  }
}

TEST_F(CudaModule, AnUnknownFp32MathIsRefusedWhenTheSpecLoads) {
  const auto spec = m_dir.write("space.yaml", std::string("workload: {kind: cuda, fp32_math: fast}\n") + kSpace, false);
  const std::string cmd = std::string(AUTOTUNE_BINARY) + " validate --config " + spec.string() + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  const int st = ::pclose(p);
  EXPECT_FALSE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << out;
  EXPECT_NE(out.find("fp32_math"), std::string::npos) << out;
  EXPECT_NE(out.find("pedantic"), std::string::npos) << out;  // the accepted values are named
}

TEST_F(CudaModule, ACpuTrialDoesNotCarryCublas) {
  // Linked into the binary, cuBLAS and cudart made a cpu trial start at
  // 156 MiB resident (`autotune trial` built before the module, this
  // machine); without them the binary and its Debian libraries take 6 MiB.
  const auto o = trial("{kind: cpu, max_seconds: 1, warmup_seconds: 0.3}", "env -u AUTOTUNE_CUDA_MODULE");
  ASSERT_EQ(o.value("status", ""), "ok") << o.dump();
  ASSERT_TRUE(o["metrics"].contains("ram_baseline_bytes")) << o.dump();
  EXPECT_LT(o["metrics"]["ram_baseline_bytes"].get<double>(), 64.0 * 1024 * 1024) << o.dump();
}

}  // namespace
}  // namespace autotune

#endif  // AUTOTUNE_HAVE_CUDA
