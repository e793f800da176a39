// The end of a sandbox sbx serve created (server/reaper.h).
#include "server/reaper.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "common/error.h"
#include "common/log.h"
#include "runtime/state.h"

namespace sbx::server {

std::optional<runtime::EndRecord> wait_and_reap(engine::Engine& engine, const std::string& id,
                                                const runtime::SandboxState& created, std::string_view api) {
  std::optional<runtime::EndRecord> end;
  try {
    end = engine.wait(id);
  } catch (const std::exception& e) {
    log::debug("serve: " + std::string(api) + ": wait for " + id.substr(0, 12) + ": " + e.what());
  }
  // What this process holds of it (its init or monitor is our child).
  if (!created.id.empty()) engine.reap(created);
  return end;
}

namespace {

/// The one watcher: an epoll set of the watched inits' pidfds (a pidfd reads
/// as readable once its process ended), each with its callback.
class EndWatcher {
 public:
  static EndWatcher& get() {
    static EndWatcher* w = new EndWatcher();  // never freed: its thread runs to the end
    return *w;
  }

  /// False when it could not be added (no epoll): the caller waits on its own.
  bool add(int pidfd, std::function<void()> cb) {
    std::lock_guard lk(mu_);
    if (ep_ < 0) return false;
    if (!started_) {
      std::thread([this] { loop(); }).detach();
      started_ = true;
    }
    callbacks_[pidfd] = std::move(cb);
    struct epoll_event ev {};
    ev.events = EPOLLIN;
    ev.data.fd = pidfd;
    if (::epoll_ctl(ep_, EPOLL_CTL_ADD, pidfd, &ev) != 0) {
      callbacks_.erase(pidfd);
      return false;
    }
    return true;
  }

  size_t size() {
    std::lock_guard lk(mu_);
    return callbacks_.size();
  }

 private:
  EndWatcher() : ep_(::epoll_create1(EPOLL_CLOEXEC)) {
    if (ep_ < 0) log::warn(std::string("serve: epoll_create1: ") + std::strerror(errno) + " (a thread per sandbox instead)");
  }

  void loop() {
    struct epoll_event evs[64];
    for (;;) {
      int n = ::epoll_wait(ep_, evs, 64, -1);
      if (n < 0) {
        if (errno == EINTR) continue;
        log::warn(std::string("serve: the sandbox end watcher's epoll_wait: ") + std::strerror(errno));
        return;
      }
      for (int i = 0; i < n; ++i) {
        int fd = evs[i].data.fd;
        std::function<void()> cb;
        {
          std::lock_guard lk(mu_);
          auto it = callbacks_.find(fd);
          if (it == callbacks_.end()) continue;
          cb = std::move(it->second);
          callbacks_.erase(it);
          ::epoll_ctl(ep_, EPOLL_CTL_DEL, fd, nullptr);
        }
        ::close(fd);
        std::thread(std::move(cb)).detach();
      }
    }
  }

  int ep_;
  std::mutex mu_;
  bool started_ = false;
  std::map<int, std::function<void()>> callbacks_;  ///< by pidfd
};

}  // namespace

void on_sandbox_end(const runtime::SandboxState& created, std::function<void()> on_end) {
  int fd = runtime::open_init_pidfd(created);
  if (fd < 0) {
    // Gone already (or never started): nothing to watch.
    std::thread(std::move(on_end)).detach();
    return;
  }
  // The callback is moved only on success (add() takes it by value: keep a copy for the fallback).
  std::function<void()> copy = on_end;
  if (EndWatcher::get().add(fd, std::move(on_end))) return;
  ::close(fd);
  std::thread(std::move(copy)).detach();  // its wait_and_reap waits
}

size_t watched_sandboxes() { return EndWatcher::get().size(); }

}  // namespace sbx::server
