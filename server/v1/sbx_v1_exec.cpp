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

#include "common/error.h"
#include "common/fd.h"
#include "common/json_number.h"
#include "common/log.h"
#include "server/exec_pump.h"
#include "server/framing.h"
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
  if (auto t = b.find("timeout"); t != b.end() && !t->is_null()) {
    auto ms = json_number::seconds_to_ms(*t, json_number::kMaxSeconds);
    if (!ms) throw V1Error{400, "InvalidArgument", "timeout must be a number of seconds, 0 to 1e9"};
    if (ms->count() > 0) req.timeout = *ms;
  }
  bool pty = b.value("pty", false);
  if (pty) req.env.push_back("TERM=xterm");
  if (engine_.inspect(id).status != "running")
    throw V1Error{409, "Conflict", "sandbox " + id.substr(0, 12) + " is not running"};

  ExecPump pump({.stdin = true, .merge_stderr = pty});  // one stream with pty: as a terminal gives (pipes, not a pty: docs/api.md)
  pump.wire(req);
  Fd& in_w = pump.stdin_w();
  ::fcntl(in_w.fd, F_SETFL, O_NONBLOCK);  // a process that does not read its stdin never blocks the pump

  if (!c.hijack(r, "application/vnd.sbx.exec-stream")) return;
  {
    std::lock_guard lk(mu_);
    cancel_fds_.insert(pump.cancel_fd());
  }
  pump.start(engine_, req);

  std::string inbuf = r.leftover;  // frames read from the socket, not yet parsed
  std::string pending;             // stdin bytes not yet written to the pipe
  bool stdin_eof = false, client_gone = false, sock_eof = false;
  char buf[65536];
  auto parse_frames = [&] {
    size_t used = 0;
    while (auto f = parse_prefixed_frame(std::string_view(inbuf).substr(used))) {
      auto kind = static_cast<FrameKind>(f->head);
      if (kind == FrameKind::Stdin && !stdin_eof) pending.append(f->payload);
      else if (kind == FrameKind::StdinClose) stdin_eof = true;
      else if (kind == FrameKind::Kill) pump.cancel();
      used += f->size;
    }
    inbuf.erase(0, used);
  };
  auto flush_stdin = [&] {
    while (!pending.empty() && in_w.fd >= 0) {
      ssize_t k = ::write(in_w.fd, pending.data(), pending.size());
      if (k > 0) {
        pending.erase(0, static_cast<size_t>(k));
      } else if (k < 0 && errno == EINTR) {
        continue;
      } else if (k < 0 && errno == EAGAIN) {
        return;
      } else {  // EPIPE: the process closed its stdin; drop what is left
        pending.clear();
        in_w = Fd();
      }
    }
    if (pending.empty() && stdin_eof && in_w.fd >= 0) in_w = Fd();  // EOF to the process
  };
  parse_frames();
  flush_stdin();
  for (;;) {
    struct pollfd pfd[5];
    int i_sock = -1, i_in = -1;
    int n = pump.add_pollfds(pfd, 0);
    // Backpressure: no more socket reads while 4 MiB of stdin wait.
    bool read_sock = !client_gone && !sock_eof && pending.size() < (4u << 20);
    if (!client_gone) pfd[i_sock = n++] = {c.fd(), static_cast<short>(read_sock ? POLLIN : 0), 0};
    if (!pending.empty() && in_w.fd >= 0) pfd[i_in = n++] = {in_w.fd, POLLOUT, 0};
    if (pump.done()) break;
    int rc = ::poll(pfd, static_cast<nfds_t>(n), pump.poll_timeout_ms());
    if (rc < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (rc == 0) break;  // exited, and its output ends stay open (a background process): done
    if (!pump.handle(pfd, [&](int stream, std::string_view d) {
          return client_gone || c.write_raw(v1_frame(stream == 1 ? FrameKind::Stdout : FrameKind::Stderr, d));
        }))
      client_gone = true;
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
    if (client_gone && !pump.exited()) pump.cancel();
  }
  ExecEnd end = pump.join();
  {
    std::lock_guard lk(mu_);
    cancel_fds_.erase(pump.cancel_fd());
  }
  if (client_gone) {
    log::debug("serve: sbx/v1 exec in " + id.substr(0, 12) + ": client went away; process killed");
    return;
  }
  if (!end.failure.empty()) {
    std::string kind = end.failure_code == kExitNotFound ? "CommandNotFound" : "ExecFailed";
    c.write_raw(v1_frame(FrameKind::Error, json{{"message", end.failure}, {"kind", kind}, {"exit_code", end.failure_code}}.dump()));
    return;
  }
  c.write_raw(v1_frame(FrameKind::Exit, json{{"exit_code", end.exit_code}, {"timed_out", end.timed_out}}.dump()));
}

}  // namespace sbx::server
