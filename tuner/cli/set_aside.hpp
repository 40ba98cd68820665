#pragma once
// Keeping an earlier run's files when a new run starts afresh: nothing
// measured is deleted or overwritten, it is moved to a free name.
#include <filesystem>
#include <utility>
#include <vector>

namespace autotune {

// Moves each of `paths` that exists (a file or a folder) to `<stem>-N<ext>`
// beside it, with one N for all of them: the smallest N >= 1 at which none of
// the new names exists, so the files of one run stay together
// (tuned.journal.jsonl -> tuned.journal-1.jsonl, tuned.journal.trials ->
// tuned.journal-1.trials). Returns (from, to) for what it moved. Throws
// std::filesystem::filesystem_error when a move fails.
std::vector<std::pair<std::filesystem::path, std::filesystem::path>> set_aside(
    const std::vector<std::filesystem::path>& paths);

}  // namespace autotune
