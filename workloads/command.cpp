#include "workloads/command.hpp"

#include "core/knobs.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>

#include <fmt/format.h>

#include "proc/subprocess.hpp"
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
  // The shell's quoting as it reads the literal text, so that a value is
  // quoted for where its placeholder stands.
  char quote = 0;
  bool escaped = false;
  auto read_as_shell = [&](char c) {
    if (escaped) escaped = false;
    else if (quote == '\'') quote = c == '\'' ? 0 : quote;
    else if (c == '\\') escaped = true;
    else if (quote == '"') quote = c == '"' ? 0 : quote;
    else if (c == '\'' || c == '"') quote = c;
  };
  auto add = [&](char c) {
    literal += c;
    read_as_shell(c);
  };
  auto ident_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'; };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '{' && i + 1 < text.size() && text[i + 1] == '{') {
      add('{');
      ++i;
      continue;
    }
    if (c == '}' && i + 1 < text.size() && text[i + 1] == '}') {
      add('}');
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
      add(c);
      continue;
    }
    if (j == text.size())
      throw WorkloadConfigError(where(i) + ": '{' is never closed (write '{{' for a literal brace)");
    if (text[j] != '}') {
      add(c);
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
    t.parts.push_back({true, name, quote});
    escaped = false;
    i = j;
  }
  flush();
  return t;
}

std::string shell_word(std::string_view text) {
  const auto plain = [](unsigned char c) {
    return std::isalnum(c) || std::string_view("_@%+:,./-").find(static_cast<char>(c)) != std::string_view::npos;
  };
  if (!text.empty() && std::all_of(text.begin(), text.end(), plain)) return std::string(text);
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\"'\"'") : std::string(1, c);
  return out + "'";
}

std::string CommandTemplate::expand(const Assignment& config, bool raw) const {
  std::string out;
  for (const auto& p : parts) {
    if (!p.placeholder) {
      out += p.text;
      continue;
    }
    const Value* v = config.find(p.text);
    if (!v) continue;
    const std::string value = to_string(*v);
    if (raw) {
      out += value;
    } else if (p.quote == '\'') {  // inside '...': close, a quoted quote, reopen
      for (char c : value) out += c == '\'' ? std::string("'\"'\"'") : std::string(1, c);
    } else if (p.quote == '"') {  // inside "...": what stays special there, escaped
      for (char c : value) {
        if (c == '\\' || c == '"' || c == '$' || c == '`') out += '\\';
        out += c;
      }
    } else {
      out += shell_word(value);
    }
  }
  return out;
}

namespace {

bool posix_shell(const std::string& shell) {
  const std::string base = std::filesystem::path(shell).filename().string();
  return base == "sh" || base == "dash" || base == "bash" || base == "ksh" || base == "zsh" || base == "ash" ||
         base == "busybox";
}

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Words that make a command something other than a program to exec: the
// shell's reserved words, and built-ins that act on the shell itself or are
// not programs (`exec exit 3` would fail where `exit 3` does not).
bool shell_keeps(std::string_view word) {
  static constexpr std::string_view kWords[] = {
      "if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for", "in",
      "{", "}", "!", "[[", "function", "select", "time", "exec", "exit", "return", "cd", ".", "source",
      "eval", "set", "unset", "export", "readonly", "shift", "trap", "wait", "umask", "ulimit", "alias",
      "unalias", "break", "continue", "local", "read", "getopts", "command", "builtin", "type", "hash",
      "jobs", "fg", "bg", ":", "times"};
  return std::find(std::begin(kWords), std::end(kWords), word) != std::end(kWords);
}

}  // namespace

std::string exec_form(std::string_view text) {
  // One pass over the text with the shell's quoting: a control operator or
  // parenthesis outside quotes means a list, pipeline or subshell, which the
  // shell must run itself. `$(...)` is conservatively treated the same.
  std::vector<std::pair<std::size_t, std::size_t>> words;  // [start, end) of the unquoted-split words
  bool in_word = false;
  std::size_t word_start = 0;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote == '\'') {
      if (c == '\'') quote = 0;
      continue;
    }
    if (quote == '"') {
      if (c == '\\') ++i;
      else if (c == '"') quote = 0;
      else if (c == '`' || (c == '$' && i + 1 < text.size() && text[i + 1] == '(')) return std::string(text);
      continue;
    }
    if (c == '\\') {
      if (i + 1 < text.size() && text[i + 1] == '\n') return std::string(text);
      if (!in_word) in_word = true, word_start = i;
      ++i;
      continue;
    }
    if (c == ' ' || c == '\t') {
      if (in_word) words.emplace_back(word_start, i), in_word = false;
      continue;
    }
    if (c == '#' && !in_word) break;  // a comment to the end
    const bool redirect = c == '&' && i > 0 && (text[i - 1] == '>' || text[i - 1] == '<');  // 2>&1
    if (c == ';' || (c == '&' && !redirect) || c == '|' || c == '(' || c == ')' || c == '\n' || c == '`') return std::string(text);
    if (c == '\'' || c == '"') quote = c;
    if (!in_word) in_word = true, word_start = i;
  }
  if (quote) return std::string(text);  // unbalanced: let the shell say so
  if (in_word) words.emplace_back(word_start, text.size());
  // Leading assignments (NAME=value) stay before `exec`: they become the
  // program's environment.
  std::size_t k = 0;
  for (; k < words.size(); ++k) {
    const auto w = text.substr(words[k].first, words[k].second - words[k].first);
    const auto eq = w.find('=');
    if (eq == std::string_view::npos || eq == 0 || !is_name_start(w[0]) ||
        !std::all_of(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(eq), is_name_char))
      break;
  }
  if (k == words.size()) return std::string(text);
  const auto first = text.substr(words[k].first, words[k].second - words[k].first);
  if (shell_keeps(first)) return std::string(text);
  std::string out(text.substr(0, words[k].first));
  out += "exec ";
  out += text.substr(words[k].first);
  return out;
}

std::filesystem::path beside_program(std::initializer_list<std::string_view> relative,
                                     const std::function<bool(const std::filesystem::path&)>& usable) {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  for (std::string_view r : relative)
    if (const auto p = exe.parent_path() / r; usable(p)) return std::filesystem::weakly_canonical(p, ec);
  return {};
}

std::filesystem::path trial_helper_dir() {
  // Beside the binary in the build tree, one up for the test binaries
  // (build/tests), and the installed share folder.
  static const std::filesystem::path found =
      beside_program({"python", "../python", "../share/autotune/python"}, [](const std::filesystem::path& dir) {
        std::error_code ec;
        return std::filesystem::exists(dir / "autotune_trial" / "__init__.py", ec);
      });
  return found;
}

namespace {
double wall_clock_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

void add_trial_identity(ExternalCommand& cmd, const TrialContext& ctx) {
  cmd.env["AUTOTUNE_TRIAL"] = std::to_string(ctx.trial);
  const double started_ago = seconds_between(ctx.started, std::chrono::steady_clock::now());
  cmd.env["AUTOTUNE_TRIAL_START"] = fmt::format("{:.6f}", wall_clock_now() - started_ago);
}

std::chrono::steady_clock::time_point trial_start_from(const std::string& unix_seconds) {
  const double ago = std::max(0.0, wall_clock_now() - std::stod(unix_seconds));
  return std::chrono::steady_clock::now() -
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(ago));
}

void use_temp_result_file(ExternalCommand& cmd, const TrialContext& ctx, std::string_view suffix) {
  static std::atomic<unsigned> counter{0};
  std::error_code ec;
  auto dir = std::filesystem::temp_directory_path(ec);
  if (ec) dir = "/tmp";
  cmd.result_file = dir / fmt::format("autotune-{}-{}-{}{}", ::getpid(), ctx.trial, counter++, suffix);
  cmd.env["AUTOTUNE_RESULT"] = cmd.result_file.string();
}

std::string autotune_env_name(const std::string& parameter) { return knob_env_name(parameter); }

CommandWorkload::CommandWorkload(const Options& options, const WorkloadEnv& env)
    : m_template(CommandTemplate::parse(options.get_string("command"), env.parameter_names)),
      m_cwd(options.get_string("cwd")),
      m_env(options.get_map("env")),
      m_shell(options.get_string("shell")),
      m_exit_grace_s(options.get_number("exit_grace")),
      m_warm(options.get_bool("warm")),
      m_raw(options.get_bool("raw")) {
  if (m_shell.empty()) throw WorkloadConfigError("shell: must not be empty");
  if (!m_cwd.empty() && m_cwd.is_relative()) m_cwd = std::filesystem::absolute(env.spec_dir / m_cwd);
}

std::optional<ExternalCommand> CommandWorkload::external_command(const Assignment& config,
                                                                 const TrialContext& ctx) const {
  ExternalCommand cmd;
  // A simple command is exec'd by the shell, so nothing stands between the
  // tuner and the job: its signal, its exit status and PR_SET_PDEATHSIG reach
  // it directly. dash does not do this by itself.
  const std::string text = m_template.expand(config, m_raw);
  cmd.via_shell = true;
  cmd.argv = {m_shell, "-c", posix_shell(m_shell) ? exec_form(text) : text};
  cmd.cwd = m_cwd;
  cmd.env = m_env;
  for (const auto& [name, value] : config.items()) {
    cmd.env[autotune_env_name(name)] = to_string(value);
    // What the runtime reads as it starts (threads: OMP_NUM_THREADS): the knob's value wins over `env:`.
    if (const KnobInfo* k = find_knob(name); k && !k->process_env.empty())
      cmd.env[std::string(k->process_env)] = to_string(value);
  }
  add_trial_identity(cmd, ctx);
  // Racing: the script may stop once it is surely slower (autotune_trial does).
  if (ctx.stop_below > 0) cmd.env["AUTOTUNE_STOP_BELOW"] = fmt::format("{:.6g}", ctx.stop_below);
  // `import autotune_trial` works in every trial with no install step.
  if (const auto dir = trial_helper_dir(); !dir.empty()) {
    std::string path = dir.string();
    const char* inherited = std::getenv("PYTHONPATH");
    if (auto it = m_env.find("PYTHONPATH"); it != m_env.end()) path += it->second.empty() ? "" : ":" + it->second;
    else if (inherited && *inherited) path += std::string(":") + inherited;
    cmd.env["PYTHONPATH"] = path;
  }
  // Absolute: the script runs in `cwd`, not in the tuner's folder.
  if (!ctx.log_dir.empty()) {
    cmd.result_file = std::filesystem::absolute(ctx.log_dir) / "result.json";
    cmd.keep_result_file = true;
    std::error_code ec;
    std::filesystem::create_directories(ctx.log_dir, ec);
    cmd.env["AUTOTUNE_RESULT"] = cmd.result_file.string();
  } else {
    use_temp_result_file(cmd, ctx, ".result.json");
  }
  cmd.exit_grace_s = m_exit_grace_s;
  cmd.warm = m_warm;
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
  info.remeasure_pairs = 6;  // a user's own job: the printed speedup is the pairs'
  info.summary = "your own training script, one process per trial; prints or writes a JSON result";
  info.options = {
      {"command", OptionType::string, std::nullopt,
       "shell command; {name} is replaced by the parameter's value, quoted for the shell as one word, "
       "{{ and }} are literal braces"},
      {"raw", OptionType::boolean, OptionValue{false},
       "paste {name} values into `command` verbatim, unquoted (values that are meant as shell text)"},
      {"cwd", OptionType::path, OptionValue(std::string()), "working directory (default: the tuner's)"},
      {"env", OptionType::string_map, OptionValue(std::map<std::string, std::string>{}),
       "extra environment variables"},
      {"shell", OptionType::string, OptionValue(std::string("/bin/sh")), "the shell that runs `command` (-c)"},
      {"exit_grace", OptionType::duration, OptionValue{10.0},
       "once $AUTOTUNE_RESULT is written, how long the job may take to exit before it is stopped and its result "
       "kept (a teardown that hangs: NCCL, DataLoader workers); 0: wait up to the timeout, which keeps it too",
       {},
       0.0},
      {"warm", OptionType::boolean, OptionValue{false},
       "keep the job's process between trials (a warm worker): a script that loops over "
       "autotune_trial.trials() pays its start-up once; a failed trial gets a fresh process"},
  };
  info.make = [](const Options& o, const WorkloadEnv& env) -> std::unique_ptr<Workload> {
    return std::make_unique<CommandWorkload>(o, env);
  };
  return info;
}

}  // namespace autotune
