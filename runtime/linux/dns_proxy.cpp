#include "runtime/linux/dns_proxy.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
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

std::vector<std::string> dns_proxy_args(uint32_t listen, const std::vector<std::string>& domains,
                                        const std::vector<std::string>& upstreams, const std::string& nft_set) {
  std::vector<std::string> a = {"dnsmasq",     "--keep-in-foreground", "--conf-file=/dev/null", "--no-resolv",
                                "--no-hosts",  "--no-poll",            "--bind-interfaces",
                                "--listen-address=" + format_ipv4(listen), "--pid-file=",
                                // root:root: no credential change, so PR_SET_PDEATHSIG holds (dnsmasq's
                                // default group "dip" would clear it and the proxy outlive a killed sbx).
                                "--user=root", "--group=root", "--log-facility=/dev/null"};
  for (const auto& d : domains) {
    for (const auto& u : upstreams) a.push_back("--server=/" + d + "/" + u);
    // (dnsmasq 2.90 matches no "*." pattern in --nftset: the plain domain
    // covers its subdomains, and only what --server forwarded gets answers.)
    a.push_back("--nftset=/" + (d.rfind("*.", 0) == 0 ? d.substr(2) : d) + "/4#inet#sbx#" + nft_set);
  }
  // Every other name: no such domain (the more specific --server lines win).
  a.push_back("--address=/#/");
  return a;
}

DnsProxy start_dns_proxy(uint32_t listen, const std::vector<std::string>& domains,
                         const std::vector<std::string>& upstreams, const std::string& nft_set, bool die_with_caller) {
  if (upstreams.empty())
    throw Error("a domain in --allow-egress needs an upstream DNS server: the host's /etc/resolv.conf names none "
                "outside 127.0.0.0/8; give one with --dns");
  auto args = dns_proxy_args(listen, domains, upstreams, nft_set);
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

void kill_dns_proxies_for(const std::string& nft_set) noexcept {
  const std::string want = "#inet#sbx#" + nft_set;
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
    // argv0 "dnsmasq" (or a path to it), and one argument ending with our set.
    std::string argv0 = cmdline.substr(0, cmdline.find('\0'));
    if (argv0 != "dnsmasq" && !argv0.ends_with("/dnsmasq")) continue;
    if (cmdline.find(want + '\0') == std::string::npos) continue;
    pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    stop_dns_proxy({pid, process_start_time(pid)});
  }
  ::closedir(d);
}

}  // namespace sbx::runtime
