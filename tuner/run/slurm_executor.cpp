#include "tuner/run/slurm_executor.hpp"

#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "proc/subprocess.hpp"
#include "tuner/record/journal.hpp"
#include "tuner/run/executor_registry.hpp"
#include "tuner/run/runner.hpp"
#include "tuner/run/wire.hpp"

namespace autotune {
namespace {

// Prints the node the step landed on, before and after the program, on
// standard error (the tail keeps the last one), and keeps its exit status.
constexpr const char* kNodeWrapper =
    "printf 'autotune-node: %s\\n' \"${SLURMD_NODENAME:-unknown}\" >&2; \"$@\"; rc=$?; "
    "printf 'autotune-node: %s\\n' \"${SLURMD_NODENAME:-unknown}\" >&2; exit $rc";

bool on_path(const std::string& prog) {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "");
  for (std::string dir; std::getline(ss, dir, ':');)
    if (!dir.empty() && ::access((std::filesystem::path(dir) / prog).c_str(), X_OK) == 0) return true;
  return false;
}

std::string find_node(const std::string& err) {
  const std::string key = "autotune-node: ";
  const auto pos = err.rfind(key);
  if (pos == std::string::npos) return {};
  const auto end = err.find('\n', pos);
  return err.substr(pos + key.size(), end == std::string::npos ? std::string::npos : end - pos - key.size());
}

// Cancels whatever steps of ours with this name Slurm still lists.
void cancel_steps(const std::string& step_name) {
  ExternalCommand q;
  q.argv = {"squeue", "--noheader", "--steps", "--format=%i %j"};
  ChildOptions opt;
  opt.timeout_s = 15;
  opt.term_grace_s = 2;
  const ExternalRun listed = run_external(q, {}, opt);
  std::stringstream ss(listed.stdout_tail);
  for (std::string line; std::getline(ss, line);) {
    std::stringstream ls(line);
    std::string id, name;
    ls >> id >> name;
    if (name != step_name || id.empty()) continue;
    ExternalCommand c;
    c.argv = {"scancel", "--quiet", id};
    run_external(c, {}, opt);
  }
}

// One trial as one step.
class SlurmStepRunner final : public TrialRunner {
 public:
  SlurmStepRunner(Workload& w, SlurmSettings s) : m_w(w), m_s(std::move(s)) {}

  Outcome once(const Assignment& config, const TrialContext& ctx) override {
    ExternalCommand cmd;
    const std::optional<ExternalCommand> ext = m_w.external_command(config, ctx);
    if (ext) {
      cmd = *ext;
    } else {
      cmd.argv = {m_s.self_exe.string(), "trial", "--config", m_s.spec_file.string(), "--values",
                  to_json(config).dump(), "--trial", std::to_string(ctx.trial), "--seed", std::to_string(ctx.seed)};
    }
    const std::string step_name = fmt::format("autotune-{}-t{}", m_s.run_tag, ctx.trial);
    cmd.argv = srun_argv(m_s, step_name, cmd.argv);

    ChildOptions opt;
    opt.timeout_s = ctx.timeout_s;
    opt.term_grace_s = m_s.term_grace_s;
    opt.cancel = [&ctx] { return trial_cancelled(ctx); };
    opt.log_dir = ctx.log_dir;
    ExternalRun run = run_external(cmd, ctx.env, opt);
    if (run.timed_out || run.cancelled || run.runner_killed || run.stopped_after_result) cancel_steps(step_name);

    // srun passes a task's death by signal N on as exit status 128+N.
    if (run.signal == 0 && run.exit_code > 128 && run.exit_code < 128 + 65 && !run.runner_killed) {
      run.signal = run.exit_code - 128;
      run.exit_code = -1;
    }
    Outcome o = ext ? m_w.interpret(run, ctx) : outcome_from_wire(run, run.stdout_tail, ctx);
    // Slurm's cgroup OOM killer reports itself on srun's standard error.
    if (!o.ok() && o.status != Status::timeout &&
        (run.stderr_tail.find("oom-kill") != std::string::npos ||
         run.stderr_tail.find("Out Of Memory") != std::string::npos))
      o.status = Status::host_oom;
    o = with_run_facts(std::move(o), run);
    if (auto node = find_node(run.stderr_tail); !node.empty()) o.labels["node"] = node;
    o.labels["slurm_step"] = step_name;
    return o;
  }

  Workload& m_w;
  SlurmSettings m_s;
};

// The kind's factory: settings from its options and the spec.
std::unique_ptr<Executor> make_slurm_from_spec(const Options& options, const ExecutorEnv& env) {
  require_slurm_allocation();
  const Spec& spec = env.spec;
  if (spec.file.empty() || !std::filesystem::exists(spec.file))
    throw std::runtime_error("the slurm executor re-reads the spec on each node: give it with --config");
  SlurmSettings s;
  s.gpus_per_trial = static_cast<int>(options.get_int("gpus_per_trial"));
  s.cpus_per_trial = static_cast<int>(options.get_int("cpus_per_trial"));
  s.mem_per_trial = options.get_string("mem_per_trial");
  s.srun_args = options.get_list("srun_args");
  s.spec_file = std::filesystem::absolute(spec.file);
  s.self_exe = std::filesystem::read_symlink("/proc/self/exe");
  s.run_tag = std::to_string(::getpid());
  return make_slurm_executor(env.workload, std::move(s), spec.search.parallel);
}

}  // namespace

ExecutorKind slurm_executor_kind() {
  return {"slurm",
          "one `srun --exact -n1` step per trial inside the current Slurm allocation",
          {
              {"gpus_per_trial", OptionType::integer, OptionValue{std::int64_t{0}}, "GPUs of each trial's srun step",
               {}, 0.0, 1024.0},
              {"cpus_per_trial", OptionType::integer, OptionValue{std::int64_t{0}}, "CPUs of each step", {}, 0.0,
               65536.0},
              // Checked as a size, handed to srun as written: Slurm reads its own units.
              {"mem_per_trial", OptionType::bytes_text, OptionValue{std::string()},
               "memory of each step, e.g. 64G; empty: Slurm's default"},
              {"srun_args", OptionType::string_list, OptionValue{std::vector<std::string>{}},
               "extra srun options, e.g. [--partition=gpu]"},
          },
          make_slurm_from_spec};
}

void require_slurm_allocation() {
  if (!std::getenv("SLURM_JOB_ID"))
    throw std::runtime_error(
        "the slurm executor runs inside an allocation; start the tuner with e.g.\n"
        "  salloc -N 2 --gpus-per-node=8 --ntasks-per-node=8 autotune --config space.yaml\n"
        "or from an sbatch script");
  if (!on_path("srun")) throw std::runtime_error("srun is not on PATH");
}

std::vector<std::string> srun_argv(const SlurmSettings& s, const std::string& step_name,
                                   const std::vector<std::string>& inner) {
  std::vector<std::string> a = {"srun", "--exact", "--ntasks=1", "--nodes=1", "--job-name=" + step_name,
                                "--kill-on-bad-exit=1"};
  if (s.gpus_per_trial > 0) a.push_back(fmt::format("--gpus={}", s.gpus_per_trial));
  if (s.cpus_per_trial > 0) a.push_back(fmt::format("--cpus-per-task={}", s.cpus_per_trial));
  if (!s.mem_per_trial.empty()) a.push_back("--mem=" + s.mem_per_trial);
  for (const auto& x : s.srun_args) a.push_back(x);
  a.insert(a.end(), {"/bin/sh", "-c", kNodeWrapper, "sh"});
  a.insert(a.end(), inner.begin(), inner.end());
  return a;
}

std::unique_ptr<Executor> make_slurm_executor(Workload& w, SlurmSettings settings, int steps) {
  steps = std::max(1, steps);
  std::shared_ptr<TrialRunner> runner = std::make_shared<SlurmStepRunner>(w, std::move(settings));
  return make_pool_executor([runner](const Assignment& a, const TrialContext& ctx) { return runner->once(a, ctx); },
                            std::vector<Slot>(static_cast<std::size_t>(steps)),
                            fmt::format("up to {} Slurm step{} at once", steps, steps == 1 ? "" : "s"));
}

}  // namespace autotune
