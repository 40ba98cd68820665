// tuned.yaml read back by other tools' YAML readers: every string stays the
// string it was (no `yes` read as true, no `0x10` as 16), and a figure past
// int64 is not wrapped to a negative integer.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/proc_util.hpp"
#include "tests/support/python_util.hpp"
#include "tests/support/shell.hpp"
#include "tuner/record/emitter.hpp"

namespace autotune {
namespace {

using testing::ScratchDir;
using testing::run_shell;

// Each tuned.yaml given as PyYAML (YAML 1.1, the reader of most training
// scripts) reads it, a line of JSON per file, every leaf with its Python
// type's name: {"t": "str", "v": "yes"}.
const char* kReadBack = R"(import json, sys, yaml
def typed(x):
    if isinstance(x, dict):
        return {str(k) + ":" + type(k).__name__: typed(v) for k, v in x.items()}
    if isinstance(x, list):
        return [typed(v) for v in x]
    return {"t": type(x).__name__, "v": x if isinstance(x, (str, int, float, bool, type(None))) else str(x)}
for path in sys.argv[1:]:
    print(json.dumps(typed(yaml.safe_load(open(path)))))
)";

TEST(TunedYaml, StringsThatLookLikeOtherTypesReadBackAsStrings) {
  if (!testing::python_imports("python3", "yaml"))
    GTEST_SKIP() << "python3 cannot import yaml (PyYAML; Debian: apt-get install python3-yaml)";
  ScratchDir dir;
  // The baseline `yes`, the fastest `1e3`; each trial reports a figure past
  // int64 and a metric whose own name reads as null.
  dir.write("job.sh",
            "case \"$AUTOTUNE_V\" in 1e3) t=900;; *) t=100;; esac\n"
            "echo \"{\\\"throughput\\\": $t, \\\"cache_bytes\\\": 1e30, \\\"null\\\": 2}\"\n");
  dir.write("space.yaml",
            "workload: {kind: command, command: \"sh " + (dir.path() / "job.sh").string() + "\"}\n"
            "space:\n"
            "  v: {values: [\"yes\", \"0x10\", \"on\", \"null\", \"1e3\", \"2024-01-01\", \" pad\", \"\", \"a: b\"]}\n"
            "search: {strategy: grid, budget: 9, initial: [{v: \"yes\"}]}\n"
            "output: {tuned: " + (dir.path() / "tuned.yaml").string() + "}\n",
            false);
  const auto run = run_shell("'" + std::string(AUTOTUNE_BINARY) + "' " + (dir.path() / "space.yaml").string() +
                             " --quiet 2>&1");
  ASSERT_EQ(run.status, 0) << run.out;
  dir.write("read_back.py", kReadBack, false);
  const auto read = run_shell("python3 " + (dir.path() / "read_back.py").string() + " " +
                              (dir.path() / "tuned.yaml").string() + " 2>&1");
  ASSERT_EQ(read.status, 0) << read.out;
  const auto y = nlohmann::json::parse(read.out);
  const nlohmann::json yes = {{"t", "str"}, {"v", "yes"}};
  EXPECT_EQ(y["best:str"]["v:str"], (nlohmann::json{{"t", "str"}, {"v", "1e3"}})) << dir.read("tuned.yaml");
  EXPECT_EQ(y["baseline:str"]["config:str"]["v:str"], yes) << dir.read("tuned.yaml");
  // Every knob row of the answer: the baseline's value and the answer's.
  for (const auto& row : y["knobs:str"]) {
    EXPECT_EQ(row["baseline:str"], yes) << dir.read("tuned.yaml");
    EXPECT_EQ(row["best:str"], (nlohmann::json{{"t", "str"}, {"v", "1e3"}})) << dir.read("tuned.yaml");
  }
  const auto& metrics = y["metrics:str"];
  EXPECT_EQ(metrics["null:str"]["v"], 2) << dir.read("tuned.yaml");
  EXPECT_EQ(metrics["cache_bytes:str"]["t"], "float") << dir.read("tuned.yaml");
  EXPECT_DOUBLE_EQ(metrics["cache_bytes:str"]["v"].get<double>(), 1e30) << dir.read("tuned.yaml");
  EXPECT_EQ(metrics["throughput:str"]["t"], "float") << dir.read("tuned.yaml");
}

// Each value as the answer in turn, rendered by the emitter and read back;
// also as a parameter's name and a metric's.
TEST(TunedYaml, EveryAmbiguousValueIsTheSameStringWhenItIsTheAnswer) {
  if (!testing::python_imports("python3", "yaml"))
    GTEST_SKIP() << "python3 cannot import yaml (PyYAML; Debian: apt-get install python3-yaml)";
  ScratchDir dir;
  dir.write("read_back.py", kReadBack, false);
  const std::vector<std::string> values = {
      "yes", "No", "ON", "off", "y", "n", "True", "FALSE", "null", "Null", "~", "0x10", "0o17", "0b11", "017",
      "1_000", "1:20", "190:20:30", "1e3", "1E+3", "+1", "-2.5", "1.", ".5", ".inf", "-.Inf", ".NaN", "nan",
      "2024-01-01", "2001-12-14t21:59:43.10-05:00", "", " x", "x ", "#x", "x #y", "a: b", "a:", "[a]", "{a}",
      "*a", "&a", "!a", "@a", "%a", "`a", "'a", "\"a", ",a", "|a", ">a", "?", "-", "=", "<<", "a,b", "tab\tx"};
  std::string list;
  for (const auto& v : values) {
    std::string escaped;
    for (char c : v)
      escaped += c == '"' || c == '\\' ? std::string("\\") + c : c == '\t' ? std::string("\\t") : std::string(1, c);
    list += (list.empty() ? "\"" : ", \"") + escaped + "\"";
  }
  auto loaded = load_spec_text("workload: {kind: synthetic}\nspace:\n  v: {values: [" + list + "]}\n  on: [1, 2]\n",
                               "t.yaml", dir.path());
  ASSERT_TRUE(loaded.spec) << (loaded.errors.empty() ? "" : loaded.errors[0].format());
  const Spec& spec = *loaded.spec;
  std::string files;
  for (std::size_t i = 0; i < values.size(); ++i) {
    Study r;
    r.best = Config{static_cast<int>(i), 0};
    Outcome o;
    o.status = Status::ok;
    o.throughput = 1e7;  // a whole number past 7 digits: 1e+07 without a point is a string to PyYAML
    o.metrics["yes"] = 1;
    o.metrics["huge_bytes"] = -1e19;
    r.best_outcome = o;
    const auto file = dir.write("tuned-" + std::to_string(i) + ".yaml", render_tuned_yaml(spec, r), false);
    files += " " + file.string();
  }
  const auto read = run_shell("python3 " + (dir.path() / "read_back.py").string() + files + " 2>&1");
  ASSERT_EQ(read.status, 0) << read.out;
  std::istringstream lines(read.out);
  std::size_t i = 0;
  for (std::string line; std::getline(lines, line); ++i) {
    ASSERT_LT(i, values.size());
    const auto y = nlohmann::json::parse(line);
    const auto& best = y["best:str"];
    EXPECT_EQ(best["v:str"], (nlohmann::json{{"t", "str"}, {"v", values[i]}})) << dir.read("tuned-" + std::to_string(i) + ".yaml");
    EXPECT_EQ(best["on:str"]["v"], 1) << line;
    EXPECT_EQ(y["metrics:str"]["yes:str"]["v"], 1) << line;
    EXPECT_EQ(y["metrics:str"]["throughput:str"], (nlohmann::json{{"t", "float"}, {"v", 1e7}})) << line;
    EXPECT_EQ(y["metrics:str"]["huge_bytes:str"], (nlohmann::json{{"t", "float"}, {"v", -1e19}})) << line;
  }
  EXPECT_EQ(i, values.size());
}

}  // namespace
}  // namespace autotune
