// The Docker Engine API of `sbx serve` (https://docs.docker.com/reference/api/engine/,
// versions 1.41–1.44; lower versions are accepted), over the engine facade
// (engine/engine.h) — the server never calls the CLI.
//
// How Docker's container model maps onto sbx sandboxes:
//   - POST /containers/create only records the container (its Docker config,
//     the image resolved) in the server: nothing runs yet, as in Docker.
//   - POST /containers/{id}/start creates a detached sbx sandbox
//     (Engine::create) with the same id whose first process is the
//     container's command (Entrypoint + Cmd). The sandbox's init holds it, so
//     a long-running command (`tail -f /dev/null`) holds the sandbox, the
//     container ends when its command ends (the init records the exit code),
//     and it keeps running when the server stops (it is not the server's
//     child in any way that matters: the init is on record in the run root).
//   - attach and logs read the sandbox's log (server/docker/logs.cpp): the first
//     process's stdout and stderr as records that keep the stream and time
//     (runtime/sandbox_log.h), framed as stream 1 and 2.
//   - a Tty container's first process runs on a real pty (native): the
//     server opens it, the holder logs from a copy of its master.
//   - exec runs through Engine::exec with pipes, framed as Docker's 8-byte
//     multiplexed stream (raw with a tty; a tty exec runs on pipes, not a pty).
//   - AutoRemove: the server removes the sandbox when it ends (a container
//     that ends while no server runs stays, as `sbx rm` can remove it).
// Sandboxes made by `sbx create` show up as containers too.
#pragma once
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "common/fd.h"
#include "engine/engine.h"
#include "engine/mount_points.h"
#include "server/framing.h"
#include "server/http.h"
#include "server/rfc3339.h"

namespace sbx::server {

/// Docker's stream content types: raw (a tty) or 8-byte multiplexed.
inline constexpr const char* kRaw = "application/vnd.docker.raw-stream";
inline constexpr const char* kMux = "application/vnd.docker.multiplexed-stream";

/// Thrown from a stream callback once the client is gone (stops a follow).
struct ClientGone {};

/// What of a container's log to serve (GET /logs, attach).
struct LogOptions {
  bool out = true, err = true;  ///< the streams
  bool timestamps = false;      ///< each line's RFC 3339 time and a space before it
  int64_t since_ns = 0, until_ns = 0;  ///< unix ns; 0: no bound
  long tail = -1;               ///< the last N lines; -1: all
};

/// A container the server knows beyond its sandbox: its Docker config.
struct Container {
  std::string id;    ///< 64 hex: also the sandbox's id once started
  std::string name;  ///< without the leading '/'; may be empty
  nlohmann::json config;  ///< the create request's body (Config + HostConfig)
  oci::ImageRecord image;
  int64_t created_ms = 0;
  bool started = false;   ///< start was called
  bool sandbox = false;   ///< its sandbox exists (or existed): start got that far
  bool ended = false;     ///< its sandbox ended (exit_code valid)
  bool removed = false;   ///< gone (AutoRemove or DELETE)
  int exit_code = 0;
  int attached = 0;       ///< attach streams still reading its log
  std::string error;      ///< why start failed
  /// OpenStdin (native): the write end of the first process's stdin pipe;
  /// attach streams write the client's input there. Reset (closed) when the
  /// container ends, or by the first attach's end of input with StdinOnce.
  std::shared_ptr<Fd> stdin_w;
  /// Tty (native): the master of its pty (/resize; input goes through a
  /// copy in stdin_w). Reset when the container ends.
  std::shared_ptr<Fd> pty;
  bool paused = false;    ///< POST /pause froze it (until /unpause)
  int restarts = 0;       ///< POST /restart count (RestartCount)
  /// Its bind and volume mounts as create made them (Mounts before a start).
  std::vector<engine::MountPoint> mounts;
  /// The volumes create marked in use by it (until its first start or its removal).
  std::vector<std::string> held_volumes;
  /// Its anonymous volumes, made at create as docker makes them (volume
  /// mounts without a source, the image's VOLUME paths no mount covers):
  /// volume mounts with their names, put into its spec at every start;
  /// removed with it by ?v=1 and AutoRemove.
  std::vector<spec::Mount> anonymous_mounts;
  /// Its image's VOLUME paths as the spec annotation carries them
  /// (engine/volume_holds.h kImageVolumesAnnotation): read once, at create.
  std::string image_volumes;
  bool auto_remove() const;
  bool tty() const;
};

/// One exec instance (POST /containers/{id}/exec).
struct ExecInstance {
  std::string id;
  std::string container;
  nlohmann::json config;  ///< AttachStdin, AttachStdout, AttachStderr, Tty, Cmd, Env, WorkingDir, User
  bool running = false;
  bool started = false;
  std::optional<int> exit_code;
  int cancel_w = -1;  ///< write end: once written, the exec's process is killed
  /// Host pid of the running process (native: the command; gVisor: its runsc
  /// exec, which forwards signals); 0 before it starts and once it ended.
  int pid = 0;
};

/// The API: routes requests to handlers. Thread-safe: one Api serves every
/// connection, each on its own thread.
class Api {
 public:
  /// `default_runtime`: the backend of containers that name none.
  Api(engine::Config cfg, std::string default_runtime)
      : engine_(std::move(cfg)), default_runtime_(std::move(default_runtime)) {}

  /// Answers `req` on `conn` (possibly hijacking it). Never throws:
  /// HttpError and sbx::Error become Docker-style JSON errors.
  void handle(Connection& conn, Request& req);

  /// How the body of a request (Docker API and /sbx/v1) is read, from its
  /// head: tar bodies (PUT /containers/{id}/archive, POST /images/load)
  /// spooled to disk up to kMaxArchiveBody, everything else JSON in memory up
  /// to kMaxJsonBody.
  static BodyRule body_rule(const Request& head);

  /// Kills the processes of every running exec (server shutdown).
  void cancel_all_execs();

 private:
  // system
  void ping(Connection& c, const Request& r);
  void version(Connection& c, const Request& r);
  void info(Connection& c, const Request& r);
  // containers (server/docker/containers.cpp)
  void container_create(Connection& c, const Request& r);
  void container_start(Connection& c, const Request& r, const std::string& id);
  void container_attach(Connection& c, const Request& r, const std::string& id);
  /// Copies `first`, then what arrives on `sock`, to `to` until the client
  /// ends its input, `stop` becomes readable, or `to` fails.
  void pump_stdin(int sock, int stop, const std::string& first, int to);
  void container_wait(Connection& c, const Request& r, const std::string& id);
  void container_inspect(Connection& c, const Request& r, const std::string& id);
  void container_list(Connection& c, const Request& r);
  void container_logs(Connection& c, const Request& r, const std::string& id);
  /// Calls emit(stream, bytes) for the log of `id` as `o` selects (with a
  /// timestamp prefix when asked); `follow`: until the sandbox ends. Throws
  /// ClientGone once emit returns false, sbx::Error from the engine.
  void stream_log(const std::string& id, const LogOptions& o, bool follow,
                  const std::function<bool(int, std::string_view)>& emit);
  void container_stop(Connection& c, const Request& r, const std::string& id);
  void container_kill(Connection& c, const Request& r, const std::string& id);
  void container_remove(Connection& c, const Request& r, const std::string& id);
  void container_archive(Connection& c, const Request& r, const std::string& id);
  void container_restart(Connection& c, const Request& r, const std::string& id);
  void container_pause(Connection& c, const Request& r, const std::string& id, bool pause);
  /// POST /containers/{id}/rename?name=: 204; 400 a bad name; 404; 409 the name is in use.
  void container_rename(Connection& c, const Request& r, const std::string& id);
  void container_top(Connection& c, const Request& r, const std::string& id);
  /// POST /containers/{id}/resize?h=ROWS&w=COLS: the size of its pty (TIOCSWINSZ).
  void container_resize(Connection& c, const Request& r, const std::string& id);
  void container_stats(Connection& c, const Request& r, const std::string& id);
  // events (server/docker/events.cpp)
  void events(Connection& c, const Request& r);
  /// Records a container event (Type "container") for /events streams:
  /// create, start, die (exitCode), kill, destroy, pause, unpause, restart.
  void emit(const std::string& action, const std::string& id,
            std::map<std::string, std::string> attrs = {});
  /// Records an event of another Type for /events streams, as docker emits
  /// them: "network" (create, connect, disconnect, destroy; Actor.ID the
  /// network's id, Attributes name, type and, on connect/disconnect,
  /// container) or "volume" (create, destroy; Actor.ID the name, Attributes
  /// driver).
  void emit_object(const std::string& type, const std::string& action, const std::string& id,
                   std::map<std::string, std::string> attrs);
  /// Starts the sandbox of a created container, or (`again`) of one that
  /// ran, on its writable layer. Throws HttpError.
  void launch(const std::shared_ptr<Container>& ctr, bool again = false);
  /// Before launch() of a container that ran: removes its ended sandbox, resets its state.
  void rerun(const std::shared_ptr<Container>& ctr);
  /// Unpauses a paused container (before a signal; `ctr` may be null).
  void thaw_for_signal(const std::shared_ptr<Container>& ctr, const std::string& id);
  void commit(Connection& c, const Request& r);
  // exec (server/docker/exec.cpp)
  void exec_create(Connection& c, const Request& r, const std::string& id);
  void exec_start(Connection& c, const Request& r, const std::string& id);
  void exec_inspect(Connection& c, const Request& r, const std::string& id);
  // images (server/docker/images.cpp)
  void image_list(Connection& c, const Request& r);
  void image_inspect(Connection& c, const Request& r, const std::string& name);
  void image_create(Connection& c, const Request& r);
  void image_tag(Connection& c, const Request& r, const std::string& name);
  void image_remove(Connection& c, const Request& r, const std::string& name);
  /// POST /images/load: a docker-archive (or oci-archive) tar in the body.
  void image_load(Connection& c, const Request& r);
  /// GET /images/{name}/get and /images/get?names=: one image as a docker-archive tar.
  void image_get(Connection& c, const Request& r, const std::vector<std::string>& names);
  /// GET /images/{name}/history: its config's history, newest first.
  void image_history(Connection& c, const Request& r, const std::string& name);
  // builds (server/docker/build.cpp)
  /// POST /build: the classic builder's endpoint over Engine::build.
  void build(Connection& c, const Request& r);

  // volumes (server/docker/volumes.cpp)
  void volume_list(Connection& c, const Request& r);
  void volume_create(Connection& c, const Request& r);
  void volume_inspect(Connection& c, const Request& r, const std::string& name);
  /// DELETE /volumes/{name}[?force=1]: 409 while a container uses it.
  void volume_remove(Connection& c, const Request& r, const std::string& name);
  void volume_prune(Connection& c, const Request& r);
  /// Container inspect's Mounts: the named volumes sandbox `id` mounts.
  /// Docker's Mounts of container `id`: its sandbox's (state dir `dir`), or
  /// what create made when it has none yet.
  nlohmann::json container_mounts(const std::shared_ptr<Container>& ctr, const std::string& dir);
  // networks (server/networks.cpp)
  void network_list(Connection& c, const Request& r);
  void network_inspect(Connection& c, const Request& r, const std::string& ref);
  void network_create(Connection& c, const Request& r);
  void network_remove(Connection& c, const Request& r, const std::string& ref);
  void network_prune(Connection& c, const Request& r);
  /// POST /networks/{id}/connect (`connect`) or /disconnect: a running
  /// container through the engine; one not started yet by its config (its
  /// start joins). Throws HttpError, sbx::Error.
  void network_connect(Connection& c, const Request& r, const std::string& ref, bool connect);
  /// Container inspect's NetworkSettings.Networks: the sandbox's endpoints
  /// while it has them, else the networks its config `cfg` asks for.
  nlohmann::json container_networks(const std::string& id, const nlohmann::json& cfg);

  /// The container `ref` names (id, prefix, name; a server record or a
  /// sandbox). Throws HttpError 404.
  std::string resolve_container(const std::string& ref);
  std::shared_ptr<Container> record(const std::string& id);
  /// The image `ref` names, Docker's normalisation (busybox ==
  /// docker.io/library/busybox:latest). Throws HttpError 404 "No such image".
  oci::ImageRecord find_image(const std::string& ref);
  /// `ref` as the store knows it: itself, or "docker.io/" + ref for a Docker
  /// Hub user's repository stored under its registry. Throws HttpError 404.
  std::string image_ref(const std::string& ref);
  /// After start: waits for the sandbox's end, records it, AutoRemove.
  /// Until the container ends; `created`: its state as create left it (engine reap).
  void watch(std::shared_ptr<Container> ctr, runtime::SandboxState created);
  nlohmann::json inspect_json(const std::string& id);

  engine::Engine engine_;
  std::string default_runtime_;
  std::mutex mu_;
  std::condition_variable cv_;  ///< any container or exec changed
  std::map<std::string, std::shared_ptr<Container>> containers_;
  std::map<std::string, std::shared_ptr<ExecInstance>> execs_;
  /// The last events (bounded), oldest first; event_seq_ counts every one.
  std::deque<nlohmann::json> events_;
  uint64_t event_seq_ = 0;
};

/// A pull's progress event as Docker's JSON message ({"status", "id",
/// "progressDetail"}), as POST /images/create and POST /build stream it;
/// null for an event Docker does not show.
nlohmann::json pull_message(const oci::PullEvent& e);

/// Docker's `filters` query parameter, {"label": {"a=b": true}} or {"label":
/// ["a=b"]}, as key → values (values of one key are alternatives; the keys
/// all apply, as Docker has it). Throws HttpError 400 when it is not an
/// object, nlohmann::json::parse_error when it is not JSON.
std::map<std::string, std::vector<std::string>> parse_filters(const std::string& text);

}  // namespace sbx::server
