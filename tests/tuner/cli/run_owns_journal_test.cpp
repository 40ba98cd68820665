// A run owns what it writes: one run per journal at a time (a second run or a
// live --resume is refused, naming the holder), a bad last line cut and kept
// aside by --resume, and no output that would replace the spec, the journal
// or another output. All through the binary, as a user meets them.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/support/shell.hpp"
#include "tests/support/test_dir.hpp"

namespace {

namespace fs = std::filesystem;

using CliRun = autotune::testing::ShellRun;  // stdout and stderr together
CliRun run(const std::string& args) { return autotune::testing::run_autotune(args); }

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool wait_until(const std::function<bool()>& done) {
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done()) {
    if (std::chrono::steady_clock::now() > limit) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

class RunOwnsJournal : public ::testing::Test {
 protected:
  void SetUp() override { m_dir = autotune::testing::fresh_test_dir("run_owns_journal"); }
  void TearDown() override {
    if (m_pid > 0) {
      ::kill(m_pid, SIGKILL);
      ::waitpid(m_pid, nullptr, 0);
    }
    fs::remove_all(m_dir);
  }
  fs::path write(const std::string& name, const std::string& text) {
    const auto p = m_dir / name;
    std::ofstream(p) << text;
    return p;
  }
  std::string synthetic_spec(int budget, const std::string& output = "") {
    return "workload: {kind: synthetic, profile: balanced, noise: 0.02}\n"
           "space:\n  batch_size: {values: [16, 32, 64, 128, 256]}\n  num_workers: {range: [0, 8]}\n"
           "search: {strategy: random, budget: " +
           std::to_string(budget) + ", seed: 5}\n" +
           (output.empty() ? "output: {tuned: " + (m_dir / "tuned.yaml").string() + "}\n" : output);
  }
  // A command job whose every trial waits for the file `gate` before it reports.
  fs::path gated_spec() {
    write("job.py",
          "import json, os, sys, time\n"
          "open(os.environ['AUTOTUNE_TRIAL'] + '.started', 'w').close()\n"
          "while not os.path.exists('gate'):\n    time.sleep(0.02)\n"
          "print(json.dumps({'throughput': 100.0 + int(os.environ['AUTOTUNE_X'])}))\n");
    return write("space.yaml", "workload: {kind: command, timeout: 120s, cwd: " + m_dir.string() +
                                   ", command: \"python3 job.py\"}\n"
                                   "space:\n  x: {values: [1, 2, 3]}\nsearch: {strategy: grid, budget: 3}\n"
                                   "output: {tuned: " + (m_dir / "tuned.yaml").string() + "}\n");
  }
  pid_t spawn(const std::string& args) {
    const std::string cmd = "exec " + std::string(AUTOTUNE_BINARY) + " " + args + " >" + (m_dir / "first.log").string() +
                            " 2>&1";
    m_pid = ::fork();
    if (m_pid == 0) {
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
      ::_exit(127);
    }
    return m_pid;
  }
  int wait_first() {
    int st = 0;
    ::waitpid(m_pid, &st, 0);
    m_pid = -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  fs::path m_dir;
  pid_t m_pid = -1;
};

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

TEST_F(RunOwnsJournal, ASecondRunAndALiveResumeAreRefusedNamingTheHolder) {
  const fs::path spec = gated_spec();
  const pid_t first = spawn(spec.string() + " --quiet");
  // The first run is inside its first trial: its journal has a header and a start, no finish.
  ASSERT_TRUE(wait_until([&] { return fs::exists(m_dir / "1.started"); }));
  const std::string journal_before = read(m_dir / "tuned.journal.jsonl");

  for (const std::string& extra : {std::string(" --seed 2"), std::string(" --resume"), std::string(" --fresh")}) {
    const CliRun second = run(spec.string() + " --quiet" + extra);
    EXPECT_EQ(second.status, 2) << extra << ": " << second.out;
    EXPECT_NE(second.out.find("pid " + std::to_string(first)), std::string::npos) << extra << ": " << second.out;
    EXPECT_NE(second.out.find("nothing was started"), std::string::npos) << second.out;
    // Nothing of the first run's journal was touched (no truncation, no second header).
    EXPECT_EQ(read(m_dir / "tuned.journal.jsonl").substr(0, journal_before.size()), journal_before) << extra;
  }
  std::ofstream(m_dir / "gate").close();
  ASSERT_EQ(wait_first(), 0) << read(m_dir / "first.log");
  const std::string journal = read(m_dir / "tuned.journal.jsonl");
  EXPECT_EQ(count(journal, "\"type\":\"header\""), 1u) << journal;
  std::set<int> finished;
  std::istringstream lines(journal);
  for (std::string l; std::getline(lines, l);) {
    const auto rec = nlohmann::json::parse(l);
    if (rec["type"] == "finish") {
      EXPECT_TRUE(finished.insert(rec["trial"].get<int>()).second) << journal;
    }
  }
  EXPECT_EQ(finished, (std::set<int>{1, 2, 3}));
  // The lock went with the run: a resume now works.
  EXPECT_FALSE(fs::exists(m_dir / "tuned.journal.jsonl.lock"));
  const CliRun after = run(spec.string() + " --quiet --resume");
  EXPECT_EQ(after.status, 0) << after.out;
}

TEST_F(RunOwnsJournal, AStaleLockFileOfAKilledRunDoesNotBlock) {
  const fs::path spec = write("space.yaml", synthetic_spec(3));
  std::ofstream(m_dir / "tuned.journal.jsonl.lock") << "999999\n";  // left by a SIGKILLed run
  const CliRun r = run(spec.string() + " --quiet");
  EXPECT_EQ(r.status, 0) << r.out;
}

TEST_F(RunOwnsJournal, ABadLastLineIsCutAndKeptByResumeAndTheJournalStaysReadable) {
  const fs::path spec = write("space.yaml", synthetic_spec(4));
  const fs::path journal = m_dir / "tuned.journal.jsonl";
  ASSERT_EQ(run(spec.string() + " --quiet").status, 0);
  const std::string good = read(journal);
  // What a hand or a crash leaves: a line that is not a record, and a zero-filled block ending in a newline.
  for (const std::string& debris : {std::string("not json\n"), std::string(512, '\0') + "\n"}) {
    std::ofstream(journal, std::ios::app | std::ios::binary) << debris;
    const std::size_t finished_before = count(read(journal), "\"type\":\"finish\"");
    const CliRun first = run(spec.string() + " --quiet --resume --budget " + std::to_string(finished_before + 1));
    ASSERT_EQ(first.status, 0) << first.out;
    EXPECT_NE(read(journal.string() + ".cut").find(debris), std::string::npos);
    EXPECT_EQ(read(journal).find(debris), std::string::npos);
    EXPECT_EQ(read(journal).substr(0, good.size()), good);
    const CliRun second = run(spec.string() + " --quiet --resume --budget " + std::to_string(finished_before + 2));
    EXPECT_EQ(second.status, 0) << second.out;
    const CliRun report = run("report --text " + journal.string());
    EXPECT_EQ(report.status, 0) << report.out;
    const CliRun page = run("report " + journal.string() + " --out " + (m_dir / "r.html").string());
    EXPECT_EQ(page.status, 0) << page.out;
  }
}

TEST_F(RunOwnsJournal, OutputsThatWouldReplaceTheSpecOrTheJournalAreRefusedBeforeAnyTrial) {
  struct Case {
    std::string name, spec_text, args, expect;
  };
  const std::string same = (m_dir / "same.yaml").string();
  const fs::path spec_path = m_dir / "space.yaml";
  const std::vector<Case> cases = {
      {"tuned = journal", synthetic_spec(3, "output: {tuned: " + same + ", journal: " + same + "}\n"), "",
       "the same file as"},
      {"--out the spec", synthetic_spec(3), " --out " + spec_path.string(), "the same file as the spec"},
      {"--report the journal", synthetic_spec(3), " --report " + (m_dir / "tuned.journal.jsonl").string(),
       "the same file as the journal"},
      {"--out a folder", synthetic_spec(3), " --out " + m_dir.string(), "is a folder"},
      {"--out under a file", synthetic_spec(3), " --out " + (spec_path / "tuned.yaml").string(), "is not a folder"},
  };
  for (const Case& c : cases) {
    write("space.yaml", c.spec_text);
    const CliRun r = run(spec_path.string() + " --quiet" + c.args);
    EXPECT_EQ(r.status, 2) << c.name << ": " << r.out;
    EXPECT_NE(r.out.find(c.expect), std::string::npos) << c.name << ": " << r.out;
    EXPECT_EQ(read(spec_path), c.spec_text) << c.name;
    // Before any trial: no journal, no trial logs, nothing left.
    for (const auto& e : fs::directory_iterator(m_dir)) {
      EXPECT_TRUE(e.path() == spec_path) << c.name << ": left " << e.path();
    }
  }
}

TEST_F(RunOwnsJournal, ReportNeverReplacesAJournal) {
  const fs::path spec = write("space.yaml", synthetic_spec(3));
  ASSERT_EQ(run(spec.string() + " --quiet").status, 0);
  const fs::path journal = m_dir / "tuned.journal.jsonl";
  const std::string before = read(journal);
  const CliRun self = run("report " + journal.string() + " --out " + journal.string());
  EXPECT_EQ(self.status, 2) << self.out;
  // Another run's journal is not a report either.
  fs::copy_file(journal, m_dir / "other.jsonl");
  const CliRun other = run("report " + journal.string() + " --out " + (m_dir / "other.jsonl").string());
  EXPECT_EQ(other.status, 2) << other.out;
  EXPECT_NE(other.out.find("journal"), std::string::npos) << other.out;
  EXPECT_EQ(read(journal), before);
  EXPECT_EQ(read(m_dir / "other.jsonl"), before);
}

TEST_F(RunOwnsJournal, AJournalThatMeasuredNothingIsMovedAsideNotTruncated) {
  const fs::path spec = write("space.yaml", synthetic_spec(3));
  const fs::path journal = m_dir / "tuned.journal.jsonl";
  const std::string header_only = "{\"type\":\"header\",\"version\":1,\"space_hash\":\"x\"}\n"
                                  "{\"type\":\"start\",\"trial\":1,\"config\":{\"batch_size\":16},\"time\":0.1}\n";
  std::ofstream(journal) << header_only;
  const CliRun r = run(spec.string() + " --quiet");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(read(m_dir / "tuned.journal-1.jsonl"), header_only) << r.out;
}

// A failing job's last words go into the trial's reason; bytes that are not
// UTF-8 there are replaced in the journal, never a failure of the tool.
TEST_F(RunOwnsJournal, AJobsBytesThatAreNotUtf8AreKeptAsAReasonNotAFailureOfTheTool) {
  write("job.sh", "printf 'bad byte \\233 here\\n' >&2\nexit 3\n");
  const fs::path spec = write("space.yaml", "workload: {kind: command, timeout: 60s, command: \"sh " +
                                                (m_dir / "job.sh").string() +
                                                "\"}\nspace:\n  x: {values: [1, 2]}\nsearch: {strategy: grid, budget: 2}\n"
                                                "output: {tuned: " + (m_dir / "tuned.yaml").string() + "}\n");
  const CliRun r = run(spec.string());
  EXPECT_EQ(r.status, 1) << r.out;  // no configuration ran ok; the tool did not fail
  EXPECT_EQ(r.out.find("the tool failed"), std::string::npos) << r.out;
  EXPECT_EQ(count(read(m_dir / "tuned.journal.jsonl"), "\"status\":\"error\""), 2u);
  EXPECT_EQ(run("report --text " + (m_dir / "tuned.journal.jsonl").string()).status, 0);
}

}  // namespace

namespace {

// A run's identity includes its workload: after the command is changed (a
// typo fixed), --resume refuses, saying what changed and how to start afresh
// with the earlier run kept; a plain run says the same; --fresh sets the
// earlier run aside whole and starts.
TEST_F(RunOwnsJournal, AChangedCommandIsNotResumedIntoTheEarlierRunsJournal) {
  const auto spec_with = [&](const std::string& figure) {
    return write("space.yaml", "workload: {kind: command, cwd: " + m_dir.string() + ", command: \"echo '{\\\"throughput\\\": " +
                                   figure + "}'\"}\nspace:\n  x: {values: [1, 2, 3]}\n"
                                   "search: {strategy: grid, budget: 2, remeasure: 0, explain: false}\n"
                                   "output: {tuned: " + (m_dir / "tuned.yaml").string() + "}\n");
  };
  const fs::path spec = spec_with("10");
  ASSERT_EQ(run(spec.string()).status, 0);
  const std::string journal = read(m_dir / "tuned.journal.jsonl");
  spec_with("11");
  const CliRun resumed = run(spec.string() + " --resume");
  EXPECT_EQ(resumed.status, 2) << resumed.out;
  EXPECT_NE(resumed.out.find("measured with another workload (`command` was"), std::string::npos) << resumed.out;
  EXPECT_NE(resumed.out.find("--fresh"), std::string::npos) << resumed.out;
  EXPECT_EQ(read(m_dir / "tuned.journal.jsonl"), journal);
  const CliRun again = run(spec.string());
  EXPECT_EQ(again.status, 2) << again.out;
  EXPECT_NE(again.out.find("measured with another workload"), std::string::npos) << again.out;
  EXPECT_EQ(again.out.find("--resume"), std::string::npos) << again.out;  // resuming it would mix the two
  EXPECT_EQ(read(m_dir / "tuned.journal.jsonl"), journal);
  const CliRun fresh = run(spec.string() + " --fresh");
  EXPECT_EQ(fresh.status, 0) << fresh.out;
  EXPECT_EQ(read(m_dir / "tuned.journal-1.jsonl"), journal);
  EXPECT_NE(read(m_dir / "tuned.journal.jsonl").find("\"throughput\":11"), std::string::npos);
}

// A journal written before the workload was recorded still resumes.
TEST_F(RunOwnsJournal, AJournalWithoutTheWorkloadRecordStillResumes) {
  const fs::path spec = write("space.yaml", synthetic_spec(2));
  ASSERT_EQ(run(spec.string()).status, 0);
  std::string j = read(m_dir / "tuned.journal.jsonl");
  const auto nl = j.find('\n');
  nlohmann::json header = nlohmann::json::parse(j.substr(0, nl));
  ASSERT_TRUE(header.contains("workload_identity"));
  header.erase("workload_identity");
  std::ofstream(m_dir / "tuned.journal.jsonl", std::ios::binary) << header.dump() << j.substr(nl);
  write("space.yaml", synthetic_spec(3));
  const CliRun resumed = run(spec.string() + " --resume");
  EXPECT_EQ(resumed.status, 0) << resumed.out;
}

}  // namespace
