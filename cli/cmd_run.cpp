// sbx run (implemented with runtime/).
#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace sbx::cli {
void register_run_command(CLI::App&, Globals&, Action&) {}
}  // namespace sbx::cli
