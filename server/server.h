// `sbx serve`: the listeners (a unix socket; optionally loopback TCP with a
// bearer token, and the E2B endpoint), each with its API on the server core
// (server/http_server.h), and shutdown on SIGTERM/SIGINT.
#pragma once
#include <chrono>
#include <functional>
#include <string>

#include "engine/engine.h"
#include "server/http_server.h"

namespace sbx::server {

struct ServeOptions {
  engine::Config engine;
  std::string socket = "/run/sbx/docker.sock";  ///< unix socket path; empty: none
  std::string tcp;         ///< "127.0.0.1:PORT" (loopback only); empty: none
  std::string token_file;  ///< bearer token for TCP (required with tcp)
  std::string runtime = "native";  ///< backend of containers whose config names none
  /// E2B-compatible endpoint (server/e2b/e2b.h) on loopback "127.0.0.1:PORT";
  /// empty: none. Needs token_file: its token is the E2B API key.
  std::string e2b;
  /// SandboxFusion-compatible endpoint (server/sandbox_fusion/api.h) on
  /// "ADDR:PORT"; empty: none. Loopback only unless token_file is given
  /// (then its token starts every path: http://HOST:PORT/TOKEN/run_code).
  std::string sandbox_fusion;
  std::string languages_file;  ///< its languages table over the defaults (--languages); empty: defaults
  /// The host directory /sbx/v1 reads trajectory files from by path
  /// (--trajectory-dir; server/v1/trajectory_dir.h); empty: uploads only.
  std::string trajectory_dir;
  /// Its sandboxes running at once; 0: from the cores and memory
  /// (min(cores, GiB of RAM / 2), at least 1).
  int max_concurrency = 0;
  /// Its most wait for a slot before a 504 (verl retries on 504).
  std::chrono::milliseconds queue_timeout{8000};
  /// Connection bounds and time-outs. max_connections 0: a quarter of the
  /// open-file limit (RLIMIT_NOFILE), at most 4096; max_client_connections
  /// 0: 1024, at most max_connections.
  ServerLimits limits{0, 0};
  /// Called once the listeners are ready (e.g. to print where).
  std::function<void(const std::string&)> ready;
};

/// Serves the Docker Engine API (server/docker/api.h) until SIGTERM or SIGINT, then
/// stops accepting, kills the processes of running execs (their clients lose
/// their stream), waits a moment for connections to end and returns. Running
/// sandboxes are left running. The unix socket is created mode 0660 owned by
/// root:sbx when the group `sbx` exists, else 0600; a stale socket file at
/// the path is replaced, a live one (a server answers) is an error. Must be
/// called before the process starts other threads (it sets the signal mask
/// every thread inherits). Throws sbx::Error: socket in use, a TCP address
/// that is not loopback, TCP without a token file, a token file others can
/// read, bind/listen failures, limits below 1.
void serve(const ServeOptions& opts);

}  // namespace sbx::server
