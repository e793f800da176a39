// The sandbox's network: by default a new network namespace with only the
// loopback interface up (no route anywhere, not even to the host's
// 127.0.0.1); --network host shares the host's namespace; --network private
// adds a veth from the host (runtime/linux/sandbox_network.h).
#pragma once
#include <string>

namespace sbx::runtime {

/// Brings "lo" up in the calling process's network namespace
/// (ioctl SIOCSIFFLAGS, netdevice(7)). Throws sbx::Error.
void bring_up_loopback();

/// Inside the sandbox, after pivot_root and before the root is made
/// read-only: writes /etc/hostname, /etc/hosts and /etc/resolv.conf as
/// regular files (a symlink there, e.g. to systemd-resolved's, is replaced),
/// creating /etc if the image has none. Throws sbx::Error.
void write_network_files(const std::string& hostname, const std::string& hosts, const std::string& resolv);

}  // namespace sbx::runtime
