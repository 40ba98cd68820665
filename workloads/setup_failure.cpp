#include "workloads/setup_failure.hpp"

#include <cctype>
#include <regex>
#include <vector>

#include <fmt/format.h>

namespace autotune {
namespace {

constexpr const char* kSetupLabel = "setup_failure";
constexpr const char* kMissingLabel = "setup_missing";
// The lines read, last first: a traceback's last line is the exception,
// maybe followed by a warning or two at exit (multiprocessing's leaked
// semaphores, torch's own).
constexpr std::size_t kSetupLinesRead = 5;

// The last `most` non-blank lines of `text`, last first, trimmed.
std::vector<std::string> last_lines_first(std::string_view text, std::size_t most) {
  std::vector<std::string> out;
  std::size_t end = text.size();
  while (end > 0 && out.size() < most) {
    const std::size_t nl = text.rfind('\n', end - 1);
    const std::size_t start = nl == std::string_view::npos ? 0 : nl + 1;
    std::string_view line = text.substr(start, end - start);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) line.remove_prefix(1);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.remove_suffix(1);
    if (!line.empty()) out.emplace_back(line);
    if (start == 0) break;
    end = start - 1;
  }
  return out;
}

std::optional<std::string> match(const std::string& line, const std::regex& re) {
  std::smatch m;
  if (!std::regex_search(line, m, re)) return std::nullopt;
  return m[1].str();
}

// Exit status 127: the shell (dash "sh: 1: exec: pytohn3: not found",
// bash "bash: line 1: pytohn3: command not found", "./run.sh: No such file
// or directory"), env ("env: 'pytohn3': No such file or directory"), or
// autotune's own start of the job (a cwd or a shell that does not exist:
// subprocess_spawn.cpp's child_fail).
SetupFault read_not_found(const std::vector<std::string>& lines) {
  static const std::regex chdir(R"(^autotune: chdir (.+): No such file or directory)");
  static const std::regex exec(R"(^autotune: exec (\S+): )");
  static const std::regex env(R"(env: '?([^':]+)'?: No such file or directory)");
  static const std::regex shell(R"(([^\s:]+): (?:command )?not found$)");
  static const std::regex zsh(R"(command not found: (\S+)$)");
  static const std::regex no_such(R"(([^\s:]+): No such file or directory$)");
  for (const auto& line : lines) {
    if (auto m = match(line, chdir)) return {SetupFailure::file_not_found, *m};
    for (const std::regex* re : {&exec, &env, &shell, &zsh, &no_such})
      if (auto m = match(line, *re)) return {SetupFailure::command_not_found, *m};
  }
  return {SetupFailure::command_not_found, {}};
}

// Another non-zero exit: Python's missing module or file, or a program's
// "No such file or directory", on one of the last lines before (or on) the
// final Python exception line.
std::optional<SetupFault> read_missing(const std::vector<std::string>& lines) {
  static const std::regex module(R"(No module named '?([A-Za-z_][\w.]*)'?)");
  static const std::regex cannot_open(R"(can't open file '([^']+)')");
  static const std::regex python_file(R"(No such file or directory: '([^']+)')");
  static const std::regex no_such(R"(([^\s:']+): No such file or directory$)");
  static const std::regex exception(R"(^[A-Za-z_][\w.]*(Error|Exception)\b)");
  for (const auto& line : lines) {
    if (auto m = match(line, module)) return SetupFault{SetupFailure::module_not_found, *m};
    if (auto m = match(line, cannot_open)) return SetupFault{SetupFailure::file_not_found, *m};
    if (auto m = match(line, python_file)) return SetupFault{SetupFailure::file_not_found, *m};
    if (auto m = match(line, no_such)) return SetupFault{SetupFailure::file_not_found, *m};
    if (std::regex_search(line, exception)) return std::nullopt;  // the failure is another exception
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(SetupFailure k) {
  switch (k) {
    case SetupFailure::command_not_found: return "command_not_found";
    case SetupFailure::module_not_found: return "module_not_found";
    case SetupFailure::file_not_found: return "file_not_found";
    case SetupFailure::no_result: return "no_result";
  }
  return "command_not_found";
}

std::optional<SetupFailure> parse_setup_failure(std::string_view s) {
  for (SetupFailure k : {SetupFailure::command_not_found, SetupFailure::module_not_found,
                         SetupFailure::file_not_found, SetupFailure::no_result})
    if (to_string(k) == s) return k;
  return std::nullopt;
}

std::optional<SetupFault> read_setup_failure(int exit_code, std::string_view stderr_tail, bool has_result) {
  if (exit_code == 0) {
    if (has_result) return std::nullopt;
    return SetupFault{SetupFailure::no_result, {}};
  }
  if (exit_code < 0) return std::nullopt;  // a signal ended it
  const std::vector<std::string> lines = last_lines_first(stderr_tail, kSetupLinesRead);
  if (exit_code == 127) return read_not_found(lines);
  return read_missing(lines);
}

void mark_setup_failure(Outcome& o, const SetupFault& f) {
  o.labels[kSetupLabel] = std::string(to_string(f.kind));
  if (!f.missing.empty()) o.labels[kMissingLabel] = f.missing;
}

std::optional<SetupFault> setup_failure_of(const Outcome& o) {
  if (o.ok()) return std::nullopt;
  const auto k = o.labels.find(kSetupLabel);
  if (k == o.labels.end()) return std::nullopt;
  const auto kind = parse_setup_failure(k->second);
  if (!kind) return std::nullopt;
  const auto m = o.labels.find(kMissingLabel);
  return SetupFault{*kind, m == o.labels.end() ? std::string() : m->second};
}

std::string setup_cause(const SetupFault& f) {
  switch (f.kind) {
    case SetupFailure::command_not_found:
      return f.missing.empty() ? "the shell did not find the command's program (exit status 127)"
                               : fmt::format("the command's program '{}' was not found (exit status 127)", f.missing);
    case SetupFailure::module_not_found:
      return fmt::format("the Python that runs the command has no module '{}' (ModuleNotFoundError)", f.missing);
    case SetupFailure::file_not_found:
      return fmt::format("'{}' was not found (No such file or directory)", f.missing);
    case SetupFailure::no_result:
      return "the command exited 0 without a result: it wrote no $AUTOTUNE_RESULT and printed no JSON line";
  }
  return {};
}

std::string setup_fix(const SetupFault& f) {
  switch (f.kind) {
    case SetupFailure::command_not_found:
      return "correct the program's name in workload.command, or give its full path (trials search the PATH "
             "autotune was started with)";
    case SetupFailure::module_not_found: {
      if (f.missing.rfind("autotune_trial", 0) == 0)
        return "autotune puts the folder of its helper first on every trial's PYTHONPATH: a command that sets "
               "PYTHONPATH must keep it (`autotune --python-path` prints the folder)";
      const std::string top = f.missing.substr(0, f.missing.find('.'));
      return fmt::format("install it for that Python (`python3 -m pip install {}`; the package's name may "
                         "differ), or run a Python that has it: its full path in workload.command "
                         "(/usr/bin/python3, .venv/bin/python)",
                         top);
    }
    case SetupFailure::file_not_found:
      return "correct the path in workload.command; a relative path is read from the folder the command runs in "
             "(workload.cwd, relative to the spec file; by default the folder autotune was started in)";
    case SetupFailure::no_result:
      return "report what was measured: print one JSON line such as {\"throughput\": 1234.5} last on standard "
             "output, or write it to $AUTOTUNE_RESULT; autotune_trial.Meter does so for a PyTorch loop "
             "(docs/guide.md)";
  }
  return {};
}

}  // namespace autotune
