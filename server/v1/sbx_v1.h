// sbx's own HTTP API in `sbx serve`, under /sbx/v1/… (docs/api.md): what the
// Python SDK (python/) speaks. JSON in and out; errors are
// {"message": …, "kind": …} with an HTTP status, `kind` one of
// SandboxNotFound, ImageNotFound, SnapshotNotFound, InvalidArgument,
// Conflict, Unsupported, Internal (the SDK raises a class per kind).
//
// Split by job: sandboxes (server/v1/sbx_v1.cpp: routing, create, get, list,
// wait, terminate, stats), exec streaming (server/v1/sbx_v1_exec.cpp), files
// (server/v1/sbx_v1_files.cpp), snapshots (server/v1/sbx_v1_snapshots.cpp),
// image builds (server/v1/sbx_v1_build.cpp), trajectories of recorded
// sandboxes (server/v1/sbx_v1_trajectory.cpp).
//
// Streams (exec, file upload) use an HTTP/1.1 upgrade: the client sends
// "Connection: Upgrade" + "Upgrade: sbx-stream/1" and no body; the server
// answers "101 UPGRADED", and the connection becomes a raw byte stream. An
// exec speaks frames on it (kind: 1 byte, length: 4 bytes big-endian,
// payload); an upload sends the file's bytes and then shuts its write side.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/sandbox_options.h"
#include "server/http.h"

namespace sbx::server {

/// Exec stream frame kinds (docs/api.md "Exec stream").
enum class FrameKind : uint8_t {
  Stdin = 0,       ///< client → server: bytes for the process's stdin
  Stdout = 1,      ///< server → client
  Stderr = 2,      ///< server → client
  Exit = 3,        ///< server → client, last frame: {"exit_code": N, "timed_out": bool}
  StdinClose = 4,  ///< client → server: end of stdin
  Kill = 5,        ///< client → server: SIGKILL the process (payload ignored)
  Resize = 6,      ///< client → server: {"rows", "cols"} (accepted, ignored: execs run on pipes)
  Error = 7,       ///< server → client, last frame: {"message", "kind"} (the exec could not start)
};

/// One frame: kind, 4-byte big-endian length, payload.
std::string v1_frame(FrameKind kind, std::string_view payload);

/// Thrown by the /sbx/v1 handlers: answered as {"message", "kind"} with `status`.
struct V1Error {
  int status;
  std::string kind;
  std::string message;
};

/// A library error as a V1Error: status and kind from its ErrorKind
/// (server/error_status.h), its message as is.
V1Error classify(const Error& e);

/// A JSON list of strings from a /sbx/v1 body (null: empty). Throws V1Error
/// 400 InvalidArgument naming `what` when it is anything else.
std::vector<std::string> v1_string_list(const nlohmann::json& j, const char* what);

/// POST /sbx/v1/sandboxes's body (docs/api.md) as the engine's options,
/// translated, nothing decided (no id: the handler gives it one). Throws
/// V1Error 400 for a field of the wrong JSON type or value.
engine::SandboxOptions v1_create_options(const nlohmann::json& body);

/// The /sbx/v1 API. One instance per server; thread-safe (each connection
/// on its own thread).
class SbxV1 {
 public:
  SbxV1(engine::Config cfg, std::string default_runtime)
      : engine_(std::move(cfg)), default_runtime_(std::move(default_runtime)) {}

  /// Answers a request whose path starts with /sbx/v1. Never throws: errors
  /// become {"message", "kind"} answers.
  void handle(Connection& c, Request& r);

  /// Kills the process of every running exec stream (server shutdown).
  void cancel_all();

 private:
  // sandboxes (server/v1/sbx_v1.cpp)
  void create(Connection& c, const Request& r);
  void list(Connection& c, const Request& r);
  void get(Connection& c, const std::string& ref);
  void wait(Connection& c, const Request& r, const std::string& ref);
  void terminate(Connection& c, const Request& r, const std::string& ref);
  void stats(Connection& c, const std::string& ref);
  // exec (server/v1/sbx_v1_exec.cpp)
  void exec(Connection& c, const Request& r, const std::string& ref);
  // files (server/v1/sbx_v1_files.cpp)
  void file_read(Connection& c, const Request& r, const std::string& id);
  void file_write(Connection& c, const Request& r, const std::string& id);
  void file_op(Connection& c, const Request& r, const std::string& id, const std::string& op);
  // snapshots (server/v1/sbx_v1_snapshots.cpp)
  void snapshot_fs(Connection& c, const Request& r, const std::string& id);
  void snapshot_dir(Connection& c, const Request& r, const std::string& id);
  void checkpoint(Connection& c, const Request& r, const std::string& id);
  void restore(Connection& c, const Request& r, const std::string& name);
  void snapshot_list(Connection& c);
  void snapshot_remove(Connection& c, const std::string& name);
  // Named volumes (sbx_v1_volumes.cpp).
  void volume_list(Connection& c);
  void volume_create(Connection& c, const Request& r);
  void volume_get(Connection& c, const std::string& name);
  void volume_remove(Connection& c, const Request& r, const std::string& name);
  // trajectories (server/v1/sbx_v1_trajectory.cpp)
  /// GET …/trajectory: the recorded trajectory as JSON lines (header, steps).
  void trajectory(Connection& c, const std::string& ref);
  /// POST …/branch {"step", "count", "name"}: sandboxes with that step's files.
  void branch(Connection& c, const Request& r, const std::string& ref);
  /// POST …/replay {"image", "until", "keep", "tolerate_regex", "tolerate_path"}: the steps
  /// re-run in a fresh sandbox and compared with the record.
  void replay(Connection& c, const Request& r, const std::string& ref);
  /// Starts watch() for sandbox `id`, just made (a branch's, a replay's).
  void start_watch(const std::string& id);
  // builds (server/v1/sbx_v1_build.cpp)
  /// POST /sbx/v1/build: a context tar in, the build's events out as JSON lines.
  void build(Connection& c, const Request& r);

  /// The full id of `ref` (id, unique prefix, name). Throws V1Error 404.
  std::string resolve(const std::string& ref);
  /// The sandbox as the SDK sees it: id, name, image, runtime, status, labels, times, end.
  nlohmann::json sandbox_json(const std::string& id);
  /// Runs `args` in sandbox `id` with no stdin; its stdout (at most `max` bytes) and exit code.
  std::pair<int, std::string> run_capture(const std::string& id, const std::vector<std::string>& args,
                                          size_t max = 16u << 20);
  /// After create: reaps the sandbox's init (the server's child on native)
  /// and removes its snapshot copies once it ended.
  /// Until the sandbox ends; `created`: its state as create left it (engine reap).
  void watch(const std::string& id, const runtime::SandboxState& created);

  engine::Engine engine_;
  std::string default_runtime_;
  std::mutex mu_;
  std::set<int> cancel_fds_;  ///< write ends: one byte kills that exec's process
};

/// The server's one SbxV1 (made on first use).
SbxV1& sbx_v1(const engine::Config& cfg, const std::string& default_runtime);

}  // namespace sbx::server
