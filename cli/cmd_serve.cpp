// sbx serve: the Docker Engine API on a unix socket (server/server.h), so
// that docker, docker-py and dockerode drive sbx sandboxes unchanged.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"
#include "server/server.h"

namespace sbx::cli {

void register_serve_command(CLI::App& app, Globals& g, Action& action) {
  auto opts = std::make_shared<server::ServeOptions>();
  auto* cmd = app.add_subcommand("serve", "Serve the Docker Engine API (docker, docker-py, dockerode) on a socket");
  cmd->footer(
      "Runs in the foreground until SIGTERM/SIGINT; sandboxes it started keep running after it stops.\n"
      "Example: DOCKER_HOST=unix:///run/sbx/docker.sock docker run --rm busybox echo hi\n"
      "The socket is root's door to the host: mode 0660 root:sbx when the group sbx exists, else 0600.\n"
      "See 'man sbx-serve' for the endpoints served and how containers map onto sandboxes.");
  cmd->add_option("--socket", opts->socket, "Unix socket to listen on")->capture_default_str();
  cmd->add_option("--tcp", opts->tcp, "Also listen on loopback TCP ADDR:PORT (127.0.0.0/8 only; needs --token-file)")
      ->type_name("ADDR:PORT");
  cmd->add_option("--token-file", opts->token_file, "File with the bearer token TCP clients must send (mode 0600)")
      ->type_name("FILE");
  cmd->add_option("--e2b", opts->e2b,
                  "Also serve an E2B-compatible API (REST + envd) on loopback ADDR:PORT (needs --token-file; docs/e2b.md)")
      ->type_name("ADDR:PORT");
  cmd->add_option("--runtime", opts->runtime,
                  "Runtime of containers that name none (HostConfig.Runtime): native or gvisor; default from $SBX_RUNTIME")
      ->envname("SBX_RUNTIME")
      ->capture_default_str();
  cmd->callback([&g, &action, opts] {
    action = [&g, opts] {
      opts->engine = {g.root, g.run_root};
      opts->ready = [](const std::string& where) { std::cerr << "sbx serve: listening on " << where << std::endl; };
      server::serve(*opts);
      return 0;
    };
  });
}

}  // namespace sbx::cli
