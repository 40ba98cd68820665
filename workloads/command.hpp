#pragma once
// The `command` workload: the user's own training script, run once per trial
// under the command contract (docs/guide.md, "The command workload" and "How a trial ends").
//
//   command: "python3 train.py --bs {batch_size} --precision {precision}"
//
// `{name}` (an identifier: letters, digits, `_`, `.`, `-`) is replaced by the
// configuration's value of parameter `name`, quoted for a POSIX shell where it
// stands: one word outside quotes (single-quoted when it holds anything but
// letters, digits and `_@%+:,./-`), the same text inside '...' or "..." that
// the user wrote around it. A categorical value never runs a command,
// redirects, globs or splits. With the workload's `raw: true` the value is
// pasted verbatim (a value that is meant to be shell text). `{{` and
// `}}` are literal braces; any brace that does not open an identifier
// placeholder is literal too, so JSON, awk '{print $1}' and find's `{}` pass
// through. A shell variable in braces must be written `${{HOME}}`: `${HOME}`
// reads as the placeholder HOME. An unknown parameter name or an unclosed
// `{name` is a WorkloadConfigError when the workload is built, not a failed
// trial.
//
// Every trial is a `shell -c command` process in its own process group, also
// when measure() is called inline: a command trial is always isolated. A
// simple command is exec'd by the shell (exec_form), so the trial's own
// signal reaches the runner; otherwise the shell's report (128+N and its
// message) is read back as the signal (proc/failure_reading.hpp).
#include <chrono>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/workload.hpp"

namespace autotune {

// A parsed command template: literal text and placeholders, alternating.
struct CommandTemplate {
  struct Part {
    bool placeholder = false;
    std::string text;  // literal text, or the parameter name
    char quote = 0;    // a placeholder's shell quoting where it stands: 0, '\'' or '"'
  };
  std::vector<Part> parts;

  // Throws WorkloadConfigError naming the column for an unknown parameter or
  // an unclosed `{name` at the end of the text.
  static CommandTemplate parse(const std::string& text, const std::vector<std::string>& parameter_names);
  // Each value quoted for the shell where its placeholder stands; `raw`:
  // verbatim.
  std::string expand(const Assignment& config, bool raw = false) const;
};

// `text` as one POSIX shell word: unchanged when it is made only of
// letters, digits and `_@%+:,./-` (and not empty), else single-quoted, a
// quote inside written '"'"'.
std::string shell_word(std::string_view text);

// `text` with `exec ` before its program when it is one simple command
// (`python3 train.py --bs 64`, also after NAME=value assignments), so that
// the shell is replaced by the job; unchanged when it is a list, a pipeline,
// a subshell, a compound command or a shell built-in (`cd x && python3 ...`).
std::string exec_form(std::string_view text);

// The first of `relative` (paths from the running program's folder, e.g.
// "python", "../share/autotune/python") that `usable` accepts, canonical;
// empty when none is.
std::filesystem::path beside_program(std::initializer_list<std::string_view> relative,
                                     const std::function<bool(const std::filesystem::path&)>& usable);

// The folder holding autotune_trial/, the Python trial helper: beside the
// binary (build/python), one folder up (for build/tests), or the installed
// share/autotune/python. Empty when not found. Every command trial gets it at
// the front of PYTHONPATH.
std::filesystem::path trial_helper_dir();

// What every external trial is told of itself: AUTOTUNE_TRIAL (its number)
// and AUTOTUNE_TRIAL_START, when it started (ctx.started) on the wall clock
// in Unix seconds: a job reports the seconds from there to its first step as
// startup_seconds (the shell, a launcher, imports, CUDA's start, workers).
void add_trial_identity(ExternalCommand& cmd, const TrialContext& ctx);
// The other side: AUTOTUNE_TRIAL_START's text as a steady-clock time point.
std::chrono::steady_clock::time_point trial_start_from(const std::string& unix_seconds);

// A result file of the trial's own in the temporary folder
// (autotune-<pid>-<trial>-<n><suffix>), named in AUTOTUNE_RESULT.
void use_temp_result_file(ExternalCommand& cmd, const TrialContext& ctx, std::string_view suffix);

// "batch_size" -> "AUTOTUNE_BATCH_SIZE" (non-alphanumerics become '_').
std::string autotune_env_name(const std::string& parameter);

class CommandWorkload : public Workload {
 public:
  CommandWorkload(const Options& options, const WorkloadEnv& env);
  std::string_view kind() const override { return "command"; }
  Outcome measure(const Assignment& config, const TrialContext& ctx) override;
  std::optional<ExternalCommand> external_command(const Assignment& config,
                                                  const TrialContext& ctx) const override;

 private:
  CommandTemplate m_template;
  std::filesystem::path m_cwd;
  std::map<std::string, std::string> m_env;
  std::string m_shell;
  double m_exit_grace_s = 10;
  bool m_warm = false;
  bool m_raw = false;
};

}  // namespace autotune
