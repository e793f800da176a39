// The server core of `sbx serve` (server/http_server.h).
#include "server/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/basic_socket_acceptor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/basic_stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <future>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "server/temp_dir.h"

namespace sbx::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using Proto = net::generic::stream_protocol;
using Acceptor = net::basic_socket_acceptor<Proto>;
using Stream = beast::basic_stream<Proto>;
using Parser = http::request_parser<http::buffer_body>;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

namespace {

/// The longest a request head may be.
constexpr size_t kHeaderLimit = 64 * 1024;
/// After a refusal or a hijacked stream: how long the client's remaining
/// input is read and dropped before the close (closing with unread input
/// resets the connection, and the client may lose the answer), at most …
constexpr milliseconds kLingerTotal{5000};
/// … and at most this long without a byte.
constexpr milliseconds kLingerIdle{1000};
/// Most time to hand a refusal to the kernel.
constexpr milliseconds kRefusalWrite{5000};
/// Backoff of accept(2) when the process or the system is out of descriptors
/// or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM): from … to …
constexpr milliseconds kBackoffFirst{10};
constexpr milliseconds kBackoffMost{1000};
/// A worker thread with nothing to do for this long ends.
constexpr std::chrono::seconds kWorkerIdle{30};
/// After a response on a kept-alive connection, how long the worker waits
/// for the client's next request before it hands the connection back to the
/// I/O thread: back-to-back requests (docker run's create, start, attach,
/// wait) then skip two thread hand-offs.
constexpr int kNextRequestWaitMs = 1;

/// Whether `ec` is a parse error of Beast's HTTP parser (not the socket's).
bool parse_error(const beast::error_code& ec) {
  return ec.category() == beast::error_code(http::error::bad_target).category();
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// A blocking SyncReadStream over a socket fd, for Beast's synchronous reads
/// on a worker thread: a read that waits longer than `idle_ms` for a byte,
/// or past `deadline`, fails with beast::error::timeout.
struct FdStream {
  int fd;
  int idle_ms;
  Clock::time_point deadline = Clock::time_point::max();
  template <class Buffers>
  size_t read_some(const Buffers& bufs, beast::error_code& ec) {
    ec = {};
    auto it = net::buffer_sequence_begin(bufs);
    if (it == net::buffer_sequence_end(bufs)) return 0;
    net::mutable_buffer b = *it;
    for (;;) {
      int wait = idle_ms;
      if (deadline != Clock::time_point::max()) {
        auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
        wait = static_cast<int>(std::clamp<long long>(left, 0, wait));
      }
      struct pollfd p = {fd, POLLIN, 0};
      int r = ::poll(&p, 1, wait);
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) {
        ec = beast::error::timeout;
        return 0;
      }
      ssize_t n = ::read(fd, b.data(), b.size());
      if (n > 0) return static_cast<size_t>(n);
      if (n == 0) {
        ec = net::error::eof;
        return 0;
      }
      if (errno == EINTR || errno == EAGAIN) continue;
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

/// Threads for handlers: as many as run at once (the connection bounds bound
/// them), kept a while for the next request rather than made per request.
class Workers {
 public:
  /// Waits for every thread to end (their tasks first).
  ~Workers() {
    std::unique_lock lk(mu_);
    stop_ = true;
    cv_.notify_all();
    cv_.wait(lk, [&] { return threads_ == 0; });
  }

  void submit(std::function<void()> task) {
    std::unique_lock lk(mu_);
    q_.push_back(std::move(task));
    // Every waiting thread takes one task: start another when the waiting
    // ones are all spoken for.
    if (idle_ >= static_cast<int>(q_.size())) {
      cv_.notify_one();
      return;
    }
    ++threads_;
    lk.unlock();
    std::thread([this] { loop(); }).detach();
  }

 private:
  void loop() {
    std::unique_lock lk(mu_);
    for (;;) {
      while (!q_.empty()) {
        auto t = std::move(q_.front());
        q_.pop_front();
        lk.unlock();
        t();
        t = nullptr;  // (what it holds goes now, not at the next task)
        lk.lock();
      }
      ++idle_;
      bool got = cv_.wait_for(lk, kWorkerIdle, [&] { return !q_.empty() || stop_; });
      --idle_;
      if (!got || (stop_ && q_.empty())) break;
    }
    if (--threads_ == 0) cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> q_;
  int idle_ = 0;     ///< threads waiting for a task
  int threads_ = 0;  ///< threads running
  bool stop_ = false;
};

}  // namespace

struct HttpServer::Impl {
  struct Listener {
    std::string where;
    Site site;
    Proto proto{AF_UNIX, 0};
    std::unique_ptr<Acceptor> acceptor;
    std::unique_ptr<net::steady_timer> backoff_timer;
    milliseconds backoff{0};
    Clock::time_point last_backoff_log{};
    int open = 0;                        ///< connections now
    std::map<std::string, int> clients;  ///< connections now, per client
    uint64_t refused = 0;                ///< over a bound, since the last log line
    Clock::time_point last_refusal_log{};
  };
  struct Session;

  ServerLimits limits;
  std::string spool_root;
  net::io_context ioc;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::thread io_thread;
  std::vector<std::unique_ptr<Listener>> listeners;
  std::set<std::shared_ptr<Session>> sessions;  ///< (I/O thread only)
  std::atomic<bool> stopping{false};
  char scratch[64 * 1024];                      ///< lingering reads land here (I/O thread only)
  std::mutex handlers_mu;
  std::condition_variable handlers_cv;
  int handlers = 0;  ///< requests on worker threads
  Workers workers;   ///< (last: destroyed first, its threads use the members above)

  std::string error_body(const Listener& l, const Request* head, int status, const std::string& msg) {
    if (l.site.error_body) {
      try {
        return l.site.error_body(head, status, msg);
      } catch (const std::exception&) {
      }
    }
    return json_error_body(msg);
  }

  /// An error answer with Connection: close; `head_only` (a HEAD request):
  /// its head alone (RFC 9110 §9.3.2), as Connection does for handlers.
  static std::string error_response(int status, const std::string& body, bool head_only = false) {
    return "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) +
           "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\nConnection: close\r\n\r\n" + (head_only ? std::string() : body);
  }

  // ---- accepting (I/O thread) ----------------------------------------------

  void wait_accept(Listener& l) {
    l.acceptor->async_wait(Acceptor::wait_read, [this, &l](const boost::system::error_code& ec) {
      if (stopping || ec == net::error::operation_aborted) return;
      if (ec) return backoff(l, ec.value());
      accept_some(l);
    });
  }

  /// Accepts what is pending (a batch, then the other listeners' turn).
  void accept_some(Listener& l) {
    if (stopping) return;
    for (int i = 0; i < 64; ++i) {
      struct sockaddr_storage ss {};
      socklen_t len = sizeof ss;
      int fd = ::accept4(l.acceptor->native_handle(), reinterpret_cast<sockaddr*>(&ss), &len,
                         SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd >= 0) {
        l.backoff = milliseconds{0};
        admit(l, Fd(fd), ss);
        continue;
      }
      int e = errno;
      if (e == EINTR || e == ECONNABORTED || e == EPROTO || e == EPERM) continue;
      if (e == EAGAIN || e == EWOULDBLOCK) return wait_accept(l);
      return backoff(l, e);
    }
    net::post(ioc, [this, &l] { accept_some(l); });
  }

  /// accept(2) failed for want of descriptors or memory (or worse): it is
  /// tried again after a pause that doubles up to kBackoffMost, instead of at
  /// once (the pending connection keeps the listener readable, and a retry
  /// loop would spin). The other listeners and every connection go on.
  void backoff(Listener& l, int err) {
    l.backoff = l.backoff.count() == 0 ? kBackoffFirst : std::min(l.backoff * 2, kBackoffMost);
    auto now = Clock::now();
    if (now - l.last_backoff_log > std::chrono::seconds(10)) {
      l.last_backoff_log = now;
      const char* hint = err == EMFILE || err == ENFILE ? " (out of descriptors: raise RLIMIT_NOFILE or lower "
                                                          "--max-connections)"
                                                        : "";
      log::warn("serve: " + l.where + ": accept: " + std::strerror(err) + hint +
                "; new connections wait, retrying every " + std::to_string(l.backoff.count()) + " ms and up");
    }
    l.backoff_timer->expires_after(l.backoff);
    l.backoff_timer->async_wait([this, &l](const boost::system::error_code& ec) {
      if (!ec && !stopping) accept_some(l);
    });
  }

  /// Who a connection comes from, for --max-client-connections: the peer's
  /// address (TCP) or uid (unix socket).
  static std::string client_of(int fd, const sockaddr_storage& ss) {
    char buf[INET6_ADDRSTRLEN] = "";
    if (ss.ss_family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(ss).sin_addr, buf, sizeof buf);
      return buf;
    }
    if (ss.ss_family == AF_INET6) {
      ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr, buf, sizeof buf);
      return buf;
    }
    struct ucred cr {};
    socklen_t n = sizeof cr;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &n) == 0) return "uid " + std::to_string(cr.uid);
    return "unix";
  }

  void admit(Listener& l, Fd fd, const sockaddr_storage& ss) {
    std::string client = client_of(fd.fd, ss);
    bool all = l.open >= limits.max_connections, one = false;
    if (auto it = l.clients.find(client); !all && it != l.clients.end())
      one = it->second >= limits.max_client_connections;
    if (all || one) {
      // Answered at once and closed (best effort, never waiting for the
      // client): a connection left in the backlog would hold up the others.
      std::string what = "too many connections" + (one ? " from " + client : std::string()) + " on " + l.where +
                         " (" + (one ? "--max-client-connections " : "--max-connections ") +
                         std::to_string(one ? limits.max_client_connections : limits.max_connections) + ")";
      std::string resp = error_response(503, error_body(l, nullptr, 503, "sbx serve: " + what));
      (void)!::send(fd.fd, resp.data(), resp.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      ::shutdown(fd.fd, SHUT_WR);
      ++l.refused;
      auto now = Clock::now();
      if (now - l.last_refusal_log > std::chrono::seconds(10)) {
        log::warn("serve: " + what + ": refused " + std::to_string(l.refused) + " connection(s) since the last report");
        l.refused = 0;
        l.last_refusal_log = now;
      }
      return;
    }
    auto s = std::make_shared<Session>(*this, l, client);
    boost::system::error_code ec;
    s->stream.socket().assign(l.proto, fd.fd, ec);
    if (ec) {
      log::warn("serve: " + l.where + ": take a connection: " + ec.message());
      return;
    }
    fd.release();
    ++l.open;
    ++l.clients[client];
    sessions.insert(s);
    s->read_head();
  }

  // ---- one connection --------------------------------------------------------

  struct Session : std::enable_shared_from_this<Session> {
    enum class Phase { Reading, Handling, Lingering, Closed };
    Impl& srv;
    Listener& l;
    std::string client;
    Stream stream;
    beast::flat_buffer buf;
    std::optional<Parser> parser;
    Request req;
    Phase phase = Phase::Reading;
    bool fresh = true;  ///< no request yet: the header time-out runs from the accept
    std::string out;    ///< a refusal being written
    Clock::time_point linger_end;

    Session(Impl& s, Listener& li, std::string c) : srv(s), l(li), client(std::move(c)), stream(s.ioc) {}

    /// Waits for the next request (idle time-out on a kept-alive
    /// connection), then reads its head (header time-out).
    void read_head() {
      phase = Phase::Reading;
      new_parser();
      if (!fresh && buf.size() == 0) {
        stream.expires_after(srv.limits.idle_timeout);
        stream.async_read_some(buf.prepare(1024), [self = shared_from_this()](beast::error_code ec, size_t n) {
          self->buf.commit(n);
          self->stream.expires_never();
          if (ec || self->srv.stopping) return self->close();
          self->read_head_bytes();
        });
        return;
      }
      read_head_bytes();
    }

    void read_head_bytes() {
      stream.expires_after(srv.limits.header_timeout);
      http::async_read_header(stream, buf, *parser, [self = shared_from_this()](beast::error_code ec, size_t) {
        self->stream.expires_never();
        self->on_head(ec);
      });
    }

    void on_head(beast::error_code ec) {
      if (srv.stopping) return close();
      if (ec) {
        // A time-out (Beast closed the socket), the client gone: no answer.
        if (auto r = head_refusal(ec)) return refuse(r->status, r->message, false);
        return close();
      }
      take_head();
      phase = Phase::Handling;
      {
        std::lock_guard lk(srv.handlers_mu);
        ++srv.handlers;
      }
      srv.workers.submit([self = shared_from_this()] { self->work(); });
    }

    /// A head's error worth an answer (431, 400); nullopt: close quietly (a
    /// time-out, after which Beast has closed the socket; the client gone).
    static std::optional<HttpError> head_refusal(const beast::error_code& ec) {
      if (!parse_error(ec) || ec == http::error::end_of_stream || ec == http::error::partial_message)
        return std::nullopt;
      if (ec == http::error::header_limit)
        return HttpError{431, "request head over " + std::to_string(kHeaderLimit) + " bytes"};
      return HttpError{400, "malformed request: " + ec.message()};
    }

    /// req from the parsed head.
    void take_head() {
      req = Request{};
      const auto& h = parser->get();
      req.method = std::string(h.method_string());
      req.target = std::string(h.target());
      split_target(req);
      for (const auto& f : h) req.headers[lower(f.name_string())] = std::string(f.value());
    }

    void new_parser() {
      parser.emplace();
      parser->header_limit(kHeaderLimit);
      // The endpoint's rule is set once the head is known. (Not boost::none:
      // Beast 1.74 compares a Content-Length with it as an optional, and
      // any length is "over" none.)
      parser->body_limit(std::numeric_limits<std::uint64_t>::max());
    }

    /// How a request on a worker thread ended.
    struct Outcome {
      bool keep = false;      ///< the connection may carry another request
      bool hijacked = false;  ///< a raw stream now: linger, then close
      bool gone = false;      ///< the client went away (or must be dropped)
      std::optional<HttpError> refusal;  ///< answer this and close
      bool have_head = true;             ///< the refusal is of a request whose head is in req
    };

    /// On a worker thread: the request in `req`, then (kept alive) the next
    /// ones that arrive at once; then back to the I/O thread.
    void work() {
      int fd = stream.socket().native_handle();
      boost::system::error_code ec;
      stream.socket().native_non_blocking(false, ec);  // handlers read and write the fd as a blocking socket
      Outcome o;
      for (;;) {
        o = serve_one(fd);
        if (o.refusal || o.gone || o.hijacked || !o.keep || srv.stopping) break;
        // The next request, if the client sends it at once: read here.
        if (buf.size() == 0) {
          struct pollfd p = {fd, POLLIN, 0};
          if (::poll(&p, 1, kNextRequestWaitMs) <= 0) break;  // not yet: the I/O thread waits for it
        }
        new_parser();
        FdStream s{fd, static_cast<int>(srv.limits.header_timeout.count()),
                   Clock::now() + srv.limits.header_timeout};
        beast::error_code hec;
        http::read_header(s, buf, *parser, hec);
        if (hec) {
          o = Outcome{};
          o.refusal = head_refusal(hec);
          o.have_head = false;
          o.gone = !o.refusal;
          break;
        }
        take_head();
      }
      net::post(srv.ioc, [self = shared_from_this(), o = std::move(o)] {
        if (o.refusal) return self->refuse(o.refusal->status, o.refusal->message, o.have_head);
        self->req = Request{};
        self->parser.reset();
        if (self->srv.stopping || o.gone) return self->close();
        if (o.hijacked) return self->linger();
        if (!o.keep) return self->close();
        self->fresh = false;
        self->read_head();
      });
      std::lock_guard lk(srv.handlers_mu);
      if (--srv.handlers == 0) srv.handlers_cv.notify_all();
    }

    /// One request (worker thread): authorize it, read its body by the
    /// endpoint's rule, run the handler.
    Outcome serve_one(int fd) {
      Outcome o;
      bool handled = false;
      std::optional<TempDir> spool;
      try {
        BodyRule rule;
        if (l.site.authorize) o.refusal = l.site.authorize(req);
        if (!o.refusal && l.site.body_rule) rule = l.site.body_rule(req);
        if (!o.refusal) {
          auto length = parser->content_length();
          if (length && *length > rule.limit)  // before a byte of it is read
            o.refusal = HttpError{413, "request body too large (limit " + std::to_string(rule.limit) + " bytes)"};
        }
        if (!o.refusal) {
          Fd spool_fd;
          if (rule.spool) {
            spool.emplace(srv.spool_root);
            req.body_file = spool->path() + "/body";
            spool_fd = Fd(::open(req.body_file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
            if (spool_fd.fd < 0) throw_errno("create " + req.body_file);
          }
          if (!parser->is_done()) {
            if (beast::iequals(parser->get()[http::field::expect], "100-continue"))
              Connection(fd).write_raw("HTTP/1.1 100 Continue\r\n\r\n");
            parser->body_limit(rule.limit);
            o.refusal = read_body(fd, rule, spool_fd.fd, o.gone);
          }
        }
        if (!o.refusal && !o.gone) {
          if (buf.size() > 0) {
            auto d = buf.data();
            req.leftover.assign(static_cast<const char*>(d.data()), d.size());
          }
          Connection conn(fd, parser->get().keep_alive(), req.method == "HEAD");
          handled = true;
          l.site.handle(conn, req);
          o.hijacked = conn.hijacked();
          o.keep = conn.keep_alive() && !o.hijacked;
        }
      } catch (const std::exception& e) {
        // Handlers answer their own errors; this is the core's (the spool
        // file could not be made or written) or a handler's bug.
        log::warn("serve: " + l.where + ": " + req.method + " " + req.path + ": " + e.what());
        if (!handled) o.refusal = HttpError{500, std::string("sbx serve: ") + e.what()};
        o.keep = false;
      }
      spool.reset();  // the spooled body goes with the request
      if (o.hijacked) buf.consume(buf.size());  // (its bytes were the stream's)
      if (!o.refusal) {
        req = Request{};
        parser.reset();
      }
      return o;
    }

    /// Reads the body into req.body or `out_fd` (worker thread). Returns the
    /// refusal to answer (413 over the bound, 408 a stalled client, 400
    /// malformed), or nullopt; `gone`: the client went away.
    std::optional<HttpError> read_body(int fd, const BodyRule& rule, int out_fd, bool& gone) {
      FdStream s{fd, static_cast<int>(srv.limits.idle_timeout.count())};  // (no deadline: a body may take long)
      std::unique_ptr<char[]> chunk(new char[64 * 1024]);
      const size_t size = 64 * 1024;
      beast::error_code ec;
      while (!parser->is_done()) {
        auto& b = parser->get().body();
        b.data = chunk.get();
        b.size = size;
        http::read(s, buf, *parser, ec);
        if (ec == http::error::need_buffer) ec = {};
        size_t n = size - parser->get().body().size;
        if (n > 0) {
          if (out_fd >= 0)
            fs::write_all(out_fd, std::string_view(chunk.get(), n), req.body_file);
          else
            req.body.append(chunk.get(), n);
        }
        if (ec == http::error::body_limit)
          return HttpError{413, "request body too large (limit " + std::to_string(rule.limit) + " bytes)"};
        if (ec == beast::error::timeout)
          return HttpError{408, "no byte of the request body for " + std::to_string(srv.limits.idle_timeout.count()) +
                                    " ms (sbx serve --idle-timeout)"};
        if (parse_error(ec) && ec != http::error::end_of_stream && ec != http::error::partial_message)
          return HttpError{400, "malformed request body: " + ec.message()};
        if (ec) {
          gone = true;
          return std::nullopt;
        }
      }
      return std::nullopt;
    }

    /// Answers `status` with Connection: close, then lingers (I/O thread).
    void refuse(int status, const std::string& msg, bool have_head) {
      phase = Phase::Lingering;
      out = error_response(status, srv.error_body(l, have_head ? &req : nullptr, status, msg),
                           have_head && req.method == "HEAD");
      req = Request{};
      parser.reset();
      stream.expires_after(kRefusalWrite);
      net::async_write(stream, net::buffer(out), [self = shared_from_this()](beast::error_code ec, size_t) {
        self->stream.expires_never();
        self->out.clear();
        if (ec) return self->close();
        self->linger();
      });
    }

    /// Ends the sending side, reads and drops what the client still sends
    /// (kLingerIdle of silence, kLingerTotal in all), then closes.
    void linger() {
      phase = Phase::Lingering;
      buf.consume(buf.size());
      buf.shrink_to_fit();
      boost::system::error_code ec;
      stream.socket().shutdown(Proto::socket::shutdown_send, ec);
      linger_end = Clock::now() + kLingerTotal;
      linger_read();
    }

    void linger_read() {
      auto left = std::chrono::duration_cast<milliseconds>(linger_end - Clock::now());
      if (left.count() <= 0 || srv.stopping) return close();
      stream.expires_after(std::min(left, kLingerIdle));
      stream.async_read_some(net::buffer(srv.scratch), [self = shared_from_this()](beast::error_code ec, size_t) {
        self->stream.expires_never();
        if (ec) return self->close();
        self->linger_read();
      });
    }

    void close() {
      if (phase == Phase::Closed) return;
      phase = Phase::Closed;
      stream.close();  // (its time-out too)
      --l.open;
      auto it = l.clients.find(client);
      if (it != l.clients.end() && --it->second <= 0) l.clients.erase(it);
      srv.sessions.erase(shared_from_this());
    }
  };
};

HttpServer::HttpServer(ServerLimits limits, std::string spool_root) : impl_(std::make_unique<Impl>()) {
  impl_->limits = limits;
  impl_->spool_root = std::move(spool_root);
}

HttpServer::~HttpServer() {
  if (!impl_->io_thread.joinable()) return;
  stop();
  impl_->work.reset();
  impl_->ioc.stop();
  impl_->io_thread.join();
}

void HttpServer::add_listener(Fd fd, std::string where, Site site) {
  auto l = std::make_unique<Impl::Listener>();
  struct sockaddr_storage ss {};
  socklen_t len = sizeof ss;
  if (::getsockname(fd.fd, reinterpret_cast<sockaddr*>(&ss), &len) < 0) throw_errno("getsockname of " + where);
  l->proto = ss.ss_family == AF_UNIX ? Proto(AF_UNIX, 0) : Proto(ss.ss_family, IPPROTO_TCP);
  l->where = std::move(where);
  l->site = std::move(site);
  int flags = ::fcntl(fd.fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd.fd, F_SETFL, flags | O_NONBLOCK) < 0) throw_errno("O_NONBLOCK on " + l->where);
  l->acceptor = std::make_unique<Acceptor>(impl_->ioc);
  boost::system::error_code ec;
  l->acceptor->assign(l->proto, fd.fd, ec);
  if (ec) throw Error("serve: listen on " + l->where + ": " + ec.message());
  fd.release();
  l->backoff_timer = std::make_unique<net::steady_timer>(impl_->ioc);
  impl_->listeners.push_back(std::move(l));
}

void HttpServer::start() {
  impl_->work.emplace(impl_->ioc.get_executor());
  for (auto& l : impl_->listeners) impl_->wait_accept(*l);
  impl_->io_thread = std::thread([this] {
    for (;;) {
      try {
        impl_->ioc.run();
        return;
      } catch (const std::exception& e) {
        log::error(std::string("serve: ") + e.what());
      }
    }
  });
}

void HttpServer::stop() {
  std::promise<void> done;
  net::post(impl_->ioc, [this, &done] {
    impl_->stopping = true;
    for (auto& l : impl_->listeners) {
      boost::system::error_code ec;
      l->acceptor->close(ec);
      l->backoff_timer->cancel();
    }
    std::vector<std::shared_ptr<Impl::Session>> idle;
    for (const auto& s : impl_->sessions)
      if (s->phase != Impl::Session::Phase::Handling) idle.push_back(s);
    for (auto& s : idle) s->close();
    done.set_value();
  });
  done.get_future().wait();
}

bool HttpServer::wait_handlers(milliseconds timeout) {
  std::unique_lock lk(impl_->handlers_mu);
  return impl_->handlers_cv.wait_for(lk, timeout, [&] { return impl_->handlers == 0; });
}

}  // namespace sbx::server
