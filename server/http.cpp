// HTTP/1.1 connections of `sbx serve` (server/http.h).
#include "server/http.h"

#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "common/log.h"

namespace sbx::server {

namespace beast = boost::beast;
namespace http = boost::beast::http;

namespace {

/// A blocking SyncReadStream over a socket fd, for beast::http::read.
struct FdStream {
  int fd;
  template <class Buffers>
  size_t read_some(const Buffers& bufs, beast::error_code& ec) {
    ec = {};
    auto it = boost::asio::buffer_sequence_begin(bufs);
    if (it == boost::asio::buffer_sequence_end(bufs)) return 0;
    boost::asio::mutable_buffer b = *it;
    for (;;) {
      ssize_t n = ::read(fd, b.data(), b.size());
      if (n > 0) return static_cast<size_t>(n);
      if (n == 0) {
        ec = boost::asio::error::eof;
        return 0;
      }
      if (errno == EINTR) continue;
      ec = beast::error_code(errno, boost::system::system_category());
      return 0;
    }
  }
  template <class Buffers>
  size_t read_some(const Buffers& bufs) {
    beast::error_code ec;
    size_t n = read_some(bufs, ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }
};

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// Splits "/v1.44/containers/json?all=1" into path, version and query.
void split_target(Request& r) {
  std::string t = r.target;
  auto q = t.find('?');
  std::string path = t.substr(0, q);
  if (q != std::string::npos) {
    std::string qs = t.substr(q + 1);
    size_t i = 0;
    while (i <= qs.size()) {
      size_t amp = qs.find('&', i);
      if (amp == std::string::npos) amp = qs.size();
      std::string kv = qs.substr(i, amp - i);
      if (!kv.empty()) {
        auto eq = kv.find('=');
        std::string k = url_decode(kv.substr(0, eq)), v = eq == std::string::npos ? "" : url_decode(kv.substr(eq + 1));
        r.query_all.emplace_back(k, v);
        r.query[k] = std::move(v);
      }
      i = amp + 1;
    }
  }
  path = url_decode(path);
  // "/v1.44/…": the client's API version.
  if (path.size() > 2 && path[0] == '/' && path[1] == 'v' && std::isdigit(static_cast<unsigned char>(path[2]))) {
    auto slash = path.find('/', 1);
    r.api_version = path.substr(2, slash == std::string::npos ? std::string::npos : slash - 2);
    path = slash == std::string::npos ? "/" : path.substr(slash);
  }
  r.path = path;
}

}  // namespace

bool Request::flag(const std::string& k, bool def) const {
  auto it = query.find(k);
  if (it == query.end()) return def;
  const std::string& v = it->second;
  return v == "1" || v == "true" || v == "True" || v == "yes";
}

std::string Request::param(const std::string& k) const {
  auto it = query.find(k);
  return it == query.end() ? "" : it->second;
}

std::vector<std::string> Request::params(const std::string& k) const {
  std::vector<std::string> out;
  for (const auto& [key, v] : query_all)
    if (key == k) out.push_back(v);
  return out;
}

std::string random_hex(size_t n) {
  std::string bytes((n + 1) / 2, '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    ssize_t k = ::getrandom(bytes.data() + got, bytes.size() - got, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) throw_errno("getrandom for an id");
    got += static_cast<size_t>(k);
  }
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(n + 1);
  for (unsigned char b : bytes) {
    out.push_back(hex[b >> 4]);
    out.push_back(hex[b & 15]);
  }
  out.resize(n);
  return out;
}

std::string Request::header(const std::string& k) const {
  auto it = headers.find(k);
  return it == headers.end() ? "" : it->second;
}

std::string url_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else if (s[i] == '+') {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

Connection::~Connection() {
  if (fd_ < 0) return;
  if (hijacked_) {
    // End of stream for the client, then read what it still sends (at most
    // 1 s): closing a socket with unread input resets it, and the client
    // (docker run -i: stdin it typed) would report an error, not the end.
    ::shutdown(fd_, SHUT_WR);
    char buf[4096];
    for (int waited = 0; waited < 1000;) {
      struct pollfd p = {fd_, POLLIN, 0};
      int r = ::poll(&p, 1, 100);
      if (r == 0) {
        waited += 100;
        continue;
      }
      if (r < 0 || ::read(fd_, buf, sizeof buf) <= 0) break;
    }
  }
  ::close(fd_);
}

bool Connection::read_request(Request& req) {
  req = Request{};
  FdStream stream{fd_};
  beast::flat_buffer buf;
  if (!buf_.empty()) {
    auto mb = buf.prepare(buf_.size());
    std::memcpy(mb.data(), buf_.data(), buf_.size());
    buf.commit(buf_.size());
    buf_.clear();
  }
  http::request_parser<http::string_body> p;
  p.header_limit(64 * 1024);
  p.body_limit(kMaxArchiveBody);  // the largest; lowered by kind once the target is known
  beast::error_code ec;
  http::read_header(stream, buf, p, ec);
  if (ec == http::error::end_of_stream || ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset)
    return false;
  if (ec) {
    keep_alive_ = false;
    if (ec == http::error::body_limit) throw HttpError{413, "request body too large"};
    throw HttpError{400, "malformed request: " + ec.message()};
  }
  {
    const auto& h = p.get();
    req.method = std::string(h.method_string());
    req.target = std::string(h.target());
    split_target(req);
    // Archive uploads and image archives may be large; everything else is JSON.
    uint64_t limit = kMaxJsonBody;
    if ((req.method == "PUT" && req.path.ends_with("/archive")) || req.path == "/images/load" ||
        (req.method == "POST" && req.path == "/files"))  // E2B envd file upload (server/e2b_files.cpp)
      limit = kMaxArchiveBody;
    p.body_limit(limit);
    // Refused before a byte of the body is read (curl and others wait for
    // "100 Continue" first).
    if (p.content_length() && *p.content_length() > limit) {
      keep_alive_ = false;
      throw HttpError{413, "request body too large (limit " + std::to_string(limit) + " bytes)"};
    }
    if (beast::iequals(h[http::field::expect], "100-continue"))
      write_raw("HTTP/1.1 100 Continue\r\n\r\n");
  }
  if (!p.is_done()) {
    http::read(stream, buf, p, ec);
    if (ec == http::error::body_limit) {
      keep_alive_ = false;
      throw HttpError{413, "request body too large (limit " + std::to_string(kMaxJsonBody) + " bytes for JSON)"};
    }
    if (ec) {
      keep_alive_ = false;
      throw HttpError{400, "malformed request: " + ec.message()};
    }
  }
  auto msg = p.release();
  for (const auto& f : msg) req.headers[lower(std::string(f.name_string()))] = std::string(f.value());
  req.body = std::move(msg.body());
  keep_alive_ = msg.keep_alive();
  if (buf.size() > 0) {
    auto d = buf.data();
    req.leftover.assign(static_cast<const char*>(d.data()), d.size());
    buf_ = req.leftover;  // the next request's start, unless the handler hijacks
  }
  return true;
}

const char* reason_phrase(int s) {
  switch (s) {
    case 101: return "UPGRADED";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    default: return "Status";
  }
}

bool Connection::write_raw(std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool Connection::write_head(int status, std::string_view content_type, int64_t length,
                            const std::vector<std::pair<std::string, std::string>>& extra) {
  std::string h = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
  h += "Api-Version: 1.44\r\nDocker-Experimental: false\r\nOstype: linux\r\nServer: sbx/" SBX_VERSION "\r\n";
  if (!content_type.empty()) h += "Content-Type: " + std::string(content_type) + "\r\n";
  if (length >= 0) h += "Content-Length: " + std::to_string(length) + "\r\n";
  if (length == -1) h += "Transfer-Encoding: chunked\r\n";
  for (const auto& [k, v] : extra) h += k + ": " + v + "\r\n";
  if (!keep_alive_ && status != 101) h += "Connection: close\r\n";
  h += "\r\n";
  return write_raw(h);
}

bool Connection::send(int status, std::string_view body, std::string_view content_type,
                      const std::vector<std::pair<std::string, std::string>>& extra) {
  bool no_body = status == 204 || status == 304;
  if (!write_head(status, no_body ? "" : content_type, no_body ? -2 : static_cast<int64_t>(body.size()), extra))
    return false;
  return no_body || write_raw(body);
}

bool Connection::send_error(int status, const std::string& msg) {
  std::string body = "{\"message\":";
  body += '"';
  for (char c : msg) {
    if (c == '"' || c == '\\') {
      body += '\\';
      body += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char tmp[8];
      std::snprintf(tmp, sizeof tmp, "\\u%04x", c);
      body += tmp;
    } else {
      body += c;
    }
  }
  body += "\"}\n";
  return send(status, body);
}

bool Connection::begin_chunks(int status, std::string_view content_type) {
  return write_head(status, content_type, -1, {});
}

bool Connection::chunk(std::string_view data) {
  if (data.empty()) return true;
  char head[32];
  std::snprintf(head, sizeof head, "%zx\r\n", data.size());
  return write_raw(head) && write_raw(data) && write_raw("\r\n");
}

bool Connection::end_chunks() { return write_raw("0\r\n\r\n"); }

bool Connection::hijack(const Request& req, std::string_view content_type) {
  keep_alive_ = false;
  hijacked_ = true;
  buf_.clear();
  std::string up = lower(req.header("upgrade"));
  bool ok = up.empty() ? write_head(200, content_type, -2, {})
                       : write_head(101, content_type, -2, {{"Connection", "Upgrade"}, {"Upgrade", "tcp"}});
  // Wait (at most 1 s) until the client has read the head: docker-py reads
  // it through a buffered reader and then switches to the raw socket, so
  // stream bytes that arrived in the same read would be lost. SIOCOUTQ: bytes
  // the peer has not read yet (unix sockets; unacknowledged ones on TCP).
  for (int i = 0; ok && i < 2000; ++i) {
    int queued = 0;
    if (::ioctl(fd_, SIOCOUTQ, &queued) < 0 || queued == 0) break;
    ::usleep(500);
  }
  return ok;
}

}  // namespace sbx::server
