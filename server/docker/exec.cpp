// Exec endpoints of the Docker Engine API: POST /containers/{id}/exec,
// POST /exec/{id}/start (hijacked: stdin in, Docker's 8-byte multiplexed
// stdout/stderr out, raw with a tty), GET /exec/{id}/json.
//
// The process runs through Engine::exec on pipes (never the server's own
// fds). The connection's thread pumps the pipes and the socket; a client that
// goes away (a hang-up, a failed write) cancels the exec: its process is
// SIGKILLed (runtime::ExecRequest::cancel_fd), so nothing is left running.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fd.h"
#include "common/log.h"
#include "server/docker/api.h"
#include "server/docker/docker_spec.h"
#include "server/exec_pump.h"
#include "server/framing.h"
#include "server/v1/sbx_v1.h"

namespace sbx::server {

using nlohmann::json;

void Api::exec_create(Connection& c, const Request& r, const std::string& ref) {
  std::string id = resolve_container(ref);
  json cfg = json::parse(r.body.empty() ? "{}" : r.body);
  if (string_list(cfg.value("Cmd", json())).empty()) throw HttpError{400, "No exec command specified"};
  auto ctr = record(id);
  if (ctr && !ctr->started) throw HttpError{409, "Container " + id + " is not running"};
  if (ctr && ctr->paused) throw HttpError{409, "Container " + id + " is paused, unpause the container before exec"};
  if (engine_.inspect(id).status != "running") throw HttpError{409, "Container " + id + " is not running"};
  auto ex = std::make_shared<ExecInstance>();
  ex->id = random_hex(64);
  ex->container = id;
  ex->config = cfg;
  {
    std::lock_guard lk(mu_);
    execs_[ex->id] = ex;
  }
  c.send(201, json{{"Id", ex->id}}.dump());
}

void Api::exec_inspect(Connection& c, const Request&, const std::string& id) {
  std::shared_ptr<ExecInstance> ex;
  {
    std::lock_guard lk(mu_);
    auto it = execs_.find(id);
    if (it == execs_.end()) throw HttpError{404, "No such exec instance: " + id};
    ex = it->second;
  }
  std::lock_guard lk(mu_);
  auto cmd = string_list(ex->config.value("Cmd", json()));
  json out = {{"ID", ex->id},
              {"ContainerID", ex->container},
              {"Running", ex->running},
              {"ExitCode", ex->exit_code ? json(*ex->exit_code) : json()},
              {"OpenStdin", ex->config.value("AttachStdin", false)},
              {"OpenStdout", ex->config.value("AttachStdout", false)},
              {"OpenStderr", ex->config.value("AttachStderr", false)},
              {"CanRemove", false},
              {"DetachKeys", ""},
              {"Pid", ex->pid},
              {"ProcessConfig",
               {{"tty", ex->config.value("Tty", false)},
                {"entrypoint", cmd.empty() ? "" : cmd[0]},
                {"arguments", cmd.size() > 1 ? json(std::vector<std::string>(cmd.begin() + 1, cmd.end())) : json::array()},
                {"privileged", false},
                {"user", ex->config.value("User", "")}}}};
  c.send(200, out.dump());
}

void Api::exec_start(Connection& c, const Request& r, const std::string& id) {
  std::shared_ptr<ExecInstance> ex;
  json body = json::parse(r.body.empty() ? "{}" : r.body);
  {
    std::lock_guard lk(mu_);
    auto it = execs_.find(id);
    if (it == execs_.end()) throw HttpError{404, "No such exec instance: " + id};
    ex = it->second;
    if (ex->started) throw HttpError{409, "exec " + id + " has already been started"};
    ex->started = true;
    ex->running = true;
  }
  const json& cfg = ex->config;
  bool tty = body.value("Tty", cfg.value("Tty", false));
  bool detach = body.value("Detach", false);
  bool attach_in = !detach && cfg.value("AttachStdin", false);

  engine::ExecRequest req;
  req.sandbox = ex->container;
  req.args = string_list(cfg.value("Cmd", json()));
  req.env = string_list(cfg.value("Env", json()));
  req.cwd = cfg.value("WorkingDir", "");
  req.user = cfg.value("User", "");
  // Pipes: stdout and stderr apart, or one stream as a terminal would give
  // (pipes, not a pty); a detached exec's output goes nowhere.
  ExecPump pump({.stdin = attach_in, .merge_stderr = tty, .discard_output = detach});
  pump.wire(req);
  // Docker's exec inspect Pid: the host pid while the process runs (a client
  // may signal it from the host), 0 once it ended and is about to be reaped.
  req.on_pid = [this, ex](int pid) {
    std::lock_guard lk(mu_);
    ex->pid = pid;
  };
  {
    std::lock_guard lk(mu_);
    ex->cancel_w = pump.cancel_fd();
  }
  auto finish = [&](const ExecEnd& end) {
    {
      std::lock_guard lk(mu_);
      ex->running = false;
      ex->exit_code = end.exit_code;
      ex->cancel_w = -1;
      ex->pid = 0;
    }
    cv_.notify_all();
  };

  if (detach) {
    c.send(200, "", "application/json");
    pump.start(engine_, req);
    finish(pump.join());  // this connection's thread waits; the client already has its answer
    return;
  }

  if (!c.hijack(r, tty ? "application/vnd.docker.raw-stream" : "application/vnd.docker.multiplexed-stream")) {
    finish(ExecEnd{});
    return;
  }
  pump.start(engine_, req);
  auto send = [&](int stream, std::string_view d) { return c.write_raw(tty ? std::string(d) : docker_frame(stream, d)); };
  bool client_gone = false, in_open = attach_in;
  if (attach_in && !r.leftover.empty()) (void)!::write(pump.stdin_w().fd, r.leftover.data(), r.leftover.size());
  char buf[65536];
  for (;;) {
    struct pollfd pfd[4];
    int i_sock = -1;
    int n = pump.add_pollfds(pfd, 0);
    if (!client_gone) pfd[i_sock = n++] = {c.fd(), static_cast<short>(in_open ? POLLIN : 0), 0};
    if (pump.done()) break;
    int rc = ::poll(pfd, static_cast<nfds_t>(n), pump.poll_timeout_ms());
    if (rc < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (rc == 0) break;  // exited, and nothing more came: a background process keeps the pipe
    if (!pump.handle(pfd, [&](int stream, std::string_view d) { return client_gone || send(stream, d); }))
      client_gone = true;
    if (i_sock >= 0 && pfd[i_sock].revents) {
      short ev = pfd[i_sock].revents;
      if (in_open && (ev & POLLIN)) {
        ssize_t k = ::read(c.fd(), buf, sizeof buf);
        if (k > 0) {
          if (::write(pump.stdin_w().fd, buf, static_cast<size_t>(k)) < 0) {
            // the process closed its stdin: drop further input
          }
        } else if (k == 0 || errno != EINTR) {
          in_open = false;  // the client closed its side (CloseWrite): EOF to the process
          pump.stdin_w() = Fd();
        }
      }
      // A hang-up (the client closed both directions) or an error: it is gone.
      // (A read-side close alone is docker's CloseWrite: the end of stdin.)
      if (ev & (POLLHUP | POLLERR)) client_gone = true;
    }
    if (client_gone && !pump.exited()) pump.cancel();  // the exec's process is killed
  }
  ExecEnd end = pump.join();
  if (!end.failure.empty() && !client_gone && end.exit_code == kExitSbxFailed) send(2, "sbx: " + end.failure + "\n");
  finish(end);
  if (client_gone) log::debug("serve: exec " + id.substr(0, 12) + ": client went away; process killed");
}

void Api::cancel_all_execs() {
  sbx_v1(engine_.config(), default_runtime_).cancel_all();  // and those of /sbx/v1 exec streams
  std::lock_guard lk(mu_);
  for (const auto& [id, ex] : execs_)
    if (ex->running && ex->cancel_w >= 0) (void)!::write(ex->cancel_w, "x", 1);
}

}  // namespace sbx::server
