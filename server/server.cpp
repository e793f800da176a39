// `sbx serve`: listeners, connections, shutdown (server/server.h).
#include "server/server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <vector>

#include "common/error.h"
#include "common/fd.h"
#include "common/fs.h"
#include "common/log.h"
#include "runtime/linux/self_exec.h"
#include "runtime/user.h"
#include "server/docker/api.h"
#include "server/e2b/e2b.h"
#include "server/http.h"
#include "server/sandbox_fusion/api.h"
#include "server/temp_dir.h"
#include "server/v1/trajectory_files.h"

namespace sbx::server {

namespace {

/// Connections the kernel queues for accept(2) (capped at net.core.somaxconn):
/// room for a burst while the core accepts.
constexpr int kBacklog = 1024;

struct Listener {
  Fd fd;
  bool tcp = false;
  bool e2b = false;  ///< the E2B endpoint (--e2b): its own authentication
  bool sandbox_fusion = false;  ///< the SandboxFusion endpoint (--sandbox-fusion)
  std::string where;
};

bool token_equal(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char d = 0;
  for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
  return d == 0;
}

Listener listen_unix(const std::string& path) {
  Listener l;
  l.where = "unix://" + path;
  struct sockaddr_un addr {};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) throw Error("socket path too long: " + path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) throw Error(path + " exists and is not a socket; remove it or pick another --socket");
    Fd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (::connect(probe.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0)
      throw Error("another server is listening on " + path + "; stop it or pick another --socket");
    ::unlink(path.c_str());  // stale: its server is gone
  }
  auto slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) fs::mkdir_p(path.substr(0, slash), 0755);
  l.fd = Fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (l.fd.fd < 0) throw_errno("socket");
  mode_t old = ::umask(0177);  // never world-connectable, not even between bind and chmod
  int rc = ::bind(l.fd.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::umask(old);
  if (rc < 0) throw_errno("bind " + path);
  if (auto gid = runtime::group_id("sbx")) {
    if (::chown(path.c_str(), 0, *gid) < 0 || ::chmod(path.c_str(), 0660) < 0) throw_errno("chown/chmod " + path);
  }
  if (::listen(l.fd.fd, kBacklog) < 0) throw_errno("listen on " + path);
  return l;
}

Listener listen_tcp(const std::string& spec, bool loopback_only = true) {
  auto colon = spec.rfind(':');
  if (colon == std::string::npos) throw Error(ErrorKind::InvalidArgument,
              "invalid --tcp '" + spec + "': use 127.0.0.1:PORT");
  std::string host = spec.substr(0, colon), port = spec.substr(colon + 1);
  if (host == "localhost") host = "127.0.0.1";
  struct sockaddr_in a4 {};
  a4.sin_family = AF_INET;
  if (::inet_pton(AF_INET, host.c_str(), &a4.sin_addr) != 1)
    throw Error(ErrorKind::InvalidArgument,
                "invalid address '" + spec + "': use an IPv4 address and a port (127.0.0.1:PORT)");
  if (loopback_only && (ntohl(a4.sin_addr.s_addr) >> 24) != 127)
    throw Error(ErrorKind::InvalidArgument,
                "invalid address '" + spec + "': sbx serve listens on TCP only on loopback (127.0.0.0/8)" +
                " unless a token is required (--token-file: --sandbox-fusion only)");
  int p = 0;
  try {
    p = std::stoi(port);
  } catch (...) {
  }
  if (p <= 0 || p > 65535) throw Error(ErrorKind::InvalidArgument, "invalid --tcp '" + spec + "': bad port");
  a4.sin_port = htons(static_cast<uint16_t>(p));
  Listener l;
  l.tcp = true;
  l.where = "tcp://" + host + ":" + port;
  l.fd = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (l.fd.fd < 0) throw_errno("socket");
  int one = 1;
  ::setsockopt(l.fd.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(l.fd.fd, reinterpret_cast<sockaddr*>(&a4), sizeof a4) < 0) throw_errno("bind " + spec);
  if (::listen(l.fd.fd, kBacklog) < 0) throw_errno("listen on " + spec);
  return l;
}

std::string read_token(const std::string& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) < 0) throw_errno("--token-file " + file);
  if (st.st_mode & 077) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", st.st_mode & 0777);
    throw Error("--token-file " + file + " is readable by others (mode " + mode + "); chmod 600 it");
  }
  std::string t = fs::read_file(file);
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  if (t.size() < 16) throw Error("--token-file " + file + ": the token must have at least 16 characters");
  return t;
}

/// --max-concurrency's default: min(cores, GiB of RAM / 2), at least 1.
int default_max_concurrency() {
  long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  long gib = pages > 0 && page > 0 ? static_cast<long>((static_cast<unsigned long long>(pages) * page) >> 30) : 2;
  return static_cast<int>(std::max(1L, std::min(cores > 0 ? cores : 1L, gib / 2)));
}

}  // namespace

void serve(const ServeOptions& opts) {
  // Every thread inherits this mask: signals are taken only by sigwait below
  // (and never by a sandbox operation's own signal handling in some thread).
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT, SIGALRM, SIGCHLD})
    sigaddset(&mask, s);
  ::pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  // Before any secret is read (the token, E2B's access tokens): every process
  // that enters a sandbox from now on starts from a fresh exec of sbx, never
  // from a fork of this server's memory (runtime/linux/self_exec.h).
  runtime::use_fresh_helpers();

  if (!opts.tcp.empty() && opts.token_file.empty())
    throw Error("sbx serve --tcp needs --token-file FILE: TCP clients must send Authorization: Bearer <token>");
  if (!opts.e2b.empty() && opts.token_file.empty())
    throw Error("sbx serve --e2b needs --token-file FILE: E2B clients send its token as the API key (E2B_API_KEY)");
  std::string token =
      opts.tcp.empty() && opts.e2b.empty() && (opts.sandbox_fusion.empty() || opts.token_file.empty())
          ? ""
          : read_token(opts.token_file);
  // The SandboxFusion endpoint's table and runner first: a bad --languages
  // or runtime is refused before any socket exists.
  std::unique_ptr<sandbox_fusion::Api> sfusion;
  struct stat tst {};
  if (!opts.trajectory_dir.empty() && (::stat(opts.trajectory_dir.c_str(), &tst) < 0 || !S_ISDIR(tst.st_mode)))
    throw Error(ErrorKind::InvalidArgument, "sbx serve: --trajectory-dir " + opts.trajectory_dir + " is not a directory");
  set_v1_trajectory_dir(opts.trajectory_dir);
  if (!opts.sandbox_fusion.empty()) {
    sandbox_fusion::RunnerOptions ro;
    ro.engine = opts.engine;
    ro.runtime = opts.runtime;
    ro.languages = opts.languages_file.empty() ? sandbox_fusion::default_languages()
                                               : sandbox_fusion::load_languages(opts.languages_file);
    ro.max_concurrency = opts.max_concurrency > 0 ? opts.max_concurrency : default_max_concurrency();
    // At least 2: with one spare ready, a request's refill waits until its
    // answer is out (engine/pool.h defer_refill) instead of taking CPU from it.
    ro.pool_size = static_cast<size_t>(std::clamp(ro.max_concurrency, 2, 8));
    if (opts.queue_timeout.count() <= 0) throw Error("sbx serve: --queue-timeout must be above 0");
    ro.queue_timeout = opts.queue_timeout;
    sfusion = std::make_unique<sandbox_fusion::Api>(std::move(ro), opts.token_file.empty() ? "" : token);
  }
  std::vector<Listener> listeners;
  // systemd socket activation (sd_listen_fds(3)): fd 3 is the unix socket.
  const char* lpid = ::getenv("LISTEN_PID");
  const char* lfds = ::getenv("LISTEN_FDS");
  if (lpid && lfds && std::atoi(lpid) == ::getpid() && std::atoi(lfds) >= 1) {
    Listener l;
    l.fd = Fd(3);
    ::fcntl(3, F_SETFD, FD_CLOEXEC);
    l.where = "fd://3 (systemd)";
    listeners.push_back(std::move(l));
  } else if (!opts.socket.empty()) {
    listeners.push_back(listen_unix(opts.socket));
  }
  if (!opts.tcp.empty()) listeners.push_back(listen_tcp(opts.tcp));
  if (!opts.e2b.empty()) {
    listeners.push_back(listen_tcp(opts.e2b));
    listeners.back().e2b = true;
    listeners.back().where = "http://" + listeners.back().where.substr(6) + " (E2B API)";
  }
  if (sfusion) {
    listeners.push_back(listen_tcp(opts.sandbox_fusion, /*loopback_only=*/opts.token_file.empty()));
    listeners.back().sandbox_fusion = true;
    listeners.back().where = "http://" + listeners.back().where.substr(6) + " (SandboxFusion API)";
  }
  if (listeners.empty()) throw Error("sbx serve: nothing to listen on (give --socket or --tcp)");

  ServerLimits limits = opts.limits;
  if (limits.max_connections <= 0) {
    struct rlimit rl {};
    long nofile = ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? static_cast<long>(rl.rlim_cur)
                                                                                      : 1 << 20;
    limits.max_connections = static_cast<int>(std::clamp<long>(nofile / 4, 16, 4096));
  }
  if (limits.max_client_connections <= 0) limits.max_client_connections = std::min(1024, limits.max_connections);
  if (limits.header_timeout.count() <= 0 || limits.idle_timeout.count() <= 0)
    throw Error(ErrorKind::InvalidArgument, "sbx serve: --header-timeout and --idle-timeout must be above 0");

  // Never freed: handlers still ending when serve() returns use them.
  Api& api = *new Api(opts.engine, opts.runtime);
  E2bApi* e2b = opts.e2b.empty() ? nullptr : new E2bApi(opts.engine, opts.runtime, token);
  sweep_stale_temp_dirs(opts.engine.root);
  HttpServer& http = *new HttpServer(limits, opts.engine.root);
  std::string where;
  for (auto& l : listeners) {
    Site site;
    if (l.sandbox_fusion) {
      site = sfusion->site();
    } else if (l.e2b) {
      site.authorize = [e2b](const Request& r) { return e2b->authorize(r); };
      site.body_rule = [](const Request& r) { return E2bApi::body_rule(r); };
      site.error_body = [](const Request* r, int status, const std::string& msg) {
        return E2bApi::error_body(r, status, msg);
      };
      site.handle = [e2b](Connection& c, Request& r) { e2b->handle(c, r); };
    } else {
      if (l.tcp)
        site.authorize = [token](const Request& r) -> std::optional<HttpError> {
          if (token_equal(r.header("authorization"), "Bearer " + token)) return std::nullopt;
          return HttpError{401, "sbx serve: a bearer token is required on TCP (Authorization: Bearer …)"};
        };
      site.body_rule = [](const Request& r) { return Api::body_rule(r); };
      site.handle = [&api](Connection& c, Request& r) { api.handle(c, r); };
    }
    where += (where.empty() ? "" : ", ") + l.where;
    http.add_listener(std::move(l.fd), l.where, std::move(site));
  }
  http.start();
  if (opts.ready) opts.ready(where);

  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  int sig;
  while (::sigwait(&stop, &sig) != 0) {
  }
  log::info("serve: signal " + std::to_string(sig) + ": shutting down (running sandboxes stay)");
  http.stop();
  if (!opts.socket.empty() && listeners.front().where.rfind("unix://", 0) == 0) ::unlink(opts.socket.c_str());
  api.cancel_all_execs();
  if (e2b) e2b->shutdown();
  if (sfusion) sfusion->shutdown();
  // The SandboxFusion pools' waiting sandboxes go with the runner (the
  // pools' guardian removes them if this process dies first); a handler
  // still running keeps using it, so then it is left (as the other APIs).
  if (http.wait_handlers(std::chrono::seconds(3))) sfusion.reset();
  else (void)sfusion.release();
}

}  // namespace sbx::server
