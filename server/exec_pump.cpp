// The process side of sbx serve's exec streams (server/exec_pump.h).
#include "server/exec_pump.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "common/error.h"
#include "engine/engine.h"

namespace sbx::server {

ExecPump::ExecPump(Options o) : o_(o) {
  if (o_.stdin) {
    Pipe p("the exec's stdin pipe");
    in_r_ = std::move(p.r);
    in_w_ = std::move(p.w);
  }
  if (o_.discard_output) {
    devnull_ = Fd(::open("/dev/null", O_WRONLY | O_CLOEXEC));
    if (devnull_.fd < 0) throw_errno("open /dev/null for a detached exec");
    return;
  }
  Pipe out("the exec's stdout pipe");
  out_r_ = std::move(out.r);
  out_w_ = std::move(out.w);
  if (!o_.merge_stderr) {
    Pipe err("the exec's stderr pipe");
    err_r_ = std::move(err.r);
    err_w_ = std::move(err.w);
  }
}

ExecPump::~ExecPump() {
  if (thread_.joinable()) {
    if (!exited_) cancel();
    thread_.join();
  }
}

void ExecPump::wire(engine::ExecRequest& req) {
  req.stdin_fd = in_r_.fd;
  req.interactive = o_.stdin;
  if (o_.discard_output) {
    req.stdout_fd = req.stderr_fd = devnull_.fd;
  } else {
    req.stdout_fd = out_w_.fd;
    req.stderr_fd = o_.merge_stderr ? out_w_.fd : err_w_.fd;
  }
  req.cancel_fd = cancel_.r.fd;
  req.forward_signals = false;
}

void ExecPump::start(engine::Engine& engine, const engine::ExecRequest& req) {
  thread_ = std::thread([this, &engine, &req] {
    ExecEnd e;
    try {
      auto res = engine.exec(req);
      e.exit_code = res.exit_code;
      e.timed_out = res.timed_out;
    } catch (const Error& x) {
      e.failure = x.what();
      e.exit_code = e.failure_code = x.exit_code();
    } catch (const std::exception& x) {
      e.failure = x.what();
      e.exit_code = e.failure_code = kExitSbxFailed;
    }
    end_ = std::move(e);  // read by join(), after the thread ends
    (void)!::write(done_.w.fd, "x", 1);
  });
}

void ExecPump::cancel() {
  if (cancelled_) return;
  cancelled_ = true;
  (void)!::write(cancel_.w.fd, "x", 1);
}

int ExecPump::add_pollfds(struct pollfd* pfd, int n) {
  i_out_ = i_err_ = i_done_ = -1;
  if (out_r_.fd >= 0) pfd[i_out_ = n++] = {out_r_.fd, POLLIN, 0};
  if (err_r_.fd >= 0) pfd[i_err_ = n++] = {err_r_.fd, POLLIN, 0};
  if (!exited_) pfd[i_done_ = n++] = {done_.r.fd, POLLIN, 0};
  return n;
}

bool ExecPump::handle(const struct pollfd* pfd, const std::function<bool(int, std::string_view)>& sink) {
  bool ok = true;
  char buf[65536];
  for (auto [idx, stream] : {std::pair{i_out_, 1}, std::pair{i_err_, 2}}) {
    if (idx < 0 || !(pfd[idx].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    Fd& fd = stream == 1 ? out_r_ : err_r_;
    ssize_t k = ::read(fd.fd, buf, sizeof buf);
    if (k > 0) {
      if (!sink(stream, std::string_view(buf, static_cast<size_t>(k)))) ok = false;
    } else if (k == 0 || errno != EINTR) {
      fd = Fd();
    }
  }
  if (i_done_ >= 0 && (pfd[i_done_].revents & POLLIN)) {
    exited_ = true;
    // Our copies of the process's ends: EOF comes once it (and what it left) closed theirs.
    out_w_ = Fd();
    err_w_ = Fd();
    in_r_ = Fd();
  }
  return ok;
}

ExecEnd ExecPump::join() {
  if (thread_.joinable()) thread_.join();
  exited_ = true;
  return end_;
}

}  // namespace sbx::server
