// common/tar_stream.h: a tar streamed to a sink, sparse files as sparse
// entries (holes are never sent), read back with libarchive.
#include <archive.h>
#include <archive_entry.h>
#include <doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <string>

#include "common/error.h"
#include "common/fd.h"
#include "common/tar_stream.h"
#include "test_util.h"

using namespace sbx;

namespace {

void write_at(const std::string& path, off_t off, const std::string& data) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  REQUIRE(fd.fd >= 0);
  REQUIRE(::pwrite(fd.fd, data.data(), data.size(), off) == static_cast<ssize_t>(data.size()));
}

struct Read {
  int64_t size = 0;
  std::string type;
  std::string link;
  std::map<int64_t, std::string> blocks;  // offset -> non-zero data read there
};

// Every entry of the tar `t`: its size and the data blocks libarchive gives.
std::map<std::string, Read> read_tar(const std::string& t) {
  std::map<std::string, Read> out;
  struct archive* a = archive_read_new();
  archive_read_support_format_tar(a);
  REQUIRE(archive_read_open_memory(a, t.data(), t.size()) == ARCHIVE_OK);
  struct archive_entry* e;
  int r;
  while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
    std::string name = archive_entry_pathname(e);
    if (name.size() > 1 && name.back() == '/') name.pop_back();  // (directories: "dir/")
    Read& x = out[name];
    x.size = archive_entry_size(e);
    auto ft = archive_entry_filetype(e);
    x.type = ft == AE_IFDIR ? "dir" : ft == AE_IFLNK ? "link" : ft == AE_IFREG ? "file" : "other";
    if (archive_entry_symlink(e)) x.link = archive_entry_symlink(e);
    const void* buf;
    size_t n;
    la_int64_t off;
    while (archive_read_data_block(a, &buf, &n, &off) == ARCHIVE_OK) {
      std::string s(static_cast<const char*>(buf), n);
      if (s.find_first_not_of('\0') != std::string::npos) x.blocks[off] += s;
    }
  }
  CHECK(r == ARCHIVE_EOF);
  archive_read_free(a);
  return out;
}

}  // namespace

TEST_CASE("tar_stream: a 1 TiB sparse file is a few KiB of tar and reads back whole") {
  test::TempDir d("tarstream");
  std::string f = d.path + "/big";
  write_at(f, 0, "head");
  write_at(f, off_t{1} << 39, "middle");
  REQUIRE(::truncate(f.c_str(), off_t{1} << 40) == 0);
  std::string tar;
  size_t writes = 0;
  REQUIRE(write_tar(f, "big", [&](std::string_view b) {
    tar.append(b);
    ++writes;
    return true;
  }));
  CHECK(tar.size() < (256u << 10));
  auto got = read_tar(tar);
  REQUIRE(got.count("big") == 1);
  CHECK(got["big"].type == "file");
  CHECK(got["big"].size == (int64_t{1} << 40));
  REQUIRE(got["big"].blocks.size() == 2);
  CHECK(got["big"].blocks[0].substr(0, 4) == "head");
  CHECK(got["big"].blocks[int64_t{1} << 39].substr(0, 6) == "middle");
}

TEST_CASE("tar_stream: a file of holes only, plain files, directories and symlinks") {
  test::TempDir d("tarstream");
  std::string top = d.path + "/top";
  REQUIRE(::mkdir(top.c_str(), 0755) == 0);
  REQUIRE(::mkdir((top + "/sub").c_str(), 0700) == 0);
  write_at(top + "/sub/plain", 0, std::string(300000, 'x'));
  write_at(top + "/holes", 0, "");
  REQUIRE(::truncate((top + "/holes").c_str(), 1 << 30) == 0);
  REQUIRE(::symlink("/etc/passwd", (top + "/link").c_str()) == 0);
  std::string tar;
  REQUIRE(write_tar(top, "renamed", [&](std::string_view b) {
    tar.append(b);
    return true;
  }));
  CHECK(tar.size() < (1u << 20));
  auto got = read_tar(tar);
  CHECK(got["renamed"].type == "dir");
  CHECK(got["renamed/sub"].type == "dir");
  CHECK(got["renamed/sub/plain"].size == 300000);
  std::string all;
  for (auto& [off, s] : got["renamed/sub/plain"].blocks) all += s;
  CHECK(all == std::string(300000, 'x'));
  CHECK(got["renamed/holes"].size == (1 << 30));
  CHECK(got["renamed/holes"].blocks.empty());
  CHECK(got["renamed/link"].type == "link");
  CHECK(got["renamed/link"].link == "/etc/passwd");
}

TEST_CASE("tar_stream: a sink that stops ends the tar") {
  test::TempDir d("tarstream");
  write_at(d.path + "/f", 0, std::string(4 << 20, 'y'));
  size_t n = 0;
  CHECK_FALSE(write_tar(d.path + "/f", "f", [&](std::string_view b) {
    n += b.size();
    return n < (1u << 20);
  }));
  CHECK(n < (2u << 20));
}

TEST_CASE("tar_stream: data_extents finds the data between holes") {
  test::TempDir d("tarstream");
  std::string f = d.path + "/x";
  write_at(f, 1 << 20, "data");
  REQUIRE(::truncate(f.c_str(), 8 << 20) == 0);
  Fd fd(::open(f.c_str(), O_RDONLY | O_CLOEXEC));
  auto ex = data_extents(fd.fd, 8 << 20);
  REQUIRE(ex.size() == 1);
  CHECK(ex[0].first <= (1 << 20));
  CHECK(ex[0].first + ex[0].second >= (1 << 20) + 4);
  CHECK(ex[0].second <= (1 << 20));
}
