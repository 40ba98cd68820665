// Every example config in configs/ runs end to end, from the repository root
// (`autotune --config configs/x.yaml`) and from its own folder (`--config
// x.yaml`), writing its outputs in the folder it was called from: every path
// a trial is handed (AUTOTUNE_RESULT, log folders) must be absolute, since a
// command trial runs in its own `cwd`. The configs run in a copy of the
// repository's layout, so that nothing is written into the source tree.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/python_util.hpp"

namespace {

namespace fs = std::filesystem;

struct Example {
  const char* file;
  bool needs_torch;
};

std::ostream& operator<<(std::ostream& os, const Example& e) { return os << e.file; }

class ExampleConfig : public ::testing::TestWithParam<Example> {
 protected:
  void SetUp() override {
    m_root = fs::temp_directory_path() / ("autotune_examples_" + std::to_string(::getpid()) + "_" +
                                          std::string(fs::path(GetParam().file).stem()));
    fs::remove_all(m_root);
    const fs::path src(AUTOTUNE_SOURCE_DIR);
    fs::create_directories(m_root / "bench/data");
    fs::copy(src / "configs", m_root / "configs", fs::copy_options::recursive);
    fs::copy(src / "bench/data/synthetic_balanced.csv", m_root / "bench/data/synthetic_balanced.csv");
    fs::create_directories(m_root / "bench/results/gpu-h100-sxm");
    fs::copy(src / "bench/results/gpu-h100-sxm/gpu_sweep.csv", m_root / "bench/results/gpu-h100-sxm/gpu_sweep.csv");
  }
  void TearDown() override { fs::remove_all(m_root); }

  // Runs the binary in `cwd`; the torch-capable Python's folder first on
  // PATH, so the configs' `python3` is one that imports torch.
  int run(const fs::path& cwd, const std::string& args, std::string& out) {
    std::string path_prefix;
    if (!autotune::testing::torch_python().empty()) {
      const fs::path py = autotune::testing::torch_python();
      if (py.has_parent_path()) path_prefix = "PATH=" + py.parent_path().string() + ":\"$PATH\" ";
    }
    const std::string cmd = "cd '" + cwd.string() + "' && " + path_prefix + AUTOTUNE_BINARY + " " + args + " 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    std::array<char, 4096> buf{};
    std::size_t n;
    out.clear();
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
    const int st = ::pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }

  // The run's outputs, where the config says, relative to `cwd`.
  void expect_outputs(const fs::path& cwd, const std::string& out) {
    const YAML::Node spec = YAML::LoadFile((m_root / "configs" / GetParam().file).string());
    const std::string tuned = spec["output"] && spec["output"]["tuned"] ? spec["output"]["tuned"].as<std::string>()
                                                                         : "tuned.yaml";
    ASSERT_TRUE(fs::exists(cwd / tuned)) << out;
    const YAML::Node y = YAML::LoadFile((cwd / tuned).string());
    EXPECT_TRUE(y["best"].IsMap()) << out;
    EXPECT_GE(y["search"]["ok"].as<int>(), 1) << out;
    // No trial failed for want of a path: every `error` is a real outcome.
    std::ifstream journal(cwd / (fs::path(tuned).replace_extension().string() + ".journal.jsonl"));
    if (spec["output"] && spec["output"]["journal"])
      journal = std::ifstream(cwd / spec["output"]["journal"].as<std::string>());
    ASSERT_TRUE(journal) << "no journal";
    std::string line;
    while (std::getline(journal, line)) {
      const auto j = nlohmann::json::parse(line);
      if (j.value("type", "") != "finish") continue;
      const std::string reason = j.value("reason", "");
      EXPECT_EQ(reason.find("No such file"), std::string::npos) << reason;
      EXPECT_EQ(reason.find("FileNotFoundError"), std::string::npos) << reason;
    }
  }

  fs::path m_root;
};

TEST_P(ExampleConfig, RunsFromTheRepositoryRootAndFromItsOwnFolder) {
  if (GetParam().needs_torch) AUTOTUNE_REQUIRE_TORCH();
  std::string out;
  const std::string name = GetParam().file;
  // Two pairs at most after the search: enough to run that step, and the
  // test keeps within its time on a busy machine.
  ASSERT_EQ(run(m_root, "--config configs/" + name + " --budget 2 --confirm 0 --remeasure 2", out), 0) << out;
  expect_outputs(m_root, out);
  ASSERT_EQ(run(m_root / "configs", "--config " + name + " --budget 2 --confirm 0 --remeasure 2", out), 0) << out;
  expect_outputs(m_root / "configs", out);
}

INSTANTIATE_TEST_SUITE_P(Configs, ExampleConfig,
                         ::testing::Values(Example{"default_cpu.yaml", false}, Example{"synthetic.yaml", false},
                                           Example{"synthetic_grid.yaml", false}, Example{"replay.yaml", false},
                                           Example{"replay_h100.yaml", false}, Example{"command_torch.yaml", true},
                                           Example{"command_images.yaml", true}, Example{"command_adopt.yaml", true},
                                           Example{"command_ranks.yaml", true}),
                         [](const ::testing::TestParamInfo<Example>& info) {
                           std::string s = fs::path(info.param.file).stem().string();
                           for (auto& c : s)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

TEST(ExampleConfigs, EveryConfigIsListed) {
  // A new example must be added above, so it is run too.
  int yaml = 0;
  for (const auto& e : fs::directory_iterator(fs::path(AUTOTUNE_SOURCE_DIR) / "configs"))
    if (e.path().extension() == ".yaml") ++yaml;
  EXPECT_EQ(yaml, 10) << "configs/*.yaml and the list in examples_test.cpp differ";
}

}  // namespace
