#include "runtime/linux/network.h"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "common/error.h"

namespace sbx::runtime {

void bring_up_loopback() {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw_errno("open a socket to configure lo");
  struct ifreq ifr {};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  // A new netns's lo is down with no other flags set; no need to read them first.
  ifr.ifr_flags = IFF_UP | IFF_LOOPBACK | IFF_RUNNING;
  if (::ioctl(fd, SIOCSIFFLAGS, &ifr) < 0) {
    int e = errno;
    ::close(fd);
    throw_errno("bring up lo", e);
  }
  ::close(fd);
}

}  // namespace sbx::runtime
