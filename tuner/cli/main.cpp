#include "tuner/cli/cli.hpp"

int main(int argc, char** argv) { return autotune::cli_main(argc, argv); }
