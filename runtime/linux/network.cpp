#include "runtime/linux/network.h"

#include <fcntl.h>
#include <net/if.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <utility>

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

void write_network_files(const std::string& hostname, const std::string& hosts, const std::string& resolv) {
  if (::mkdir("/etc", 0755) < 0 && errno != EEXIST) throw_errno("create /etc in the sandbox");
  for (const auto& [path, text] : {std::pair<const char*, std::string>{"/etc/hostname", hostname + "\n"},
                                   {"/etc/hosts", hosts},
                                   {"/etc/resolv.conf", resolv}}) {
    struct stat st {};
    if (::lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) ::unlink(path);
    int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) throw_errno(std::string("write ") + path + " in the sandbox");
    const char* p = text.data();
    size_t left = text.size();
    while (left > 0) {
      ssize_t n = ::write(fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int e = errno;
        ::close(fd);
        throw_errno(std::string("write ") + path + " in the sandbox", e);
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
    ::close(fd);
  }
}

}  // namespace sbx::runtime
