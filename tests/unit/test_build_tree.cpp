// The file-system side of sbx build: the merged view of layer dirs
// (engine/build/rootfs_view.h), the build context's sources
// (engine/build/context.h) and the staging layer of COPY
// (engine/build/layer_writer.h), on real directories with real whiteouts.
#include <doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.h"
#include "engine/build/context.h"
#include "engine/build/layer_writer.h"
#include "engine/build/rootfs_view.h"

using namespace sbx;
using namespace sbx::build;
namespace stdfs = std::filesystem;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/sbx-build-tree.XXXXXX";
    path = ::mkdtemp(t);
  }
  ~TempDir() { stdfs::remove_all(path); }
};

void write(const std::string& p, const std::string& s) {
  stdfs::create_directories(stdfs::path(p).parent_path());
  std::ofstream(p) << s;
}

std::string read(const std::string& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

TEST_CASE("build rootfs view: whiteouts, opaque dirs, symlinks, listing") {
  if (::geteuid() != 0) return;  // whiteouts are device nodes: root only
  TempDir t;
  std::string lo = t.path + "/lower", up = t.path + "/upper";
  write(lo + "/usr/bin/tool", "tool");
  write(lo + "/etc/gone", "x");
  write(lo + "/etc/kept", "kept");
  write(lo + "/opq/old", "old");
  stdfs::create_symlink("usr/bin", lo + "/bin");
  stdfs::create_symlink("/etc/../usr/bin/tool", lo + "/abs-link");
  stdfs::create_directories(up + "/etc");
  REQUIRE(::mknod((up + "/etc/gone").c_str(), S_IFCHR | 0, makedev(0, 0)) == 0);
  write(up + "/opq/new", "new");
  REQUIRE(::setxattr((up + "/opq").c_str(), "trusted.overlay.opaque", "y", 1, 0) == 0);
  RootfsView v({up, lo});

  CHECK(v.lookup("/etc/kept"));
  CHECK_FALSE(v.lookup("/etc/gone"));
  CHECK_FALSE(v.lookup("/opq/old"));
  CHECK(v.lookup("/opq/new"));
  CHECK(v.list("/etc") == std::vector<std::string>{"kept"});
  CHECK(v.list("/opq") == std::vector<std::string>{"new"});
  auto r = v.resolve("/bin/tool", true);
  CHECK(r.path == "/usr/bin/tool");
  REQUIRE(r.entry);
  CHECK(read(r.entry->host_path) == "tool");
  auto a = v.resolve("/abs-link", true);
  CHECK(a.path == "/usr/bin/tool");
  auto missing = v.resolve("/bin/newdir/file", true);
  CHECK(missing.path == "/usr/bin/newdir/file");
  CHECK_FALSE(missing.entry);
  CHECK(v.resolve("/../../etc/kept", true).path == "/etc/kept");  // ".." stops at the root
  // Confined (a build context): a link or ".." out of the root is an error.
  RootfsView ctx({lo}, true);
  CHECK_THROWS_AS(ctx.resolve("/abs-link", true, true), Error);
  CHECK_THROWS_AS(ctx.resolve("/../x", true, true), Error);
  CHECK(ctx.resolve("/bin/tool", true, true).path == "/usr/bin/tool");
}

TEST_CASE("build context: globs, .dockerignore, escapes and the content digest") {
  TempDir t;
  std::string c = t.path + "/ctx";
  write(c + "/a.txt", "a");
  write(c + "/b.txt", "b");
  write(c + "/src/x.py", "x");
  write(c + "/src/skip.log", "log");
  write(c + "/secret/key", "k");
  stdfs::create_symlink("/etc/passwd", c + "/out");
  stdfs::create_symlink("../..", c + "/up");
  stdfs::create_symlink("src", c + "/src-link");
  SourceTree tree = SourceTree::context(c, IgnoreMatcher("secret\n*.log\nsrc/*.log\n"));
  auto m = tree.sources("*.txt");
  REQUIRE(m.size() == 2);
  CHECK(m[0].path == "/a.txt");
  CHECK(m[1].name == "b.txt");
  CHECK(tree.sources("./src")[0].path == "/src");
  CHECK(tree.sources("src-link")[0].name == "src-link");
  CHECK_THROWS_WITH_AS(tree.sources("secret/key"), doctest::Contains("not found in the build context"), Error);
  CHECK_THROWS_WITH_AS(tree.sources("../x"), doctest::Contains("outside the build context"), Error);
  CHECK_THROWS_WITH_AS(tree.sources("out"), doctest::Contains("points outside the build context"), Error);
  CHECK_THROWS_AS(tree.sources("up/etc"), Error);
  CHECK_THROWS_AS(tree.sources("nothing*"), Error);
  std::vector<std::string> seen;
  tree.walk(tree.sources("src")[0], [&](const std::string& rel, const RootfsView::Entry&) { seen.push_back(rel); });
  CHECK(seen == std::vector<std::string>{"", "x.py"});  // skip.log is ignored
  auto src = tree.sources("src");
  std::string d1 = tree.digest(src);
  struct timespec ts[2] = {{1, 0}, {1, 0}};
  ::utimensat(AT_FDCWD, (c + "/src/x.py").c_str(), ts, 0);
  CHECK(tree.digest(src) == d1);  // times are not content
  write(c + "/src/x.py", "changed");
  CHECK(tree.digest(src) != d1);
  std::string d2 = tree.digest(src);
  ::chmod((c + "/src/x.py").c_str(), 0700);
  CHECK(tree.digest(src) != d2);  // modes are
}

TEST_CASE("build layer writer: destinations through the image's symlinks, copy-up, owners and modes") {
  if (::geteuid() != 0) return;  // chown
  TempDir t;
  std::string img = t.path + "/image", stage = t.path + "/staging", c = t.path + "/ctx";
  stdfs::create_directories(img + "/usr/bin");
  stdfs::create_symlink("usr/bin", img + "/bin");
  stdfs::create_directories(img + "/etc");
  ::chmod((img + "/etc").c_str(), 0750);
  REQUIRE(::chown((img + "/etc").c_str(), 0, 42) == 0);
  stdfs::create_directories(stage);
  write(c + "/tool", "#!/bin/sh\n");
  ::chmod((c + "/tool").c_str(), 0755);
  write(c + "/dir/sub/f", "f");
  SourceTree tree = SourceTree::context(c, IgnoreMatcher());
  LayerWriter w(stage, {img});
  CopyAttrs a;
  auto dest = w.resolve("/bin/tool");
  CHECK(dest.path == "/usr/bin/tool");
  w.copy(tree, tree.sources("tool")[0], dest.path, a);
  CHECK(read(stage + "/usr/bin/tool") == "#!/bin/sh\n");
  CHECK_FALSE(stdfs::exists(stage + "/bin"));  // the image's symlink stays
  struct stat st;
  REQUIRE(::stat((stage + "/usr/bin/tool").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0755);
  CHECK(st.st_uid == 0);
  CopyAttrs owned;
  owned.uid = 1000;
  owned.gid = 2000;
  owned.chmod = 0640;
  w.copy(tree, tree.sources("dir")[0], "/etc/app", owned);
  REQUIRE(::stat((stage + "/etc").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0750);  // copied up as the image has it
  CHECK(st.st_gid == 42);
  REQUIRE(::stat((stage + "/etc/app/sub/f").c_str(), &st) == 0);
  CHECK(st.st_uid == 1000);
  CHECK(st.st_gid == 2000);
  CHECK((st.st_mode & 07777) == 0640);
  w.write_file("/etc/motd", "hello\n", CopyAttrs{});
  CHECK(read(stage + "/etc/motd") == "hello\n");
  w.finish();
  CHECK_FALSE(w.empty());
  CHECK(parse_chmod("4755") == 04755);
  CHECK_THROWS_AS(parse_chmod("u+x"), Error);
  write(img + "/etc/passwd", "root:x:0:0::/root:/bin/sh\napp:x:1001:1002::/home/app:/bin/sh\n");
  write(img + "/etc/group", "root:x:0:\nstaff:x:50:\n");
  RootfsView iv({img});
  CHECK(resolve_chown("app", iv) == std::pair<uid_t, gid_t>{1001, 1001});
  CHECK(resolve_chown("app:staff", iv) == std::pair<uid_t, gid_t>{1001, 50});
  CHECK(resolve_chown("7:8", iv) == std::pair<uid_t, gid_t>{7, 8});
  CHECK_THROWS_AS(resolve_chown("nobody-here", iv), Error);
}
