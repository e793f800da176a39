// Engine: the warm pool (engine/pool.h).
#include "engine/pool.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <sstream>

#include "common/error.h"
#include "common/fs.h"
#include "engine/engine.h"
#include "runtime/backends.h"
#include "runtime/lifecycle.h"
#include "runtime/linux/cgroups.h"

namespace sbx::engine {

std::string pool_key(const SandboxSpec& s, bool userns) {
  // Readable rather than hashed: the API server may show it.
  std::ostringstream k;
  k << s.runtime << '|' << s.image_id << '|' << s.image_ref << '|';
  for (const auto& l : s.layer_dirs) k << l << ',';
  k << '|' << (userns ? "userns" : "hostns") << '|' << s.readonly_rootfs << '|' << s.disk_bytes << '|';
  const auto& r = s.resources;
  k << (r.memory_bytes ? std::to_string(*r.memory_bytes) : "-") << '|' << (r.cpus ? std::to_string(*r.cpus) : "-")
    << '|' << (r.pids_limit ? std::to_string(*r.pids_limit) : "-") << '|' << r.devices.size() << '|';
  k << static_cast<int>(s.network) << '|';
  for (const auto& a : s.net.allow_egress) k << a << ',';
  k << '|';
  for (const auto& a : s.net.deny_egress) k << a << ',';
  k << '|' << s.net.publish.size() << '|';
  // (dns and extra hosts: written into the sandbox's /etc at setup)
  for (const auto& d : s.net.dns) k << d << ',';
  k << '|';
  for (const auto& [n, ip] : s.net.extra_hosts) k << n << '=' << ip << ',';
  k << '|';
  for (const auto& a : s.net.networks) {
    k << a.network << ':' << a.ip;
    for (const auto& al : a.aliases) k << '+' << al;
    k << ',';
  }
  k << '|';
  for (const auto& m : s.mounts) {
    k << m.destination << '=' << m.type << ':' << m.source;
    for (const auto& o : m.options) k << ',' << o;
    k << ';';
  }
  k << '|' << s.process.user << '|' << s.process.uid << ':' << s.process.gid << '|' << s.process.cwd << '|'
    << s.process.no_new_privileges << '|';
  for (const auto& c : s.process.capabilities) k << c << ',';
  k << '|' << s.devices.size() << '|' << s.ldconfig_dirs.size();
  return k.str();
}

WarmPool::WarmPool(PoolOptions opts) : opts_(std::move(opts)) {
  if (opts_.size == 0) throw Error("a warm pool needs a size of 1 or more");
  runtime::BackendOptions bo;
  bo.run_root = opts_.run_root;
  backend_ = runtime::backend_for(opts_.spec.runtime, bo);
  backend_->require(runtime::Operation::Warm);
  if (opts_.spec.process.terminal) throw Error("a pooled sandbox has no terminal (-t)");
  key_ = pool_key(opts_.spec, opts_.userns);
  start_guardian();
  threads_.reserve(opts_.size);
  for (size_t i = 0; i < opts_.size; ++i) threads_.emplace_back([this] { refill(); });
}

WarmPool::~WarmPool() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  {
    std::lock_guard<std::mutex> l(mu_);
    ready_.clear();  // (each handle destroys its sandbox)
  }
  // Every sandbox of ours is gone: the guardian has nothing to do.
  if (guardian_fd_ >= 0) {
    (void)!::send(guardian_fd_, "Q\n", 2, MSG_NOSIGNAL);
    ::close(guardian_fd_);
  }
  if (guardian_ > 0)
    while (::waitpid(guardian_, nullptr, 0) < 0 && errno == EINTR) {
    }
}

void WarmPool::start_guardian() {
  int p[2];
  // A socket pair, not a pipe: send(MSG_NOSIGNAL) to a guardian that was
  // killed must not SIGPIPE the owner.
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) < 0) throw_errno("socket pair for the warm pool's guardian");
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(p[0]);
    ::close(p[1]);
    throw_errno("fork the warm pool's guardian", e);
  }
  if (pid == 0) {
    // The guardian: survives the owner (no PDEATHSIG), ignores the
    // terminal's signals, holds nothing but its pipe.
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) ::signal(sig, SIG_IGN);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    int fd = p[0];
    if (fd != 3 && ::dup2(fd, 3) < 0) ::_exit(1);
    ::syscall(SYS_close_range, 4U, ~0U, 0U);
    int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 1);
      if (null > 2) ::close(null);
    }
    std::string buf;
    char b[4096];
    for (;;) {
      ssize_t n = ::read(3, b, sizeof b);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      buf.append(b, static_cast<size_t>(n));
    }
    std::vector<std::string> ids;
    std::istringstream in(buf);
    for (std::string line; std::getline(in, line);) {
      if (line == "Q") ::_exit(0);  // the pool ended cleanly
      if (!line.empty()) ids.push_back(line);
    }
    // The owner died: its sandboxes' inits were SIGKILLed with it
    // (PR_SET_PDEATHSIG); remove what they leave. A few tries: a cgroup is
    // busy until its last process has gone.
    for (int attempt = 0; attempt < 50 && !ids.empty(); ++attempt) {
      std::vector<std::string> left;
      for (const auto& id : ids) {
        try {
          if (fs::exists(opts_.run_root + "/" + id)) backend_->remove(id, true);
        } catch (const std::exception&) {
        }
        // Its cgroups by their names (one killed before its state.json was
        // written has none on record); busy until its last process is gone.
        auto dirs = runtime::sandbox_cgroup_dirs(id);
        std::erase_if(dirs, [](const std::string& d) { return !fs::exists(d); });
        if (!dirs.empty()) runtime::destroy_cgroup_dirs(dirs);
        bool gone = !fs::exists(opts_.run_root + "/" + id);
        for (const auto& d : dirs) gone = gone && !fs::exists(d);
        if (!gone) left.push_back(id);
      }
      ids = std::move(left);
      if (!ids.empty()) ::usleep(100 * 1000);
    }
    runtime::release_sandboxes_parent();
    ::_exit(0);
  }
  ::close(p[0]);
  guardian_ = pid;
  guardian_fd_ = p[1];
}

void WarmPool::refill() {
  // Signals are the owner's main thread's business (the batch reads its
  // SIGINT with a signalfd): none is delivered here.
  sigset_t all;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, nullptr);
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [&] {
      return stop_ || (error_.empty() && ready_.size() + starting_ < opts_.size && (deferring_ == 0 || ready_.empty()));
    });
    if (stop_) return;
    ++starting_;
    l.unlock();
    SandboxSpec spec = opts_.spec;
    std::string err;
    int code = kExitSbxFailed;
    std::unique_ptr<runtime::WarmSandbox> sb;
    try {
      spec.id = runtime::new_sandbox_id();
      {
        // The guardian knows it before anything of it exists.
        std::string line = spec.id + "\n";
        std::lock_guard<std::mutex> gl(mu_);
        (void)!::send(guardian_fd_, line.data(), line.size(), MSG_NOSIGNAL);
      }
      spec.hostname = spec.id.substr(0, 12);
      spec.name.clear();
      // This thread is the init's parent: PR_SET_PDEATHSIG fires when it
      // ends, that is when the pool does (or its owner dies).
      sb = backend_->start_warm(spec, opts_.userns);
    } catch (const Error& e) {
      err = e.what();
      code = e.exit_code();
    } catch (const std::exception& e) {
      err = e.what();
    }
    l.lock();
    --starting_;
    if (err.empty()) {
      ready_.push_back(std::move(sb));
    } else {
      error_ = "warm pool: " + err;
      error_code_ = code;
    }
    cv_.notify_all();
  }
}

std::unique_ptr<runtime::WarmSandbox> WarmPool::take() {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return !ready_.empty() || !error_.empty(); });
  if (ready_.empty()) {
    std::string e = std::exchange(error_, "");
    cv_.notify_all();  // the refill tries again
    throw Error(e, 0, error_code_);
  }
  std::unique_ptr<runtime::WarmSandbox> sb = std::move(ready_.front());
  ready_.pop_front();
  cv_.notify_all();
  return sb;
}

std::shared_ptr<void> WarmPool::defer_refill() {
  {
    std::lock_guard<std::mutex> l(mu_);
    ++deferring_;
  }
  return std::shared_ptr<void>(static_cast<void*>(this), [this](void*) {
    {
      std::lock_guard<std::mutex> l(mu_);
      --deferring_;
    }
    cv_.notify_all();
  });
}

ExitStatus WarmPool::run(const runtime::PooledCommand& cmd, std::chrono::milliseconds timeout) {
  std::unique_ptr<runtime::WarmSandbox> sb = take();
  sb->run(cmd);
  return sb->wait(timeout);  // (the handle destroys it)
}

std::unique_ptr<WarmPool> Engine::make_pool(const SandboxSpec& spec, bool userns, size_t size) {
  PoolOptions o;
  o.spec = spec;
  o.userns = userns;
  o.size = size;
  o.run_root = cfg_.run_root;
  return std::make_unique<WarmPool>(std::move(o));
}

size_t WarmPool::ready() const {
  std::lock_guard<std::mutex> l(mu_);
  return ready_.size();
}

}  // namespace sbx::engine
