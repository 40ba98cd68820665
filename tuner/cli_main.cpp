#include <iostream>

#include "tuner/cli.hpp"
#include "tuner/cli_commands.hpp"
#include "tuner/cli_common.hpp"

namespace autotune {

int cli_main(int argc, char** argv) {
  remember_command_line(argc, argv);
  CLI::App app{
      "autotune: finds the fastest training-pipeline configuration that fits in memory.\n"
      "Measures real candidates of batch_size, num_workers, prefetch_factor, pin_memory,\n"
      "precision, grad_accum (and any knob you declare) and writes the best as YAML.\n"
      "With no --config it runs an embedded default on this machine (cuda if a GPU is\n"
      "present, else the cpu workload).",
      "autotune"};
  app.set_version_flag("--version", "autotune 0.1.0");
  app.require_subcommand(0, 1);
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitBadInput;
  }
  // A failure of the tool itself that no subcommand turned into a value ends
  // here: one line, its own status, never a signal.
  try {
    if (validate->parsed()) return run_validate();
    if (sweep->parsed()) return run_sweep();
    if (trial->parsed()) return run_trial();
    if (compare->parsed()) return run_compare_cmd();
    if (report->parsed()) return run_report();
    return tune();
  } catch (const std::exception& e) {
    std::cerr << "autotune: failed: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "autotune: failed: an unknown exception\n";
  }
  return kExitToolFailure;
}

}  // namespace autotune
