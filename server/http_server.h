// The HTTP layer every API of `sbx serve` sits on: the one place that
// accepts connections, reads request heads with time-outs, authenticates per
// listener, bounds and reads bodies per endpoint, and hands a request to its
// handler.
//
// An asynchronous core (Boost.Asio/Beast, one I/O thread) holds every
// connection while it waits for a client: accept (accept4, close-on-exec),
// the wait for the next request on a kept-alive connection (idle time-out),
// the request head (header time-out, 64 KiB), refusals and the lingering close
// after them. Only a complete head reaches a worker thread: there the
// listener's Site authorizes it on its headers (before any body byte is
// read; a refusal ends the connection), picks the body's rule (bound, memory
// or a file on disk), the body is read (idle time-out between bytes), and the
// handler runs, blocking as long as it needs (attach, exec, logs, events and
// wait streams are never timed out, but count against the bounds). Idle and
// slow connections therefore cost no thread, a flood of them is bounded per
// listener and per client, and one listener's clients never take another's
// slots: the unix socket keeps answering while TCP clients misbehave.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/fd.h"
#include "server/http.h"

namespace sbx::server {

/// Bounds and time-outs of the server (sbx serve's flags).
struct ServerLimits {
  /// Most connections open at once, per listener (each listener counts its
  /// own). Another is answered 503 and closed.
  int max_connections = 4096;
  /// Most connections open at once from one client on one listener: a peer
  /// address on TCP, a peer uid (SO_PEERCRED) on a unix socket.
  int max_client_connections = 1024;
  /// Most time for a request head: from the connection's accept, or from its
  /// first byte on a kept-alive connection. Then the connection is closed.
  std::chrono::milliseconds header_timeout{10000};
  /// Most time with no byte from the client while the server waits for one:
  /// between requests on a kept-alive connection, and within a body.
  std::chrono::milliseconds idle_timeout{60000};
};

/// What one listener serves. The callbacks run on worker threads and may block.
struct Site {
  /// Vets a request on its head alone, before a byte of its body is read:
  /// nullopt lets it through, an HttpError refuses it (sent with
  /// Connection: close, and the connection ends). Unset: every request goes
  /// on (a unix socket: its file mode is the check).
  std::function<std::optional<HttpError>(const Request& head)> authorize;
  /// The body rule of a request, from its head. Unset: JSON, in memory, kMaxJsonBody.
  std::function<BodyRule(const Request& head)> body_rule;
  /// Answers the request (may stream, or hijack the connection).
  std::function<void(Connection&, Request&)> handle;
  /// The body of an error the core answers (401 of authorize, 400, 408, 413,
  /// 431, 503) for `head` (null: no head yet). Unset: Docker's {"message": …}.
  std::function<std::string(const Request* head, int status, const std::string& message)> error_body;
};

/// The server core. Listeners are added before start(); start() and stop()
/// are called from one thread.
class HttpServer {
 public:
  /// `spool_root`: the store's root; bodies with BodyRule::spool are written
  /// to temp dirs under it (server/temp_dir.h).
  HttpServer(ServerLimits limits, std::string spool_root);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Serves `site` on the listening socket `fd` (bound, listening; AF_UNIX or
  /// AF_INET stream). `where` names it in logs ("tcp://127.0.0.1:2375").
  void add_listener(Fd fd, std::string where, Site site);

  /// Starts the I/O thread: accepting begins.
  void start();

  /// Stops accepting and closes every connection that is not in a handler
  /// (waiting, reading a head, lingering). Handlers run on; wait_handlers()
  /// waits for them.
  void stop();

  /// Waits up to `timeout` for running handlers to return; true when none runs.
  bool wait_handlers(std::chrono::milliseconds timeout);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sbx::server
