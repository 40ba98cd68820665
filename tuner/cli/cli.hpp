#pragma once
// The command line. One file per subcommand (cli_*.cpp); CLI11 stays in them.
namespace autotune {

// Exit codes.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;      // the run could not complete (e.g. no feasible config)
inline constexpr int kExitBadInput = 2;     // bad config file or command line; nothing written
inline constexpr int kExitToolFailure = 3;  // the tool itself failed (a full disk, a bug); what was measured is kept
inline constexpr int kExitInterrupted = 130;

int cli_main(int argc, char** argv);

}  // namespace autotune
