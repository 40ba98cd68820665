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
    "  130  interrupted (Ctrl-C): what was measured is kept; it prints the command that resumes\n"
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
  auto tune = add_tune_options(app);
  auto* validate = app.add_subcommand("validate", "check a space.yaml and print the resolved space");
  auto run_validate = add_validate_command(*validate);
  auto* sweep = app.add_subcommand("sweep", "measure every valid configuration and write a replay table (CSV)");
  auto run_sweep = add_sweep_command(*sweep);
  auto* compare = app.add_subcommand("compare", "run strategies x seeds on one workload; CSV, summary table, plots");
  auto run_compare_cmd = add_compare_command(*compare);
  auto* trial = app.add_subcommand("trial", "measure one configuration in this process; prints its outcome as JSON");
  auto run_trial = add_trial_command(*trial);
  auto* report = app.add_subcommand("report", "a run's journal as one HTML page (plots, failures, trials) or --text");
  auto run_report = add_report_command(*report);
  bool python_path = false;
  app.add_flag("--python-path", python_path,
               "print the folder of the autotune_trial helper, to put on PYTHONPATH when you run your script by hand");
  auto* help = app.add_subcommand("help", "show the help of autotune or of one command (autotune help validate)");
  std::string topic;
  help->add_option("command", topic, "the command whose help to show");
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
  if (python_path) {
    const std::filesystem::path dir = trial_helper_dir();
    if (dir.empty()) {
      std::cerr << "autotune: the autotune_trial helper is not beside this binary (python/ or "
                   "../share/autotune/python): rebuild or reinstall autotune\n";
      return kExitFailure;
    }
    std::cout << dir.string() << "\n";
    return kExitOk;
  }
  if (help->parsed()) {
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
  try {
    if (validate->parsed()) return run_validate();
    if (sweep->parsed()) return run_sweep();
    if (trial->parsed()) return run_trial();
    if (compare->parsed()) return run_compare_cmd();
    if (report->parsed()) return run_report();
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
    return tune();
  } catch (const std::exception& e) {
    std::cerr << "autotune: failed: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "autotune: failed: an unknown exception\n";
  }
  return kExitToolFailure;
}

}  // namespace autotune
