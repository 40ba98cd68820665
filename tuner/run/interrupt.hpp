#pragma once
// Ctrl-C handling: SIGINT, SIGTERM and SIGHUP (the terminal closed) each ask
// the run to stop after writing what it has; code that waits (the runner)
// polls interrupted().
#include "core/outcome.hpp"

namespace autotune {

void install_interrupt_handler();
bool interrupted();
void request_interrupt();
void clear_interrupt();

// A trial killed by our own Ctrl-C (or SIGTERM, SIGHUP) says nothing about its
// configuration: the tuner runs it again on --resume, a sweep leaves its row
// out, rather than either recording a failure.
bool cut_short_by_interrupt(const Outcome& o);

}  // namespace autotune
