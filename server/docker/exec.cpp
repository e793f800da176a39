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

#include <thread>

#include "common/error.h"
#include "common/fd.h"
#include "common/log.h"
#include "server/docker/api.h"
#include "server/docker/docker_spec.h"
#include "server/v1/sbx_v1.h"

namespace sbx::server {

using nlohmann::json;

namespace {

}  // namespace

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
              {"Pid", 0},
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
  req.forward_signals = false;
  std::optional<Pipe> in, out, err;
  Pipe cancel;
  if (attach_in) {
    in.emplace();
    req.stdin_fd = in->r.fd;
    req.interactive = true;
  }
  Fd devnull;
  if (detach) {
    devnull = Fd(::open("/dev/null", O_WRONLY | O_CLOEXEC));
    req.stdout_fd = req.stderr_fd = devnull.fd;
  } else {
    out.emplace();
    req.stdout_fd = out->w.fd;
    if (!tty) {
      err.emplace();
      req.stderr_fd = err->w.fd;
    } else {
      req.stderr_fd = out->w.fd;  // one stream, as a terminal would give (pipes, not a pty)
    }
  }
  req.cancel_fd = cancel.r.fd;
  {
    std::lock_guard lk(mu_);
    ex->cancel_w = cancel.w.fd;
  }
  Pipe done;
  int code = 0;
  std::string failure;
  // The pipes live until both this function and the exec thread are done.
  auto run = [this, &req, &code, &failure, &done] {
    try {
      code = engine_.exec(req).exit_code;
    } catch (const Error& e) {
      code = e.exit_code();
      failure = e.what();
    } catch (const std::exception& e) {
      code = kExitSbxFailed;
      failure = e.what();
    }
    (void)!::write(done.w.fd, "x", 1);
  };
  auto finish = [&] {
    {
      std::lock_guard lk(mu_);
      ex->running = false;
      ex->exit_code = code;
      ex->cancel_w = -1;
    }
    cv_.notify_all();
  };

  if (detach) {
    c.send(200, "", "application/json");
    std::thread t(run);
    t.join();  // this connection's thread waits; the client already has its answer
    finish();
    return;
  }

  if (!c.hijack(r, tty ? "application/vnd.docker.raw-stream" : "application/vnd.docker.multiplexed-stream")) {
    finish();
    return;
  }
  std::thread t(run);
  auto send = [&](int stream, std::string_view d) { return c.write_raw(tty ? std::string(d) : frame(stream, d)); };
  bool client_gone = false, in_open = true, exited = false, cancelled = false;
  if (attach_in && !r.leftover.empty()) (void)!::write(in->w.fd, r.leftover.data(), r.leftover.size());
  if (!attach_in) in_open = false;
  char buf[65536];
  for (;;) {
    struct pollfd pfd[4];
    int n = 0;
    int i_out = -1, i_err = -1, i_sock = -1, i_done = -1;
    if (out && out->r.fd >= 0) pfd[i_out = n++] = {out->r.fd, POLLIN, 0};
    if (err && err->r.fd >= 0) pfd[i_err = n++] = {err->r.fd, POLLIN, 0};
    if (!client_gone) pfd[i_sock = n++] = {c.fd(), static_cast<short>(in_open ? POLLIN : 0), 0};
    if (!exited) pfd[i_done = n++] = {done.r.fd, POLLIN, 0};
    if (exited && i_out < 0 && i_err < 0) break;
    int rc = ::poll(pfd, static_cast<nfds_t>(n), exited ? 200 : -1);
    if (rc < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (rc == 0) {  // exited, and nothing more came: a background process keeps the pipe
      break;
    }
    for (auto [idx, stream] : {std::pair{i_out, 1}, std::pair{i_err, 2}}) {
      if (idx < 0 || !(pfd[idx].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      std::optional<Pipe>& p = stream == 1 ? out : err;
      ssize_t k = ::read(p->r.fd, buf, sizeof buf);
      if (k > 0) {
        if (!client_gone && !send(stream, std::string_view(buf, static_cast<size_t>(k)))) client_gone = true;
      } else if (k == 0 || errno != EINTR) {
        p->r = Fd();
      }
    }
    if (i_sock >= 0 && pfd[i_sock].revents) {
      short ev = pfd[i_sock].revents;
      if (in_open && (ev & POLLIN)) {
        ssize_t k = ::read(c.fd(), buf, sizeof buf);
        if (k > 0) {
          if (::write(in->w.fd, buf, static_cast<size_t>(k)) < 0) {
            // the process closed its stdin: drop further input
          }
        } else if (k == 0 || errno != EINTR) {
          in_open = false;  // the client closed its side (CloseWrite): EOF to the process
          in->w = Fd();
        }
      }
      // A hang-up (the client closed both directions) or an error: it is gone.
      // (A read-side close alone is docker's CloseWrite: the end of stdin.)
      if (ev & (POLLHUP | POLLERR)) client_gone = true;
    }
    if (client_gone && !exited && !cancelled) {
      (void)!::write(cancel.w.fd, "x", 1);  // the exec's process is killed
      cancelled = true;
    }
    if (i_done >= 0 && (pfd[i_done].revents & POLLIN)) {
      exited = true;
      // Our copies of the process's ends: EOF comes once it (and what it left) closed theirs.
      if (out) out->w = Fd();
      if (err) err->w = Fd();
      if (in) in->r = Fd();
    }
  }
  t.join();
  if (!failure.empty() && !client_gone && code == kExitSbxFailed) send(2, "sbx: " + failure + "\n");
  finish();
  if (client_gone) log::debug("serve: exec " + id.substr(0, 12) + ": client went away; process killed");
}

void Api::cancel_all_execs() {
  sbx_v1(engine_.config(), default_runtime_).cancel_all();  // and those of /sbx/v1 exec streams
  std::lock_guard lk(mu_);
  for (const auto& [id, ex] : execs_)
    if (ex->running && ex->cancel_w >= 0) (void)!::write(ex->cancel_w, "x", 1);
}

}  // namespace sbx::server
