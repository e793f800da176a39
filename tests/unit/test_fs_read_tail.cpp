// common/fs.h read_tail: the end of a log, read from its end.
#include <doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "common/fs.h"
#include "test_util.h"

using namespace sbx;
using sbx::test::TempDir;

TEST_CASE("fs::read_tail: the last bytes of a regular file, or all of a short one") {
  TempDir t;
  const std::string p = t.path + "/log";
  std::string big;
  for (int i = 0; i < 100000; ++i) big += std::to_string(i) + "\n";
  fs::write_file_atomic(p, big);
  CHECK(fs::read_tail(p, 10) == big.substr(big.size() - 10));
  CHECK(fs::read_tail(p, big.size()) == big);
  CHECK(fs::read_tail(p, big.size() + 100) == big);
  CHECK(fs::read_tail(p, 0).empty());
  fs::write_file_atomic(p, "short");
  CHECK(fs::read_tail(p, 3) == "ort");
  CHECK(fs::read_tail(p, 100) == "short");
}

TEST_CASE("fs::read_tail: \"\" for a missing or unreadable path, no throw") {
  TempDir t;
  CHECK(fs::read_tail(t.path + "/none", 100).empty());
  CHECK(fs::read_tail(t.path, 100).empty());  // a directory: read fails (EISDIR)
}

TEST_CASE("fs::read_tail: a file without a size (a pipe) is read through, its end kept") {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  std::string data(200000, 'a');
  data += "THE-END";
  pid_t w = ::fork();
  REQUIRE(w >= 0);
  if (w == 0) {
    ::close(p[0]);
    size_t off = 0;
    while (off < data.size()) {
      ssize_t n = ::write(p[1], data.data() + off, data.size() - off);
      if (n <= 0) ::_exit(1);
      off += static_cast<size_t>(n);
    }
    ::_exit(0);
  }
  ::close(p[1]);
  std::string tail = fs::read_tail("/proc/self/fd/" + std::to_string(p[0]), 7);
  ::close(p[0]);
  int st = 0;
  ::waitpid(w, &st, 0);
  CHECK(tail == "THE-END");
}
