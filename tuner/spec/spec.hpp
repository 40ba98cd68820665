#pragma once
// The validated contents of a space.yaml. Only the loader's files
// (spec_loader.cpp, yaml_reader.*, spec_space.cpp, spec_sections.cpp) see YAML;
// the rest of the tuner works from this struct.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/options.hpp"
#include "core/space.hpp"
#include "search/strategy.hpp"
#include "tuner/spec/executor_kind.hpp"
#include "workloads/workload.hpp"

namespace autotune {

enum class Isolation {
  process,  // each trial in its own child process (default)
  inline_,  // in the tuner's process: cheap workloads only (replay, synthetic), chosen explicitly
};

struct WorkloadSpec {
  std::string kind;              // resolved: `auto` becomes cuda or cpu
  std::string requested_kind;    // as written (e.g. "auto")
  Options options;               // kind-specific keys, validated against the kind's schema
  double timeout_s = 600;        // per-trial timeout (`timeout:`), all kinds
  int repeats = 1;               // measurements per configuration, median kept (`repeats:`)
  Isolation isolation = Isolation::process;  // `isolation: process | inline`
};

struct SearchSpec {
  std::string strategy = "bo";
  int budget_trials = 0;         // 0 = not set
  double budget_seconds = 0;     // 0 = not set
  bool until_converged = false;  // `budget: {until_converged: true}`: stop once the strategy says it converged
  std::uint64_t seed = 0;
  std::vector<Config> initial;   // validated: in the space and satisfying the rules
  bool explain = true;           // after the search, measure what each knob the answer moved is worth (tuner/record/explain.hpp)
  int confirm = 0;               // after the search, re-measure this many of the best once each (tuner/record/confirm.hpp)
  // After the search, the baseline and the answer measured again side by
  // side, this many times each, interleaved; the speedup reported is theirs.
  // Unset: 2 for the command workload (a user's job, noisy), 0 otherwise.
  std::optional<int> remeasure;
  int parallel = 1;              // trials in flight
  // Racing (tuner/record/racing.hpp): a trial surely below (1 - race_margin) x the
  // incumbent stops early; negative: off (`race: false`). The margin covers
  // what the incumbent's own windows cannot show: a run-to-run drift of a
  // few percent (bench/results/warmup_drain.md); at 0.05 `bo` lost 0.9% of
  // final quality on the synthetic balanced profile, at 0.10 none
  // (bench/results/time_to_quality.md).
  static constexpr double kDefaultRaceMargin = 0.10;
  double race_margin = kDefaultRaceMargin;
  // Other processes busy on the machine (tuner/run/machine_load.hpp):
  // `warn` says so and carries on, `wait` holds each trial until the machine
  // is quiet (with a cap), `ignore` says nothing.
  std::string busy = "warn";
  // `options: {NAME: {key: value}}`: each strategy's options as given,
  // validated against what it declares (StrategyInfo::options).
  std::map<std::string, Options> strategy_options;
  // Those of `name` (none given: empty; make_strategy fills the defaults).
  Options options_of(std::string_view name) const {
    const auto it = strategy_options.find(std::string(name));
    return it == strategy_options.end() ? Options{} : it->second;
  }
};

// Where trials run (`executor:`). See docs/parallel.md.
struct ExecutorSpec {
  std::string kind = "local";  // a kind of tuner/spec/executor_kind.hpp's table
  // Every kind: the GPUs this process hands out, one entry per slot ("0",
  // "1", or "0,1" for two per slot); empty = none. `gpus: auto` in the file
  // lists every visible GPU. The local kind gives them to its slots through
  // CUDA_VISIBLE_DEVICES; Slurm places its steps' GPUs itself.
  std::vector<std::string> gpus;
  Options options;  // the kind's declared options, validated, defaults filled in
};

struct OutputSpec {
  std::filesystem::path tuned;    // resolved against the current directory
  std::filesystem::path journal;
};

struct Spec {
  std::filesystem::path file;     // where it was loaded from ("<embedded>" for the default)
  WorkloadSpec workload;
  SearchSpace space;
  Limits limits;
  // constraints.effective_batch: batch_size x grad_accum pinned (a rule of
  // the space), so that every trial and the answer train with it.
  std::optional<std::int64_t> effective_batch;
  // constraints.ranks: data-parallel processes, each with batch_size x
  // grad_accum samples per optimizer step; part of the effective batch.
  std::int64_t ranks = 1;
  std::string objective = "throughput";
  SearchSpec search;
  ExecutorSpec executor;
  OutputSpec output;
};

// One problem with a spec file. Every error is located and says what was
// expected and what was found.
struct SpecError {
  std::string file;
  int line = 0;                 // 1-based; 0 when unknown
  int column = 0;               // 1-based; 0 when unknown
  std::string key_path;         // e.g. "space.batch_size.values[2]"
  std::string expected;
  std::string found;
  std::string hint;             // e.g. "did you mean 'prefetch_factor'?"

  // "space.yaml:12:5: space.batch_size.values[2]: expected an integer, found 'abc'"
  std::string format() const;
};

struct SpecLoadResult {
  std::optional<Spec> spec;     // set when errors is empty
  std::vector<SpecError> errors;
};

// Loads and validates the whole file; every error is reported, none thrown.
// `executor.kind` is one of `kinds` and its options are checked against the
// kind's (a test gives a kind of its own).
SpecLoadResult load_spec_file(const std::filesystem::path& path, const ExecutorKinds& kinds = executor_kinds());
// The same from text (`name` is used in messages; relative paths resolve
// against base_dir).
SpecLoadResult load_spec_text(const std::string& text, const std::string& name,
                              const std::filesystem::path& base_dir, const ExecutorKinds& kinds = executor_kinds());

// The config the README's first command runs when no --config is given.
const std::string& embedded_default_spec();

// search.remeasure as it applies to this spec (the most pairs): what it says, else 6 for the
// command workload and 0 for the others.
int remeasure_rounds(const Spec& spec);

// The processes a configuration keeps busy on this node: per rank, its loader
// workers (`num_workers`) and its intra-op threads (`threads`, else 1), times
// `constraints.ranks`. nullopt when the space has neither knob.
struct CoresAsked {
  std::int64_t ranks = 1, workers = 0, threads = 1;
  std::int64_t total() const { return ranks * (workers + threads); }
  // "2 ranks x (4 workers + 1 thread) = 10"
  std::string describe() const;
};
std::optional<CoresAsked> cores_asked(const Spec& spec, const Config& config);
// When `config` asks for more processes than the cores here, saying so ("the
// answer asks for 2 ranks x (3 workers + 1 thread) = 8 processes on 2 cores:
// ..."); empty when it keeps within them.
std::string cores_warning(const Spec& spec, const Config& config);

// What a strategy is given for one run over `space`.
StrategyContext strategy_context(const SearchSpace& space, std::uint64_t seed, int budget,
                                 std::vector<Config> initial, const Limits& limits, Options options = {});

}  // namespace autotune
