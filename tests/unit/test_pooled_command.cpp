// runtime/native/pooled_command.h: a pooled sandbox's command round-trips
// through its wire format and over a socket pair with its stdio fds.
#include <doctest.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "common/error.h"
#include "runtime/native/pooled_command.h"

using namespace sbx;
using namespace sbx::runtime;

TEST_CASE("a pooled command round-trips: args, env, files with NULs; a truncated one is refused") {
  PooledCommand cmd;
  cmd.args = {"sh", "-c", "echo hi"};
  cmd.env = {"A=1", "EMPTY="};
  cmd.files = {{"/w/a", std::string("x\0y", 3)}, {"/w/empty", ""}};
  std::string text = encode_command(cmd);
  PooledCommand back = decode_command(text);
  CHECK(back.args == cmd.args);
  CHECK(back.env == cmd.env);
  CHECK(back.files == cmd.files);
  CHECK(decode_command(encode_command(PooledCommand{})).args.empty());
  for (size_t cut : {size_t{0}, size_t{3}, text.size() / 2, text.size() - 1})
    CHECK_THROWS_AS(decode_command(text.substr(0, cut)), Error);
}

TEST_CASE("send_command and receive_command pass the command and its three stdio fds") {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  PooledCommand cmd;
  cmd.args = {"true"};
  cmd.files = {{"/f", std::string(100000, 'z')}};  // more than a socket message holds
  cmd.stdio[0] = p[0];
  cmd.stdio[1] = p[1];
  cmd.stdio[2] = p[1];
  send_command(sv[0], cmd, "test");
  int stdio[3] = {-1, -1, -1};
  PooledCommand got = receive_command(sv[1], stdio);
  CHECK(got.args == cmd.args);
  CHECK(got.files == cmd.files);
  for (int fd : stdio) {
    REQUIRE(fd >= 0);
    CHECK((::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
  }
  CHECK(::write(stdio[1], "k", 1) == 1);  // the received stdout is our pipe
  char c = 0;
  CHECK(::read(p[0], &c, 1) == 1);
  CHECK(c == 'k');
  char r = 0;
  CHECK(::recv(sv[0], &r, 1, MSG_DONTWAIT) == 1);  // the init said 'R' first
  CHECK(r == 'R');
  for (int fd : {stdio[0], stdio[1], stdio[2], p[0], p[1], sv[0], sv[1]}) ::close(fd);
}
