// The sandbox's network: by default a new network namespace with only the
// loopback interface up (no route anywhere, not even to the host's
// 127.0.0.1); --network host shares the host's namespace.
#pragma once

namespace sbx::runtime {

/// Brings "lo" up in the calling process's network namespace
/// (ioctl SIOCSIFFLAGS, netdevice(7)). Throws sbx::Error.
void bring_up_loopback();

}  // namespace sbx::runtime
