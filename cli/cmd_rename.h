// sbx rename (cli/cmd_rename.cpp).
#pragma once
#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace sbx::cli {

/// Registers `sbx rename SANDBOX NAME`.
void register_rename_command(CLI::App& app, Globals& g, Action& action);

}  // namespace sbx::cli
