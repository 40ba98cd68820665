#pragma once
// Writing a file so that no reader ever sees half of it: the text goes to a
// temporary file beside it, is synced, and is renamed over it. The warm
// protocol's messages, a trial's result and tuned.yaml are written so.
#include <filesystem>
#include <string>

namespace autotune {

// False, with the reason in `error` when given, when the file cannot be
// written; the previous file, if any, is then left as it was. The folder is
// made when missing. Never throws.
bool write_atomically(const std::filesystem::path& path, const std::string& text, std::string* error = nullptr);

}  // namespace autotune
