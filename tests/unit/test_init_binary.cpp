// The holder's program as sbx writes it into a run root
// (runtime/native/init_binary.h): content-addressed, execute-only, re-written
// when it is not what sbx wrote, other versions kept.
#include <doctest.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/native/init_binary.h"
#include "test_util.h"

using namespace sbx::runtime;
using sbx::test::TempDir;
namespace fsys = std::filesystem;

namespace {

std::string program_path(const std::string& run_root) {
  return run_root + "/.init/sbx-init-" + init_binary_sha256();
}

struct stat stat_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st;
}

/// The ELF magic at the start of the file `path` (root reads a 0111 file).
bool is_elf(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char m[4] = {};
  f.read(m, 4);
  return f && m[0] == 0x7f && m[1] == 'E' && m[2] == 'L' && m[3] == 'F';
}

}  // namespace

TEST_CASE("open_init_binary writes sbx-init once, execute-only, and returns an O_PATH fd of it") {
  TempDir run("init-binary");
  REQUIRE(std::string(init_binary_sha256()).size() == 64);
  int fd = open_init_binary(run.path);
  REQUIRE(fd >= 0);
  const std::string path = program_path(run.path);
  struct stat st = stat_of(path);
  CHECK(S_ISREG(st.st_mode));
  CHECK((st.st_mode & 07777) == 0111);
  CHECK(st.st_uid == ::geteuid());
  CHECK(st.st_size > 0);
  CHECK(is_elf(path));
  CHECK((::fcntl(fd, F_GETFL) & O_PATH) == O_PATH);
  CHECK((::fcntl(fd, F_GETFD) & FD_CLOEXEC) == FD_CLOEXEC);
  struct stat fst {};
  REQUIRE(::fstat(fd, &fst) == 0);
  CHECK(fst.st_ino == st.st_ino);
  ::close(fd);

  // A second open keeps the same file (no re-write).
  fd = open_init_binary(run.path);
  CHECK(stat_of(path).st_ino == st.st_ino);
  ::close(fd);
  // Nothing but the program is left in .init (no temporary file).
  int n = 0;
  for (const auto& e : fsys::directory_iterator(run.path + "/.init")) {
    CHECK(e.path().filename().string() == fsys::path(path).filename().string());
    ++n;
  }
  CHECK(n == 1);
}

TEST_CASE("open_init_binary re-writes a program that is not what sbx wrote, and keeps other versions") {
  TempDir run("init-binary");
  ::close(open_init_binary(run.path));
  const std::string path = program_path(run.path);
  const auto size = stat_of(path).st_size;

  SUBCASE("wrong mode") { REQUIRE(::chmod(path.c_str(), 0755) == 0); }
  SUBCASE("truncated") {
    REQUIRE(::chmod(path.c_str(), 0700) == 0);
    REQUIRE(::truncate(path.c_str(), 100) == 0);
    REQUIRE(::chmod(path.c_str(), 0111) == 0);
  }
  SUBCASE("a symlink in its place") {
    REQUIRE(::unlink(path.c_str()) == 0);
    REQUIRE(::symlink("/bin/true", path.c_str()) == 0);
  }
  SUBCASE("missing") { REQUIRE(::unlink(path.c_str()) == 0); }
  // Another sbx build's version: kept (a create of that build may be attaching it).
  const std::string other = run.path + "/.init/sbx-init-" + std::string(64, '0');
  { std::ofstream(other) << "old"; }

  int fd = open_init_binary(run.path);
  REQUIRE(fd >= 0);
  ::close(fd);
  struct stat st = stat_of(path);
  CHECK(S_ISREG(st.st_mode));
  CHECK((st.st_mode & 07777) == 0111);
  CHECK(st.st_size == size);
  CHECK(is_elf(path));
  CHECK(fsys::exists(other));
  // No temporary file left.
  int n = 0;
  for (const auto& e : fsys::directory_iterator(run.path + "/.init")) n += e.path().filename().string().rfind(".tmp-", 0) == 0;
  CHECK(n == 0);
}

TEST_CASE("open_init_mount gives a read-only, detached mount of the program") {
  TempDir run("init-binary");
  int tree = open_init_mount(run.path);
  REQUIRE(tree >= 0);
  struct stat a {}, b {};
  REQUIRE(::fstat(tree, &a) == 0);
  REQUIRE(::stat(program_path(run.path).c_str(), &b) == 0);
  CHECK(a.st_ino == b.st_ino);
  CHECK(S_ISREG(a.st_mode));
  // Read-only: the file cannot be opened for writing through the mount.
  std::string through = "/proc/self/fd/" + std::to_string(tree);
  errno = 0;
  CHECK(::open(through.c_str(), O_WRONLY | O_CLOEXEC) < 0);
  CHECK(errno == EROFS);
  ::close(tree);
}
