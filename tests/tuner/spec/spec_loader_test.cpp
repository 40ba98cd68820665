// The spec loader: every broken file gives its specific, located error (line,
// column, key path, expected/found), all errors are reported together, and
// valid files give the space, defaults and resolved paths.
#include "tuner/spec/spec.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "search/strategy.hpp"
#include "tuner/spec/devices.hpp"

namespace autotune {
namespace {

namespace fs = std::filesystem;

SpecLoadResult load(const std::string& text, const fs::path& base = "/base") {
  return load_spec_text(text, "t.yaml", base);
}

std::string all_errors(const SpecLoadResult& r) {
  std::string out;
  for (const auto& e : r.errors) out += e.format() + "\n";
  return out;
}

const SpecError* error_at_path(const SpecLoadResult& r, const std::string& path) {
  for (const auto& e : r.errors)
    if (e.key_path == path) return &e;
  return nullptr;
}

// The smallest valid spec; broken cases below are variations on it.
const std::string kHead =
    "workload: {kind: synthetic}\n"  // line 1
    "space:\n"                       // line 2
    "  batch_size: [16, 32, 64]\n";  // line 3

struct Broken {
  const char* name;
  std::string text;
  int line;
  int column;
  std::string path;
  std::string word;  // must appear in the formatted message (expected, found or hint)
};

std::ostream& operator<<(std::ostream& os, const Broken& b) { return os << b.name; }

class BrokenFile : public ::testing::TestWithParam<Broken> {};

TEST_P(BrokenFile, GivesTheLocatedError) {
  const Broken& b = GetParam();
  auto r = load(b.text);
  EXPECT_FALSE(r.spec.has_value());
  ASSERT_FALSE(r.errors.empty()) << b.text;
  const SpecError* e = error_at_path(r, b.path);
  ASSERT_NE(e, nullptr) << "no error at " << b.path << "; got:\n" << all_errors(r);
  EXPECT_EQ(e->file, "t.yaml");
  EXPECT_EQ(e->line, b.line) << e->format();
  EXPECT_EQ(e->column, b.column) << e->format();
  EXPECT_NE(e->format().find(b.word), std::string::npos) << e->format();
  EXPECT_FALSE(e->expected.empty() && e->found.empty()) << e->format();
}

const Broken kBroken[] = {
    // Structure.
    {"EmptyFile", "", 1, 1, "", "an empty file"},
    // The well-known knobs' own domains.
    {"NegativeBatchSize", "workload: {kind: synthetic}\nspace:\n  batch_size: {values: [-8, 16]}\n", 3, 25,
     "space.batch_size.values[0]", "an integer >= 1"},
    {"ZeroGradAccum", "workload: {kind: synthetic}\nspace:\n  grad_accum: [1, 0]\n", 3, 19, "space.grad_accum[1]",
     "'0'"},
    {"ZeroPrefetch", "workload: {kind: synthetic}\nspace:\n  prefetch_factor: {range: [0, 4]}\n", 3, 29,
     "space.prefetch_factor.range[0]", "an integer >= 1"},
    {"NegativeWorkers", "workload: {kind: synthetic}\nspace:\n  num_workers: {range: [-1, 4]}\n", 3, 25,
     "space.num_workers.range[0]", "an integer >= 0"},
    {"UnknownPrecision", "workload: {kind: synthetic}\nspace:\n  precision: [fp32, bf61]\n", 3, 21,
     "space.precision[1]", "did you mean 'bf16'?"},
    {"ZeroThreads", "workload: {kind: synthetic}\nspace:\n  threads: [0, 2]\n", 3, 13, "space.threads[0]",
     "an integer >= 1"},
    {"PinMemoryNotBoolean", "workload: {kind: synthetic}\nspace:\n  pin_memory: [0, 1]\n", 3, 16,
     "space.pin_memory[0]", "true or false"},
    {"OnlyComments", "# nothing here\n", 1, 1, "", "an empty file"},
    {"TopLevelList", "- workload\n- space\n", 1, 1, "", "a list"},
    {"TopLevelScalar", "hello\n", 1, 1, "", "'hello'"},
    {"SyntaxError", "workload: {kind: synthetic\nspace:\n  batch_size: [16]\n", 2, 6, "", "syntax error"},
    {"MissingSpace", "workload: {kind: synthetic}\n", 1, 1, "space", "'space' section"},
    {"MissingWorkload", "space:\n  batch_size: [16]\n", 1, 1, "workload", "'workload' section"},
    {"EmptySpace", "workload: {kind: synthetic}\nspace: {}\n", 2, 8, "space", "an empty map"},
    {"SpaceIsAList", "workload: {kind: synthetic}\nspace: [16, 32]\n", 2, 8, "space", "a list"},
    {"UnknownTopKey", kHead + "serach: {strategy: random}\n", 4, 1, "serach", "did you mean 'search'?"},
    {"DuplicateTopKey", kHead + "space:\n  num_workers: [0, 1]\n", 4, 1, "space", "first at line 2"},
    {"DuplicateParameter", kHead + "  batch_size: [8]\n", 4, 3, "space.batch_size", "duplicate key"},
    // A knob is AUTOTUNE_<NAME> in a trial's environment: not one the tool
    // sets (it would be overwritten: `stop_below` would become the racing
    // bar), nor another knob's.
    {"KnobNamedTrial", kHead + "  trial: [1, 2]\n", 4, 3, "space.trial", "AUTOTUNE_TRIAL"},
    {"KnobNamedResult", kHead + "  result: [a, b]\n", 4, 3, "space.result", "AUTOTUNE_RESULT"},
    {"KnobNamedStopBelow", kHead + "  stop_below: [1, 2]\n", 4, 3, "space.stop_below", "AUTOTUNE_STOP_BELOW"},
    {"KnobNamedTrialStart", kHead + "  Trial_Start: [1, 2]\n", 4, 3, "space.Trial_Start", "AUTOTUNE_TRIAL_START"},
    {"KnobNamedWarmDir", kHead + "  warm_dir: [1, 2]\n", 4, 3, "space.warm_dir", "AUTOTUNE_WARM_DIR"},
    {"KnobsOneEnvName", kHead + "  num_workers: [1, 2]\n  NUM_WORKERS: [3]\n", 5, 3, "space.NUM_WORKERS",
     "both AUTOTUNE_NUM_WORKERS"},
    // A knob of one's own named a letter or two from a built-in knob is a
    // typo (tuned, recommended and never read) unless it says custom: true.
    {"KnobNameNearBuiltIn", kHead + "  num_wokers: [0, 2]\n", 4, 3, "space.num_wokers",
     "found 'num_wokers', which is 1 edit from the built-in knob 'num_workers' (did you mean 'num_workers'?"},
    {"KnobNameTwoEditsFromBuiltIn", kHead + "  grad_acc: {range: [1, 4]}\n", 4, 3, "space.grad_acc",
     "did you mean 'grad_accum'?"},
    {"KnobNameCaseOfBuiltIn", kHead + "  Pin_Memory: [false, true]\n", 4, 3, "space.Pin_Memory",
     "differs only in case from the built-in knob 'pin_memory'"},
    {"KnobNameNearBuiltInCustomFalse", kHead + "  batch_szie: {values: [1, 2], custom: false}\n", 4, 3,
     "space.batch_szie", "custom: true"},
    {"CustomOnBuiltInKnob", kHead + "  num_workers: {values: [0, 2], custom: true}\n", 4, 41,
     "space.num_workers.custom", "'num_workers', a built-in knob"},
    {"CustomNotABoolean", kHead + "  num_wokers: {values: [0, 2], custom: yes}\n", 4, 40, "space.num_wokers.custom",
     "only true and false"},
    {"DuplicateKeyInFlowMap", "workload: {kind: synthetic, kind: replay}\nspace:\n  batch_size: [16]\n", 1, 29,
     "workload.kind", "first at line 1"},
    // Domains.
    {"UnknownDomainKey", "workload: {kind: synthetic}\nspace:\n  batch_size: {valeus: [16, 32]}\n", 3, 16,
     "space.batch_size.valeus", "did you mean 'values'?"},
    {"NoDomainForm", "workload: {kind: synthetic}\nspace:\n  batch_size: {step: 2}\n", 3, 15, "space.batch_size",
     "one of values, range, log, pow2"},
    {"TwoDomainForms", "workload: {kind: synthetic}\nspace:\n  batch_size: {values: [1], range: [0, 4]}\n", 3, 29,
     "space.batch_size.range", "exactly one of"},
    {"ScalarDomain", "workload: {kind: synthetic}\nspace:\n  batch_size: 32\n", 3, 15, "space.batch_size", "'32'"},
    {"StringWhereIntInRange", "workload: {kind: synthetic}\nspace:\n  num_workers: {range: [0, many]}\n", 3, 28,
     "space.num_workers.range[1]", "expected an integer, found 'many'"},
    {"FractionInValues", "workload: {kind: synthetic}\nspace:\n  batch_size: {values: [16, 16.5]}\n", 3, 29,
     "space.batch_size.values[1]", "'16.5'"},
    {"MapWhereListExpected", "workload: {kind: synthetic}\nspace:\n  batch_size: {values: {a: 1}}\n", 3, 24,
     "space.batch_size.values", "a map"},
    {"MixedValues", "workload: {kind: synthetic}\nspace:\n  batch_size: {values: [16, oops]}\n", 3, 29,
     "space.batch_size.values[1]", "an integer like the first value"},
    {"DuplicateValue", "workload: {kind: synthetic}\nspace:\n  batch_size: [16, 32, 16]\n", 3, 24,
     "space.batch_size[2]", "distinct values"},
    {"EmptyValues", "workload: {kind: synthetic}\nspace:\n  batch_size: {values: []}\n", 3, 24,
     "space.batch_size.values", "an empty list"},
    {"NestedListValue", "workload: {kind: synthetic}\nspace:\n  batch_size: [16, [32]]\n", 3, 20,
     "space.batch_size[1]", "a list"},
    {"YesNoAreNotBooleans", "workload: {kind: synthetic}\nspace:\n  pin_memory: [yes, no]\n", 3, 16,
     "space.pin_memory[0]", "only true and false are booleans"},
    {"EmptyParameter", "workload: {kind: synthetic}\nspace:\n  batch_size:\n  nw: [1]\n", 3, 3, "space.batch_size",
     "found nothing"},
    {"EmptyWorkload", "workload:\nspace:\n  batch_size: [16]\n", 1, 1, "workload", "found nothing"},
    {"EmptyRange", "workload: {kind: synthetic}\nspace:\n  num_workers: {range: [8, 0]}\n", 3, 24,
     "space.num_workers.range", "lo <= hi"},
    {"RangeOfThree", "workload: {kind: synthetic}\nspace:\n  num_workers: {range: [0, 4, 8]}\n", 3, 24,
     "space.num_workers.range", "a list of 3 items"},
    {"ZeroStep", "workload: {kind: synthetic}\nspace:\n  num_workers: {range: [0, 8], step: 0}\n", 3, 38,
     "space.num_workers.step", "a step > 0"},
    {"StepWithValues", "workload: {kind: synthetic}\nspace:\n  num_workers: {values: [0, 8], step: 2}\n", 3, 33,
     "space.num_workers.step", "only with 'range'"},
    {"HugeRange", "workload: {kind: synthetic}\nspace:\n  n: {range: [0, 100000000]}\n", 3, 14, "space.n.range",
     "at most"},
    {"LogFromZero", "workload: {kind: synthetic}\nspace:\n  hidden: {log: [0, 4096]}\n", 3, 18,
     "space.hidden.log[0]", "a log range needs positive values"},
    {"Pow2Empty", "workload: {kind: synthetic}\nspace:\n  bs: {pow2: [5, 7]}\n", 3, 14, "space.bs.pow2",
     "an empty domain"},
    {"IntegerOverflow", "workload: {kind: synthetic}\nspace:\n  bs: [1, 99999999999999999999]\n", 3, 11,
     "space.bs[1]", "fits in 64 bits"},
    {"BadParameterName", "workload: {kind: synthetic}\nspace:\n  batch-size: [16]\n", 3, 3, "space.batch-size",
     "letters, digits and _"},
    // Constraints.
    {"BadSize", kHead + "constraints: {vram: lots}\n", 4, 21, "constraints.vram", "'lots'"},
    {"NegativeSize", kHead + "constraints: {ram: -1GiB}\n", 4, 20, "constraints.ram", "'-1GiB'"},
    {"UnknownConstraint", kHead + "constraints: {vrm: 8GiB}\n", 4, 15, "constraints.vrm", "did you mean 'vram'?"},
    {"RulesNotAList", kHead + "constraints: {rules: \"batch_size <= 64\"}\n", 4, 22, "constraints.rules",
     "a list of rules"},
    {"RuleUnknownName", kHead + "constraints:\n  rules: [\"batch_size * accum <= 64\"]\n", 5, 11,
     "constraints.rules[0]", "accum"},
    {"ImpossibleRules", kHead + "constraints:\n  rules: [\"batch_size > 64\"]\n", 5, 10, "constraints.rules",
     "no configuration satisfies the rules"},
    // Objective and search.
    {"UnknownObjective", kHead + "objective: latency\n", 4, 12, "objective", "one of throughput"},
    {"UnknownStrategy", kHead + "search: {strategy: randon}\n", 4, 20, "search.strategy",
     "did you mean 'random'?"},
    {"UnknownSearchKey", kHead + "search: {budjet: 10}\n", 4, 10, "search.budjet", "did you mean 'budget'?"},
    {"BudgetNotANumber", kHead + "search: {budget: lots}\n", 4, 18, "search.budget", "expected an integer"},
    {"BudgetZero", kHead + "search: {budget: {trials: 0}}\n", 4, 18, "search.budget", "trials > 0 or time > 0"},
    {"BudgetBadTime", kHead + "search: {budget: {time: 3 fortnights}}\n", 4, 25, "search.budget.time",
     "'3 fortnights'"},
    {"BudgetAList", kHead + "search: {budget: [10]}\n", 4, 18, "search.budget", "a list"},
    {"NegativeSeed", kHead + "search: {seed: -1}\n", 4, 16, "search.seed", "a non-negative integer"},
    {"ParallelZero", kHead + "search: {parallel: 0}\n", 4, 20, "search.parallel", "'0'"},
    {"ConfirmNegative", kHead + "search: {confirm: -1}\n", 4, 19, "search.confirm", "'-1'"},
    {"InitialNotAList", kHead + "search: {initial: {batch_size: 16}}\n", 4, 19, "search.initial", "a map"},
    {"InitialValueNotInDomain", kHead + "search:\n  initial:\n    - {batch_size: 48}\n", 6, 20,
     "search.initial[0].batch_size", "one of 16, 32, 64"},
    {"InitialUnknownParameter", kHead + "search:\n  initial:\n    - {batch_size: 16, batch_sise: 16}\n", 6, 24,
     "search.initial[0].batch_sise", "did you mean 'batch_size'?"},
    {"InitialMissingParameter",
     kHead + "  pin_memory: [false, true]\nsearch:\n  initial:\n    - {batch_size: 16}\n", 7, 7,
     "search.initial[0]", "no value for pin_memory"},
    {"InitialYesIsNotABoolean",
     kHead + "  pin_memory: [false, true]\nsearch:\n  initial:\n    - {batch_size: 16, pin_memory: yes}\n", 7, 36,
     "search.initial[0].pin_memory", "only true and false"},
    {"InitialViolatesRule",
     kHead + "constraints: {rules: [\"batch_size >= 32\"]}\nsearch:\n  initial:\n    - {batch_size: 16}\n", 7, 7,
     "search.initial[0]", "violates 'batch_size >= 32'"},
    // Workload.
    {"WorkloadWithoutKind", "workload: {noise: 0.1}\nspace:\n  batch_size: [16]\n", 1, 11, "workload.kind",
     "no 'kind' key"},
    {"UnknownWorkloadKind", "workload: {kind: synthtic}\nspace:\n  batch_size: [16]\n", 1, 18, "workload.kind",
     "did you mean 'synthetic'?"},
    {"UnknownWorkloadOption", "workload: {kind: synthetic, nosie: 0.1}\nspace:\n  batch_size: [16]\n", 1, 29,
     "workload.nosie", "did you mean 'noise'?"},
    {"WorkloadOptionOutOfBounds", "workload: {kind: synthetic, noise: 2}\nspace:\n  batch_size: [16]\n", 1, 36,
     "workload.noise", "a value from 0 to 1"},
    {"WorkloadChoice", "workload: {kind: synthetic, profile: balancd}\nspace:\n  batch_size: [16]\n", 1, 38,
     "workload.profile", "did you mean 'balanced'?"},
    {"WorkloadIntegerOption", "workload: {kind: synthetic, seed: \"16.5\"}\nspace:\n  batch_size: [16]\n", 1, 35,
     "workload.seed", "expected an integer, found '16.5'"},
    {"BadTimeout", "workload: {kind: synthetic, timeout: 10 parsecs}\nspace:\n  batch_size: [16]\n", 1, 38,
     "workload.timeout", "a duration"},
    {"RepeatsZero", "workload: {kind: synthetic, repeats: 0}\nspace:\n  batch_size: [16]\n", 1, 38,
     "workload.repeats", "'0'"},
    {"BadIsolation", "workload: {kind: synthetic, isolation: thread}\nspace:\n  batch_size: [16]\n", 1, 40,
     "workload.isolation", "one of process, inline"},
    {"ReplayWithoutFile", "workload: {kind: replay}\nspace:\n  batch_size: [16]\n", 1, 11, "workload.file",
     "required by the replay workload"},
    {"WorkloadIsAString", "workload: synthetic\nspace:\n  batch_size: [16]\n", 1, 11, "workload", "'synthetic'"},
    // Executor and output.
    {"ExecutorPinYes", kHead + "executor: {pin_cpus: on}\n", 4, 22, "executor.pin_cpus", "only true and false"},
    {"ExecutorKind", kHead + "executor: {kind: lsf}\n", 4, 18, "executor.kind", "one of local, slurm"},
    {"ExecutorKindNearMiss", kHead + "executor: {kind: slrum}\n", 4, 18, "executor.kind", "did you mean 'slurm'?"},
    // Each kind takes its own declared options, and only those.
    {"ExecutorOptionOfAnotherKind", kHead + "executor: {kind: slurm, pin_cpus: false}\n", 4, 25,
     "executor.pin_cpus", "'pin_cpus' is an option of the local executor"},
    {"ExecutorUnknownOption", kHead + "executor: {kind: slurm, cpus_per_trail: 4}\n", 4, 25,
     "executor.cpus_per_trail", "did you mean 'cpus_per_trial'?"},
    {"ExecutorIntegerOption", kHead + "executor: {kind: slurm, cpus_per_trial: four}\n", 4, 41,
     "executor.cpus_per_trial", "expected an integer, found 'four'"},
    {"ExecutorMemNotASize", kHead + "executor: {kind: slurm, mem_per_trial: lots}\n", 4, 40,
     "executor.mem_per_trial", "a size"},
    {"ExecutorGpusNotAList", kHead + "executor: {gpus: 0-3}\n", 4, 18, "executor.gpus", "auto or a list"},
    // Strategies take their declared options, under their names.
    {"StrategyOptionWithoutItsStrategy", kHead + "search: {options: {polish_after: 30}}\n", 4, 20, "search.options.polish_after",
     "'polish_after' is an option of the bo strategy"},
    {"StrategyTakesNoOptions", kHead + "search: {options: {grid: {order: 1}}}\n", 4, 20, "search.options.grid",
     "the grid strategy, which takes none"},
    {"StrategyOptionNearMiss", kHead + "search: {options: {bo: {polish_aftr: 30}}}\n", 4, 25, "search.options.bo.polish_aftr",
     "did you mean 'polish_after'?"},
    {"StrategyOptionOutOfRange", kHead + "search: {options: {anneal: {adjacent_share: 2}}}\n", 4, 45, "search.options.anneal.adjacent_share",
     "adjacent_share"},
    {"StrategyOptionsNotAMap", kHead + "search: {options: [bo]}\n", 4, 19, "search.options",
     "a map from a strategy's name to its options"},
    {"OutputAList", kHead + "output: [tuned.yaml]\n", 4, 9, "output", "a list"},
    {"UnknownOutputKey", kHead + "output: {tunned: x.yaml}\n", 4, 10, "output.tunned", "did you mean 'tuned'?"},
};

INSTANTIATE_TEST_SUITE_P(SpecLoader, BrokenFile, ::testing::ValuesIn(kBroken),
                         [](const ::testing::TestParamInfo<Broken>& info) { return std::string(info.param.name); });

TEST(SpecLoader, ReportsEveryErrorTogetherSortedByPosition) {
  auto r = load(
      "workload: {kind: synthetic, nosie: 0.1}\n"      // 1: unknown option
      "space:\n"                                       // 2
      "  batch_size: {values: [16, 16.5]}\n"           // 3: fraction
      "  num_workers: {range: [8, 0]}\n"               // 4: empty range
      "objective: latency\n"                           // 5: unknown objective
      "search: {strategy: randon, parallel: 0}\n"      // 6: strategy, parallel
      "output: {tuned: a.yaml, tuned: b.yaml}\n");     // 7: duplicate key
  ASSERT_EQ(r.errors.size(), 7u) << all_errors(r);
  EXPECT_FALSE(r.spec);
  const std::vector<std::string> paths = {"workload.nosie", "space.batch_size.values[1]", "space.num_workers.range",
                                          "objective", "search.strategy", "search.parallel", "output.tuned"};
  for (std::size_t i = 0; i < paths.size(); ++i) EXPECT_EQ(r.errors[i].key_path, paths[i]) << all_errors(r);
  for (std::size_t i = 1; i < r.errors.size(); ++i)
    EXPECT_LE(std::make_pair(r.errors[i - 1].line, r.errors[i - 1].column),
              std::make_pair(r.errors[i].line, r.errors[i].column));
}

TEST(SpecLoader, FormatsErrorsWithFileLineColumnPathExpectedFoundAndHint) {
  auto r = load(kHead + "  prefetch_factor: [2, 4]\nsearch:\n  initial:\n    - {batch_size: 16, prefetch_facter: 2}\n");
  const SpecError* e = error_at_path(r, "search.initial[0].prefetch_facter");
  ASSERT_NE(e, nullptr) << all_errors(r);
  EXPECT_EQ(e->format(),
            "t.yaml:7:24: search.initial[0].prefetch_facter: expected one of the keys batch_size, prefetch_factor, "
            "found unknown key 'prefetch_facter' (did you mean 'prefetch_factor'?)");
  // The missing parameter is reported too.
  EXPECT_NE(error_at_path(r, "search.initial[0]"), nullptr) << all_errors(r);
}

TEST(SpecLoader, CustomTrueKeepsAKnobNamedNearABuiltInOne) {
  auto r = load(kHead + "  num_wokers: {values: [0, 2], custom: true}\n  decode_threads: [1, 2]\n");
  ASSERT_TRUE(r.spec) << all_errors(r);
  EXPECT_TRUE(r.spec->space.index_of("num_wokers"));
  EXPECT_TRUE(r.spec->space.index_of("decode_threads"));  // far from every built-in name: no custom: needed
}

TEST(SpecLoader, InitialNeverSuggestsTheTypo) {
  // The typo in space, the right name in initial: the one error is the
  // typo's, never "did you mean 'num_wokers'" at the right name.
  const std::string initial = "search:\n  initial:\n    - {batch_size: 16, num_workers: 0}\n";
  auto typo = load(kHead + "  num_wokers: [0, 2]\n" + initial);
  ASSERT_EQ(typo.errors.size(), 1u) << all_errors(typo);
  EXPECT_EQ(typo.errors[0].key_path, "space.num_wokers") << all_errors(typo);
  EXPECT_NE(typo.errors[0].hint.find("did you mean 'num_workers'?"), std::string::npos) << all_errors(typo);
  // Declared custom, the space stands: initial's built-in name is said to
  // be one the space does not tune, not the custom knob misspelt.
  auto custom = load(kHead + "  num_wokers: {values: [0, 2], custom: true}\n" + initial);
  const SpecError* e = error_at_path(custom, "search.initial[0].num_workers");
  ASSERT_NE(e, nullptr) << all_errors(custom);
  EXPECT_EQ(e->hint,
            "'num_workers' is a built-in knob that space does not tune: add it to space, or leave it out here");
  EXPECT_EQ(all_errors(custom).find("did you mean 'num_wokers'"), std::string::npos) << all_errors(custom);
}

TEST(SpecLoader, UnknownKindListsTheKnownKinds) {
  auto r = load("workload: {kind: tpu}\nspace:\n  batch_size: [16]\n");
  const SpecError* e = error_at_path(r, "workload.kind");
  ASSERT_NE(e, nullptr) << all_errors(r);
  for (const auto& k : workload_kinds()) EXPECT_NE(e->expected.find(k), std::string::npos) << e->format();
  EXPECT_NE(e->found.find("'tpu'"), std::string::npos);
}

TEST(SpecLoader, UnknownStrategyListsTheStrategies) {
  auto r = load(kHead + "search: {strategy: simplex}\n");
  const SpecError* e = error_at_path(r, "search.strategy");
  ASSERT_NE(e, nullptr) << all_errors(r);
  for (const auto& s : strategy_names()) EXPECT_NE(e->expected.find(s), std::string::npos) << e->format();
}

TEST(SpecLoader, StrategyOptionsAreReadUnderTheirStrategysName) {
  auto r = load(kHead + "search: {strategy: anneal, options: {anneal: {t_start: 0.2, screened_moves: 4}, bo: {}}}\n");
  ASSERT_TRUE(r.spec.has_value()) << all_errors(r);
  const Options a = r.spec->search.options_of("anneal");
  EXPECT_DOUBLE_EQ(a.get_number("t_start"), 0.2);
  EXPECT_EQ(a.get_int("screened_moves"), 4);
  EXPECT_FALSE(a.has("t_end")) << "defaults are make_strategy's to fill";
  EXPECT_TRUE(r.spec->search.options_of("bo").values().empty());
  EXPECT_TRUE(r.spec->search.options_of("random").values().empty());
}

TEST(SpecLoader, DuplicateKeyNamesTheFirstOccurrence) {
  auto r = load("workload: {kind: synthetic}\nspace:\n  batch_size: [16]\n  pin_memory: [true]\n"
                "  batch_size: [32]\n");
  ASSERT_EQ(r.errors.size(), 1u) << all_errors(r);
  EXPECT_EQ(r.errors[0].line, 5);
  EXPECT_EQ(r.errors[0].column, 3);
  EXPECT_NE(r.errors[0].format().find("first at line 3"), std::string::npos) << r.errors[0].format();
}

TEST(SpecLoader, BrokenReplayTableIsASpecErrorAtTheWorkload) {
  const fs::path dir = fs::temp_directory_path() / ("autotune_spec_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "bad.csv") << "batch_size,throughput\n16,fast\n";
  auto r = load("space:\n  batch_size: [16]\nworkload:\n  kind: replay\n  file: bad.csv\n", dir);
  fs::remove_all(dir);
  ASSERT_EQ(r.errors.size(), 1u) << all_errors(r);
  EXPECT_EQ(r.errors[0].key_path, "workload");
  EXPECT_EQ(r.errors[0].line, 4);
  EXPECT_EQ(r.errors[0].column, 3);
  EXPECT_NE(r.errors[0].found.find("bad.csv"), std::string::npos) << r.errors[0].format();
}

TEST(SpecLoader, MissingFileIsAnError) {
  auto r = load_spec_file("/nonexistent/space.yaml");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_FALSE(r.spec);
  EXPECT_EQ(r.errors[0].file, "/nonexistent/space.yaml");
  EXPECT_NE(r.errors[0].format().find("no such file"), std::string::npos) << r.errors[0].format();
}

// ---------------------------------------------------------------- valid files

Spec load_ok(const std::string& text, const fs::path& base = "/base") {
  auto r = load(text, base);
  EXPECT_TRUE(r.errors.empty()) << all_errors(r);
  if (!r.spec) return Spec{};
  return *r.spec;
}

std::vector<std::int64_t> ints(const Parameter& p) {
  std::vector<std::int64_t> out;
  for (const auto& v : p.values) out.push_back(std::get<std::int64_t>(v));
  return out;
}

TEST(SpecLoader, ParsesEveryDomainFormInFileOrder) {
  Spec s = load_ok(
      "workload: {kind: synthetic}\n"
      "space:\n"
      "  batch_size: {values: [16, 32, 64, 128, 256, 512]}\n"
      "  num_workers: {range: [0, 4]}\n"
      "  workers2: {range: [0, 16], step: 5}\n"
      "  prefetch_factor: {values: [1, 2, 4]}\n"
      "  pin_memory: {values: [false, true]}\n"
      "  precision: {values: [fp32, tf32, fp16, bf16]}\n"
      "  hidden: {log: [64, 4096]}\n"
      "  depth: {log: [1, 4], points: 8}\n"
      "  bs2: {pow2: [10, 1024]}\n"
      "  short: [3, 1, 2]\n"
      "  quoted: [\"16\", \"32\"]\n"
      "  negative: [-4, 0, 4]\n");
  const auto& ps = s.space.params();
  ASSERT_EQ(ps.size(), 12u);
  const std::vector<std::string> names = {"batch_size", "num_workers", "workers2", "prefetch_factor",
                                          "pin_memory", "precision",   "hidden",   "depth",
                                          "bs2",        "short",       "quoted",   "negative"};
  for (std::size_t i = 0; i < names.size(); ++i) EXPECT_EQ(ps[i].name, names[i]);

  EXPECT_EQ(ints(ps[0]), (std::vector<std::int64_t>{16, 32, 64, 128, 256, 512}));
  EXPECT_EQ(ps[0].scale, Scale::log);  // all > 0, max/min >= 8
  EXPECT_EQ(ints(ps[1]), (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(ps[1].scale, Scale::linear);
  EXPECT_EQ(ints(ps[2]), (std::vector<std::int64_t>{0, 5, 10, 15}));
  EXPECT_EQ(ps[3].scale, Scale::linear);  // 1..4: max/min < 8
  EXPECT_EQ(ps[4].values, (std::vector<Value>{Value{false}, Value{true}}));
  EXPECT_EQ(ps[4].scale, Scale::linear);
  EXPECT_EQ(ps[5].values.size(), 4u);
  EXPECT_EQ(std::get<std::string>(ps[5].values[2]), "fp16");
  EXPECT_EQ(ps[5].scale, Scale::categorical);
  // 64 * 2^(6k/7), k = 0..7, rounded: a geometric ladder of 8 points.
  EXPECT_EQ(ints(ps[6]), (std::vector<std::int64_t>{64, 116, 210, 380, 689, 1248, 2261, 4096}));
  EXPECT_EQ(ps[6].scale, Scale::log);
  // Small ranges give fewer distinct integers than points.
  EXPECT_EQ(ints(ps[7]), (std::vector<std::int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(ints(ps[8]), (std::vector<std::int64_t>{16, 32, 64, 128, 256, 512, 1024}));
  EXPECT_EQ(ps[8].scale, Scale::log);
  EXPECT_EQ(ints(ps[9]), (std::vector<std::int64_t>{3, 1, 2}));  // the file's order is kept
  EXPECT_EQ(std::get<std::string>(ps[10].values[0]), "16");     // quoted numbers are names
  EXPECT_EQ(ps[10].scale, Scale::categorical);
  EXPECT_EQ(ps[11].scale, Scale::linear);
}

TEST(SpecLoader, QuotedValuesAreNames) {
  Spec s = load_ok("workload: {kind: synthetic}\nspace:\n  answer: [\"yes\", \"no\"]\n  ratio: [\"0.5\", \"1.5\"]\n");
  ASSERT_EQ(s.space.dims(), 2u);
  EXPECT_EQ(s.space.param(0).values, (std::vector<Value>{Value{std::string("yes")}, Value{std::string("no")}}));
  EXPECT_EQ(s.space.param(0).scale, Scale::categorical);
  EXPECT_EQ(std::get<std::string>(s.space.param(1).values[1]), "1.5");
}

TEST(SpecLoader, FillsDefaults) {
  Spec s = load_ok(kHead);
  EXPECT_EQ(s.file, "t.yaml");
  EXPECT_EQ(s.workload.kind, "synthetic");
  EXPECT_EQ(s.workload.requested_kind, "synthetic");
  EXPECT_DOUBLE_EQ(s.workload.timeout_s, 600);
  EXPECT_EQ(s.workload.repeats, 1);
  EXPECT_EQ(s.workload.isolation, Isolation::process);
  EXPECT_EQ(s.workload.options.get_string("profile"), "balanced");
  EXPECT_DOUBLE_EQ(s.workload.options.get_number("noise"), 0.03);
  EXPECT_EQ(s.workload.options.get_int("seed"), 0);
  EXPECT_EQ(s.objective, "throughput");
  EXPECT_EQ(s.search.strategy, find_strategy("bo") ? "bo" : "random");
  EXPECT_EQ(s.search.budget_trials, 30);
  EXPECT_DOUBLE_EQ(s.search.budget_seconds, 0);
  EXPECT_EQ(s.search.seed, 0u);
  EXPECT_TRUE(s.search.initial.empty());
  EXPECT_EQ(s.search.confirm, 0);
  EXPECT_EQ(s.search.parallel, 1);
  EXPECT_DOUBLE_EQ(s.limits.vram_bytes, 0);
  EXPECT_DOUBLE_EQ(s.limits.ram_bytes, 0);
  EXPECT_TRUE(s.space.rules().empty());
  EXPECT_EQ(s.executor.kind, "local");
  EXPECT_TRUE(s.executor.options.get_bool("pin_cpus"));  // the kind's defaults, without an executor section
  EXPECT_EQ(s.output.tuned, "tuned.yaml");
  EXPECT_EQ(s.output.journal, "tuned.journal.jsonl");
}

TEST(SpecLoader, ReadsEverySection) {
  Spec s = load_ok(
      "workload: {kind: synthetic, profile: loader_bound, noise: 0.1, seed: 4, timeout: 2m, repeats: 3,"
      " isolation: inline}\n"
      "space:\n"
      "  batch_size: [16, 32, 64]\n"
      "  grad_accum: [1, 2, 4]\n"
      "  precision: [fp32, bf16]\n"
      "constraints:\n"
      "  vram: 70GiB\n"
      "  ram: 1024\n"
      "  rules: [\"batch_size * grad_accum >= 64\", \"precision != bf16 || batch_size >= 32\"]\n"
      "objective: throughput\n"
      "search:\n"
      "  strategy: grid\n"
      "  budget: {trials: 40, time: 30m}\n"
      "  seed: 18446744073709551615\n"
      "  initial:\n"
      "    - {batch_size: 32, grad_accum: 2, precision: fp32}\n"
      "    - {precision: bf16, batch_size: 64, grad_accum: 1}\n"
      "  confirm: 3\n"
      "  parallel: 2\n"
      "executor: {kind: slurm, gpus: [0, \"1,2\"], gpus_per_trial: 1, cpus_per_trial: 4,"
      " mem_per_trial: 16G, srun_args: [--exclusive]}\n"
      "output: {tuned: runs/best.yaml}\n");
  EXPECT_EQ(s.workload.options.get_string("profile"), "loader_bound");
  EXPECT_DOUBLE_EQ(s.workload.options.get_number("noise"), 0.1);
  EXPECT_EQ(s.workload.options.get_int("seed"), 4);
  EXPECT_FALSE(s.workload.options.has("timeout"));  // generic keys are not options
  EXPECT_DOUBLE_EQ(s.workload.timeout_s, 120);
  EXPECT_EQ(s.workload.repeats, 3);
  EXPECT_EQ(s.workload.isolation, Isolation::inline_);
  EXPECT_DOUBLE_EQ(s.limits.vram_bytes, 70.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(s.limits.ram_bytes, 1024);
  EXPECT_EQ(s.space.rules().rules().size(), 2u);
  EXPECT_EQ(s.search.strategy, "grid");
  EXPECT_EQ(s.search.budget_trials, 40);
  EXPECT_DOUBLE_EQ(s.search.budget_seconds, 1800);
  EXPECT_EQ(s.search.seed, 18446744073709551615ull);
  ASSERT_EQ(s.search.initial.size(), 2u);
  EXPECT_EQ(s.search.initial[0], (Config{1, 1, 0}));
  EXPECT_EQ(s.search.initial[1], (Config{2, 0, 1}));
  EXPECT_EQ(s.search.confirm, 3);
  EXPECT_EQ(s.search.parallel, 2);
  EXPECT_EQ(s.executor.kind, "slurm");
  EXPECT_EQ(s.executor.gpus, (std::vector<std::string>{"0", "1,2"}));
  EXPECT_EQ(s.executor.options.get_int("gpus_per_trial"), 1);
  EXPECT_EQ(s.executor.options.get_int("cpus_per_trial"), 4);
  EXPECT_EQ(s.executor.options.get_string("mem_per_trial"), "16G");  // checked as a size, kept as written for srun
  EXPECT_EQ(s.executor.options.get_list("srun_args"), (std::vector<std::string>{"--exclusive"}));
  EXPECT_FALSE(s.executor.options.has("pin_cpus"));  // the local kind's, not slurm's
  // Output paths stay relative to the current directory, not the spec's folder.
  EXPECT_EQ(s.output.tuned, "runs/best.yaml");
  EXPECT_EQ(s.output.journal, "runs/best.journal.jsonl");
}

TEST(SpecLoader, AnExecutorKeyOfNoKindNamesTheKindsOptions) {
  auto r = load(kHead + "executor: {kind: slurm, partition: gpu}\n");
  const SpecError* e = error_at_path(r, "executor.partition");
  ASSERT_NE(e, nullptr) << all_errors(r);
  EXPECT_EQ(e->format(),
            "t.yaml:4:25: executor.partition: expected an option of the slurm executor (kind, gpus, gpus_per_trial, "
            "cpus_per_trial, mem_per_trial, srun_args), found unknown key 'partition'");
  // Every kind's options get their defaults; the kind's own only.
  Spec local = load_ok(kHead + "executor: {kind: local, pin_cpus: false}\n");
  EXPECT_FALSE(local.executor.options.get_bool("pin_cpus"));
  Spec slurm = load_ok(kHead + "executor: {kind: slurm}\n");
  EXPECT_EQ(slurm.executor.options.get_int("cpus_per_trial"), 0);
  EXPECT_EQ(slurm.executor.options.get_string("mem_per_trial"), "");
  EXPECT_TRUE(slurm.executor.options.get_list("srun_args").empty());
}

TEST(SpecLoader, BudgetForms) {
  EXPECT_EQ(load_ok(kHead + "search: {budget: 12}\n").search.budget_trials, 12);
  Spec t = load_ok(kHead + "search: {budget: {time: 90s}}\n");
  EXPECT_EQ(t.search.budget_trials, 0);  // a time budget alone: no trial cap
  EXPECT_DOUBLE_EQ(t.search.budget_seconds, 90);
}

TEST(SpecLoader, ResolvesWorkloadPathsAgainstTheSpecFolder) {
  const fs::path dir = fs::temp_directory_path() / ("autotune_spec_ok_" + std::to_string(::getpid()));
  fs::create_directories(dir / "data");
  std::ofstream(dir / "data" / "t.csv") << "batch_size,throughput\n16,100\n32,180\n";
  std::ofstream(dir / "space.yaml") << "workload: {kind: replay, file: data/t.csv}\nspace:\n  batch_size: [16, 32]\n"
                                       "output: {tuned: out.yaml, journal: j.jsonl}\n";
  auto r = load_spec_file(dir / "space.yaml");
  ASSERT_TRUE(r.errors.empty()) << all_errors(r);
  EXPECT_EQ(r.spec->file, dir / "space.yaml");
  EXPECT_EQ(fs::path(r.spec->workload.options.get_string("file")), dir / "data" / "t.csv");
  EXPECT_EQ(r.spec->output.tuned, "out.yaml");
  EXPECT_EQ(r.spec->output.journal, "j.jsonl");
  fs::remove_all(dir);
}

TEST(SpecLoader, RulesThatSomeConfigurationSatisfiesAreAccepted) {
  Spec s = load_ok(kHead + "  grad_accum: [1, 2, 4, 8]\nconstraints:\n"
                           "  rules: [\"batch_size * grad_accum >= 256\", \"batch_size * grad_accum <= 256\"]\n");
  auto all = s.space.enumerate();
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), 2u);  // 32 * 8 and 64 * 4
}

// A long `values:` list is read in time that grows with its length, not its
// square (the duplicate check included): 300,000 values in about a second,
// against minutes when each value is compared with every other one;
// bench/spec_reading.sh times a million. The limit is far from both, so a
// busy machine does not fail it.
TEST(SpecLoader, ReadsALongValuesListInLinearTime) {
  constexpr int kValues = 300'000;
  std::string ints, names;
  for (int i = 0; i < kValues; ++i) {
    ints += (i ? ", " : "") + std::to_string(i);
    names += (i ? ", v" : "v") + std::to_string(i);
  }
  const auto start = std::chrono::steady_clock::now();
  Spec a = load_ok(kHead + "  v: {values: [" + ints + "]}\n");
  Spec b = load_ok(kHead + "  v: [" + names + "]\n");
  // A duplicate names its first place.
  auto dup = load(kHead + "  v: [" + names + ", v7]\n");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(a.space.param(1).values.size(), static_cast<std::size_t>(kValues));
  EXPECT_EQ(b.space.param(1).values.size(), static_cast<std::size_t>(kValues));
  ASSERT_EQ(dup.errors.size(), 1u) << all_errors(dup);
  EXPECT_EQ(dup.errors[0].key_path, "space.v[300000]");
  EXPECT_NE(dup.errors[0].found.find("also space.v[7]"), std::string::npos) << dup.errors[0].format();
  EXPECT_LT(seconds, 60.0);
}

// One valid configuration in a million: random draws miss it, the space's
// enumeration finds it.
TEST(SpecLoader, RulesThatOneConfigurationInAMillionSatisfiesAreAccepted) {
  Spec s = load_ok(
      "workload: {kind: synthetic}\n"
      "space:\n"
      "  batch_size: {range: [1, 2000]}\n"
      "  num_workers: {range: [0, 499]}\n"
      "constraints:\n"
      "  rules: [\"batch_size == 1999 && num_workers == 7\"]\n");
  auto all = s.space.enumerate();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ(s.space.to_assignment(all->front()).describe(), "batch_size=1999 num_workers=7");
}

// Past the enumeration's cap (2,000,000 configurations) the rules are not
// walked: such a spec is accepted and the search finds out.
TEST(SpecLoader, RulesPastTheEnumerationCapAreNotChecked) {
  auto r = load(
      "workload: {kind: synthetic}\n"
      "space:\n"
      "  batch_size: {range: [1, 99999]}\n"
      "  num_workers: {range: [0, 20]}\n"
      "constraints:\n"
      "  rules: [\"batch_size < 0\"]\n");
  EXPECT_TRUE(r.errors.empty()) << all_errors(r);
}

TEST(SpecLoader, AutoKindKeepsTheRequestedKind) {
  auto r = load("workload: {kind: auto}\nspace:\n  batch_size: [16]\n");
  const bool cuda = find_workload("cuda") && fs::exists("/dev/nvidiactl");
  const std::string picked = cuda ? "cuda" : "cpu";
  if (find_workload(picked)) {
    ASSERT_TRUE(r.errors.empty()) << all_errors(r);
    EXPECT_EQ(r.spec->workload.requested_kind, "auto");
    EXPECT_EQ(r.spec->workload.kind, picked);
  } else {
    // The picked kind is not built into this binary yet: a located error that says so.
    ASSERT_EQ(r.errors.size(), 1u) << all_errors(r);
    EXPECT_EQ(r.errors[0].key_path, "workload.kind");
    EXPECT_NE(r.errors[0].found.find(picked), std::string::npos) << r.errors[0].format();
  }
}

TEST(SpecLoader, EmbeddedDefaultIsTheDocumentedSmallSpace) {
  // Only the text's shape: the `auto` kind and `bo` strategy it names may not be
  // built into this binary yet.
  const std::string& text = embedded_default_spec();
  for (const char* key : {"workload:", "kind: auto", "timeout: 120s", "space:", "batch_size:", "num_workers:",
                          "prefetch_factor:", "pin_memory:", "precision:", "grad_accum:", "rules:",
                          "strategy: bo", "trials: 12", "time: 3m", "seed: 1", "initial:", "tuned: tuned.yaml"})
    EXPECT_NE(text.find(key), std::string::npos) << key;
  auto r = load(text);
  for (const auto& e : r.errors) {
    // Any error may only be about what is not built in yet.
    EXPECT_TRUE(e.key_path == "workload.kind" || e.key_path == "search.strategy") << e.format();
  }
}

TEST(SpecLoader, EmbeddedDefaultIsTheFileInConfigs) {
  // One source: the binary embeds configs/default_{cpu,gpu}.yaml as they are.
  auto read = [](const char* name) {
    std::ifstream in(fs::path(AUTOTUNE_SOURCE_DIR) / "configs" / name);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string& text = embedded_default_spec();
  EXPECT_EQ(text, cuda_device_present() ? read("default_gpu.yaml") : read("default_cpu.yaml"));
}

TEST(SpecLoader, EveryExampleConfigLoads) {
  const fs::path dir = fs::path(AUTOTUNE_SOURCE_DIR) / "configs";
  ASSERT_TRUE(fs::is_directory(dir));
  int loaded = 0;
  for (const auto& f : fs::directory_iterator(dir)) {
    if (f.path().extension() != ".yaml") continue;
    std::ifstream in(f.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto r = load_spec_file(f.path());
    EXPECT_TRUE(r.errors.empty()) << f.path() << "\n" << all_errors(r);
    ++loaded;
  }
  EXPECT_GE(loaded, 4);
}

}  // namespace
}  // namespace autotune
