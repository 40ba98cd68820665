#include "workloads/command.hpp"

#include <unistd.h>

#include <atomic>
#include <cctype>

#include <fmt/format.h>

#include "workloads/subprocess.hpp"
#include "workloads/workloads.hpp"

namespace autotune {

CommandTemplate CommandTemplate::parse(const std::string& text, const std::vector<std::string>& names) {
  CommandTemplate t;
  std::string literal;
  auto flush = [&] {
    if (!literal.empty()) t.parts.push_back({false, literal});
    literal.clear();
  };
  auto known = [&](const std::string& n) {
    for (const auto& p : names)
      if (p == n) return true;
    return false;
  };
  auto where = [&](std::size_t i) { return fmt::format("command, column {}", i + 1); };
  auto ident_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'; };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '{' && i + 1 < text.size() && text[i + 1] == '{') {
      literal += '{';
      ++i;
      continue;
    }
    if (c == '}' && i + 1 < text.size() && text[i + 1] == '}') {
      literal += '}';
      ++i;
      continue;
    }
    // A placeholder is `{identifier}`; any other brace is literal text, so
    // that JSON, awk '{print $1}' and find's {} pass through unchanged.
    std::size_t j = i + 1;
    while (c == '{' && j < text.size() && ident_char(text[j])) ++j;
    const bool ident_start = c == '{' && i + 1 < text.size() &&
                             (std::isalpha(static_cast<unsigned char>(text[i + 1])) || text[i + 1] == '_');
    if (!ident_start) {
      literal += c;
      continue;
    }
    if (j == text.size())
      throw WorkloadConfigError(where(i) + ": '{' is never closed (write '{{' for a literal brace)");
    if (text[j] != '}') {
      literal += c;
      continue;
    }
    const std::string name = text.substr(i + 1, j - i - 1);
    if (!known(name)) {
      std::string list;
      for (const auto& p : names) list += (list.empty() ? "" : ", ") + p;
      throw WorkloadConfigError(fmt::format(
          "{}: placeholder '{{{}}}' is not a parameter of the space (parameters: {}); write '{{{{' and '}}}}' "
          "for literal braces, e.g. '${{{{HOME}}}}' for a shell variable",
          where(i), name, list.empty() ? "none" : list));
    }
    flush();
    t.parts.push_back({true, name});
    i = j;
  }
  flush();
  return t;
}

std::string CommandTemplate::expand(const Assignment& config) const {
  std::string out;
  for (const auto& p : parts) {
    if (!p.placeholder) {
      out += p.text;
    } else if (const Value* v = config.find(p.text)) {
      out += to_string(*v);
    }
  }
  return out;
}

std::string autotune_env_name(const std::string& parameter) {
  std::string out = "AUTOTUNE_";
  for (unsigned char c : parameter) out += std::isalnum(c) ? static_cast<char>(std::toupper(c)) : '_';
  return out;
}

CommandWorkload::CommandWorkload(const Options& options, const WorkloadEnv& env)
    : m_template(CommandTemplate::parse(options.get_string("command"), env.parameter_names)),
      m_cwd(options.get_string("cwd")),
      m_env(options.get_map("env")),
      m_shell(options.get_string("shell")) {
  if (m_shell.empty()) throw WorkloadConfigError("shell: must not be empty");
  if (!m_cwd.empty() && m_cwd.is_relative()) m_cwd = env.spec_dir / m_cwd;
}

std::optional<ExternalCommand> CommandWorkload::external_command(const Assignment& config,
                                                                 const TrialContext& ctx) const {
  static std::atomic<unsigned> counter{0};
  ExternalCommand cmd;
  cmd.argv = {m_shell, "-c", m_template.expand(config)};
  cmd.cwd = m_cwd;
  cmd.env = m_env;
  for (const auto& [name, value] : config.items()) cmd.env[autotune_env_name(name)] = to_string(value);
  cmd.env["AUTOTUNE_TRIAL"] = std::to_string(ctx.trial);
  if (!ctx.log_dir.empty()) {
    cmd.result_file = ctx.log_dir / "result.json";
    cmd.keep_result_file = true;
    std::error_code ec;
    std::filesystem::create_directories(ctx.log_dir, ec);
  } else {
    std::error_code ec;
    auto dir = std::filesystem::temp_directory_path(ec);
    if (ec) dir = "/tmp";
    cmd.result_file = dir / fmt::format("autotune-{}-{}-{}.result.json", ::getpid(), ctx.trial, counter++);
  }
  cmd.env["AUTOTUNE_RESULT"] = cmd.result_file.string();
  return cmd;
}

Outcome CommandWorkload::measure(const Assignment& config, const TrialContext& ctx) {
  // Inline or not, the script runs as its own process (group): the same code
  // the process executor uses, so a hang or a crash never reaches the caller.
  ChildOptions opt;
  opt.timeout_s = ctx.timeout_s;
  opt.cpus = ctx.cpus;
  opt.log_dir = ctx.log_dir;
  const ExternalRun run = run_external(*external_command(config, ctx), ctx.env, opt);
  return with_run_facts(interpret(run, ctx), run);
}

WorkloadInfo command_workload_info() {
  WorkloadInfo info;
  info.kind = "command";
  info.summary = "your own training script, one process per trial; prints or writes a JSON result";
  info.options = {
      {"command", OptionType::string, std::nullopt,
       "shell command; {name} is replaced by the parameter's value, {{ and }} are literal braces"},
      {"cwd", OptionType::path, OptionValue(std::string()), "working directory (default: the tuner's)"},
      {"env", OptionType::string_map, OptionValue(std::map<std::string, std::string>{}),
       "extra environment variables"},
      {"shell", OptionType::string, OptionValue(std::string("/bin/sh")), "the shell that runs `command` (-c)"},
  };
  info.make = [](const Options& o, const WorkloadEnv& env) -> std::unique_ptr<Workload> {
    return std::make_unique<CommandWorkload>(o, env);
  };
  return info;
}

}  // namespace autotune
