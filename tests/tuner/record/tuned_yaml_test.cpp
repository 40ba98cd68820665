// tuned.yaml read back by other tools' YAML readers and by autotune_trial's
// own (tuned()): every string stays the string it was (no `yes` read as
// true, no `0x10` as 16), and a figure past int64 is not wrapped to a
// negative integer. The exports: each tool's keys for the answer.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

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

// The answer's files for `best` (one per answer) as autotune_trial's reader
// (read_best, what tuned() reads) gives them: a line of JSON per file,
// each value as [type name, value].
const char* kHelperReads = R"(import json, sys
sys.path.insert(0, sys.argv[1])
import autotune_trial
for path in sys.argv[2:]:
    with open(path) as f:
        best = autotune_trial.read_best(f.read(), path)
    print(json.dumps({k: [type(v).__name__, v] for k, v in best.items()}))
)";

// What the emitter writes under `best:`, read back by the helper's own
// reader (standard library only) as the same strings, integers and booleans:
// every value that YAML would type as something else when written plain.
TEST(TunedYaml, TheHelpersReaderReadsEveryAnswerAsWritten) {
  ScratchDir dir;
  dir.write("helper_reads.py", kHelperReads, false);
  const std::vector<std::string> values = {
      "yes", "No", "ON", "off", "y", "n", "True", "FALSE", "null", "Null", "~", "0x10", "0o17", "0b11", "017",
      "1_000", "1:20", "190:20:30", "1e3", "1E+3", "+1", "-2.5", "1.", ".5", ".inf", "-.Inf", ".NaN", "nan",
      "2024-01-01", "2001-12-14t21:59:43.10-05:00", "", " x", "x ", "#x", "x #y", "a: b", "a:", "[a]", "{a}",
      "*a", "&a", "!a", "@a", "%a", "`a", "'a", "\"a", ",a", "|a", ">a", "?", "-", "=", "<<", "a,b", "tab\tx",
      "back\\slash", "fp32", "bf16", "a/b.c-d+e", "caf\xc3\xa9"};
  std::string list;
  for (const auto& v : values) {
    std::string escaped;
    for (char c : v)
      escaped += c == '"' || c == '\\' ? std::string("\\") + c : c == '\t' ? std::string("\\t") : std::string(1, c);
    list += (list.empty() ? "\"" : ", \"") + escaped + "\"";
  }
  auto loaded = load_spec_text("workload: {kind: synthetic}\nspace:\n  v: {values: [" + list +
                                   "]}\n  on: [1, 2]\n  flag: [true, false]\n  \"null\": [-3, 5]\n",
                               "t.yaml", dir.path());
  ASSERT_TRUE(loaded.spec) << (loaded.errors.empty() ? "" : loaded.errors[0].format());
  const Spec& spec = *loaded.spec;
  std::string files;
  for (std::size_t i = 0; i < values.size(); ++i) {
    Study r;
    r.best = Config{static_cast<int>(i), 0, 1, 0};
    Outcome o;
    o.status = Status::ok;
    o.throughput = 100;
    r.best_outcome = o;
    files += " " + dir.write("tuned-" + std::to_string(i) + ".yaml", render_tuned_yaml(spec, r), false).string();
  }
  const auto helper = run_shell("'" + std::string(AUTOTUNE_BINARY) + "' --python-path");
  ASSERT_EQ(helper.status, 0) << helper.out;
  std::string python_dir = helper.out;
  while (!python_dir.empty() && std::isspace(static_cast<unsigned char>(python_dir.back()))) python_dir.pop_back();
  const auto read = run_shell("python3 " + (dir.path() / "helper_reads.py").string() + " '" + python_dir + "'" +
                              files + " 2>&1");
  ASSERT_EQ(read.status, 0) << read.out;
  std::istringstream lines(read.out);
  std::size_t i = 0;
  for (std::string line; std::getline(lines, line); ++i) {
    ASSERT_LT(i, values.size()) << line;
    const auto best = nlohmann::json::parse(line);
    const std::string file = dir.read("tuned-" + std::to_string(i) + ".yaml");
    EXPECT_EQ(best["v"], (nlohmann::json{"str", values[i]})) << file;
    EXPECT_EQ(best["on"], (nlohmann::json{"int", 1})) << file;
    EXPECT_EQ(best["flag"], (nlohmann::json{"bool", false})) << file;
    EXPECT_EQ(best["null"], (nlohmann::json{"int", -3})) << file;
    EXPECT_EQ(best.size(), 4u) << file;
  }
  EXPECT_EQ(i, values.size());
}

// The exports for an answer: every declared knob that shapes the step in
// each tool's own key (grad_accum included), nothing the trials did not run,
// and what a tool needs that no keyword can carry, as a note.
struct ExportCase {
  std::string space;     // the space.yaml's `space:` lines
  Config best, baseline;
};

YAML::Node exports_for(const ExportCase& c) {
  ScratchDir dir;
  auto loaded = load_spec_text("workload: {kind: synthetic}\nspace:\n" + c.space, "t.yaml", dir.path());
  if (!loaded.spec) throw std::runtime_error(loaded.errors.empty() ? "no spec" : loaded.errors[0].format());
  Study r;
  Outcome o;
  o.status = Status::ok;
  o.throughput = 200;
  r.best = c.best;
  r.best_outcome = o;
  o.throughput = 100;
  r.baseline = TrialRecord{1, c.baseline, o, false};
  return YAML::Load(render_tuned_yaml(*loaded.spec, r))["exports"];
}

std::string flow(const YAML::Node& n) {
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

constexpr const char* kAllKnobs =
    "  batch_size: [8, 16]\n  grad_accum: [1, 2]\n  num_workers: [0, 1]\n  prefetch_factor: [2, 4]\n"
    "  pin_memory: [false, true]\n  precision: [fp32, bf16, tf32, fp16]\n";

TEST(TunedYaml, ExportsCarryEveryKnobThatShapesTheStepAndNothingElse) {
  // Every knob moved, bf16 from fp32.
  auto ex = exports_for({kAllKnobs, {1, 1, 1, 1, 1, 1}, {0, 0, 0, 0, 0, 0}});
  EXPECT_EQ(flow(ex["torch_dataloader"]), "{batch_size: 16, num_workers: 1, prefetch_factor: 4, pin_memory: true}");
  EXPECT_EQ(flow(ex["torch_loop"]), "{optimizer_step_every: 2, autocast_dtype: bfloat16, allow_tf32: false}");
  EXPECT_EQ(flow(ex["hf_training_arguments"]),
            "{per_device_train_batch_size: 16, gradient_accumulation_steps: 2, dataloader_num_workers: 1, "
            "dataloader_prefetch_factor: 4, dataloader_pin_memory: true, bf16: true, fp16: false, tf32: false}");
  EXPECT_EQ(flow(ex["lightning_trainer"]), "{precision: bf16-mixed, accumulate_grad_batches: 2}");
  EXPECT_EQ(flow(ex["deepspeed"]),
            "{train_micro_batch_size_per_gpu: 16, gradient_accumulation_steps: 2, bf16: {enabled: true}, "
            "fp16: {enabled: false}}");
  EXPECT_FALSE(ex["notes"]) << flow(ex);

  // 0 workers, the baseline's precision: no prefetch_factor anywhere, no
  // precision keys; the Trainer's prefetch_factor at 0 workers is a note.
  ex = exports_for({kAllKnobs, {1, 1, 0, 1, 0, 0}, {0, 0, 1, 0, 0, 0}});
  EXPECT_EQ(flow(ex["torch_dataloader"]), "{batch_size: 16, num_workers: 0, pin_memory: false}");
  EXPECT_EQ(flow(ex["torch_loop"]), "{optimizer_step_every: 2}");
  EXPECT_EQ(flow(ex["hf_training_arguments"]),
            "{per_device_train_batch_size: 16, gradient_accumulation_steps: 2, dataloader_num_workers: 0, "
            "dataloader_pin_memory: false}");
  EXPECT_EQ(flow(ex["lightning_trainer"]), "{accumulate_grad_batches: 2}");
  EXPECT_EQ(flow(ex["deepspeed"]), "{train_micro_batch_size_per_gpu: 16, gradient_accumulation_steps: 2}");
  ASSERT_TRUE(ex["notes"]) << flow(ex);
  ASSERT_EQ(ex["notes"].size(), 1u);
  EXPECT_NE(ex["notes"][0].as<std::string>().find("args.dataloader_prefetch_factor = 2"), std::string::npos);

  // Workers without a prefetch_factor knob: torch's default, which the
  // Trainer must be given on torch before 2.0 (the trials' helper did).
  ex = exports_for({"  batch_size: [8, 16]\n  num_workers: [0, 2]\n", {0, 1}, {0, 0}});
  EXPECT_EQ(flow(ex["torch_dataloader"]), "{batch_size: 8, num_workers: 2}");
  EXPECT_EQ(flow(ex["hf_training_arguments"]),
            "{per_device_train_batch_size: 8, dataloader_num_workers: 2, dataloader_prefetch_factor: 2}");
  EXPECT_EQ(flow(ex["torch_loop"]), "{}");
  EXPECT_FALSE(ex["notes"]) << flow(ex);

  // tf32 and fp16, each from fp32.
  ex = exports_for({kAllKnobs, {0, 0, 1, 0, 0, 2}, {0, 0, 1, 0, 0, 0}});
  EXPECT_EQ(flow(ex["torch_loop"]), "{optimizer_step_every: 1, autocast_dtype: ~, allow_tf32: true}");
  EXPECT_TRUE(ex["hf_training_arguments"]["tf32"].as<bool>());
  EXPECT_EQ(ex["lightning_trainer"]["precision"].as<std::string>(), "32-true");
  ASSERT_TRUE(ex["notes"]) << flow(ex);
  EXPECT_NE(ex["notes"][0].as<std::string>().find("allow_tf32 = True"), std::string::npos);
  ex = exports_for({kAllKnobs, {0, 0, 1, 0, 0, 3}, {0, 0, 1, 0, 0, 0}});
  EXPECT_EQ(flow(ex["torch_loop"]), "{optimizer_step_every: 1, autocast_dtype: float16, allow_tf32: false}");
  EXPECT_EQ(flow(ex["deepspeed"]["fp16"]), "{enabled: true, loss_scale: 0}");
  EXPECT_FALSE(ex["deepspeed"]["bf16"]["enabled"].as<bool>());
  EXPECT_EQ(ex["lightning_trainer"]["precision"].as<std::string>(), "16-mixed");
}

}  // namespace
}  // namespace autotune
