#include "runtime/linux/pty.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <string>

#include "common/error.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

namespace sbx::runtime {

PtyPair open_pty() {
  PtyPair p;
  p.master = ::open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (p.master < 0) throw_errno("open /dev/ptmx");
  if (::unlockpt(p.master) < 0) {
    int e = errno;
    ::close(p.master);
    throw_errno("unlock the pty", e);
  }
  p.slave = ::ioctl(p.master, TIOCGPTPEER, O_RDWR | O_NOCTTY);
  if (p.slave < 0) {
    int e = errno;
    ::close(p.master);
    throw_errno("open the pty's slave side", e);
  }
  return p;
}

void make_controlling_terminal(int slave) {
  if (::ioctl(slave, TIOCSCTTY, 0) < 0) throw_errno("make the pty the controlling terminal");
  for (int fd = 0; fd < 3; ++fd)
    if (::dup2(slave, fd) < 0) throw_errno("dup2 the pty onto fd " + std::to_string(fd));
  if (slave > 2) ::close(slave);
}

}  // namespace sbx::runtime
