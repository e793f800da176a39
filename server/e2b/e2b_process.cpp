// envd's process.Process service for the E2B endpoint (server/e2b/e2b.h), after
// envd's process.proto: Start and Connect are server streams of
// ProcessEvent (start {pid}, data {stdout|stderr: base64}, end {exitCode,
// exited, status, error}, keepalive); List, SendInput, SendSignal,
// CloseStdin and Update are unary.
//
// A process is an Engine::exec into the sandbox on pipes, run by a thread of
// its own: it belongs to the sandbox, not to the request that started it. Its
// events are kept (up to E2bApi::kKeepOutput bytes) so that every stream
// (Start, later Connects) reads them from its own position. "pid" is sbx's
// handle for the process (the SDK only passes it back), not a pid in the
// sandbox. SendSignal kills (SIGKILL, through ExecRequest::cancel_fd) for
// SIGKILL and SIGTERM alike. The request's Connect-Timeout-Ms bounds the
// process (killed when it passes, as envd does). An ended process is
// forgotten at once, as in envd. PTYs are not served.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>

#include "common/error.h"
#include "common/fd.h"
#include "common/json_number.h"
#include "common/log.h"
#include "server/e2b/e2b.h"
#include "server/exec_pump.h"

namespace sbx::server {

using nlohmann::json;

namespace {

/// Everything one process's runner thread owns.
struct Run {
  explicit Run(bool with_stdin) : pump({.stdin = with_stdin}) {}
  engine::ExecRequest req;
  ExecPump pump;
};

std::string data_event(const char* stream, std::string_view bytes) {
  return json{{"event", {{"data", {{stream, base64_encode(bytes)}}}}}}.dump();
}

}  // namespace

void E2bApi::process_start(Connection& c, const Request& r, const std::shared_ptr<E2bSandbox>& sb) {
  json in = connect_stream_request(r.body);
  if (in.contains("pty") && !in["pty"].is_null())
    throw ConnectError{"unimplemented", "sbx serve does not serve PTY sessions (sandbox.pty); use commands.run"};
  json cfg = in.value("process", json::object());
  std::string cmd = cfg.value("cmd", "");
  if (cmd.empty()) throw ConnectError{"invalid_argument", "process.cmd is empty"};
  std::vector<std::string> args{cmd};
  for (const auto& a : cfg.value("args", json::array())) args.push_back(a.get<std::string>());
  // commands.run() always starts "/bin/bash -l -c CMD" (E2B's templates have
  // bash); images without bash run it with their /bin/sh.
  if (cmd == "/bin/bash") {
    std::optional<bool> bash;
    {
      std::lock_guard lk(mu_);
      bash = sb->has_bash;
    }
    if (!bash) {
      int code = 1;
      run_helper(*sb, {"/bin/sh", "-c", "test -x /bin/bash"}, "", code);
      bash = code == 0;
      std::lock_guard lk(mu_);
      sb->has_bash = bash;
    }
    if (!*bash) args[0] = "/bin/sh";
  }

  auto run = std::make_shared<Run>(in.value("stdin", false));
  engine::ExecRequest& req = run->req;
  req.sandbox = sb->sbx_id;
  req.args = args;
  if (auto e = cfg.find("envs"); e != cfg.end() && e->is_object())
    for (const auto& [k, v] : e->items()) req.env.push_back(k + "=" + (v.is_string() ? v.get<std::string>() : v.dump()));
  req.cwd = cfg.value("cwd", "");
  req.user = request_user(r);
  // envd runs the process under the request's Connect deadline
  // (Connect-Timeout-Ms; the SDKs send commands.run's timeout, 60 s by
  // default) and kills it when it passes; so does exec's timeout (exit 124).
  try {
    std::string t = r.header("connect-timeout-ms");
    if (!t.empty()) req.timeout = std::chrono::milliseconds(std::stoll(t));
  } catch (...) {
    throw ConnectError{"invalid_argument", "malformed Connect-Timeout-Ms header"};
  }
  run->pump.wire(req);

  auto p = std::make_shared<E2bProcess>();
  p->config = cfg;
  p->tag = in.value("tag", "");
  {
    std::lock_guard lk(mu_);
    if (sb->gone) throw ConnectError{"unavailable", "sandbox " + sb->id + " is not running"};
    p->pid = next_pid_++;
    p->cancel_w = run->pump.cancel_fd();
    // From here p owns the stdin write end (SendInput, CloseStdin; closed at the end).
    p->stdin_w = std::exchange(run->pump.stdin_w().fd, -1);
    sb->procs[p->pid] = p;
  }
  auto append = [this, p](std::string ev) {
    {
      std::lock_guard lk(mu_);
      p->kept_bytes += ev.size();
      p->events.push_back(std::move(ev));
      while (p->kept_bytes > kKeepOutput && p->events.size() > 1) {
        p->kept_bytes -= p->events.front().size();
        p->events.pop_front();
        ++p->first_seq;
      }
    }
    cv_.notify_all();
  };
  std::thread([this, run, p, append, sb] {
    ExecPump& pump = run->pump;
    pump.start(engine_, run->req);
    for (;;) {
      struct pollfd pfd[3];
      int n = pump.add_pollfds(pfd, 0);
      if (n == 0) break;
      int rc = ::poll(pfd, static_cast<nfds_t>(n), pump.poll_timeout_ms());
      if (rc < 0 && errno == EINTR) continue;
      if (rc <= 0) break;  // ended, and nothing more came: a background child holds the pipe
      pump.handle(pfd, [&](int stream, std::string_view d) {
        append(data_event(stream == 1 ? "stdout" : "stderr", d));
        return true;
      });
    }
    ExecEnd ended = pump.join();
    int code = ended.exit_code;
    const std::string& failure = ended.failure;
    json end;
    {
      std::lock_guard lk(mu_);
      if (p->killed) {
        end = {{"exitCode", -1}, {"exited", false}, {"status", "signal: killed"}};
      } else {
        end = {{"exitCode", code}, {"exited", true}, {"status", "exit status " + std::to_string(code)}};
        if (!failure.empty()) end["error"] = failure;
      }
      p->exit_code = code;
      p->error = failure;
      if (p->stdin_w >= 0) ::close(p->stdin_w);
      p->stdin_w = -1;
      p->cancel_w = -1;
    }
    if (!failure.empty()) append(data_event("stderr", "sbx: " + failure + "\n"));
    {
      std::lock_guard lk(mu_);  // the end event and `ended` at once: a stream sees both
      std::string ev = json{{"event", {{"end", end}}}}.dump();
      p->kept_bytes += ev.size();
      p->events.push_back(std::move(ev));
      p->ended = true;
      // As envd: an ended process is no longer listed, connectable or
      // signalable (its streams hold it until they have sent its end).
      sb->procs.erase(p->pid);
    }
    cv_.notify_all();
  }).detach();

  stream_events(c, r, p, false);
}

void E2bApi::process_connect(Connection& c, const Request& r, const std::shared_ptr<E2bSandbox>& sb) {
  json in = connect_stream_request(r.body);
  auto p = select_process(in.value("process", json::object()), sb);
  stream_events(c, r, p, true);
}

void E2bApi::stream_events(Connection& c, const Request& r, const std::shared_ptr<E2bProcess>& p, bool connect) {
  int keepalive_s = 0;
  try {
    keepalive_s = std::stoi(r.header("keepalive-ping-interval"));
  } catch (...) {
  }
  if (!c.begin_chunks(200, "application/connect+json")) return;
  if (!c.chunk(connect_envelope(0, json{{"event", {{"start", {{"pid", p->pid}}}}}}.dump()))) return;
  uint64_t seq = 0;
  if (connect) {
    std::lock_guard lk(mu_);
    seq = p->first_seq;
  }
  auto last = std::chrono::steady_clock::now();
  for (;;) {
    std::vector<std::string> batch;
    bool end = false, stop = false;
    {
      std::unique_lock lk(mu_);
      cv_.wait_for(lk, std::chrono::milliseconds(250),
                   [&] { return seq < p->first_seq + p->events.size() || stopping_; });
      if (seq < p->first_seq) seq = p->first_seq;  // dropped while this client was slow
      for (; seq < p->first_seq + p->events.size(); ++seq) batch.push_back(p->events[seq - p->first_seq]);
      end = p->ended;
      stop = stopping_;
    }
    for (const auto& ev : batch)
      if (!c.chunk(connect_envelope(0, ev))) return;
    auto now = std::chrono::steady_clock::now();
    if (!batch.empty()) last = now;
    if (end) break;
    if (stop) {
      c.chunk(connect_end_stream(ConnectError{"unavailable", "sbx serve is shutting down"}));
      c.end_chunks();
      return;
    }
    if (batch.empty()) {
      // A client that went away stops its stream (the process keeps running).
      struct pollfd pf = {c.fd(), POLLRDHUP, 0};
      if (::poll(&pf, 1, 0) > 0 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
        c.set_close();
        return;
      }
      if (keepalive_s > 0 && now - last >= std::chrono::seconds(keepalive_s)) {
        if (!c.chunk(connect_envelope(0, R"({"event":{"keepalive":{}}})"))) return;
        last = now;
      }
    }
  }
  c.chunk(connect_end_stream(std::nullopt));
  c.end_chunks();
}

std::shared_ptr<E2bProcess> E2bApi::select_process(const json& sel, const std::shared_ptr<E2bSandbox>& sb) {
  std::lock_guard lk(mu_);
  if (sel.contains("pid")) {
    // A pid is below 2^22 (pid_max); anything else names no process. (A
    // string is protobuf JSON's form of a uint32; junk in it is no pid.)
    const json& p = sel["pid"];
    int64_t n = -1;
    if (p.is_string()) {
      const std::string& t = p.get_ref<const std::string&>();
      auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
      if (ec != std::errc() || end != t.data() + t.size() || t.empty()) n = -1;
    } else {
      n = json_number::to_int64(p).value_or(-1);
    }
    if (n < 0 || n > UINT32_MAX) throw ConnectError{"invalid_argument", "pid " + sel["pid"].dump() + " is not a process id"};
    uint32_t pid = static_cast<uint32_t>(n);
    auto it = sb->procs.find(pid);
    if (it == sb->procs.end()) throw ConnectError{"not_found", "process with pid " + std::to_string(pid) + " not found"};
    return it->second;
  }
  if (sel.contains("tag")) {
    std::string tag = sel["tag"].get<std::string>();
    for (const auto& [pid, p] : sb->procs)
      if (p->tag == tag && !p->ended) return p;
    throw ConnectError{"not_found", "process with tag " + tag + " not found"};
  }
  throw ConnectError{"invalid_argument", "process selector needs pid or tag"};
}

json E2bApi::process_unary(const std::string& method, const json& in, const std::shared_ptr<E2bSandbox>& sb) {
  if (method == "List") {
    json procs = json::array();
    std::lock_guard lk(mu_);
    for (const auto& [pid, p] : sb->procs) {
      if (p->ended) continue;
      json one = {{"config", p->config}, {"pid", pid}};
      if (!p->tag.empty()) one["tag"] = p->tag;
      procs.push_back(one);
    }
    return {{"processes", procs}};
  }
  if (method == "SendInput" || method == "CloseStdin" || method == "SendSignal") {
    auto p = select_process(in.value("process", json::object()), sb);
    std::lock_guard lk(mu_);
    if (p->ended) throw ConnectError{"not_found", "process with pid " + std::to_string(p->pid) + " has ended"};
    if (method == "SendSignal") {
      json s = in.value("signal", json());
      int64_t sig = s.is_string() ? (s == "SIGNAL_SIGKILL" ? 9 : s == "SIGNAL_SIGTERM" ? 15 : 0)
                                  : json_number::to_int64(s).value_or(0);
      if (sig != 9 && sig != 15) throw ConnectError{"invalid_argument", "signal must be SIGKILL or SIGTERM"};
      p->killed = true;
      if (p->cancel_w >= 0) (void)!::write(p->cancel_w, "x", 1);
      return json::object();
    }
    if (p->stdin_w < 0)
      throw ConnectError{"failed_precondition", "the process's stdin is closed (start it with stdin: true)"};
    if (method == "CloseStdin") {
      ::close(p->stdin_w);
      p->stdin_w = -1;
      return json::object();
    }
    json input = in.value("input", json::object());
    if (input.contains("pty")) throw ConnectError{"unimplemented", "sbx serve does not serve PTY input"};
    std::string data = base64_decode(input.value("stdin", ""));
    // A write to a process that does not read blocks once the pipe is full;
    // the lock is held, so write without blocking and refuse what does not fit.
    int fl = ::fcntl(p->stdin_w, F_GETFL);
    ::fcntl(p->stdin_w, F_SETFL, fl | O_NONBLOCK);
    size_t off = 0;
    while (off < data.size()) {
      ssize_t k = ::write(p->stdin_w, data.data() + off, data.size() - off);
      if (k > 0) {
        off += static_cast<size_t>(k);
        continue;
      }
      if (k < 0 && errno == EINTR) continue;
      ::fcntl(p->stdin_w, F_SETFL, fl);
      if (k < 0 && errno == EAGAIN)
        throw ConnectError{"resource_exhausted", "the process is not reading its stdin (pipe full)"};
      throw ConnectError{"failed_precondition", "the process closed its stdin"};
    }
    ::fcntl(p->stdin_w, F_SETFL, fl);
    return json::object();
  }
  if (method == "Update") return json::object();  // PTY resize: no PTYs here
  throw ConnectError{"unimplemented", "process.Process/" + method + " is not served by sbx"};
}

}  // namespace sbx::server
