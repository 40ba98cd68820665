// A command trial's process, through the autotune binary as a user runs it:
// what the job does to its result file never costs the tuner its memory or
// its liveness, a tuner killed with SIGKILL leaves no trial behind, and a
// warm worker's leak or change of folder stays out of the next trial.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/journal_records.hpp"
#include "tests/support/proc_util.hpp"
#include "tests/support/test_dir.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// VmHWM of a live process in bytes; 0 when gone.
double peak_rss_bytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) * 1024.0;
  return 0;
}

class TrialProcess : public ::testing::Test {
 protected:
  void SetUp() override { m_dir = autotune::testing::fresh_test_dir("trial_process"); }
  void TearDown() override {
    if (m_tuner > 0) {
      ::kill(m_tuner, SIGKILL);
      ::waitpid(m_tuner, nullptr, 0);
    }
    fs::remove_all(m_dir);
  }
  void write(const std::string& name, const std::string& text) { std::ofstream(m_dir / name) << text; }
  // A spec of one command workload over x in `values`, graded in order.
  void spec(const std::string& command, const std::string& values = "1", const std::string& workload_extra = "",
            const std::string& more = "") {
    write("space.yaml", "workload:\n  kind: command\n  command: \"" + command + "\"\n  timeout: 20s\n" +
                            workload_extra + "space:\n  x: {values: [" + values + "]}\n" + more +
                            "search: {strategy: grid, explain: false, remeasure: 0}\n");
  }
  // Starts autotune on space.yaml in the test's folder, its output to
  // out.txt; returns once it runs autotune (until exec, the child is a copy
  // of this test, with this test's memory).
  void start() {
    int exec_pipe[2];
    ASSERT_EQ(::pipe2(exec_pipe, O_CLOEXEC), 0);
    m_tuner = ::fork();
    if (m_tuner == 0) {
      if (::chdir(m_dir.c_str()) != 0) ::_exit(127);
      const int out = ::open("out.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(out, 1);
      ::dup2(out, 2);
      ::execl(AUTOTUNE_BINARY, AUTOTUNE_BINARY, "space.yaml", "--fresh", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(exec_pipe[1]);
    char c;
    while (::read(exec_pipe[0], &c, 1) < 0 && errno == EINTR) {
    }
    ::close(exec_pipe[0]);
  }
  // Waits for the tuner to exit, for at most `limit_s`, watching its own
  // peak memory: false (and the tuner killed) past the limit or `max_rss`.
  bool finishes(double limit_s, double max_rss = 1e18) {
    const auto t0 = Clock::now();
    for (;;) {
      int st = 0;
      const double rss = peak_rss_bytes(m_tuner);  // read before reaping: a zombie has none
      m_peak_rss = std::max(m_peak_rss, rss);
      if (::waitpid(m_tuner, &st, WNOHANG) == m_tuner) {
        m_tuner = -1;
        m_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        return true;
      }
      if (rss > max_rss || std::chrono::duration<double>(Clock::now() - t0).count() > limit_s) {
        ::kill(m_tuner, SIGKILL);
        ::waitpid(m_tuner, nullptr, 0);
        m_tuner = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  std::string output() const {
    std::ifstream in(m_dir / "out.txt");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::vector<nlohmann::json> finished() const {
    return autotune::testing::finish_records(m_dir / "tuned.journal.jsonl");
  }
  // Polls until `done` holds, for at most a minute.
  static bool wait_until(const std::function<bool()>& done) {
    const auto limit = Clock::now() + std::chrono::seconds(60);
    while (!done()) {
      if (Clock::now() > limit) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }

  fs::path m_dir;
  pid_t m_tuner = -1;
  int m_status = -1;
  double m_peak_rss = 0;
};

// $AUTOTUNE_RESULT made a link to /dev/zero (endless) or a FIFO (a read
// blocks until someone writes): the trial is an error within its timeout,
// and the tuner's memory stays small.
TEST_F(TrialProcess, AResultFileThatIsADeviceOrAFifoIsAnErrorAndCostsNothing) {
  struct Case {
    std::string command, says;
  };
  for (const Case& c : {Case{"ln -sf /dev/zero $AUTOTUNE_RESULT; echo '{\\\"throughput\\\": 1}'", "symbolic link"},
                        Case{"mkfifo $AUTOTUNE_RESULT; echo '{\\\"throughput\\\": 1}'", "a FIFO"}}) {
    spec(c.command);
    m_peak_rss = 0;
    start();
    ASSERT_TRUE(finishes(20.0, 100.0 * (1 << 20)))
        << c.command << ": still running or over 100 MB (" << m_peak_rss / (1 << 20) << " MiB)\n" << output();
    EXPECT_LT(m_peak_rss, 100.0 * (1 << 20)) << c.command;
    const auto f = finished();
    ASSERT_EQ(f.size(), 1u) << output();
    EXPECT_EQ(f[0]["status"], "error") << f[0];
    EXPECT_NE(f[0]["reason"].get<std::string>().find(c.says), std::string::npos) << f[0];
  }
}

// The guide's own shape, `cd data && python3 job.py`: the shell stands
// between the tuner and python3. SIGKILL the tuner: python3 goes too, cold
// or in a warm worker.
TEST_F(TrialProcess, AJobBehindAShellDiesWithATunerKilledBySigkill) {
  fs::create_directories(m_dir / "data");
  std::ofstream(m_dir / "data" / "job.py") << "import os, time, autotune_trial\n"
                                               "for p in autotune_trial.trials(x=0):\n"
                                               "    with open('pid.tmp', 'w') as f:\n"
                                               "        f.write(str(os.getpid()))\n"
                                               "    os.rename('pid.tmp', 'pid')\n"
                                               "    time.sleep(1000)\n";
  for (const std::string warm : {"false", "true"}) {
    fs::remove(m_dir / "data" / "pid");
    spec("cd data && python3 job.py", "1", "  warm: " + warm + "\n");
    start();
    ASSERT_TRUE(wait_until([&] { return fs::exists(m_dir / "data" / "pid"); })) << output();
    const long job = autotune::testing::read_pid(m_dir / "data" / "pid");
    ASSERT_GT(job, 0);
    ASSERT_TRUE(autotune::testing::process_alive(job));
    ::kill(m_tuner, SIGKILL);
    ::waitpid(m_tuner, nullptr, 0);
    m_tuner = -1;
    const bool gone = autotune::testing::gone_within(job, 2.0);
    if (!gone) ::kill(static_cast<pid_t>(job), SIGKILL);
    EXPECT_TRUE(gone) << "warm: " << warm << ": python3 (pid " << job << ") outlived the tuner";
  }
}

// A warm worker that leaks 200 MB a trial, under a 700 MiB limit: each trial
// alone needs about 212 MiB, and that is what each one reads; the worker is
// replaced once it has grown, and the journal says so.
TEST_F(TrialProcess, ALeakingWarmWorkerIsReplacedAndEachTrialReadsItsOwnMemory) {
  write("job.py",
        "import os, autotune_trial\n"
        "kept = []\n"
        "for p in autotune_trial.trials(x=0):\n"
        "    block = bytearray(200 << 20)\n"
        "    block[::4096] = b'x' * len(block[::4096])\n"
        "    kept.append(block)\n"
        "    with open(os.environ['AUTOTUNE_RESULT'], 'w') as f:\n"
        "        f.write('{\"throughput\": 100}')\n");
  spec("python3 job.py", "1, 2, 3, 4, 5", "  warm: true\n", "constraints: {ram: 700MiB}\n");
  start();
  ASSERT_TRUE(finishes(120.0)) << output();
  ASSERT_EQ(m_status, 0) << output();
  const auto f = finished();
  ASSERT_EQ(f.size(), 5u) << output();
  int replaced = 0;
  for (const auto& t : f) {
    EXPECT_EQ(t["status"], "ok") << t;
    const double ram = t["metrics"]["ram_bytes"].get<double>();
    EXPECT_GT(ram, 190.0 * (1 << 20)) << t;
    EXPECT_LT(ram, 330.0 * (1 << 20)) << t;
    replaced += t["metrics"].value("worker_replaced", 0);
  }
  EXPECT_GE(replaced, 1) << "the worker grew by 200 MB a trial";
  EXPECT_FALSE(f[1]["metrics"].contains("worker_replaced")) << "one trial's growth is not yet a leak: " << f[1];
}

// A trial that changes folder does not move the next one.
TEST_F(TrialProcess, AWarmTrialStartsInTheFolderTheWorkerStartedIn) {
  fs::create_directories(m_dir / "sub");
  write("job.py",
        "import os, autotune_trial\n"
        "for p in autotune_trial.trials(x=0):\n"
        "    with open(os.path.join(os.environ['OUT'], 'cwd-' + os.environ['AUTOTUNE_TRIAL']), 'w') as f:\n"
        "        f.write(os.getcwd())\n"
        "    os.chdir('sub')\n"
        "    with open(os.environ['AUTOTUNE_RESULT'], 'w') as f:\n"
        "        f.write('{\"throughput\": 100}')\n");
  spec("python3 job.py", "1, 2, 3", "  warm: true\n  env: {OUT: '" + m_dir.string() + "'}\n");
  start();
  ASSERT_TRUE(finishes(120.0)) << output();
  const auto f = finished();
  ASSERT_EQ(f.size(), 3u) << output();
  int started = 0;
  for (const auto& t : f) {
    EXPECT_EQ(t["status"], "ok") << t;
    started += t["metrics"].value("worker_started", 0);
  }
  EXPECT_EQ(started, 1) << "one worker for the three trials";
  for (int trial = 1; trial <= 3; ++trial) {
    std::ifstream in(m_dir / ("cwd-" + std::to_string(trial)));
    std::string cwd;
    std::getline(in, cwd);
    EXPECT_EQ(fs::path(cwd), fs::canonical(m_dir)) << "trial " << trial;
  }
}

}  // namespace
