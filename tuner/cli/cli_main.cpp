#include <algorithm>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "tuner/cli/cli.hpp"
#include "tuner/run/builtin_worker.hpp"
#include "tuner/cli/cli_commands.hpp"
#include "tuner/cli/cli_common.hpp"
#include "tuner/spec/spec_checks.hpp"
#include "workloads/command.hpp"

namespace autotune {
namespace {

constexpr const char* kFooter =
    "Exit status:\n"
    "  0    done: a best configuration was found\n"
    "  1    the run completed without a configuration that ran ok\n"
    "  2    bad input (config file or command line), or a journal that holds an earlier\n"
    "       run's measurements: nothing was run or written\n"
    "  3    the tool itself failed (a full disk, a bug): what was measured is kept\n"
    "  130  interrupted (Ctrl-C, SIGTERM, SIGHUP): what was measured is kept; it prints the command that resumes\n"
    "\n"
    "What a command trial gets in its environment:\n"
    "  AUTOTUNE_<NAME>       each parameter's value (AUTOTUNE_BATCH_SIZE, AUTOTUNE_NUM_WORKERS, ...)\n"
    "  AUTOTUNE_TRIAL        the trial's number (as in the journal and its log folder trial-N/)\n"
    "  AUTOTUNE_RESULT       a file the job may write its JSON result to\n"
    "  AUTOTUNE_TRIAL_START  the trial's start, Unix seconds (the start-up the job paid)\n"
    "  AUTOTUNE_STOP_BELOW   when racing: the samples/s a trial must beat to matter\n"
    "  PYTHONPATH            begins with the folder of the autotune_trial helper\n"
    "\n"
    "autotune help COMMAND shows a command's options.";

// Every long and short flag of `app`, for a suggestion.
std::vector<std::string> flag_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : o->get_snames()) names.push_back("-" + s);
  }
  return names;
}

// The names of the app's commands (validate, sweep, ...).
std::vector<std::string> command_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  return names;
}

// The subcommand the command line named, or the app itself.
const CLI::App& innermost(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands()) return *sub;
  return app;
}

// CLI11's message, and for each word it did not expect a near flag or
// command, as for a misspelt key in a spec.
void report_parse_error(const CLI::App& app, const CLI::ParseError& e) {
  std::cerr << "autotune: " << e.what() << "\n";
  const CLI::App& where = innermost(app);
  const std::vector<std::string> commands = command_names(app);
  for (const std::string& word : where.remaining()) {
    const std::string flag = word.substr(0, word.find('='));
    const std::string hint = flag.rfind('-', 0) == 0 ? did_you_mean(flag, flag_names(where))
                                                     : did_you_mean(flag, commands);
    if (!hint.empty()) std::cerr << "autotune: " << flag << ": " << hint << "\n";
  }
  // `autotune valdate my.yaml`: the mistyped command was taken as the config.
  if (&where == &app)
    if (const auto* config = app.get_option("config"); config->count() > 0)
      if (const std::string hint = did_you_mean(config->as<std::string>(), commands); !hint.empty())
        std::cerr << "autotune: " << config->as<std::string>() << ": " << hint << "\n";
  std::cerr << "autotune: see " << (&where == &app ? "autotune --help" : "autotune help " + where.get_name()) << "\n";
}

// The commands' actions and what the command line sets, bound by CLI11.
struct CommandActions {
  std::function<int()> tune, validate, sweep, compare, trial, report;
  CLI::App *validate_app = nullptr, *sweep_app = nullptr, *compare_app = nullptr, *trial_app = nullptr,
           *report_app = nullptr, *help_app = nullptr;
  bool python_path = false;
  std::string topic;  // of `autotune help TOPIC`
};

void add_commands(CLI::App& app, CommandActions& c) {
  c.tune = add_tune_options(app);
  c.validate_app = app.add_subcommand("validate", "check a space.yaml and print the resolved space");
  c.validate = add_validate_command(*c.validate_app);
  c.sweep_app = app.add_subcommand("sweep", "measure every valid configuration and write a replay table (CSV)");
  c.sweep = add_sweep_command(*c.sweep_app);
  c.compare_app = app.add_subcommand("compare", "run strategies x seeds on one workload; CSV, summary table, plots");
  c.compare = add_compare_command(*c.compare_app);
  c.trial_app = app.add_subcommand("trial", "measure one configuration in this process; prints its outcome as JSON");
  c.trial = add_trial_command(*c.trial_app);
  c.report_app = app.add_subcommand("report", "a run's journal as one HTML page (plots, failures, trials) or --text");
  c.report = add_report_command(*c.report_app);
  app.add_flag("--python-path", c.python_path,
               "print the folder of the autotune_trial helper, to put on PYTHONPATH when you run your script by hand");
  c.help_app = app.add_subcommand("help", "show the help of autotune or of one command (autotune help validate)");
  c.help_app->add_option("command", c.topic, "the command whose help to show");
}

int print_python_path() {
  const std::filesystem::path dir = trial_helper_dir();
  if (dir.empty()) {
    std::cerr << "autotune: the autotune_trial helper is not beside this binary (python/ or "
                 "../share/autotune/python): rebuild or reinstall autotune\n";
    return kExitFailure;
  }
  std::cout << dir.string() << "\n";
  return kExitOk;
}

int show_help_topic(const CLI::App& app, const std::string& topic) {
  if (topic.empty()) {  // app.help() would show the selected subcommand's: help's own
    std::cout << app.get_formatter()->make_help(&app, "autotune", CLI::AppFormatMode::Normal);
    return kExitOk;
  }
  const std::vector<std::string> names = command_names(app);
  if (std::find(names.begin(), names.end(), topic) != names.end()) {
    std::cout << app.get_subcommand(topic)->help();
    return kExitOk;
  }
  const std::string hint = did_you_mean(topic, names);
  std::cerr << "autotune help: no command '" << topic << "'" << (hint.empty() ? "" : "; " + hint) << "\n";
  return kExitBadInput;
}

// A failure of the tool itself that no subcommand turned into a value ends
// here: one line, its own status, never a signal.
int run_chosen_command(const CLI::App& app, const CommandActions& c) {
  try {
    if (c.validate_app->parsed()) return c.validate();
    if (c.sweep_app->parsed()) return c.sweep();
    if (c.trial_app->parsed()) return c.trial();
    if (c.compare_app->parsed()) return c.compare();
    if (c.report_app->parsed()) return c.report();
    // `autotune valdate x.yaml` reads as a config named `valdate`: a word
    // that is no file but nearly a command is the command mistyped.
    if (const auto* config = app.get_option("config"); config->count() > 0) {
      const std::string given = config->as<std::string>();
      std::error_code ec;
      if (!std::filesystem::exists(given, ec) && given.find_first_of("./") == std::string::npos)
        if (const std::string hint = did_you_mean(given, command_names(app)); !hint.empty()) {
          std::cerr << "autotune: no file or command '" << given << "'; " << hint << "\n";
          return kExitBadInput;
        }
    }
    return c.tune();
  } catch (const std::exception& e) {
    std::cerr << "autotune: failed: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "autotune: failed: an unknown exception\n";
  }
  return kExitToolFailure;
}

}  // namespace

int cli_main(int argc, char** argv) {
  // The tuner's own warm worker for the built-in harness (tuner/run/builtin_worker.hpp).
  if (argc == 2 && std::string_view(argv[1]) == kWorkerArgument) return run_builtin_worker();
  remember_command_line(argc, argv);
  CLI::App app{
      "autotune: finds the fastest training-pipeline configuration that fits in memory.\n"
      "Measures real candidates of batch_size, num_workers, prefetch_factor, pin_memory,\n"
      "precision, grad_accum (and any knob you declare) and writes the best as YAML.\n"
      "Give your space.yaml (autotune space.yaml); with none it runs an embedded default\n"
      "on this machine (cuda if a GPU is present, else the cpu workload).",
      "autotune"};
  app.set_version_flag("--version", "autotune 0.1.0");
  app.require_subcommand(0, 1);
  app.footer(kFooter);
  CommandActions c;
  add_commands(app, c);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e) == 0 ? kExitOk : kExitBadInput;
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e) == 0 ? kExitOk : kExitBadInput;
  } catch (const CLI::Success& e) {  // --version
    return app.exit(e) == 0 ? kExitOk : kExitBadInput;
  } catch (const CLI::ParseError& e) {
    report_parse_error(app, e);
    return kExitBadInput;
  }
  if (c.python_path) return print_python_path();
  if (c.help_app->parsed()) return show_help_topic(app, c.topic);
  return run_chosen_command(app, c);
}

}  // namespace autotune
