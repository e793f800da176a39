// libFuzzer harness: the HTTP request side of `sbx serve`'s server core
// (server/http_server.h, Boost.Beast's parser plus sbx's own head handling:
// split_target, url_decode, header map, authorization on the head, body
// rules with a spooled body, chunked decoding, keep-alive and pipelining).
// The bytes are a client's whole input on one connection of a server that
// runs in this process on a unix socket: they are sent, the client's side is
// shut, and the answer is read to the connection's end. Every request a
// handler sees has its JSON body parsed as the APIs do. A crash, a hang
// (libFuzzer's -timeout), a leak or undefined behaviour is a finding; any
// HTTP answer is fine.
// needs: server/http_server.h
// sources: server/http_server.cpp server/http.cpp server/temp_dir.cpp
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/fd.h"
#include "runtime/state.h"
#include "server/http_server.h"

namespace sbx::runtime {
// The server core's temp dirs go through runtime/state's remove_tree, whose
// file pulls in the whole runtime; for the harness, the same by std::filesystem.
int remove_tree(const std::string& path) noexcept {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  return ec ? ec.value() : 0;
}
}  // namespace sbx::runtime

namespace {

using namespace sbx::server;

std::string g_sock;
std::unique_ptr<HttpServer> g_server;

sbx::Fd listen_on(const std::string& path) {
  sbx::Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  struct sockaddr_un a {};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  if (fd.fd < 0 || ::bind(fd.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0 || ::listen(fd.fd, 64) < 0) std::abort();
  return fd;
}

void start_server() {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/sbx-fuzz-http.XXXXXX";
  if (!::mkdtemp(dir.data())) std::abort();
  ::mkdir((dir + "/root").c_str(), 0700);
  g_sock = dir + "/s.sock";
  ServerLimits limits;
  limits.header_timeout = std::chrono::milliseconds(2000);
  limits.idle_timeout = std::chrono::milliseconds(2000);
  g_server = std::make_unique<HttpServer>(limits, dir + "/root");
  Site site;
  site.authorize = [](const Request& h) -> std::optional<HttpError> {
    if (h.path == "/_ping" || h.header("authorization") == "Bearer fuzz") return std::nullopt;
    return HttpError{401, "no token"};
  };
  site.body_rule = [](const Request& h) -> BodyRule {
    if (h.method == "PUT" && h.path.ends_with("/archive")) return {1 << 20, true};
    return {64 << 10, false};
  };
  site.handle = [](Connection& c, Request& r) {
    // What the APIs read of a request: query parameters, headers, the body as JSON.
    std::string out = r.method + " " + r.path + " " + r.api_version + " " + r.param("path") + " " +
                      r.header("content-type") + " " + std::to_string(r.flag("all", false));
    for (const auto& [k, v] : r.query_all) out += k + "=" + v + ";";
    if (!r.body.empty()) {
      auto j = nlohmann::json::parse(r.body, nullptr, false);
      out += j.is_discarded() ? " (not JSON)" : " " + j.dump().substr(0, 64);
    }
    if (!r.body_file.empty()) {
      struct stat st {};
      ::stat(r.body_file.c_str(), &st);
      out += " spooled " + std::to_string(st.st_size);
    }
    if (r.path == "/chunks") {
      c.begin_chunks(200, "text/plain", {{"X-Fuzz", "1"}});
      c.chunk(out);
      c.end_chunks();
      return;
    }
    c.send(200, out, "text/plain");
  };
  g_server->add_listener(listen_on(g_sock), "unix://" + g_sock, std::move(site));
  g_server->start();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  start_server();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sbx::Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  struct sockaddr_un a {};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, g_sock.c_str(), sizeof a.sun_path - 1);
  if (fd.fd < 0 || ::connect(fd.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) std::abort();
  struct timeval tv = {10, 0};
  ::setsockopt(fd.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  for (size_t off = 0; off < size;) {
    ssize_t n = ::send(fd.fd, data + off, size - off, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server refused and closed: fine
    off += static_cast<size_t>(n);
  }
  ::shutdown(fd.fd, SHUT_WR);
  char buf[65536];
  for (;;) {
    ssize_t n = ::recv(fd.fd, buf, sizeof buf, 0);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    // A server that holds a connection whose client has shut its side for
    // 10 s is hung: a finding.
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) __builtin_trap();
    break;
  }
  return 0;
}
