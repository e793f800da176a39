// The HTTP/1.1 side of `sbx serve` that handlers see: a request (parsed by
// the server core, server/http_server.h, with Boost.Beast, RFC 9112) and the
// ways a handler answers it on its connection — a whole response, a chunked
// stream (wait, logs, pull progress), or a hijacked connection (attach, exec
// start: Docker's "101 UPGRADED" raw stream).
//
// Handlers run on a worker thread with the client's socket in blocking mode;
// the core owns the socket (accepts it close-on-exec, reads heads and bodies
// with time-outs, closes it).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace sbx::server {

/// Most bytes of a request body, by kind (a bound on what one client can make
/// the server hold; the socket is root's door to the host).
inline constexpr uint64_t kMaxJsonBody = 4u << 20;           ///< 4 MiB, held in memory
inline constexpr uint64_t kMaxArchiveBody = uint64_t{1} << 30;  ///< 1 GiB, spooled to disk (archive PUT, image load, uploads)
/// 4 GiB: most file data one request stages on the host on its way out of or
/// into a sandbox (a copy out for an archive GET/HEAD or a file read, the
/// files an uploaded tar unpacks to). Holes of sparse files do not count:
/// they stay holes. More: the request fails (507), and nothing stays behind.
inline constexpr uint64_t kMaxCopyStage = uint64_t{4} << 30;
/// 4 GiB: the largest file a raw file read (/sbx/v1 files, E2B GET /files)
/// answers. Such a read sends a sparse file's holes as zeros, so its size
/// counts, holes included: a 1 TiB sparse file is refused (413, TooLarge)
/// before a byte is sent, not streamed as 1 TiB of zeros. The Docker archive
/// (a tar with sparse entries) sends no holes and has no such bound.
inline constexpr uint64_t kMaxFileRead = uint64_t{4} << 30;
static_assert(kMaxCopyStage >= kMaxFileRead, "a copy stopped at the staging bound must be over what a read answers");

/// The refusal of a file read past kMaxFileRead: "PATH is N bytes …" naming
/// the bound and the way to get it (the archive endpoint keeps holes).
/// (size UINT64_MAX: not known, only that staging a copy stopped at kMaxCopyStage.)
std::string file_read_too_large(const std::string& path, uint64_t size);

/// How the body of one request is read, chosen per endpoint from its head
/// (method, path, headers) before a byte of the body is read.
struct BodyRule {
  uint64_t limit = kMaxJsonBody;  ///< most bytes (after chunked decoding); more: 413
  /// false: into Request::body (memory); true: streamed to a file on disk
  /// (Request::body_file, under the store's root), never held in memory.
  bool spool = false;
};

/// One parsed request.
struct Request {
  std::string method;  ///< "GET", "POST", ...
  std::string target;  ///< as sent, "/v1.44/containers/json?all=1"
  std::string path;    ///< target without the query and the /vX.Y prefix
  std::string api_version;  ///< "1.44" from the prefix; empty: none
  std::map<std::string, std::string> query;  ///< percent-decoded (a repeated key: its last value)
  std::vector<std::pair<std::string, std::string>> query_all;  ///< every key=value, in order
  std::map<std::string, std::string> headers;  ///< lower-case names
  std::string body;       ///< the body (BodyRule::spool false)
  std::string body_file;  ///< BodyRule::spool: the file holding the body (removed after the handler); else ""
  std::string leftover;  ///< bytes read past the request (a hijacked stream's first input)

  /// Query parameter `k` as a bool (Docker: "1", "true", "True"); `def` when absent.
  bool flag(const std::string& k, bool def = false) const;
  /// Query parameter or "".
  std::string param(const std::string& k) const;
  /// Every value of query parameter `k` (`names=a&names=b`), in order.
  std::vector<std::string> params(const std::string& k) const;
  /// Header (lower-case name) or "".
  std::string header(const std::string& k) const;
};

/// Thrown by handlers to answer with a Docker-style error: {"message": …}.
struct HttpError {
  int status;
  std::string message;
};

/// One client connection as a handler answers on it; every method writes to
/// the socket and returns false once the client is gone (no throw for a
/// vanished client). It does not own the socket: the server core closes it
/// (or reads the next request) after the handler returns.
class Connection {
 public:
  /// `keep_alive`: the request allows another on this connection.
  /// `head_only`: the request is a HEAD (RFC 9110 §9.3.2): every answer on
  /// this connection is its status line and headers alone — whatever body a
  /// handler passes (an error's JSON, chunks, raw bytes) is dropped here, so
  /// no handler can send one. A body on a HEAD answer would be read by the
  /// client as the start of its next response (Go: "Unsolicited response
  /// received on idle HTTP channel", then a failed request).
  explicit Connection(int fd, bool keep_alive = true, bool head_only = false)
      : fd_(fd), keep_alive_(keep_alive), head_only_(head_only) {}
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// A whole response. `body` is sent as is with `content_type`.
  bool send(int status, std::string_view body, std::string_view content_type = "application/json",
            const std::vector<std::pair<std::string, std::string>>& extra = {});
  /// {"message": msg} with `status`.
  bool send_error(int status, const std::string& msg);

  /// Starts a response of `length` bytes (a file streamed as it is read):
  /// the head; then the body with write_raw().
  bool begin_body(int status, std::string_view content_type, uint64_t length,
                  const std::vector<std::pair<std::string, std::string>>& extra = {});

  /// Starts a chunked response (`extra`: more headers); then chunk() any
  /// number of times, then end_chunks(). On a HEAD connection chunk()
  /// returns false (there is no body to stream: the handler stops).
  bool begin_chunks(int status, std::string_view content_type,
                    const std::vector<std::pair<std::string, std::string>>& extra = {});
  bool chunk(std::string_view data);
  bool end_chunks();

  /// Hijacks the connection (Docker's attach / exec start): "101 UPGRADED"
  /// when the client asked to upgrade, else "200 OK", with `content_type`;
  /// afterwards the socket is a raw byte stream (fd()) and is closed when the
  /// handler returns (after the client's remaining input is read, at most 1 s
  /// of silence: closing with unread input would reset the connection).
  bool hijack(const Request& req, std::string_view content_type);

  /// Writes all of `data` to the socket (MSG_NOSIGNAL). False once the peer
  /// is gone. On a HEAD connection, bytes after the response head are dropped
  /// (true), a head written raw included (up to its blank line).
  bool write_raw(std::string_view data);

  int fd() const noexcept { return fd_; }
  bool keep_alive() const noexcept { return keep_alive_; }
  void set_close() noexcept { keep_alive_ = false; }
  bool hijacked() const noexcept { return hijacked_; }
  bool head_only() const noexcept { return head_only_; }

 private:
  bool put(std::string_view data);  // to the socket, always
  bool write_head(int status, std::string_view content_type, int64_t length,
                  const std::vector<std::pair<std::string, std::string>>& extra);
  int fd_;
  bool keep_alive_ = true;
  bool hijacked_ = false;
  bool head_only_ = false;
  bool head_sent_ = false;
};

/// "Not Found", … for a status code.
const char* reason_phrase(int status);

/// `n` lowercase hex digits from the kernel's CSPRNG (getrandom(2)): exec
/// and sandbox ids, access tokens. Throws sbx::Error when getrandom fails.
std::string random_hex(size_t n);

/// Percent-decodes a URL component ('+' is a space in queries).
std::string url_decode(std::string_view s);

/// Fills `r.path`, `r.api_version`, `r.query` and `r.query_all` from
/// `r.target` ("/v1.44/containers/json?all=1": path "/containers/json",
/// version "1.44", query all=1).
void split_target(Request& r);

/// Docker's error body: {"message": msg} and a newline.
std::string json_error_body(const std::string& msg);

}  // namespace sbx::server
