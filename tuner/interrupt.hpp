#pragma once
// Ctrl-C handling: the first SIGINT (or SIGTERM) asks the run to stop after
// writing what it has; code that waits (the runner) polls interrupted().
namespace autotune {

void install_interrupt_handler();
bool interrupted();
void request_interrupt();
void clear_interrupt();

}  // namespace autotune
