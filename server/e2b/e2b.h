// An E2B-compatible endpoint of `sbx serve` (sbx serve --e2b 127.0.0.1:PORT):
// the unmodified `e2b` SDKs (npm `e2b`, PyPI `e2b`), pointed at it with
// E2B_API_URL and E2B_SANDBOX_URL (docs/e2b.md), create sandboxes from sbx
// images, run commands and move files.
//
// E2B's SDK talks to two services:
//   - the REST API (https://api.e2b.app, its openapi.yml): the sandbox
//     lifecycle — POST /sandboxes (/v2/sandboxes), GET /sandboxes,
//     GET/DELETE /sandboxes/{id}, POST /sandboxes/{id}/timeout, /refreshes,
//     /connect. Authenticated by X-API-Key (the serve token).
//   - envd, the daemon E2B runs inside each sandbox, over the Connect
//     protocol (https://connectrpc.com/docs/protocol: unary JSON POSTs,
//     server streams in 5-byte envelopes): process.Process (Start, Connect,
//     List, SendInput, SendSignal, CloseStdin, Update) and
//     filesystem.Filesystem (Stat, ListDir, MakeDir, Remove, Move), plus
//     plain HTTP GET/POST /files and GET /health. sbx does not ship envd:
//     the server is envd's side, reaching into the sandbox through the engine
//     (Engine::exec for processes and the small file operations, copy_in /
//     copy_out with `sbx cp`'s hostile-path rules for file contents). Every
//     envd request names its sandbox with the E2b-Sandbox-Id header (the SDK
//     always sends it) and carries the sandbox's X-Access-Token.
//
// Sandboxes are sbx sandboxes created detached from the image the template
// names, holding (no first command), labelled sbx.e2b=1; the server kills
// and removes each when its timeout passes (E2B's default 300 s;
// setTimeout changes it) and all of them when it stops. Processes started through envd belong to the
// sandbox, not to a connection: a client that goes away stops receiving
// their output, and Connect re-attaches.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "server/http.h"

namespace sbx::server {

// ---- the Connect protocol (server/e2b/e2b_connect.cpp) ---------------------------

/// A Connect error: its code name ("not_found", "invalid_argument", …,
/// https://connectrpc.com/docs/protocol#error-codes) and message.
struct ConnectError {
  std::string code;
  std::string message;
};

/// The HTTP status a unary Connect error is sent with (the protocol's table).
int connect_http_status(const std::string& code);

/// One envelope of a Connect stream: flags (0 message, 2 end of stream) and
/// a big-endian 32-bit length, then the payload.
std::string connect_envelope(uint8_t flags, std::string_view payload);

/// The JSON message of a streaming request body: its first envelope's payload
/// (the SDK sends exactly one for a server stream). Throws ConnectError
/// invalid_argument for a short or compressed envelope.
nlohmann::json connect_stream_request(const std::string& body);

/// The end-of-stream envelope: {} or {"error": {code, message}}.
std::string connect_end_stream(const std::optional<ConnectError>& err);

/// Standard base64 (RFC 4648 §4), as protobuf JSON writes `bytes`.
std::string base64_encode(std::string_view data);
/// Decodes standard or URL-safe base64, padded or not (protobuf JSON accepts
/// both). Throws ConnectError invalid_argument.
std::string base64_decode(std::string_view text);

// ---- the endpoint ----------------------------------------------------------

/// A process started through envd's process.Process/Start.
struct E2bProcess {
  uint32_t pid = 0;          ///< the handle E2B's SDK knows it by (sbx's own numbering)
  std::string tag;
  nlohmann::json config;     ///< the ProcessConfig as given (cmd, args, envs, cwd)
  int stdin_w = -1;          ///< write end of its stdin pipe (-1: none or closed)
  int cancel_w = -1;         ///< written: the process is SIGKILLed
  bool ended = false;
  bool killed = false;       ///< ended by SendSignal (reported as "signal: killed")
  int exit_code = 0;
  std::string error;         ///< why it could not run
  size_t kept_bytes = 0;     ///< payload bytes in `events`
  /// Envelopes (StartResponse/ConnectResponse payload JSON) since the start;
  /// each subscriber keeps its own position. Output is kept up to a bound
  /// (kKeepOutput), oldest dropped, so a re-attach sees the recent output.
  std::deque<std::string> events;
  uint64_t first_seq = 0;    ///< sequence number of events.front()
};

/// One E2B sandbox.
struct E2bSandbox {
  std::string id;         ///< the E2B sandbox id: the first 20 hex of the sbx id
  std::string sbx_id;     ///< 64 hex
  std::string template_id;
  std::string access_token;  ///< envd's X-Access-Token for this sandbox
  nlohmann::json metadata = nlohmann::json::object();
  int64_t started_ms = 0;
  int64_t end_ms = 0;     ///< wall-clock deadline (unix ms): killed then
  int cpu_count = 0;
  int memory_mb = 0;
  bool gone = false;      ///< killed, timed out or ended
  std::optional<bool> has_bash;  ///< /bin/bash exists in it (learned on first Start)
  std::map<uint32_t, std::shared_ptr<E2bProcess>> procs;
};

/// The E2B endpoint. Thread-safe: one instance serves every connection of
/// the --e2b listener, each on its own thread.
class E2bApi {
 public:
  /// `api_key`: what clients must send as X-API-Key (the serve token).
  /// `default_runtime`: the backend of the sandboxes (sbx serve --runtime).
  E2bApi(engine::Config cfg, std::string default_runtime, std::string api_key);
  ~E2bApi();

  /// Answers one request that authorize() let through. Never throws:
  /// errors become E2B's JSON {"code", "message"} (REST) or Connect errors (envd).
  void handle(Connection& c, Request& r);

  /// Vets a request on its headers, before its body is read: the REST API
  /// wants the serve token as X-API-Key (else 401); envd wants a live
  /// sandbox (E2b-Sandbox-Id; else 502, a Connect call 503 "unavailable", as
  /// E2B's proxy) and its X-Access-Token (else 401). nullopt: let through.
  std::optional<HttpError> authorize(const Request& head);

  /// How a body is read: envd's POST /files (an upload) spooled to disk up
  /// to kMaxArchiveBody, everything else JSON in memory (kMaxJsonBody).
  static BodyRule body_rule(const Request& head);

  /// The body of an error the server core answers: a Connect error
  /// {"code": name, "message"} on envd's Connect paths, else E2B's REST
  /// {"code": status, "message"}.
  static std::string error_body(const Request* head, int status, const std::string& message);

  /// Server shutdown: stops the timeout reaper, then kills and removes every
  /// sandbox of this endpoint (their timeouts die with the server; unlike
  /// Docker containers they are not left behind).
  void shutdown();

  /// Most output bytes kept per process for re-attaching clients.
  static constexpr size_t kKeepOutput = 1u << 20;

 private:
  // REST (server/e2b/e2b_api.cpp)
  void rest(Connection& c, Request& r);
  void create_sandbox(Connection& c, const Request& r);
  void list_sandboxes(Connection& c, const Request& r);
  void get_sandbox(Connection& c, const std::string& id);
  void delete_sandbox(Connection& c, const std::string& id);
  void set_timeout(Connection& c, const Request& r, const std::string& id, bool refresh);
  void connect_sandbox(Connection& c, const Request& r, const std::string& id);
  nlohmann::json sandbox_json(const E2bSandbox& sb, bool detail);
  std::shared_ptr<E2bSandbox> find(const std::string& id);
  void kill_sandbox(const std::shared_ptr<E2bSandbox>& sb);
  void reap_loop();
  /// Until the sandbox ends; `created`: its state as create left it (engine reap).
  void watch(std::shared_ptr<E2bSandbox> sb, runtime::SandboxState created);

  // envd (server/e2b/e2b_process.cpp, server/e2b/e2b_files.cpp)
  void envd(Connection& c, Request& r);
  void process_start(Connection& c, const Request& r, const std::shared_ptr<E2bSandbox>& sb);
  void process_connect(Connection& c, const Request& r, const std::shared_ptr<E2bSandbox>& sb);
  void stream_events(Connection& c, const Request& r, const std::shared_ptr<E2bProcess>& p, bool connect);
  nlohmann::json process_unary(const std::string& method, const nlohmann::json& in,
                               const std::shared_ptr<E2bSandbox>& sb);
  std::shared_ptr<E2bProcess> select_process(const nlohmann::json& selector, const std::shared_ptr<E2bSandbox>& sb);
  nlohmann::json filesystem_unary(const std::string& method, const nlohmann::json& in, const Request& r,
                                  const std::shared_ptr<E2bSandbox>& sb);
  void files_get(Connection& c, const Request& r, const std::shared_ptr<E2bSandbox>& sb);
  void files_post(Connection& c, const Request& r, const std::shared_ptr<E2bSandbox>& sb);
  /// Runs a short helper command in the sandbox as `user` (empty: the
  /// sandbox's); its stdout, exit code in `code`. Output over 16 MiB is an error.
  std::string run_helper(const E2bSandbox& sb, const std::vector<std::string>& args, const std::string& user,
                         int& code, std::string* err = nullptr);
  /// The user the request names (Authorization: Basic base64("user:")), or "".
  static std::string request_user(const Request& r);

  engine::Engine engine_;
  std::string runtime_;
  std::string api_key_;
  std::mutex mu_;
  std::condition_variable cv_;  ///< a sandbox's deadline or a process changed
  std::map<std::string, std::shared_ptr<E2bSandbox>> sandboxes_;
  uint32_t next_pid_ = 1000;
  bool stopping_ = false;
  std::thread reaper_;
};

}  // namespace sbx::server
