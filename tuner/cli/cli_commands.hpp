#pragma once
// Subcommands register their options on a CLI11 app and run after parsing.
// Only tuner/cli_*.cpp include this (and so CLI11).
#include <functional>

#include <CLI/CLI.hpp>

namespace autotune {

// Each returns the action to run when that (sub)command was chosen.
std::function<int()> add_tune_options(CLI::App& app);       // the main job: `autotune --config ...`
std::function<int()> add_validate_command(CLI::App& app);
std::function<int()> add_sweep_command(CLI::App& app);
std::function<int()> add_trial_command(CLI::App& app);
std::function<int()> add_compare_command(CLI::App& app);
std::function<int()> add_report_command(CLI::App& app);

}  // namespace autotune
