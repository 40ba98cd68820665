#pragma once
// Short text helpers every layer shares: a byte count for people, the first
// line of a reason.
#include <string>
#include <string_view>

namespace autotune {

// "512 B", "1.5 KiB", "8.0 GiB": binary units, one decimal above bytes.
std::string format_bytes(double bytes);

// The first line of `text` (for one-line displays of a reason).
std::string_view first_line(std::string_view text);

}  // namespace autotune
