#include "tuner/run/builtin_worker.hpp"

#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "core/atomic_file.hpp"
#include "proc/subprocess.hpp"
#include "tuner/record/journal.hpp"
#include "tuner/run/wire.hpp"
#include "workloads/command.hpp"
#include "workloads/workload.hpp"

namespace autotune {
namespace {

constexpr const char* kWorkloadVar = "AUTOTUNE_WORKER_WORKLOAD";
constexpr const char* kValuesVar = "AUTOTUNE_WORKER_VALUES";
constexpr const char* kContextVar = "AUTOTUNE_WORKER_CONTEXT";

nlohmann::json option_to_json(const OptionValue& v) {
  return std::visit([](const auto& x) { return nlohmann::json(x); }, v);
}

// Typed by the kind's schema, as the spec loader typed it.
OptionValue option_from_json(const nlohmann::json& j, OptionType type) {
  switch (type) {
    case OptionType::boolean: return j.get<bool>();
    case OptionType::integer:
    case OptionType::bytes: return j.get<std::int64_t>();
    case OptionType::number:
    case OptionType::duration: return j.get<double>();
    case OptionType::string:
    case OptionType::bytes_text:
    case OptionType::path: return j.get<std::string>();
    case OptionType::string_list: return j.get<std::vector<std::string>>();
    case OptionType::string_map: return j.get<std::map<std::string, std::string>>();
  }
  return j.get<std::string>();
}

// The autotune executable: this process when it is autotune, else the one
// beside it or one folder up (a test binary in build/tests).
std::filesystem::path autotune_program() {
  return beside_program({"autotune", "../autotune"}, [](const std::filesystem::path& p) {
    std::error_code ec;
    return std::filesystem::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  });
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The trial this process's environment describes.
struct WorkerTrial {
  Assignment config;
  TrialContext ctx;
};

WorkerTrial trial_from_environment() {
  WorkerTrial t;
  t.config = assignment_from_json(nlohmann::json::parse(env_or_empty(kValuesVar)));
  const auto c = nlohmann::json::parse(env_or_empty(kContextVar));
  t.ctx.trial = c.at("trial").get<int>();
  t.ctx.seed = c.at("seed").get<std::uint64_t>();
  t.ctx.timeout_s = c.at("timeout_s").get<double>();
  t.ctx.limits.vram_bytes = c.at("vram_bytes").get<double>();
  t.ctx.limits.ram_bytes = c.at("ram_bytes").get<double>();
  t.ctx.slot = c.at("slot").get<int>();
  t.ctx.stop_below = c.at("stop_below").get<double>();
  // Started when the tuner's slot took the trial: the first trial's
  // startup_seconds include this process's start, the module and the context.
  if (const std::string start = env_or_empty("AUTOTUNE_TRIAL_START"); !start.empty())
    t.ctx.started = trial_start_from(start);
  return t;
}

}  // namespace

std::optional<BuiltinWorker> builtin_worker_for(const Spec& spec) {
  const auto& w = spec.workload;
  const WorkloadInfo* kind = find_workload(w.kind);
  if (w.isolation != Isolation::process || !kind || !kind->builtin_worker) return std::nullopt;
  if (!w.options.has("warm") || !w.options.get_bool("warm")) return std::nullopt;
  BuiltinWorker out;
  out.program = autotune_program();
  if (out.program.empty()) return std::nullopt;
  nlohmann::json options = nlohmann::json::object();
  for (const auto& [k, v] : w.options.values()) options[k] = option_to_json(v);
  nlohmann::json parameters = nlohmann::json::array();
  for (const auto& p : spec.space.params()) parameters.push_back(p.name);
  const auto dir = spec.file.has_parent_path() ? spec.file.parent_path() : std::filesystem::current_path();
  out.workload = {{"kind", w.kind}, {"options", options}, {"spec_dir", std::filesystem::absolute(dir).string()},
                  {"parameters", parameters}};
  return out;
}

ExternalCommand builtin_worker_command(const BuiltinWorker& worker, const Assignment& config,
                                       const TrialContext& ctx) {
  ExternalCommand cmd;
  cmd.argv = {worker.program.string(), kWorkerArgument};
  cmd.warm = true;
  cmd.pass_autotune_env = true;  // AUTOTUNE_CUDA_MODULE says where the harness is
  cmd.env[kWorkloadVar] = worker.workload.dump();
  cmd.env[kValuesVar] = to_json(config).dump();
  cmd.env[kContextVar] = nlohmann::json{{"trial", ctx.trial},
                                        {"seed", ctx.seed},
                                        {"timeout_s", ctx.timeout_s},
                                        {"vram_bytes", ctx.limits.vram_bytes},
                                        {"ram_bytes", ctx.limits.ram_bytes},
                                        {"slot", ctx.slot},
                                        {"stop_below", ctx.stop_below}}
                             .dump();
  add_trial_identity(cmd, ctx);
  use_temp_result_file(cmd, ctx, ".outcome");
  return cmd;
}

int run_builtin_worker() {
  std::unique_ptr<Workload> workload;
  try {
    const auto spec = nlohmann::json::parse(env_or_empty(kWorkloadVar));
    const WorkloadInfo* info = find_workload(spec.at("kind").get<std::string>());
    if (!info) throw std::runtime_error("workload kind " + spec.at("kind").dump() + " is not built into this binary");
    std::map<std::string, OptionValue> given;
    for (const auto& s : info->options)
      if (spec.at("options").contains(s.key)) given[s.key] = option_from_json(spec.at("options").at(s.key), s.type);
    const Options options = Options::with_defaults(info->options, std::move(given));
    WorkloadEnv env;
    env.spec_dir = spec.at("spec_dir").get<std::string>();
    env.parameter_names = spec.at("parameters").get<std::vector<std::string>>();
    workload = info->make(options, env);
  } catch (const std::exception& e) {
    std::cerr << "autotune " << kWorkerArgument << ": " << e.what() << "\n";
    return 2;
  }
  const std::string warm_dir = env_or_empty("AUTOTUNE_WARM_DIR");
  while (true) {
    Outcome o;
    try {
      const WorkerTrial t = trial_from_environment();
      o = workload->measure(t.config, t.ctx);
    } catch (const std::exception& e) {
      o = Outcome::failure(Status::error, std::string("workload threw: ") + e.what());
    }
    // Where the tuner reads it; run by hand, on standard output (as `autotune trial`).
    if (const std::string result = env_or_empty("AUTOTUNE_RESULT"); !result.empty())
      write_atomically(result, outcome_wire_line(o));
    else
      std::cout << outcome_wire_line(o) << std::endl;
    if (warm_dir.empty()) return 0;
    warm_trial_over(warm_dir, env_or_empty("AUTOTUNE_TRIAL"));
    if (!warm_next_trial(warm_dir)) return 0;
  }
}

}  // namespace autotune
