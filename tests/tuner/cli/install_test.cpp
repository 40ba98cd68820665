// Built and installed without root: `cmake --install build --prefix DIR`
// gives a working autotune with its helper, found from the prefix alone.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/shell.hpp"

namespace {

namespace fs = std::filesystem;
using autotune::testing::run_shell;

class Install : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("autotune_install_" + std::to_string(::getpid()));
    fs::remove_all(m_dir);
    fs::create_directories(m_dir / "job");
  }
  void TearDown() override { fs::remove_all(m_dir); }
  fs::path m_dir;
};

TEST_F(Install, APrefixInstallRunsAUsersScriptWithTheHelper) {
  const fs::path prefix = m_dir / "prefix";
  const auto installed = run_shell("cmake --install " + std::string(AUTOTUNE_BUILD_DIR) + " --prefix " +
                                   prefix.string() + " 2>&1");
  ASSERT_EQ(installed.status, 0) << installed.out;
  const fs::path bin = prefix / "bin" / "autotune";
  ASSERT_TRUE(fs::exists(bin));
  const auto where = run_shell(bin.string() + " --python-path");
  ASSERT_EQ(where.status, 0) << where.out;
  EXPECT_EQ(fs::path(where.out.substr(0, where.out.find('\n'))),
            fs::weakly_canonical(prefix / "share" / "autotune" / "python"));

  // A user's script that imports the helper: tuned by the installed tool...
  std::ofstream(m_dir / "job" / "train.py") << "import autotune_trial, time\n"
                                                "p = autotune_trial.params(batch_size=8)\n"
                                                "def batches():\n"
                                                "    while True:\n"
                                                "        time.sleep(0.0002 * p.batch_size)\n"
                                                "        yield [0] * p.batch_size\n"
                                                "with autotune_trial.Meter(p, warmup_s=0.2, max_s=1.0) as m:\n"
                                                "    for _ in m.batches(batches()):\n"
                                                "        pass\n";
  std::ofstream(m_dir / "job" / "space.yaml") << "workload: {kind: command, command: \"python3 train.py\"}\n"
                                                 "space:\n  batch_size: {values: [8, 16]}\n"
                                                 "search: {strategy: grid, budget: 2}\n";
  const auto tuned = run_shell("cd " + (m_dir / "job").string() + " && " + bin.string() + " space.yaml 2>&1");
  ASSERT_EQ(tuned.status, 0) << tuned.out;
  EXPECT_NE(tuned.out.find("2 ok"), std::string::npos) << tuned.out;
  // ...and run by hand the way the README says, with the folder it prints.
  const auto by_hand = run_shell("cd " + (m_dir / "job").string() + " && env -u PYTHONPATH PYTHONPATH=\"$(" +
                                 bin.string() + " --python-path)\" python3 train.py 2>&1");
  ASSERT_EQ(by_hand.status, 0) << by_hand.out;
  EXPECT_NE(by_hand.out.find("\"throughput\""), std::string::npos) << by_hand.out;
}

}  // namespace
