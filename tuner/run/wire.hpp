#pragma once
// One wire format for a trial's Outcome wherever it crosses a process
// boundary: the journal's JSON (tuner/record/journal.hpp `to_json(Outcome)`),
// written by a forked trial child to its pipe and printed by `autotune
// trial` on a Slurm node as its last line of standard output, and read back
// here, so a trial measured on a node journals exactly what a local one does
// (labels, metrics and seconds included).
#include <string>

#include "workloads/workload.hpp"

namespace autotune {

// The line a trial process sends (no newline).
std::string outcome_wire_line(const Outcome& o);

// What a trial process produced: a timeout, a signal or a failed exit is
// classified as for any child (with its output tails in the reason);
// otherwise `payload` (the pipe's contents, or standard output whose last
// non-empty line is read) must hold the Outcome.
Outcome outcome_from_wire(const ExternalRun& run, const std::string& payload, const TrialContext& ctx);

}  // namespace autotune
