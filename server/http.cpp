// HTTP/1.1 connections of `sbx serve` (server/http.h).
#include "server/http.h"

#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "common/log.h"

namespace sbx::server {

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

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
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 507: return "Insufficient Storage";
    default: return "Status";
  }
}

bool Connection::write_raw(std::string_view data) {
  if (head_only_) {  // a HEAD answer has no body
    if (head_sent_) return true;
    // A head written raw: up to its blank line, and nothing after it.
    auto end = data.find("\r\n\r\n");
    if (end != std::string_view::npos) {
      head_sent_ = true;
      data = data.substr(0, end + 4);
    }
  }
  return put(data);
}

bool Connection::put(std::string_view data) {
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
  head_sent_ = true;
  return put(h);
}

bool Connection::send(int status, std::string_view body, std::string_view content_type,
                      const std::vector<std::pair<std::string, std::string>>& extra) {
  bool no_body = status == 204 || status == 304;
  if (!write_head(status, no_body ? "" : content_type, no_body ? -2 : static_cast<int64_t>(body.size()), extra))
    return false;
  return no_body || write_raw(body);
}

std::string json_error_body(const std::string& msg) {
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
  return body;
}

bool Connection::send_error(int status, const std::string& msg) { return send(status, json_error_body(msg)); }

bool Connection::begin_body(int status, std::string_view content_type, uint64_t length,
                            const std::vector<std::pair<std::string, std::string>>& extra) {
  return write_head(status, content_type, static_cast<int64_t>(length), extra);
}

bool Connection::begin_chunks(int status, std::string_view content_type,
                              const std::vector<std::pair<std::string, std::string>>& extra) {
  return write_head(status, content_type, -1, extra);
}

bool Connection::chunk(std::string_view data) {
  if (head_only_) return false;  // no body to stream: a streaming handler ends here
  if (data.empty()) return true;
  char head[32];
  std::snprintf(head, sizeof head, "%zx\r\n", data.size());
  return write_raw(head) && write_raw(data) && write_raw("\r\n");
}

bool Connection::end_chunks() { return head_only_ || write_raw("0\r\n\r\n"); }

bool Connection::hijack(const Request& req, std::string_view content_type) {
  keep_alive_ = false;
  hijacked_ = true;
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

std::string file_read_too_large(const std::string& path, uint64_t size) {
  const std::string is = size == UINT64_MAX ? " is over " + std::to_string(kMaxCopyStage) : " is " + std::to_string(size);
  return path + is + " bytes (holes of a sparse file count: a read sends them as zeros); " +
         "a file read answers at most " + std::to_string(kMaxFileRead) +
         " bytes: fetch it as a tar (docker cp, GET /containers/ID/archive: holes are not sent) or read it in the "
         "sandbox in parts";
}

}  // namespace sbx::server
