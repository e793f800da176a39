// Container endpoints of the Docker Engine API (server/docker/api.h says how
// containers map onto sandboxes).
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <thread>

#include "common/error.h"
#include "common/log.h"
#include "engine/trajectory_ops.h"
#include "runtime/backends.h"
#include "runtime/state.h"
#include "server/docker/api.h"
#include "server/reaper.h"
#include "server/docker/docker_spec.h"
#include "engine/rename.h"
#include "engine/list_status.h"
#include "engine/volume_holds.h"

namespace sbx::server {

using nlohmann::json;

namespace {



/// "Up 3 seconds", "Exited (0) 2 minutes ago" (docker ps's STATUS column).
std::string human_status(const std::string& state, int code, int64_t since_ms) {
  int64_t s = std::max<int64_t>(0, (runtime::now_ms() - since_ms) / 1000);
  std::string ago = s < 60 ? std::to_string(s) + " seconds" : s < 3600 ? std::to_string(s / 60) + " minutes"
                                                                         : std::to_string(s / 3600) + " hours";
  if (state == "running") return "Up " + ago;
  if (state == "paused") return "Up " + ago + " (Paused)";
  if (state == "exited") return "Exited (" + std::to_string(code) + ") " + ago + " ago";
  if (state == "created") return "Created";
  return state;
}

/// HostConfig.NetworkMode as the create body gave it ("none" when it gave none).
std::string network_mode(const json& cfg) {
  auto hc = cfg.find("HostConfig");
  if (hc == cfg.end() || !hc->is_object()) return "none";
  auto m = hc->find("NetworkMode");
  return m != hc->end() && m->is_string() && !m->get<std::string>().empty() ? m->get<std::string>() : "none";
}

std::string docker_state(const std::string& sbx_status) {
  if (sbx_status == "creating") return "created";
  return sbx_status;  // running, exited, dead
}

std::string join_cmd(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& a : v) s += (s.empty() ? "" : " ") + a;
  return s;
}

}  // namespace

void Api::container_create(Connection& c, const Request& r) {
  json cfg = json::parse(r.body.empty() ? "{}" : r.body);
  if (!cfg.is_object()) throw HttpError{400, "invalid container config: expected a JSON object"};
  std::string name = r.param("name");
  if (!name.empty() && name[0] == '/') name.erase(0, 1);
  if (!name.empty()) {
    runtime::validate_name(name);
    bool taken = false;
    try {
      engine_.resolve(name);
      taken = true;
    } catch (const Error&) {
    }
    std::lock_guard lk(mu_);
    for (const auto& [id, ctr] : containers_) taken = taken || (!ctr->removed && ctr->name == name);
    if (taken)
      throw HttpError{409, "Conflict. The container name \"/" + name +
                               "\" is already in use. You have to remove (or rename) that container to be able to reuse that name."};
  }
  std::string image = cfg.value("Image", "");
  if (image.empty()) throw HttpError{400, "config error: no image given"};
  auto ctr = std::make_shared<Container>();
  ctr->image = find_image(image);
  ctr->id = runtime::new_sandbox_id();
  ctr->name = name;
  ctr->config = cfg;
  ctr->created_ms = runtime::now_ms();
  // Checked now (a bad bind or network fails create, as in Docker); built again at start.
  // (no GPU on this host, an unknown device: refused now too)
  engine::RunRequest built;
  try {
    built = engine::build_sandbox(options_from_docker(cfg, ctr->id, name),
                                  engine::ResolvedImage{image, ctr->image.id, ctr->image.config, {}}, default_runtime_);
  } catch (const Error& e) {
    throw HttpError{400, e.what()};
  }
  // Its anonymous volumes are made now, as docker makes them (`docker volume
  // ls` after `docker create` lists them), and mounted at every start.
  std::vector<std::string> made = engine::add_anonymous_volumes(engine_, built.spec);
  for (const auto& m : built.spec.mounts)
    if (m.type == engine::kVolumeMountType && std::find(made.begin(), made.end(), m.source) != made.end())
      ctr->anonymous_mounts.push_back(m);
  if (auto a = built.spec.annotations.find(engine::kImageVolumesAnnotation); a != built.spec.annotations.end())
    ctr->image_volumes = a->second;
  ctr->mounts = engine::mount_points(engine_.config().root, built.spec.mounts);
  // Its named volumes are in use from now on (docker: `volume rm` of one is a conflict).
  try {
    ctr->held_volumes = engine::hold_volumes(engine_, ctr->id, built.spec.mounts);
  } catch (...) {
    engine::remove_unused_volumes(engine_, made);
    throw;
  }
  {
    std::lock_guard lk(mu_);
    containers_[ctr->id] = ctr;
  }
  emit("create", ctr->id);
  c.send(201, json{{"Id", ctr->id}, {"Warnings", json::array()}}.dump());
}

void Api::container_start(Connection& c, const Request&, const std::string& ref) {
  std::string id = resolve_container(ref);
  auto ctr = record(id);
  if (!ctr) {  // an sbx sandbox: started when created
    auto info = engine_.inspect(id);
    if (info.status == "running") return (void)c.send(304, "");
    throw HttpError{409, "container " + id.substr(0, 12) + " has ended; sbx serve cannot restart it"};
  }
  bool again = false;
  {
    std::lock_guard lk(mu_);
    if (ctr->started && !ctr->ended) return (void)c.send(304, "");
    again = ctr->started;
    ctr->started = true;
  }
  if (again) rerun(ctr);  // docker start of an exited container runs its command again
  launch(ctr, again);
  emit("start", id);
  c.send(204, "");
}

void Api::rerun(const std::shared_ptr<Container>& ctr) {
  // launch(ctr, true) replaces the ended sandbox with a new one of the same
  // id and config on its writable layer (engine::SandboxRequest::reuse_layer).
  std::lock_guard lk(mu_);
  ctr->sandbox = ctr->ended = ctr->paused = false;
  ctr->exit_code = 0;
  ctr->error.clear();
}

void Api::launch(const std::shared_ptr<Container>& ctr, bool again) {
  const std::string& id = ctr->id;
  runtime::SandboxState created;
  try {
    engine::SandboxRequest req = engine::build_sandbox(
        options_from_docker(ctr->config, ctr->id, ctr->name),
        engine::resolved(engine_, ctr->image, ctr->config.value("Image", "")), default_runtime_);
    // The anonymous volumes create made: a volume mount without a source gets
    // its name, an image VOLUME path its mount (the engine makes no new ones).
    for (const auto& a : ctr->anonymous_mounts) {
      auto it = std::find_if(req.spec.mounts.begin(), req.spec.mounts.end(), [&a](const spec::Mount& m) {
        return m.type == engine::kVolumeMountType && m.source.empty() && m.destination == a.destination;
      });
      if (it != req.spec.mounts.end()) it->source = a.source;
      else req.spec.mounts.push_back(a);
    }
    if (!ctr->image_volumes.empty()) req.spec.annotations[engine::kImageVolumesAnnotation] = ctr->image_volumes;
    if (again) {  // (a start that failed left no sandbox: nothing to keep)
      try {
        engine_.inspect(id);
        req.reuse_layer = true;
      } catch (const Error&) {
      }
    }
    // OpenStdin: the first process reads a pipe that attach streams feed
    // (gVisor: runsc passes its own stdin, the pipe, to the first process).
    std::shared_ptr<Fd> stdin_w, pty;
    Fd stdin_r;
    if (ctr->tty() && runtime::backend_for(req.spec.runtime)->takes_stdin_pty()) {
      // Tty: a real terminal (SandboxSpec::stdin_pty_master). The sandbox's
      // holder keeps a copy of the master and logs from it; this one takes
      // attach input and /resize.
      int m = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
      if (m < 0 || ::unlockpt(m) < 0) {
        int e = errno;
        if (m >= 0) ::close(m);
        throw Error("open a pty for container " + id + ": " + std::strerror(e));
      }
      pty = std::make_shared<Fd>(m);
      int w = ::fcntl(m, F_DUPFD_CLOEXEC, 3);
      if (w < 0) throw Error("dup the pty of container " + id + ": " + std::strerror(errno));
      if (ctr->config.value("OpenStdin", false)) stdin_w = std::make_shared<Fd>(w);
      else ::close(w);
      // Non-blocking (the holder's copy shares it; it reads without blocking anyway).
      (void)::fcntl(m, F_SETFL, O_NONBLOCK);
      req.spec.stdin_open = true;
      req.spec.stdin_pty_master = true;
      req.stdin_fd = m;
    } else if (ctr->config.value("OpenStdin", false)) {
      int p[2];
      if (::pipe2(p, O_CLOEXEC) < 0) throw Error("create the stdin pipe of container " + id + ": " + std::strerror(errno));
      stdin_r = Fd(p[0]);
      stdin_w = std::make_shared<Fd>(p[1]);
      // Non-blocking: an attach stream waits for room in poll, where it can be stopped.
      (void)::fcntl(p[1], F_SETFL, O_NONBLOCK);
      req.spec.stdin_open = true;
      req.stdin_fd = stdin_r.fd;
    }
    // The label sbx.record=1 records the container (docs/trajectory.md).
    engine::trajectory::create_labelled(engine_, req);
    stdin_r = Fd();  // the process holds it now
    created = engine_.inspect(id).state;
    std::lock_guard lk(mu_);
    ctr->sandbox = true;
    ctr->stdin_w = std::move(stdin_w);
    ctr->pty = std::move(pty);
  } catch (const Error& e) {
    {
      std::lock_guard lk(mu_);
      ctr->ended = true;
      ctr->exit_code = e.exit_code();
      ctr->error = e.what();
      if (ctr->auto_remove()) ctr->removed = true;
    }
    cv_.notify_all();
    std::string msg = e.what();
    // The docker CLI maps these words to its exit codes 127 and 126.
    if (e.exit_code() == kExitNotFound) msg += ": executable file not found in $PATH";
    if (e.exit_code() == kExitCannotExec) msg += ": permission denied";
    bool client = e.exit_code() == kExitNotFound || e.exit_code() == kExitCannotExec ||
                  e.kind() == ErrorKind::InvalidArgument;
    throw HttpError{client ? 400 : 500, msg};
  }
  cv_.notify_all();
  on_sandbox_end(created, [this, ctr, created] { watch(ctr, created); });
}

void Api::watch(std::shared_ptr<Container> ctr, runtime::SandboxState created) {
  std::optional<runtime::EndRecord> end = wait_and_reap(engine_, ctr->id, created, "docker");
  std::unique_lock lk(mu_);
  ctr->ended = true;
  ctr->paused = false;
  ctr->exit_code = end ? end->exit_code : 137;
  ctr->stdin_w.reset();
  ctr->pty.reset();
  int code = ctr->exit_code;
  lk.unlock();
  emit("die", ctr->id, {{"exitCode", std::to_string(code)}});
  lk.lock();
  cv_.notify_all();
  if (!ctr->auto_remove() || ctr->removed) return;
  // Attach streams read the log first (bounded: a stuck client does not keep it forever).
  cv_.wait_for(lk, std::chrono::seconds(30), [&] { return ctr->attached == 0; });
  lk.unlock();
  try {
    // AutoRemove (docker run --rm) takes the anonymous volumes along, as docker does.
    engine_.remove(ctr->id, engine::RemoveRequest{true, true});
  } catch (const Error& e) {
    log::warn("serve: auto-remove of " + ctr->id.substr(0, 12) + ": " + e.what());
  }
  lk.lock();
  ctr->removed = true;
  cv_.notify_all();
  lk.unlock();
  emit("destroy", ctr->id);
}

void Api::container_attach(Connection& c, const Request& r, const std::string& ref) {
  std::string id = resolve_container(ref);
  auto ctr = record(id);
  bool tty = ctr && ctr->tty();
  if (ctr) {
    std::lock_guard lk(mu_);
    ctr->attached++;
  }
  struct Detach {
    Api* api;
    std::shared_ptr<Container> ctr;
    ~Detach() {
      if (!ctr) return;
      {
        std::lock_guard lk(api->mu_);
        ctr->attached--;
      }
      api->cv_.notify_all();
    }
  } detach{this, ctr};
  if (!c.hijack(r, tty ? kRaw : kMux)) return;
  if (!r.flag("stream") && !r.flag("logs")) return;
  bool out = r.flag("stdout"), err = r.flag("stderr");
  if (ctr) {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return ctr->sandbox || ctr->ended || ctr->removed; });
    if (!ctr->error.empty() || ctr->removed) return;
  }
  // stdin=1: the client's input goes to the first process's stdin (OpenStdin).
  std::shared_ptr<Fd> stdin_w;
  if (ctr && r.flag("stdin") && r.flag("stream")) {
    std::lock_guard lk(mu_);
    stdin_w = ctr->stdin_w;
  }
  Fd stop_r, stop_w;
  std::thread pump;
  if (stdin_w) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) == 0) {
      stop_r = Fd(p[0]);
      stop_w = Fd(p[1]);
      bool once = ctr->config.value("StdinOnce", false);
      // (moved in: the last copy must go with the pump, or the process never sees EOF)
      pump = std::thread([this, &c, &r, &stop_r, ctr, stdin_w = std::move(stdin_w), once]() mutable {
        pump_stdin(c.fd(), stop_r.fd, r.leftover, stdin_w->fd);
        stdin_w.reset();
        if (once) {  // the end of this client's input is the process's EOF
          std::lock_guard lk(mu_);
          ctr->stdin_w.reset();
        }
      });
    }
  }
  struct StopPump {
    std::thread& t;
    Fd& w;
    ~StopPump() {
      if (!t.joinable()) return;
      (void)!::write(w.fd, "x", 1);
      t.join();
    }
  } stop_pump{pump, stop_w};
  if (!out && !err) {
    if (pump.joinable()) {  // input only: until the container ends
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return ctr->ended || ctr->removed; });
    }
    return;
  }
  try {
    LogOptions o;
    o.out = out;
    o.err = err;
    stream_log(id, o, r.flag("stream"),
               [&](int s, std::string_view d) { return c.write_raw(tty ? std::string(d) : docker_frame(s, d)); });
  } catch (const ClientGone&) {
  } catch (const Error& e) {
    log::debug("serve: attach " + id.substr(0, 12) + ": " + e.what());
  }
}

void Api::pump_stdin(int sock, int stop, const std::string& first, int to) {
  auto put = [&](const char* d, size_t n) {
    while (n > 0) {
      ssize_t k = ::write(to, d, n);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0 && errno == EAGAIN) {  // the pipe is full: wait for room or the stop
        struct pollfd pfd[2] = {{to, POLLOUT, 0}, {stop, POLLIN, 0}};
        if (::poll(pfd, 2, -1) < 0 && errno != EINTR) return false;
        if (pfd[1].revents) return false;
        continue;
      }
      if (k <= 0) return false;  // the process closed its stdin (EPIPE)
      d += k;
      n -= static_cast<size_t>(k);
    }
    return true;
  };
  if (!first.empty() && !put(first.data(), first.size())) return;
  char buf[65536];
  for (;;) {
    struct pollfd pfd[2] = {{sock, POLLIN, 0}, {stop, POLLIN, 0}};
    if (::poll(pfd, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (pfd[1].revents) return;
    if (!pfd[0].revents) continue;
    ssize_t k = ::read(sock, buf, sizeof buf);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return;  // the client closed its side (CloseWrite): the end of its input
    if (!put(buf, static_cast<size_t>(k))) return;
  }
}

void Api::container_wait(Connection& c, const Request& r, const std::string& ref) {
  std::string id = resolve_container(ref);
  auto ctr = record(id);
  std::string cond = r.param("condition");
  if (cond.empty()) cond = "not-running";
  if (cond != "not-running" && cond != "next-exit" && cond != "removed")
    throw HttpError{400, "invalid condition '" + cond + "': use not-running, next-exit or removed"};
  // Headers first: the client knows the wait is registered (as dockerd).
  if (!c.begin_chunks(200, "application/json")) return;
  int code = 0;
  std::string error;
  if (!ctr) {
    try {
      auto end = engine_.wait(id);
      code = end ? end->exit_code : 137;
      if (cond == "removed") {
        while (true) {
          try {
            engine_.resolve(id);
          } catch (const Error&) {
            break;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
      }
    } catch (const Error& e) {
      error = e.what();
    }
  } else {
    std::unique_lock lk(mu_);
    if (cond == "removed") {
      cv_.wait(lk, [&] { return ctr->removed; });
    } else if (cond == "next-exit" || ctr->started) {
      cv_.wait(lk, [&] { return ctr->ended || ctr->removed; });
    }
    code = ctr->exit_code;  // (a failed start was answered by start itself)
  }
  json body = {{"StatusCode", code}, {"Error", error.empty() ? json() : json{{"Message", error}}}};
  c.chunk(body.dump() + "\n");
  c.end_chunks();
}

json Api::inspect_json(const std::string& id) {
  auto ctr = record(id);
  std::optional<runtime::SandboxInfo> info;
  try {
    info = engine_.inspect(id);
  } catch (const Error&) {
  }
  if (!ctr && !info) throw HttpError{404, "No such container: " + id};
  json cfg = ctr ? ctr->config : json::object();
  std::string status = "created";
  int exit_code = 0;
  bool oom = false;
  int64_t pid = 0, started = 0, finished = 0;
  if (info) {
    status = docker_state(info->status);
    if (status == "running") pid = info->state.pid;
    if (status == "running" && ctr && ctr->paused) status = "paused";
    started = info->state.started_ms;
    if (info->end) {
      exit_code = info->end->exit_code;
      oom = info->end->reason == "oom";
      finished = info->end->ended_ms;
    }
  } else if (ctr->started) {
    status = "exited";
    exit_code = ctr->exit_code;
  }
  json hc = cfg.contains("HostConfig") ? cfg["HostConfig"] : json::object();
  std::vector<std::string> cmd = info ? info->state.command : string_list(cfg.value("Cmd", json()));
  std::string image = cfg.value("Image", info ? info->state.image_ref : "");
  json config = {{"Hostname", id.substr(0, 12)},
                 {"Image", image},
                 {"Cmd", cfg.value("Cmd", json(cmd))},
                 {"Entrypoint", cfg.value("Entrypoint", json())},
                 {"Env", cfg.value("Env", json::array())},
                 {"WorkingDir", cfg.value("WorkingDir", "")},
                 {"User", cfg.value("User", "")},
                 {"Tty", cfg.value("Tty", false)},
                 {"OpenStdin", cfg.value("OpenStdin", false)},
                 {"AttachStdin", cfg.value("AttachStdin", false)},
                 {"AttachStdout", cfg.value("AttachStdout", false)},
                 {"AttachStderr", cfg.value("AttachStderr", false)},
                 {"Labels", info ? json(info->state.labels) : cfg.value("Labels", json::object())}};
  if (!hc.contains("NetworkMode")) hc["NetworkMode"] = "none";
  hc["LogConfig"] = {{"Type", "json-file"}, {"Config", json::object()}};  // what clients read: sbx keeps a log file
  if (info) hc["Runtime"] = info->state.runtime;
  std::string name = ctr ? ctr->name : info->state.name;
  std::string image_id = ctr ? ctr->image.id : info->state.image_id;
  // Published ports (`docker port`): what PortBindings asked for, while it runs.
  json ports = json::object();
  if (auto pb = hc.find("PortBindings"); pb != hc.end() && pb->is_object() && status == "running")
    for (const auto& [port, binds] : pb->items()) {
      json list = json::array();
      if (binds.is_array())
        for (const auto& b : binds) {
          std::string ip = b.is_object() ? b.value("HostIp", "") : "";
          list.push_back({{"HostIp", ip.empty() ? "0.0.0.0" : ip}, {"HostPort", b.is_object() ? b.value("HostPort", "") : ""}});
        }
      ports[port] = list;
    }
  return {{"Id", id},
          {"Created", rfc3339(ctr ? ctr->created_ms : info->state.created_ms)},
          {"Path", cmd.empty() ? "" : cmd[0]},
          {"Args", cmd.size() > 1 ? json(std::vector<std::string>(cmd.begin() + 1, cmd.end())) : json::array()},
          {"State",
           {{"Status", status},
            {"Running", status == "running"},
            {"Paused", ctr && ctr->paused},
            {"Restarting", false},
            {"OOMKilled", oom},
            {"Dead", status == "dead"},
            {"Pid", pid},
            {"ExitCode", exit_code},
            {"Error", ctr ? ctr->error : ""},
            {"StartedAt", rfc3339(started)},
            {"FinishedAt", rfc3339(finished)}}},
          {"Image", "sha256:" + image_id},
          {"Name", "/" + (name.empty() ? id.substr(0, 12) : name)},
          {"RestartCount", ctr ? ctr->restarts : 0},
          {"Driver", "overlay"},
          {"Platform", "linux"},
          {"HostConfig", hc},
          {"Mounts", container_mounts(ctr, info ? info->dir : "")},
          {"Config", config},
          {"NetworkSettings", {{"Networks", container_networks(id, cfg)}, {"Ports", ports}, {"IPAddress", ""}}}};
}

void Api::container_inspect(Connection& c, const Request&, const std::string& ref) {
  c.send(200, inspect_json(resolve_container(ref)).dump());
}

void Api::container_list(Connection& c, const Request& r) {
  bool all = r.flag("all");
  auto filters = parse_filters(r.param("filters"));
  struct Row {
    std::string id, name, image, image_id, state, command;
    std::map<std::string, std::string> labels;
    int64_t created_ms = 0, since_ms = 0;
    int exit_code = 0;
    json cfg = json::object();  ///< the create body (containers this server made)
    json mounts = json::array();
  };
  std::vector<Row> rows;
  for (const auto& s : engine::list_status(engine_, engine::ListRequest{true, {}})) {
    Row row{s.state.id, s.state.name, s.state.image_ref, s.state.image_id, docker_state(s.status),
            join_cmd(s.state.command), s.state.labels, s.state.created_ms, s.state.started_ms, 0};
    if (s.end) {
      row.exit_code = s.end->exit_code;
      row.since_ms = s.end->ended_ms;
    }
    row.mounts = container_mounts(nullptr, s.dir);
    if (auto ctr = record(row.id)) {
      row.image = ctr->config.value("Image", row.image);
      row.cfg = ctr->config;
      if (ctr->paused && row.state == "running") row.state = "paused";
    }
    rows.push_back(row);
  }
  {
    std::lock_guard lk(mu_);
    for (const auto& [id, ctr] : containers_) {
      if (ctr->removed || ctr->started) continue;
      auto cmd = string_list(ctr->config.value("Cmd", json()));
      std::map<std::string, std::string> labels;
      if (auto l = ctr->config.find("Labels"); l != ctr->config.end() && l->is_object())
        for (const auto& [k, v] : l->items())
          if (v.is_string()) labels[k] = v.get<std::string>();
      rows.push_back(Row{id, ctr->name, ctr->config.value("Image", ""), ctr->image.id, "created", join_cmd(cmd),
                         labels, ctr->created_ms, ctr->created_ms, 0, ctr->config,
                         engine::mount_points_json(ctr->mounts)});
    }
  }
  json out = json::array();
  for (const auto& row : rows) {
    if (!all && row.state != "running" && !filters.count("status")) continue;
    bool ok = true;
    for (const auto& [key, vals] : filters) {
      bool any = false;
      // Docker: every label filter must hold; other keys' values are alternatives.
      if (key == "label") {
        any = true;
        for (const auto& v : vals) {
          auto eq = v.find('=');
          auto it = row.labels.find(v.substr(0, eq));
          any = any && it != row.labels.end() && (eq == std::string::npos || it->second == v.substr(eq + 1));
        }
        ok = ok && any;
        continue;
      }
      for (const auto& v : vals) {
        if (key == "label") {
          auto eq = v.find('=');
          auto it = row.labels.find(v.substr(0, eq));
          any = any || (it != row.labels.end() && (eq == std::string::npos || it->second == v.substr(eq + 1)));
        } else if (key == "name") {
          any = any || (!row.name.empty() && row.name.find(v) != std::string::npos);
        } else if (key == "status") {
          any = any || row.state == v;
        } else if (key == "id") {
          any = any || row.id.rfind(v, 0) == 0;
        } else {
          throw HttpError{400, "invalid filter '" + key + "' (sbx serve: label, name, status, id)"};
        }
      }
      ok = ok && any;
    }
    if (!ok) continue;
    out.push_back({{"Id", row.id},
                   {"Names", json::array({"/" + (row.name.empty() ? row.id.substr(0, 12) : row.name)})},
                   {"Image", row.image},
                   {"ImageID", "sha256:" + row.image_id},
                   {"Command", row.command},
                   {"Created", row.created_ms / 1000},
                   {"State", row.state},
                   {"Status", human_status(row.state, row.exit_code, row.since_ms ? row.since_ms : row.created_ms)},
                   {"Labels", row.labels},
                   {"Ports", json::array()},
                   {"Mounts", row.mounts},
                   {"HostConfig", {{"NetworkMode", network_mode(row.cfg)}}},
                   {"NetworkSettings", {{"Networks", container_networks(row.id, row.cfg)}}}});
  }
  c.send(200, out.dump());
}

void Api::container_stop(Connection& c, const Request& r, const std::string& ref) {
  std::string id = resolve_container(ref);
  auto ctr = record(id);
  if (ctr && !ctr->started) return (void)c.send(304, "");
  auto info = engine_.inspect(id);
  if (info.status != "running") return (void)c.send(304, "");
  std::string t = r.param("t");
  int secs = t.empty() ? 10 : std::stoi(t);
  thaw_for_signal(ctr, id);
  engine_.stop(id, std::chrono::seconds(std::max(secs, 0)));
  emit("stop", id);
  c.send(204, "");
}

void Api::container_kill(Connection& c, const Request& r, const std::string& ref) {
  std::string id = resolve_container(ref);
  auto ctr = record(id);
  if (ctr && !ctr->started) throw HttpError{409, "Container " + id + " is not running"};
  if (engine_.inspect(id).status != "running") throw HttpError{409, "Container " + id + " is not running"};
  std::string s = r.param("signal");
  int sig = engine::parse_signal(s.empty() ? "KILL" : s);
  thaw_for_signal(ctr, id);
  engine_.kill(id, sig);
  emit("kill", id, {{"signal", std::to_string(sig)}});
  c.send(204, "");
}

void Api::container_remove(Connection& c, const Request& r, const std::string& ref) {
  std::string id = resolve_container(ref);
  auto ctr = record(id);
  bool force = r.flag("force");
  // v=1: its anonymous volumes go with it (docker rm -v).
  bool volumes = r.flag("v");
  if (!ctr || ctr->started) {
    std::optional<runtime::SandboxInfo> info;
    try {
      info = engine_.inspect(id);
    } catch (const Error&) {
    }
    if (info && info->status == "running" && !force)
      throw HttpError{409, "You cannot remove a running container " + id +
                               ". Stop the container before attempting removal or force remove"};
    if (info && force) thaw_for_signal(ctr, id);
    if (info) engine_.remove(id, engine::RemoveRequest{force, volumes});
  }
  if (ctr) {
    std::vector<std::string> held;
    {
      std::lock_guard lk(mu_);
      ctr->removed = true;
      if (!ctr->started) ctr->ended = true;
      held.swap(ctr->held_volumes);
    }
    engine::release_volumes(engine_, id, held);
    // One never started (or whose start failed) has no sandbox to take them along.
    if (volumes) {
      std::vector<std::string> anon;
      for (const auto& m : ctr->anonymous_mounts) anon.push_back(m.source);
      try {
        engine::remove_unused_volumes(engine_, anon);
      } catch (const Error& e) {
        log::warn("serve: rm -v of " + id.substr(0, 12) + ": " + e.what());
      }
    }
  }
  cv_.notify_all();
  emit("destroy", id);
  c.send(204, "");
}

void Api::container_rename(Connection& c, const Request& r, const std::string& ref) {
  std::string id = resolve_container(ref);
  std::string name = r.param("name");
  if (!name.empty() && name[0] == '/') name.erase(0, 1);
  if (name.empty()) throw HttpError{400, "rename: give the new name (?name=NAME)"};
  try {
    runtime::validate_name(name);
  } catch (const Error& e) {
    throw HttpError{400, e.what()};
  }
  auto ctr = record(id);
  std::string old;
  std::unique_lock lk(mu_);  // held throughout: two renames to one name cannot both win
  for (const auto& [other, o] : containers_)
    if (other != id && !o->removed && o->name == name)
      throw HttpError{409, "Conflict. The container name \"/" + name + "\" is already in use by container \"" + other +
                               "\". You have to remove (or rename) that container to be able to reuse that name."};
  if (ctr) old = ctr->name;
  if (ctr && !ctr->sandbox) {  // not started yet: the name lives in this record only
    if (old == name) throw HttpError{400, "Renaming a container with the same name as its current name"};
    std::string holder;
    try {
      holder = engine_.resolve(name);
    } catch (const Error&) {
    }
    if (!holder.empty() && holder != id)
      throw HttpError{409, "Conflict. The container name \"/" + name + "\" is already in use by container \"" + holder +
                               "\". You have to remove (or rename) that container to be able to reuse that name."};
    ctr->name = name;
  } else {
    try {
      old = engine_.inspect(id).state.name;
    } catch (const Error&) {
    }
    engine::rename_sandbox(engine_, id, name);  // Conflict: 409; same name: 400
    if (ctr) ctr->name = name;
  }
  lk.unlock();
  emit("rename", id, {{"oldName", "/" + old}});
  c.send(204, "");
}

void Api::container_resize(Connection& c, const Request& r, const std::string& ref) {
  std::string id = resolve_container(ref);
  auto ctr = record(id);
  std::shared_ptr<Fd> pty;
  if (ctr) {
    std::lock_guard lk(mu_);
    pty = ctr->pty;
  }
  // A container without a pty (no Tty, gVisor) has no size: accepted, as before.
  if (pty) {
    struct winsize ws {};
    try {
      ws.ws_row = static_cast<unsigned short>(std::stoul(r.param("h")));
      ws.ws_col = static_cast<unsigned short>(std::stoul(r.param("w")));
    } catch (const std::exception&) {
      throw HttpError{400, "resize: give the size as h=ROWS&w=COLUMNS"};
    }
    if (::ioctl(pty->fd, TIOCSWINSZ, &ws) < 0) throw HttpError{500, "resize the pty of " + id + ": " + std::strerror(errno)};
  }
  c.send(200, "");
}

void Api::thaw_for_signal(const std::shared_ptr<Container>& ctr, const std::string& id) {
  // A frozen process acts on a signal only once thawed (v1 freezer): as
  // dockerd, stop/kill/rm -f of a paused container unpause it first.
  bool was;
  {
    std::lock_guard lk(mu_);
    was = ctr && ctr->paused;
    if (ctr) ctr->paused = false;
  }
  if (!was) return;
  try {
    engine_.unpause(id);
  } catch (const Error& e) {
    log::warn("serve: unpause " + id.substr(0, 12) + " before a signal: " + e.what());
  }
}

std::map<std::string, std::vector<std::string>> parse_filters(const std::string& text) {
  std::map<std::string, std::vector<std::string>> out;
  if (text.empty()) return out;
  json f = json::parse(text);
  if (!f.is_object()) throw HttpError{400, "invalid filters: expected a JSON object"};
  for (const auto& [k, v] : f.items()) {
    if (v.is_array()) {
      for (const auto& e : v)
        if (e.is_string()) out[k].push_back(e.get<std::string>());
    } else if (v.is_object()) {
      for (const auto& [val, on] : v.items())
        if (!on.is_boolean() || on.get<bool>()) out[k].push_back(val);
    }
  }
  return out;
}

}  // namespace sbx::server
