// Recorded sandboxes' commands: sbx trajectory show|export
// (cli/cmd_trajectory.cpp), sbx branch (cli/cmd_branch.cpp), sbx replay
// (cli/cmd_replay.cpp). Registered as cli/commands.h's register_* are.
#pragma once
#include "cli/commands.h"

namespace sbx::cli {

void register_trajectory_command(CLI::App& app, Globals& g, Action& action);
void register_branch_command(CLI::App& app, Globals& g, Action& action);
void register_replay_command(CLI::App& app, Globals& g, Action& action);

}  // namespace sbx::cli
