// sbx serve: the Docker Engine API on a unix socket (server/server.h), so
// that docker, docker-py and dockerode drive sbx sandboxes unchanged.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"
#include "common/units.h"
#include "server/server.h"

namespace sbx::cli {

void register_serve_command(CLI::App& app, Globals& g, Action& action) {
  auto opts = std::make_shared<server::ServeOptions>();
  auto header_timeout = std::make_shared<std::string>("10s");
  auto idle_timeout = std::make_shared<std::string>("60s");
  auto queue_timeout = std::make_shared<std::string>("8s");
  auto* cmd = app.add_subcommand("serve", "Serve the Docker Engine API (docker, docker-py, dockerode) on a socket");
  cmd->footer(
      "Runs in the foreground until SIGTERM/SIGINT; sandboxes it started keep running after it stops.\n"
      "Example: DOCKER_HOST=unix:///run/sbx/docker.sock docker run --rm busybox echo hi\n"
      "The socket is root's door to the host: mode 0660 root:sbx when the group sbx exists, else 0600.\n"
      "Bounds: request heads 64 KiB, JSON bodies 4 MiB (memory), tar and upload bodies 1 GiB (spooled to disk\n"
      "under --root); a TCP or E2B request is authorized on its headers before its body is read.\n"
      "See 'man sbx-serve' for the endpoints served and how containers map onto sandboxes.");
  auto* socket_opt = cmd->add_option("--socket", opts->socket,
                                     "Unix socket to listen on (default: docker.sock in --run-root, /run/sbx/docker.sock)");
  cmd->add_option("--tcp", opts->tcp, "Also listen on loopback TCP ADDR:PORT (127.0.0.0/8 only; needs --token-file)")
      ->type_name("ADDR:PORT");
  cmd->add_option("--token-file", opts->token_file, "File with the bearer token TCP clients must send (mode 0600)")
      ->type_name("FILE");
  cmd->add_option("--e2b", opts->e2b,
                  "Also serve an E2B-compatible API (REST + envd) on loopback ADDR:PORT (needs --token-file; docs/e2b.md)")
      ->type_name("ADDR:PORT");
  cmd->add_option("--sandbox-fusion", opts->sandbox_fusion,
                  "Also serve a SandboxFusion-compatible API (/run_code, /run_jupyter, /v1/ping, /metrics) on "
                  "ADDR:PORT: loopback only, unless --token-file is given (then URLs start with /TOKEN; "
                  "docs/sandbox-fusion.md)")
      ->type_name("ADDR:PORT");
  cmd->add_option("--languages", opts->languages_file,
                  "SandboxFusion languages table (JSON: name -> {image, file, compile, run}) over the defaults")
      ->type_name("FILE");
  cmd->add_option("--trajectory-dir", opts->trajectory_dir,
                  "Let /sbx/v1/trajectories/* read trajectory files by ?path= under DIR (nothing outside it); "
                  "without it, only uploaded ones")
      ->type_name("DIR");
  cmd->add_option("--max-concurrency", opts->max_concurrency,
                  "SandboxFusion sandboxes running at once; more requests wait (default: min(cores, GiB of RAM / 2))")
      ->type_name("N")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--queue-timeout", *queue_timeout,
                  "Most time a SandboxFusion request waits for a sandbox slot; then 504 (verl retries on 504)")
      ->type_name("DURATION")
      ->capture_default_str();
  cmd->add_option("--runtime", opts->runtime,
                  "Runtime of containers that name none (HostConfig.Runtime): native or gvisor; default from $SBX_RUNTIME")
      ->envname("SBX_RUNTIME")
      ->capture_default_str();
  cmd->add_option("--max-connections", opts->limits.max_connections,
                  "Most connections open at once on each listener (default: a quarter of RLIMIT_NOFILE, at most 4096)")
      ->type_name("N")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-client-connections", opts->limits.max_client_connections,
                  "Most connections open at once from one client (a TCP address, a unix-socket uid) on each listener "
                  "(default 1024)")
      ->type_name("N")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--header-timeout", *header_timeout,
                  "Most time a request head may take, from the connection or its first byte; then it is closed")
      ->type_name("DURATION")
      ->capture_default_str();
  cmd->add_option("--idle-timeout", *idle_timeout,
                  "Most time without a byte from a client: between requests on a kept-alive connection, within a "
                  "body (attach, exec, logs and event streams are exempt)")
      ->type_name("DURATION")
      ->capture_default_str();
  cmd->callback([&g, &action, opts, socket_opt, header_timeout, idle_timeout, queue_timeout] {
    // The socket follows --run-root/SBX_RUN_ROOT, as the rest of the live state
    // does: a second store's server never takes the first one's socket.
    if (socket_opt->count() == 0) opts->socket = g.run_root + "/docker.sock";
    action = [&g, opts, header_timeout, idle_timeout, queue_timeout] {
      opts->queue_timeout = units::parse_duration(*queue_timeout, "--queue-timeout");
      opts->limits.header_timeout = units::parse_duration(*header_timeout, "--header-timeout");
      opts->limits.idle_timeout = units::parse_duration(*idle_timeout, "--idle-timeout");
      opts->engine = {g.root, g.run_root};
      opts->ready = [](const std::string& where) { std::cerr << "sbx serve: listening on " << where << std::endl; };
      server::serve(*opts);
      return 0;
    };
  });
}

}  // namespace sbx::cli
