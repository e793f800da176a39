// common/openat2: the one confined open every hostile-path reader uses
// (tar unpack, sbx cp, OCI mounts, directory snapshots).
#include <doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "common/fd.h"
#include "common/openat2.h"
#include "test_util.h"

using namespace sbx;

namespace {
// root/{etc/marker, up -> ../.., abs -> /etc, inner -> etc}; outside/marker beside root.
struct Tree {
  test::TempDir dir{"openat2"};
  std::string root = dir.path + "/root";
  Fd rootfd;
  Tree() {
    REQUIRE(::mkdir(root.c_str(), 0755) == 0);
    REQUIRE(::mkdir((root + "/etc").c_str(), 0755) == 0);
    Fd(::open((root + "/etc/marker").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
    Fd(::open((dir.path + "/marker").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
    REQUIRE(::symlink("../..", (root + "/up").c_str()) == 0);
    REQUIRE(::symlink("/etc", (root + "/abs").c_str()) == 0);
    REQUIRE(::symlink("etc", (root + "/inner").c_str()) == 0);
    rootfd = Fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(rootfd.fd >= 0);
  }
  // The path the kernel says `fd` is at.
  static std::string where(int fd) {
    char buf[4096];
    ssize_t n = ::readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), buf, sizeof buf);
    REQUIRE(n > 0);
    return std::string(buf, static_cast<size_t>(n));
  }
};
}  // namespace

TEST_CASE("openat2_in_root resolves '..' and symlinks inside the root, as a chroot would") {
  Tree t;
  // up -> ../.. stops at the root: the marker beside the root is out of reach...
  CHECK(openat2_in_root(t.rootfd.fd, "up/marker", O_PATH) == -1);
  CHECK(errno == ENOENT);
  // ...and what is under the root is found through it.
  Fd up(openat2_in_root(t.rootfd.fd, "up/etc/marker", O_PATH));
  REQUIRE(up.fd >= 0);
  CHECK(Tree::where(up.fd) == t.root + "/etc/marker");
  Fd abs(openat2_in_root(t.rootfd.fd, "/abs/marker", O_RDONLY));
  REQUIRE(abs.fd >= 0);
  CHECK(Tree::where(abs.fd) == t.root + "/etc/marker");
  Fd self(openat2_in_root(t.rootfd.fd, "///", O_PATH | O_DIRECTORY));
  REQUIRE(self.fd >= 0);
  CHECK(Tree::where(self.fd) == t.root);
  CHECK((::fcntl(self.fd, F_GETFD) & FD_CLOEXEC) != 0);
}

TEST_CASE("openat2_in_root with no_symlinks refuses any symlink") {
  Tree t;
  CHECK(openat2_in_root(t.rootfd.fd, "inner/marker", O_RDONLY, /*no_symlinks=*/true) == -1);
  CHECK(errno == ELOOP);
  Fd ok(openat2_in_root(t.rootfd.fd, "etc/marker", O_RDONLY, true));
  CHECK(ok.fd >= 0);
}

TEST_CASE("openat2_beneath fails with EXDEV on every way out") {
  Tree t;
  for (const char* bad : {"up/marker", "../marker", "/etc/marker", "abs/marker"}) {
    CAPTURE(bad);
    CHECK(openat2_beneath(t.rootfd.fd, bad, O_RDONLY) == -1);
    CHECK(errno == EXDEV);
  }
  Fd in(openat2_beneath(t.rootfd.fd, "inner/marker", O_RDONLY));
  CHECK(in.fd >= 0);
  Fd made(openat2_beneath(t.rootfd.fd, "etc/new", O_CREAT | O_WRONLY | O_EXCL, 0600));
  REQUIRE(made.fd >= 0);
  struct stat st {};
  REQUIRE(::fstat(made.fd, &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
  Fd self(openat2_beneath(t.rootfd.fd, "", O_PATH | O_DIRECTORY));
  CHECK(self.fd >= 0);
}
