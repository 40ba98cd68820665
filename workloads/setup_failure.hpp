#pragma once
// A trial that failed because the set-up is broken, not its configuration:
// the command's program is not found, the Python that runs it lacks a
// module, a file it names is missing, or it exits 0 without a result. Every
// trial of the run then fails the same way, whatever its knobs
// (tuner/record/setup_stop.hpp stops the run on it).
//
// Read from what the job left (its exit status and the tail of its standard
// error) when a trial failed as `error`, and kept on the Outcome as two
// labels (setup_failure, setup_missing), so that the journal and the worker
// wire carry it; setup_failure_of() is the one way it is read back.
#include <optional>
#include <string>
#include <string_view>

#include "core/outcome.hpp"

namespace autotune {

enum class SetupFailure {
  command_not_found,  // the shell's exit status 127: no such program
  module_not_found,   // Python's ModuleNotFoundError / "No module named"
  file_not_found,     // "can't open file", "No such file or directory"
  no_result,          // exited 0, and no JSON result
};

struct SetupFault {
  SetupFailure kind = SetupFailure::command_not_found;
  std::string missing;  // the program, module or file it names; empty when it names none
  bool operator==(const SetupFault&) const = default;
};

std::string_view to_string(SetupFailure k);
std::optional<SetupFailure> parse_setup_failure(std::string_view s);

// A failed job's set-up failure, from its exit status, the tail of its
// standard error and whether it gave a result; nullopt when it shows none.
// Only the last few lines count, up to the final Python exception line: a
// warning printed earlier ("No module named 'apex'") is not the failure.
std::optional<SetupFault> read_setup_failure(int exit_code, std::string_view stderr_tail, bool has_result);

// On an Outcome, as labels, and back.
void mark_setup_failure(Outcome& o, const SetupFault& f);
std::optional<SetupFault> setup_failure_of(const Outcome& o);

// What failed, in words: "the command's program 'pytohn3' was not found
// (exit status 127)".
std::string setup_cause(const SetupFault& f);
// What to change: "correct the program's name in workload.command, ...".
std::string setup_fix(const SetupFault& f);

}  // namespace autotune
