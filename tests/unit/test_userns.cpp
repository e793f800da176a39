// runtime/linux/userns.h: id-range allocation (real files under a temp run root) and,
// on the real kernel, the mechanism the native backend needs for user
// namespaces: an idmapped detached mount of an image layer, attached inside a
// new user+mount namespace and used as an overlay lower dir by the
// namespace's root.
#include <doctest.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>

#include "common/error.h"
#include "common/fs.h"
#include "runtime/native/child_channel.h"
#include "runtime/linux/userns.h"
#include "test_util.h"

using namespace sbx;
using namespace sbx::runtime;

using sbx::test::TempDir;
using sbx::test::fake_id;

TEST_CASE("id_pool: default range above 2^31, or the sbx entries of subuid/subgid") {
  TempDir t;
  IdPool p = id_pool(t.path + "/none", t.path + "/none");
  CHECK(p.start == (1u << 31));
  CHECK(uint64_t{p.start} + p.count <= (uint64_t{1} << 32) - kIdRangeSize);
  fs::write_file_atomic(t.path + "/subuid", "alice:100000:65536\nsbx:200000:131072\n");
  fs::write_file_atomic(t.path + "/subgid", "sbx:200000:131072\n");
  p = id_pool(t.path + "/subuid", t.path + "/subgid");
  CHECK(p.start == 200000u);
  CHECK(p.count == 131072u);
  fs::write_file_atomic(t.path + "/subgid2", "sbx:300000:131072\n");
  CHECK_THROWS_AS(id_pool(t.path + "/subuid", t.path + "/subgid2"), Error);
  fs::write_file_atomic(t.path + "/small", "sbx:300000:1000\n");
  CHECK_THROWS_AS(id_pool(t.path + "/small", t.path + "/small"), Error);
}

TEST_CASE("allocate_id_range: distinct ranges, release, exhaustion, reclaim with the state dir") {
  TempDir t;
  IdPool pool{500000, 2 * kIdRangeSize};
  for (char c : {'a', 'b', 'c', 'd'}) fs::mkdir_p(t.path + "/" + fake_id(c));
  IdRange a = allocate_id_range(t.path, fake_id('a'), pool);
  IdRange b = allocate_id_range(t.path, fake_id('b'), pool);
  CHECK(a.slot != b.slot);
  CHECK(a.host_start == 500000u + static_cast<uint32_t>(a.slot) * kIdRangeSize);
  CHECK(b.host_start == 500000u + static_cast<uint32_t>(b.slot) * kIdRangeSize);
  CHECK(a.file == t.path + "/" + fake_id('a') + "/userns");
  CHECK(fs::read_file(a.file) == std::to_string(a.slot) + "\n");
  CHECK(fs::read_file(b.file) == std::to_string(b.slot) + "\n");
  // The host-wide claim: RUN_ROOT/.userns-<slot> -> the sandbox's id.
  CHECK(a.link == t.path + "/.userns-" + std::to_string(a.slot));
  CHECK(std::filesystem::read_symlink(a.link).string() == fake_id('a'));
  // Pool exhausted: a clear error, nothing written.
  CHECK_THROWS_AS(allocate_id_range(t.path, fake_id('c'), pool), Error);
  CHECK_FALSE(std::filesystem::exists(t.path + "/" + fake_id('c') + "/userns"));
  // Released: the slot is free again.
  release_id_range(a);
  CHECK_FALSE(std::filesystem::exists(a.file));
  CHECK_FALSE(std::filesystem::is_symlink(a.link));
  IdRange c = allocate_id_range(t.path, fake_id('c'), pool);
  CHECK(c.slot == a.slot);
  // b's sbx was SIGKILLed; once its state dir is gone, the next allocation
  // that hits its slot takes it over (no gc needed).
  std::filesystem::remove_all(t.path + "/" + fake_id('b'));
  IdRange d = allocate_id_range(t.path, fake_id('d'), pool);
  CHECK(d.slot == b.slot);
  CHECK(std::filesystem::read_symlink(d.link).string() == fake_id('d'));
  // Nothing but the state dirs and one link per live range in the run root.
  int dirs = 0, links = 0, other = 0;
  for (auto& e : std::filesystem::directory_iterator(t.path))
    (e.is_symlink() ? links : e.is_directory() ? dirs : other) += 1;
  CHECK(dirs == 3);
  CHECK(links == 2);
  CHECK(other == 0);
  CHECK(id_maps(d).at(0).host_id == d.host_start);
  CHECK(id_maps(d).at(0).size == kIdRangeSize);
}

TEST_CASE("allocate_id_range reads no other sandbox; gc_id_slots drops dead owners' links and links old ranges") {
  TempDir t;
  IdPool pool{500000, 64 * kIdRangeSize};
  // 40 live sandboxes whose userns files are gone: allocation must not need
  // them (a scan of the state dirs would open each one to learn its slot,
  // and without them hand out the same slot again).
  std::set<int> taken;
  for (int i = 0; i < 40; ++i) {
    std::string id = fake_id('a') .substr(0, 60) + std::to_string(1000 + i);
    fs::mkdir_p(t.path + "/" + id);
    IdRange r = allocate_id_range(t.path, id, pool);
    CHECK(taken.insert(r.slot).second);
    ::unlink(r.file.c_str());
  }
  CHECK(taken.size() == 40);
  // A state dir removed without a release (rm killed half-way): gc frees its link.
  std::string gone = fake_id('a').substr(0, 60) + "1000";
  std::filesystem::remove_all(t.path + "/" + gone);
  auto freed = gc_id_slots(t.path, false);
  CHECK(freed.size() == 1);
  // A range an older sbx recorded only in the state dir: gc links it.
  std::string old = fake_id('e');
  fs::mkdir_p(t.path + "/" + old);
  int free_slot = 0;
  while (taken.count(free_slot)) ++free_slot;
  fs::write_file_atomic(t.path + "/" + old + "/userns", std::to_string(free_slot) + "\n");
  gc_id_slots(t.path, true);
  CHECK(std::filesystem::read_symlink(t.path + "/.userns-" + std::to_string(free_slot)).string() == old);
}

namespace {
// Child side of the kernel test; returns a step number on failure, 0 on success.
int in_userns(int sock, const std::string& dir) {
  char go;
  if (::recv(sock, &go, 1, 0) != 1) return 10;
  // The idmapped layer, made by the parent (root in the initial namespace).
  int layer = -1;
  {
    char b;
    struct iovec iov {&b, 1};
    alignas(struct cmsghdr) char cbuf[CMSG_SPACE(sizeof(int))];
    struct msghdr msg {};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf;
    msg.msg_controllen = sizeof cbuf;
    if (::recvmsg(sock, &msg, 0) != 1) return 11;
    std::memcpy(&layer, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof(int));
  }
  // Become the namespace's root (host uid = range start).
  if (::setresgid(0, 0, 0) < 0 || ::setresuid(0, 0, 0) < 0) return 12;
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) return 13;
  std::string st = dir + "/staging";
  if (::mount("sbx", st.c_str(), "tmpfs", 0, "mode=0700") < 0) return 14;
  for (const char* d : {"/lower", "/upper", "/work", "/root"})
    if (::mkdir((st + d).c_str(), 0755) < 0) return 15;
  if (::syscall(SYS_move_mount, layer, "", AT_FDCWD, (st + "/lower").c_str(), MOVE_MOUNT_F_EMPTY_PATH) < 0) return 16;
  std::string data = "lowerdir=" + st + "/lower,upperdir=" + st + "/upper,workdir=" + st + "/work";
  if (::mount("overlay", (st + "/root").c_str(), "overlay", 0, data.c_str()) < 0) return 17;
  struct stat s {};
  // Host uid 0 on disk is uid 0 here; host 1000 is 1000.
  if (::stat((st + "/root/by-root").c_str(), &s) < 0 || s.st_uid != 0 || s.st_gid != 0) return 18;
  if (::stat((st + "/root/by-1000").c_str(), &s) < 0 || s.st_uid != 1000) return 19;
  // Root here may write the layer's root-owned file (copy-up) and create files.
  int fd = ::open((st + "/root/by-root").c_str(), O_WRONLY | O_APPEND);
  if (fd < 0 || ::write(fd, "x", 1) != 1) return 20;
  ::close(fd);
  fd = ::open((st + "/root/new").c_str(), O_WRONLY | O_CREAT, 0644);
  if (fd < 0) return 21;
  ::close(fd);
  if (::stat((st + "/root/new").c_str(), &s) < 0 || s.st_uid != 0) return 22;
  return 0;
}
}  // namespace

TEST_CASE("allocate_id_range prefers a free slot; shift_ids moves a kept layer's owners to a new range") {
  TempDir t;
  IdPool pool{500000, 3 * kIdRangeSize};
  for (char c : {'a', 'b', 'c'}) fs::mkdir_p(t.path + "/" + fake_id(c));
  CHECK(allocate_id_range(t.path, fake_id('a'), pool, 2).slot == 2);  // free: taken
  int b = allocate_id_range(t.path, fake_id('b'), pool, 2).slot;       // in use: a free one
  CHECK((b == 0 || b == 1));
  CHECK(allocate_id_range(t.path, fake_id('c'), pool, 7).slot == 1 - b);  // outside the pool: ignored

  // A layer owned by range 500000: files of its root and user 1000, one of the
  // host's own root (not in the range), a symlink (its own owner, not its target's).
  const uint32_t from = 500000, to = 500000 + 2 * kIdRangeSize;
  std::string d = t.path + "/layer";
  fs::mkdir_p(d + "/sub");
  fs::write_file_atomic(d + "/sub/f", "x", 0644);
  fs::write_file_atomic(d + "/host", "y", 0644);
  REQUIRE(::symlink("/etc/passwd", (d + "/link").c_str()) == 0);
  REQUIRE(::chown(d.c_str(), from, from) == 0);
  REQUIRE(::chown((d + "/sub").c_str(), from, from) == 0);
  REQUIRE(::chown((d + "/sub/f").c_str(), from + 1000, from + 1000) == 0);
  REQUIRE(::lchown((d + "/link").c_str(), from, from) == 0);
  shift_ids(d, from, to);
  auto owner = [](const std::string& p) {
    struct stat st {};
    REQUIRE(::lstat(p.c_str(), &st) == 0);
    return std::pair<uint32_t, uint32_t>{st.st_uid, st.st_gid};
  };
  CHECK(owner(d) == std::pair<uint32_t, uint32_t>{to, to});
  CHECK(owner(d + "/sub/f") == std::pair<uint32_t, uint32_t>{to + 1000, to + 1000});
  CHECK(owner(d + "/link") == std::pair<uint32_t, uint32_t>{to, to});
  CHECK(owner(d + "/host") == std::pair<uint32_t, uint32_t>{0, 0});  // outside the range: kept
  CHECK(owner("/etc/passwd").first == 0);                            // the link was not followed
}

TEST_CASE("idmapped image layer as an overlay lower dir inside a user namespace (real kernel)") {
  if (::geteuid() != 0) {
    MESSAGE("not root: skipped");
    return;
  }
  TempDir t;
  ::chmod(t.path.c_str(), 0755);
  std::string layer = t.path + "/layer";
  fs::mkdir_p(layer);
  fs::mkdir_p(t.path + "/staging");
  fs::write_file_atomic(layer + "/by-root", "root\n");
  fs::write_file_atomic(layer + "/by-1000", "user\n");
  REQUIRE(::chown((layer + "/by-1000").c_str(), 1000, 1000) == 0);
  ::chmod((layer + "/by-root").c_str(), 0644);

  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(sv[0]);
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) ::_exit(9);
    ::_exit(in_userns(sv[1], t.path));
  }
  ::close(sv[1]);
  // Let the child unshare first: /proc/PID/ns/user must be its new namespace.
  for (int i = 0; i < 200; ++i) {
    char a[64], b[64];
    ssize_t n1 = ::readlink(("/proc/" + std::to_string(child) + "/ns/user").c_str(), a, sizeof a);
    ssize_t n2 = ::readlink("/proc/self/ns/user", b, sizeof b);
    if (n1 > 0 && n2 > 0 && std::string(a, n1) != std::string(b, n2)) break;
    ::usleep(5000);
  }
  IdRange r{(1u << 31) + 7 * kIdRangeSize, 7, ""};
  write_id_maps(child, id_maps(r), id_maps(r));
  int userns = ::open(("/proc/" + std::to_string(child) + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(userns >= 0);
  int tree = open_idmapped_tree(layer, userns, true, true);
  ::close(userns);
  REQUIRE(::send(sv[0], "G", 1, 0) == 1);
  REQUIRE_NOTHROW(send_fd(sv[0], tree));  // the runtime's own channel helper
  ::close(tree);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  ::close(sv[0]);
  INFO("child exit status (step that failed, see in_userns): " << WEXITSTATUS(status));
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // The layer on disk is unchanged: the write went to the (gone) upper dir.
  CHECK(fs::read_file(layer + "/by-root") == "root\n");
  struct stat s {};
  REQUIRE(::stat((layer + "/by-root").c_str(), &s) == 0);
  CHECK(s.st_uid == 0);
}
