// The server core of `sbx serve` (server/http_server.h) on a unix socket of
// its own: authorization on the head before any body byte, per-endpoint body
// rules (memory, spooled to disk, 413), time-outs that close silent, slow and
// idle clients but not a handler's stream, and the connection bounds.
#include <doctest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>

#include "common/fd.h"
#include "server/http_server.h"
#include "test_util.h"

using namespace sbx;
using namespace sbx::server;

namespace {

Fd listen_on(const std::string& path) {
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  REQUIRE(fd.fd >= 0);
  struct sockaddr_un a {};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  REQUIRE(::bind(fd.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(fd.fd, 64) == 0);
  return fd;
}

/// A client socket; every read gives up after 20 s (a hung server fails the
/// test instead of hanging it).
Fd dial(const std::string& path) {
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  struct sockaddr_un a {};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  REQUIRE(::connect(fd.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  struct timeval tv = {20, 0};
  ::setsockopt(fd.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

void put(int fd, const std::string& s) { REQUIRE(::send(fd, s.data(), s.size(), MSG_NOSIGNAL) == ssize_t(s.size())); }

/// Everything the server sends until it closes the connection ("" plus
/// "<timeout>" when it does not within the read time-out).
std::string until_close(int fd) {
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) out += "<timeout>";
    return out;
  }
}

/// One whole response read from a kept-alive connection (head and a
/// Content-Length body).
std::string one_response(int fd) {
  std::string out;
  char c;
  while (out.find("\r\n\r\n") == std::string::npos && ::recv(fd, &c, 1, 0) == 1) out += c;
  auto p = out.find("Content-Length: ");
  size_t len = p == std::string::npos ? 0 : std::stoul(out.substr(p + 16));
  std::string body(len, '\0');
  size_t got = 0;
  while (got < len) {
    ssize_t n = ::recv(fd, body.data() + got, len - got, 0);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  return out + body.substr(0, got);
}

int status_of(const std::string& resp) { return resp.size() > 12 ? std::atoi(resp.c_str() + 9) : 0; }

struct Fixture {
  test::TempDir dir{"http"};
  std::string sock = dir.path + "/s.sock";
  std::unique_ptr<HttpServer> server;
  void start(ServerLimits limits, Site site) {
    ::mkdir((dir.path + "/root").c_str(), 0700);
    server = std::make_unique<HttpServer>(limits, dir.path + "/root");
    server->add_listener(listen_on(sock), "unix://" + sock, std::move(site));
    server->start();
  }
  ~Fixture() {
    if (!server) return;
    server->stop();
    server->wait_handlers(std::chrono::seconds(5));
    server.reset();
  }
};

}  // namespace

TEST_CASE("HttpServer: a request refused on its head is answered before its body is sent, and never handled") {
  Fixture f;
  std::atomic<int> handled{0};
  Site site;
  site.authorize = [](const Request& h) -> std::optional<HttpError> {
    if (h.header("x-key") == "k") return std::nullopt;
    return HttpError{401, "no key"};
  };
  site.handle = [&](Connection& c, Request& r) {
    ++handled;
    c.send(200, std::to_string(r.body.size()), "text/plain");
  };
  f.start(ServerLimits{}, site);

  // 100 MB announced, none sent: the answer must not wait for it.
  Fd a = dial(f.sock);
  put(a.fd, "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 104857600\r\n\r\n");
  std::string resp = until_close(a.fd);
  CHECK(status_of(resp) == 401);
  CHECK(resp.find("{\"message\":\"no key\"}") != std::string::npos);
  CHECK(resp.find("Connection: close") != std::string::npos);
  CHECK(handled == 0);

  Fd b = dial(f.sock);
  put(b.fd, "POST /x HTTP/1.1\r\nHost: t\r\nX-Key: k\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
  resp = until_close(b.fd);
  CHECK(status_of(resp) == 200);
  CHECK(resp.ends_with("\r\n\r\n5"));
  CHECK(handled == 1);
}

TEST_CASE("HttpServer: body rules: JSON in memory within its bound, large bodies spooled to a file, 413 over") {
  Fixture f;
  std::string spooled;
  Site site;
  site.body_rule = [](const Request& h) {
    return h.path == "/big" ? BodyRule{1 << 20, true} : BodyRule{16, false};
  };
  site.handle = [&](Connection& c, Request& r) {
    struct stat st {};
    long file = r.body_file.empty() || ::stat(r.body_file.c_str(), &st) < 0 ? -1 : static_cast<long>(st.st_size);
    spooled = r.body_file;
    c.send(200, "mem=" + std::to_string(r.body.size()) + " file=" + std::to_string(file), "text/plain");
  };
  f.start(ServerLimits{}, site);

  auto ask = [&](const std::string& raw) {
    Fd c = dial(f.sock);
    put(c.fd, raw);
    return until_close(c.fd);
  };
  std::string r = ask("POST /small HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\nConnection: close\r\n\r\n0123456789");
  CHECK(r.ends_with("mem=10 file=-1"));
  r = ask("POST /small HTTP/1.1\r\nHost: t\r\nContent-Length: 17\r\n\r\n");
  CHECK(status_of(r) == 413);
  // Chunked: no length to refuse up front; cut off at the bound.
  r = ask("POST /small HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n20\r\n" + std::string(32, 'x') +
          "\r\n0\r\n\r\n");
  CHECK(status_of(r) == 413);
  std::string big(100 * 1024, 'y');
  r = ask("POST /big HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(big.size()) +
          "\r\nConnection: close\r\n\r\n" + big);
  CHECK(r.ends_with("mem=0 file=102400"));
  REQUIRE(!spooled.empty());
  CHECK(spooled.rfind(f.dir.path + "/root/.serve-tmp/", 0) == 0);  // under the store's root, on disk
  struct stat st {};
  CHECK(::stat(spooled.c_str(), &st) < 0);  // removed with the request
  r = ask("POST /big HTTP/1.1\r\nHost: t\r\nContent-Length: 2000000\r\n\r\n");
  CHECK(status_of(r) == 413);
}

TEST_CASE("HttpServer: silent, slow and idle clients are closed; a handler's stream is not") {
  Fixture f;
  ServerLimits lim;
  lim.header_timeout = std::chrono::milliseconds(300);
  lim.idle_timeout = std::chrono::milliseconds(300);
  Site site;
  site.handle = [](Connection& c, Request& r) {
    if (r.path != "/stream") return (void)c.send(200, "ok", "text/plain");
    c.begin_chunks(200, "text/plain");
    for (int i = 0; i < 5; ++i) {  // 1 s: longer than both time-outs
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      c.chunk("tick\n");
    }
    c.end_chunks();
  };
  f.start(lim, site);

  Fd silent = dial(f.sock);
  CHECK(until_close(silent.fd).empty());  // closed without a word (not "<timeout>")

  Fd slow = dial(f.sock);
  put(slow.fd, "GET /x HTTP/1.1\r\nHost: t\r\n");  // the head never ends
  CHECK(until_close(slow.fd).empty());

  Fd body = dial(f.sock);
  put(body.fd, "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n01");
  CHECK(status_of(until_close(body.fd)) == 408);

  Fd kept = dial(f.sock);
  put(kept.fd, "GET /x HTTP/1.1\r\nHost: t\r\n\r\n");
  CHECK(status_of(one_response(kept.fd)) == 200);
  CHECK(until_close(kept.fd).empty());  // then idle: closed

  // The next head sent at once but never finished (read on the worker that
  // answered the first): the header time-out holds there too.
  Fd piped = dial(f.sock);
  put(piped.fd, "GET /x HTTP/1.1\r\nHost: t\r\n\r\nGET /y HTTP/1.1\r\nHost:");
  CHECK(status_of(one_response(piped.fd)) == 200);
  CHECK(until_close(piped.fd).empty());

  Fd stream = dial(f.sock);
  put(stream.fd, "GET /stream HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  std::string s = until_close(stream.fd);
  size_t ticks = 0;
  for (size_t p = 0; (p = s.find("tick", p)) != std::string::npos; ++p) ++ticks;
  CHECK(ticks == 5);
}

TEST_CASE("HttpServer: connections over the per-client bound are answered 503; closing one frees its slot") {
  Fixture f;
  ServerLimits lim;
  lim.max_connections = 8;
  lim.max_client_connections = 2;  // this process is one client: one uid
  Site site;
  site.handle = [](Connection& c, Request&) { c.send(200, "ok", "text/plain"); };
  f.start(lim, site);

  Fd a = dial(f.sock), b = dial(f.sock);
  // A request on each makes sure the server has taken both.
  put(a.fd, "GET /x HTTP/1.1\r\nHost: t\r\n\r\n");
  put(b.fd, "GET /x HTTP/1.1\r\nHost: t\r\n\r\n");
  CHECK(status_of(one_response(a.fd)) == 200);
  CHECK(status_of(one_response(b.fd)) == 200);
  Fd c = dial(f.sock);
  std::string r = until_close(c.fd);
  CHECK(status_of(r) == 503);
  CHECK(r.find("--max-client-connections 2") != std::string::npos);
  a = Fd();
  // The server notices the close; a new connection then fits.
  for (int i = 0; i < 100; ++i) {
    Fd d = dial(f.sock);
    put(d.fd, "GET /x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    r = until_close(d.fd);
    if (status_of(r) == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(status_of(r) == 200);
}

TEST_CASE("HttpServer: a HEAD answer is its head alone, whatever the handler sends; the connection stays usable") {
  Fixture f;
  Site site;
  site.handle = [](Connection& c, Request& r) {
    if (r.path == "/error") return (void)c.send_error(404, "no such file");
    if (r.path == "/stream") {  // a streaming handler stops at its first chunk
      if (!c.begin_chunks(200, "text/plain")) return;
      for (int i = 0; i < 1000; ++i)
        if (!c.chunk("data")) return;
      c.end_chunks();
      return;
    }
    if (r.path == "/raw") {  // a head written raw, then a body
      c.write_raw("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody");
      return;
    }
    if (r.path == "/file") {
      c.begin_body(200, "application/octet-stream", 4);
      c.write_raw("body");
      return;
    }
    c.send(200, "fine", "text/plain");
  };
  // Refused by the core on the head: a HEAD over the body bound.
  site.body_rule = [](const Request&) { return BodyRule{10, false}; };
  f.start(ServerLimits{}, site);

  Fd a = dial(f.sock);
  for (const char* path : {"/error", "/stream", "/raw", "/file"}) {
    put(a.fd, std::string("HEAD ") + path + " HTTP/1.1\r\nHost: t\r\n\r\n");
    std::string head;
    char ch;
    while (head.find("\r\n\r\n") == std::string::npos && ::recv(a.fd, &ch, 1, 0) == 1) head += ch;
    CAPTURE(path);
    CAPTURE(head);
    CHECK(head.ends_with("\r\n\r\n"));
  }
  // The next request on the same connection reads its own answer: no body
  // bytes of the HEAD answers came before it.
  put(a.fd, "GET /ok HTTP/1.1\r\nHost: t\r\n\r\n");
  std::string resp = one_response(a.fd);
  CHECK(resp.starts_with("HTTP/1.1 200 OK\r\n"));
  CHECK(resp.ends_with("\r\n\r\nfine"));

  // The core's own refusal (413) of a HEAD: its head, no {"message": …}.
  Fd b = dial(f.sock);
  put(b.fd, "HEAD /x HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n");
  resp = until_close(b.fd);
  CHECK(status_of(resp) == 413);
  CHECK(resp.ends_with("\r\n\r\n"));
  CHECK(resp.find("message") == std::string::npos);
}
