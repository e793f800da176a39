#include "runtime/linux/dns_proxy.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <ifaddrs.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <thread>

#include "common/error.h"
#include "common/fs.h"
#include "runtime/linux/netlink.h"
#include "runtime/linux/network_rules.h"
#include "runtime/state.h"

namespace sbx::runtime {

bool is_domain_pattern(const std::string& text) {
  std::string s = text.rfind("*.", 0) == 0 ? text.substr(2) : text;
  if (s.empty() || s.size() > 253) return false;
  int labels = 0;
  size_t start = 0;
  bool last_numeric = true;
  for (;;) {
    size_t dot = s.find('.', start);
    std::string label = s.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
    last_numeric = true;
    for (char c : label) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
      if (!std::isdigit(static_cast<unsigned char>(c))) last_numeric = false;
    }
    ++labels;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return labels >= 2 && !last_numeric;  // "1.2.3.4" is an address, not a name
}

std::vector<std::string> dns_proxy_args(const DnsServerConfig& c) {
  std::vector<std::string> a = {"dnsmasq",     "--keep-in-foreground", "--conf-file=/dev/null", "--no-resolv",
                                "--no-hosts",  "--no-poll",            "--bind-interfaces",
                                "--listen-address=" + format_ipv4(c.listen), "--pid-file=",
                                // root:root: no credential change, so PR_SET_PDEATHSIG holds (dnsmasq's
                                // default group "dip" would clear it and the server outlive a killed sbx).
                                "--user=root", "--group=root"};
  if (c.log_path.empty()) {
    a.push_back("--log-facility=/dev/null");
  } else {
    a.push_back("--log-facility=" + c.log_path);
    a.push_back("--log-queries");
  }
  if (!c.hosts_dir.empty()) a.push_back("--hostsdir=" + c.hosts_dir);
  if (c.no_negative_cache) a.push_back("--no-negcache");
  // Upstream answers only (never the hosts files of sandbox names).
  for (const auto& r : c.refused) a.push_back("--bogus-nxdomain=" + format_cidr(r));
  // "inet sbxnet" → "inet#sbxnet"
  std::string table = kNftTable;
  table[table.find(' ')] = '#';
  for (const auto& d : c.domains) {
    for (const auto& u : c.upstreams) a.push_back("--server=/" + d + "/" + u);
    // (dnsmasq 2.90 matches no "*." pattern in --nftset: the plain domain
    // covers its subdomains, and only what --server forwarded gets answers.)
    if (!c.nft_set.empty())
      a.push_back("--nftset=/" + (d.rfind("*.", 0) == 0 ? d.substr(2) : d) + "/4#" + table + "#" + c.nft_set);
  }
  if (c.forward_all)
    for (const auto& u : c.upstreams) a.push_back("--server=" + u);
  // Every other name: no server for it, so dnsmasq answers REFUSED.
  return a;
}

std::vector<Ipv4Prefix> refused_answer_ranges(Ipv4Prefix pool, const std::vector<Ipv4Prefix>& extra) noexcept {
  std::vector<Ipv4Prefix> out;
  try {
    for (const char* c : {"0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/3"}) out.push_back(parse_cidr(c, "x"));
    out.push_back(pool);
    out.insert(out.end(), extra.begin(), extra.end());
    auto covered = [&](uint32_t addr) {
      for (const auto& r : out)
        if (r.len == 0 || (addr >> (32 - r.len)) == (r.addr >> (32 - r.len))) return true;
      return false;
    };
    ifaddrs* ifs = nullptr;
    if (::getifaddrs(&ifs) == 0) {
      for (ifaddrs* i = ifs; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
        uint32_t addr = ntohl(reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr);
        if (!covered(addr)) out.push_back({addr, 32});
      }
      ::freeifaddrs(ifs);
    }
  } catch (const std::exception&) {
  }
  return out;
}

DnsProxy start_dns_proxy(const DnsServerConfig& cfg, bool die_with_caller) {
  if (cfg.upstreams.empty() && (!cfg.domains.empty() || cfg.forward_all))
    throw Error("a domain in --allow-egress needs an upstream DNS server: the host's /etc/resolv.conf names none "
                "outside 127.0.0.0/8; give one with --dns");
  const uint32_t listen = cfg.listen;
  auto args = dns_proxy_args(cfg);
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork dnsmasq");
  if (pid == 0) {
    if (die_with_caller) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);
    }
    ::setsid();  // not in sbx's terminal's process group (a ^C is sbx's to forward)
    int null = ::open("/dev/null", O_RDWR);
    if (null >= 0)
      for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
    ::syscall(SYS_close_range, 3U, ~0U, 0U);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // Its log stops growing at kDnsLogBytes: a write beyond fails (EFBIG)
    // instead of killing it (SIGXFSZ ignored; dnsmasq sets no handler of its own).
    struct rlimit fsize {kDnsLogBytes, kDnsLogBytes};
    ::setrlimit(RLIMIT_FSIZE, &fsize);
    ::signal(SIGXFSZ, SIG_IGN);
    for (const char* p : {"/usr/sbin/dnsmasq", "/sbin/dnsmasq", "/usr/bin/dnsmasq"}) ::execv(p, argv.data());
    ::execvp("dnsmasq", argv.data());
    ::_exit(127);
  }
  DnsProxy p{pid, process_start_time(pid)};
  // Ready when it accepts on port 53 (it binds before it serves).
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(53);
  sa.sin_addr.s_addr = htonl(listen);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  for (;;) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        throw Error("a domain in --allow-egress needs dnsmasq: install dnsmasq-base (apt-get install dnsmasq-base)",
                    ENOENT);
      throw Error("the sandbox's DNS server (dnsmasq on " + format_ipv4(listen) + ") exited at start (status " +
                  std::to_string(status) + ")");
    }
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      stop_dns_proxy(p);
      throw_errno("open a socket to reach the sandbox's DNS server");
    }
    int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    ::close(fd);
    if (rc == 0) return p;
    if (std::chrono::steady_clock::now() > deadline) {
      stop_dns_proxy(p);
      throw Error("the sandbox's DNS server (dnsmasq on " + format_ipv4(listen) + ":53) did not start within 3 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void stop_dns_proxy(const DnsProxy& p) noexcept {
  if (p.pid <= 0 || process_start_time(p.pid) != p.start_time) return;
  ::kill(p.pid, SIGKILL);
  // Our child (the same sbx that started it): reap it; else init does.
  int status;
  while (::waitpid(p.pid, &status, 0) < 0 && errno == EINTR) {
  }
}

void kill_dns_proxies_for(const std::string& log_path) noexcept {
  if (log_path.empty()) return;
  const std::string want = '\0' + std::string("--log-facility=") + log_path + '\0';
  DIR* d = ::opendir("/proc");
  if (!d) return;
  while (struct dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    std::string cmdline;
    try {
      cmdline = fs::read_file(std::string("/proc/") + e->d_name + "/cmdline");
    } catch (const std::exception&) {
      continue;
    }
    // argv0 "dnsmasq" (or a path to it), and our log's argument.
    std::string argv0 = cmdline.substr(0, cmdline.find('\0'));
    if (argv0 != "dnsmasq" && !argv0.ends_with("/dnsmasq")) continue;
    if (cmdline.find(want) == std::string::npos) continue;
    pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    stop_dns_proxy({pid, process_start_time(pid)});
  }
  ::closedir(d);
}

}  // namespace sbx::runtime
