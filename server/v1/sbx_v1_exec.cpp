// POST /sbx/v1/sandboxes/{id}/exec: a process in the sandbox, its stdin,
// stdout and stderr as frames on an upgraded connection (server/v1/sbx_v1.h,
// docs/api.md "Exec stream"). Bytes are carried as they are (NULs, invalid
// UTF-8). The process runs through Engine::exec on pipes; a client that goes
// away (EOF or error on the socket without a StdinClose first is not enough:
// a hang-up or a failed write) or sends Kill gets the process SIGKILLed
// (runtime::ExecRequest::cancel_fd), so nothing is left running.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "common/error.h"
#include "common/fd.h"
#include "common/log.h"
#include "server/v1/sbx_v1.h"

namespace sbx::server {

using nlohmann::json;

namespace {

bool wants_upgrade(const Request& r) {
  std::string up = r.header("upgrade");
  return up.rfind("sbx-stream", 0) == 0;
}

}  // namespace

void SbxV1::exec(Connection& c, const Request& r, const std::string& ref) {
  std::string id = resolve(ref);
  json b = json::parse(r.body.empty() ? "{}" : r.body);
  if (!wants_upgrade(r))
    throw V1Error{400, "InvalidArgument", "exec needs 'Connection: Upgrade' and 'Upgrade: sbx-stream/1' (docs/api.md)"};
  engine::ExecRequest req;
  req.sandbox = id;
  if (auto a = b.find("args"); a != b.end() && a->is_array())
    for (const auto& e : *a) {
      if (!e.is_string()) throw V1Error{400, "InvalidArgument", "args must be a list of strings"};
      req.args.push_back(e.get<std::string>());
    }
  if (req.args.empty()) throw V1Error{400, "InvalidArgument", "exec needs a command (args)"};
  if (auto e = b.find("env"); e != b.end() && e->is_object())
    for (const auto& [k, v] : e->items())
      if (v.is_string()) req.env.push_back(k + "=" + v.get<std::string>());
  req.cwd = b.value("workdir", "");
  req.user = b.value("user", "");
  if (auto t = b.find("timeout"); t != b.end() && t->is_number() && t->get<double>() > 0)
    req.timeout = std::chrono::milliseconds(static_cast<int64_t>(t->get<double>() * 1000));
  bool pty = b.value("pty", false);
  if (pty) req.env.push_back("TERM=xterm");
  req.forward_signals = false;
  if (engine_.inspect(id).status != "running")
    throw V1Error{409, "Conflict", "sandbox " + id.substr(0, 12) + " is not running"};

  Pipe in, out, cancel, done;
  std::optional<Pipe> err;
  req.stdin_fd = in.r.fd;
  req.interactive = true;
  req.stdout_fd = out.w.fd;
  if (!pty) {
    err.emplace();
    req.stderr_fd = err->w.fd;
  } else {
    req.stderr_fd = out.w.fd;  // one stream, as a terminal gives (pipes, not a pty: docs/api.md)
  }
  req.cancel_fd = cancel.r.fd;
  ::fcntl(in.w.fd, F_SETFL, O_NONBLOCK);  // a process that does not read its stdin never blocks the pump

  if (!c.hijack(r, "application/vnd.sbx.exec-stream")) return;
  {
    std::lock_guard lk(mu_);
    cancel_fds_.insert(cancel.w.fd);
  }
  int code = 0;
  bool timed_out = false;
  std::string failure;
  int failure_code = 0;
  std::thread t([this, &req, &code, &timed_out, &failure, &failure_code, &done] {
    try {
      auto res = engine_.exec(req);
      code = res.exit_code;
      timed_out = res.timed_out;
    } catch (const Error& e) {
      failure = e.what();
      failure_code = e.exit_code();
    } catch (const std::exception& e) {
      failure = e.what();
      failure_code = kExitSbxFailed;
    }
    (void)!::write(done.w.fd, "x", 1);
  });

  std::string inbuf = r.leftover;  // frames read from the socket, not yet parsed
  std::string pending;             // stdin bytes not yet written to the pipe
  bool stdin_eof = false, client_gone = false, exited = false, cancelled = false, sock_eof = false;
  char buf[65536];
  auto parse_frames = [&] {
    while (inbuf.size() >= 5) {
      uint32_t n = (uint32_t(uint8_t(inbuf[1])) << 24) | (uint32_t(uint8_t(inbuf[2])) << 16) |
                   (uint32_t(uint8_t(inbuf[3])) << 8) | uint32_t(uint8_t(inbuf[4]));
      if (inbuf.size() < 5 + static_cast<size_t>(n)) break;
      auto kind = static_cast<FrameKind>(inbuf[0]);
      if (kind == FrameKind::Stdin && !stdin_eof) pending.append(inbuf, 5, n);
      else if (kind == FrameKind::StdinClose) stdin_eof = true;
      else if (kind == FrameKind::Kill && !cancelled) {
        (void)!::write(cancel.w.fd, "x", 1);
        cancelled = true;
      }
      inbuf.erase(0, 5 + n);
    }
  };
  auto flush_stdin = [&] {
    while (!pending.empty() && in.w.fd >= 0) {
      ssize_t k = ::write(in.w.fd, pending.data(), pending.size());
      if (k > 0) {
        pending.erase(0, static_cast<size_t>(k));
      } else if (k < 0 && errno == EINTR) {
        continue;
      } else if (k < 0 && errno == EAGAIN) {
        return;
      } else {  // EPIPE: the process closed its stdin; drop what is left
        pending.clear();
        in.w = Fd();
      }
    }
    if (pending.empty() && stdin_eof && in.w.fd >= 0) in.w = Fd();  // EOF to the process
  };
  parse_frames();
  flush_stdin();
  for (;;) {
    struct pollfd pfd[5];
    int n = 0, i_out = -1, i_err = -1, i_sock = -1, i_done = -1, i_in = -1;
    if (out.r.fd >= 0) pfd[i_out = n++] = {out.r.fd, POLLIN, 0};
    if (err && err->r.fd >= 0) pfd[i_err = n++] = {err->r.fd, POLLIN, 0};
    // Backpressure: no more socket reads while 4 MiB of stdin wait.
    bool read_sock = !client_gone && !sock_eof && pending.size() < (4u << 20);
    if (!client_gone) pfd[i_sock = n++] = {c.fd(), static_cast<short>(read_sock ? POLLIN : 0), 0};
    if (!exited) pfd[i_done = n++] = {done.r.fd, POLLIN, 0};
    if (!pending.empty() && in.w.fd >= 0) pfd[i_in = n++] = {in.w.fd, POLLOUT, 0};
    if (exited && i_out < 0 && i_err < 0) break;
    int rc = ::poll(pfd, static_cast<nfds_t>(n), exited ? 200 : -1);
    if (rc < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (rc == 0) break;  // exited, and its output ends stay open (a background process): done
    for (auto [idx, kind] : {std::pair{i_out, FrameKind::Stdout}, std::pair{i_err, FrameKind::Stderr}}) {
      if (idx < 0 || !(pfd[idx].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Fd& fd = kind == FrameKind::Stdout ? out.r : err->r;
      ssize_t k = ::read(fd.fd, buf, sizeof buf);
      if (k > 0) {
        if (!client_gone && !c.write_raw(v1_frame(kind, std::string_view(buf, static_cast<size_t>(k)))))
          client_gone = true;
      } else if (k == 0 || errno != EINTR) {
        fd = Fd();
      }
    }
    if (i_sock >= 0 && pfd[i_sock].revents) {
      short ev = pfd[i_sock].revents;
      if (ev & POLLIN) {
        ssize_t k = ::read(c.fd(), buf, sizeof buf);
        if (k > 0) {
          inbuf.append(buf, static_cast<size_t>(k));
          parse_frames();
        } else if (k == 0) {
          // The client shut its write side: no more frames. Only a client
          // that closed without StdinClose (a killed one) cancels the exec.
          sock_eof = true;
          if (!stdin_eof) client_gone = true;
        } else if (errno != EINTR) {
          client_gone = true;
        }
      }
      if (ev & (POLLHUP | POLLERR)) client_gone = true;
    }
    if (i_in >= 0 || !pending.empty() || stdin_eof) flush_stdin();
    if (client_gone && !exited && !cancelled) {
      (void)!::write(cancel.w.fd, "x", 1);
      cancelled = true;
    }
    if (i_done >= 0 && (pfd[i_done].revents & POLLIN)) {
      exited = true;
      out.w = Fd();
      if (err) err->w = Fd();
      in.r = Fd();
    }
  }
  t.join();
  {
    std::lock_guard lk(mu_);
    cancel_fds_.erase(cancel.w.fd);
  }
  if (client_gone) {
    log::debug("serve: sbx/v1 exec in " + id.substr(0, 12) + ": client went away; process killed");
    return;
  }
  if (!failure.empty()) {
    std::string kind = failure_code == kExitNotFound ? "CommandNotFound" : "ExecFailed";
    c.write_raw(v1_frame(FrameKind::Error, json{{"message", failure}, {"kind", kind}, {"exit_code", failure_code}}.dump()));
    return;
  }
  c.write_raw(v1_frame(FrameKind::Exit, json{{"exit_code", code}, {"timed_out", timed_out}}.dump()));
}

}  // namespace sbx::server
