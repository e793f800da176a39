#include "runtime/gvisor/gvisor_network.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <thread>
#include <utility>

#include "common/error.h"
#include "common/fs.h"

namespace sbx::runtime::gvisor {

namespace {

/// A new network namespace, held by the returned fd. Made on a thread of its
/// own: unshare(CLONE_NEWNET) changes only the calling thread, so sbx's main
/// thread never leaves the host's namespace; the thread ends at once and the
/// fd keeps the namespace. Throws sbx::Error.
int new_network_namespace() {
  int fd = -1, err = 0;
  std::thread t([&] {
    if (::unshare(CLONE_NEWNET) < 0) {
      err = errno;
      return;
    }
    fd = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (fd < 0) err = errno;
  });
  t.join();
  if (fd < 0) throw_errno("create a network namespace for the gVisor sandbox", err);
  return fd;
}

}  // namespace

GvisorNetwork::GvisorNetwork(GvisorNetwork&& o) noexcept
    : lease(std::exchange(o.lease, {})), netns_fd(std::exchange(o.netns_fd, -1)), netns_path(std::move(o.netns_path)) {}

GvisorNetwork& GvisorNetwork::operator=(GvisorNetwork&& o) noexcept {
  if (this != &o) {
    close_namespace();
    lease = std::exchange(o.lease, {});
    netns_fd = std::exchange(o.netns_fd, -1);
    netns_path = std::move(o.netns_path);
  }
  return *this;
}

void GvisorNetwork::close_namespace() noexcept {
  if (netns_fd >= 0) ::close(std::exchange(netns_fd, -1));
}

GvisorNetwork prepare_network(SandboxSpec& spec, const std::string& run_root, const std::string& files_dir,
                              bool detached) {
  GvisorNetwork net;
  if (spec.hostname.empty()) spec.hostname = spec.id.substr(0, 12);
  net.lease = allocate_sandbox_networks(run_root, spec.id, spec, spec.hostname, detached);
  try {
    fs::mkdir_p(files_dir, 0755);
    const std::pair<const char*, std::string> files[] = {
        {"hostname", spec.hostname + "\n"},
        {"hosts", sandbox_hosts(net.lease, spec.hostname, spec.net)},
        {"resolv.conf", sandbox_resolv(net.lease, spec.net)}};
    for (const auto& [name, text] : files) {
      std::string path = files_dir + "/" + name;
      fs::write_file_atomic(path, text, 0644);
      // Read-only: the gofer would write a read-write bind as host root.
      spec.mounts.push_back({std::string("/etc/") + name, "bind", path, {"rbind", "ro"}});
    }
    net.netns_fd = new_network_namespace();
    net.netns_path = "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(net.netns_fd);
    // runsc copies the namespace's links that are up: its loopback too.
    RtNetlink::in_netns(net.netns_fd).link_up("lo");
    attach_sandbox_networks(net.lease, net.netns_fd, spec.net, detached);
  } catch (...) {
    release_network(net);
    throw;
  }
  return net;
}

void hide_host_net_sysctls_from_runsc() {
  if (::mount("sbx-nosysctl", "/proc/sys/net", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "size=4k,mode=0555") < 0)
    throw_errno("cover /proc/sys/net for runsc (its root network namespace check)");
}

void release_network(GvisorNetwork& net) noexcept {
  net.close_namespace();
  if (!net.lease.empty()) runtime::release_network(net.lease);
}

}  // namespace sbx::runtime::gvisor
