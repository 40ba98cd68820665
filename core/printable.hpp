#pragma once
// Text that came from a job (its stderr, its result, a failure's reason) made
// safe to print on a terminal: a job's escape codes must not recolour, move
// the cursor in, retitle or clear the user's terminal through our output.
#include <string>
#include <string_view>

namespace autotune {

// `text` with every control character except newline and tab written out
// visibly as \xHH (C0, DEL, and C1 whether UTF-8 encoded, U+0080..U+009F, or
// a raw byte 0x80..0x9F); bytes that are not valid UTF-8 likewise. Valid
// UTF-8 text passes unchanged.
std::string printable(std::string_view text);

}  // namespace autotune
