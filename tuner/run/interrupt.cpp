#include "tuner/run/interrupt.hpp"

#include <csignal>

namespace autotune {
namespace {
volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_signal(int) { g_interrupted = 1; }
}  // namespace

void install_interrupt_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: blocking waits return EINTR and look at the flag
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

bool interrupted() { return g_interrupted != 0; }
void request_interrupt() { g_interrupted = 1; }
void clear_interrupt() { g_interrupted = 0; }

bool cut_short_by_interrupt(const Outcome& o) {
  return interrupted() && !o.ok() && (o.status == Status::timeout || o.status == Status::crash);
}

}  // namespace autotune
