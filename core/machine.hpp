#pragma once
// What the machine autotune runs on offers, as the rules and the summary
// name it.

namespace autotune {

// The cores this process may run on (its affinity), at least 1.
int usable_cores();

}  // namespace autotune
