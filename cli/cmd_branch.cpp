// sbx branch: new sandboxes with the files of a recorded trajectory's step
// (engine::Engine::branch). Prints their ids.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/trajectory_commands.h"
#include "cli/usage.h"
#include "common/error.h"
#include "engine/trajectory_ops.h"

namespace sbx::cli {

void register_branch_command(CLI::App& app, Globals& g, Action& action) {
  auto req = std::make_shared<engine::trajectory::BranchRequest>();
  CLI::App* cmd = app.add_subcommand("branch", "New sandboxes with the files of a recorded step");
  set_usage(*cmd, {"sbx branch [OPTIONS] SANDBOX|FILE --at STEP"});
  cmd->footer(
      "Each new sandbox starts from the recorded image and spec with the files as they were right after\n"
      "STEP (from the trajectory's file-system checkpoints), records a trajectory of its own whose\n"
      "header names its parent, and prints its id. Processes are not restored: a branch starts with\n"
      "only its idle init. Steps of a gVisor sandbox are not restorable (its writable layer is not on\n"
      "the host). FILE: a trajectory.jsonl (objects/ beside it) or an 'sbx trajectory export' archive.");
  cmd->add_option("SOURCE", req->source, "A recorded sandbox (id, prefix, name) or a trajectory file")->required();
  cmd->add_option("--at", req->at, "The step whose resulting files the sandboxes get (1-based)")->required();
  cmd->add_option("--count", req->count, "How many sandboxes (default 1)");
  cmd->add_option("--name", req->name, "Name them PREFIX (one) or PREFIX-1, PREFIX-2, ...");
  cmd->callback([req, &g, &action] {
    action = [req, &g] {
      auto engine = make_engine(g);
      for (const auto& id : engine::trajectory::branch(engine, *req)) std::cout << id << "\n";
      return 0;
    };
  });
}

}  // namespace sbx::cli
