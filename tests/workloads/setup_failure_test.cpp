// Reading a set-up failure from what a failed job left: its exit status and
// the last lines of its standard error, as shells and Python print them.
#include "workloads/setup_failure.hpp"

#include <gtest/gtest.h>

namespace autotune {
namespace {

std::optional<SetupFault> read(int exit_code, const std::string& stderr_tail, bool has_result = false) {
  return read_setup_failure(exit_code, stderr_tail, has_result);
}

TEST(SetupFailureReading, ShellsReportACommandNotFound) {
  const SetupFault want{SetupFailure::command_not_found, "pytohn3"};
  EXPECT_EQ(read(127, "sh: 1: exec: pytohn3: not found\n"), want);                 // dash, exec'd
  EXPECT_EQ(read(127, "sh: 1: pytohn3: not found\n"), want);                       // dash
  EXPECT_EQ(read(127, "bash: line 1: pytohn3: command not found\n"), want);        // bash
  EXPECT_EQ(read(127, "zsh:1: command not found: pytohn3\n"), want);               // zsh
  EXPECT_EQ(read(127, "/usr/bin/env: 'pytohn3': No such file or directory\n"), want);  // a #! line
  EXPECT_EQ(read(127, "bash: ./run.sh: No such file or directory\n"),
            (SetupFault{SetupFailure::command_not_found, "./run.sh"}));
  EXPECT_EQ(read(127, ""), (SetupFault{SetupFailure::command_not_found, ""}));  // says nothing: still 127
}

TEST(SetupFailureReading, AutotunesOwnStartOfTheJob) {
  EXPECT_EQ(read(127, "autotune: chdir /data/run: No such file or directory\n"),
            (SetupFault{SetupFailure::file_not_found, "/data/run"}));
  EXPECT_EQ(read(127, "autotune: exec /bin/zsh: No such file or directory\n"),
            (SetupFault{SetupFailure::command_not_found, "/bin/zsh"}));
}

TEST(SetupFailureReading, PythonMissingAModuleOrAFile) {
  const std::string traceback = "Traceback (most recent call last):\n  File \"train.py\", line 1, in <module>\n";
  EXPECT_EQ(read(1, traceback + "ModuleNotFoundError: No module named 'torch'\n"),
            (SetupFault{SetupFailure::module_not_found, "torch"}));
  EXPECT_EQ(read(1, traceback + "ModuleNotFoundError: No module named 'torch.nn'\n"
                                "/usr/lib/python3.11/multiprocessing/resource_tracker.py:254: UserWarning: leaked\n"),
            (SetupFault{SetupFailure::module_not_found, "torch.nn"}));
  EXPECT_EQ(read(2, "python3: can't open file '/home/u/trian.py': [Errno 2] No such file or directory\n"),
            (SetupFault{SetupFailure::file_not_found, "/home/u/trian.py"}));
  EXPECT_EQ(read(1, traceback + "FileNotFoundError: [Errno 2] No such file or directory: 'data/train.csv'\n"),
            (SetupFault{SetupFailure::file_not_found, "data/train.csv"}));
  EXPECT_EQ(read(1, "cat: data.txt: No such file or directory\n"),
            (SetupFault{SetupFailure::file_not_found, "data.txt"}));
}

TEST(SetupFailureReading, AnotherFailureIsNone) {
  EXPECT_FALSE(read(1, "RuntimeError: shapes do not match\n"));
  // A warning printed before the failure is not the failure.
  EXPECT_FALSE(read(1, "warning: No module named 'apex', using native amp\nTraceback (most recent call last):\n"
                       "ValueError: bad batch size\n"));
  EXPECT_FALSE(read(-1, "sh: 1: pytohn3: not found\n"));  // a signal ended it
}

TEST(SetupFailureReading, ExitZeroWithoutAResult) {
  EXPECT_EQ(read(0, "", false), (SetupFault{SetupFailure::no_result, ""}));
  EXPECT_FALSE(read(0, "", true));  // a result without a throughput is a failure of its own
}

TEST(SetupFailureReading, KeptOnTheOutcomeAndReadBack) {
  Outcome o = Outcome::failure(Status::error, "exited with status 1");
  EXPECT_FALSE(setup_failure_of(o));
  const SetupFault f{SetupFailure::module_not_found, "torch"};
  mark_setup_failure(o, f);
  EXPECT_EQ(setup_failure_of(o), f);
  EXPECT_EQ(o.labels.at("setup_failure"), "module_not_found");
  EXPECT_NE(setup_cause(f).find("no module 'torch'"), std::string::npos);
  EXPECT_NE(setup_fix(f).find("python3 -m pip install torch"), std::string::npos);
  EXPECT_NE(setup_fix({SetupFailure::module_not_found, "autotune_trial"}).find("--python-path"), std::string::npos);
}

}  // namespace
}  // namespace autotune
