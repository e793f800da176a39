#include "runtime/linux/netlink.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/error.h"

namespace sbx::runtime {

namespace {

/// A netlink message being built: header, fixed part, then attributes
/// (nested ones through begin_nest/end_nest). 4 KiB is far above any request here.
struct Msg {
  alignas(NLMSG_ALIGNTO) char buf[4096]{};
  nlmsghdr* h() { return reinterpret_cast<nlmsghdr*>(buf); }
  Msg(uint16_t type, uint16_t flags, size_t fixed) {
    h()->nlmsg_len = NLMSG_LENGTH(fixed);
    h()->nlmsg_type = type;
    h()->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
  }
  template <class T>
  T* fixed() {
    return reinterpret_cast<T*>(NLMSG_DATA(h()));
  }
  rtattr* put(uint16_t type, const void* data, size_t len) {
    size_t off = NLMSG_ALIGN(h()->nlmsg_len);
    if (off + RTA_SPACE(len) > sizeof buf) throw Error("netlink message too long");
    auto* a = reinterpret_cast<rtattr*>(buf + off);
    a->rta_type = type;
    a->rta_len = static_cast<unsigned short>(RTA_LENGTH(len));
    if (len) std::memcpy(RTA_DATA(a), data, len);
    h()->nlmsg_len = static_cast<uint32_t>(off + RTA_SPACE(len));
    return a;
  }
  void put_str(uint16_t type, const std::string& s) { put(type, s.c_str(), s.size() + 1); }
  void put_u32(uint16_t type, uint32_t v) { put(type, &v, sizeof v); }
  rtattr* begin_nest(uint16_t type) { return put(type, nullptr, 0); }
  void end_nest(rtattr* a) { a->rta_len = static_cast<unsigned short>(buf + h()->nlmsg_len - reinterpret_cast<char*>(a)); }
  /// Makes room for a fixed struct inside a nest (VETH_INFO_PEER carries an ifinfomsg).
  void put_raw(size_t len) {
    h()->nlmsg_len = static_cast<uint32_t>(NLMSG_ALIGN(h()->nlmsg_len) + NLMSG_ALIGN(len));
  }
};

int open_route_socket() {
  int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) throw_errno("open a netlink socket (NETLINK_ROUTE)");
  sockaddr_nl sa{};
  sa.nl_family = AF_NETLINK;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) {
    int e = errno;
    ::close(fd);
    throw_errno("bind the netlink socket", e);
  }
  return fd;
}

}  // namespace

RtNetlink::RtNetlink() : fd_(open_route_socket()) {}

RtNetlink RtNetlink::in_netns(int netns_fd) {
  int self = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (self < 0) throw_errno("open /proc/thread-self/ns/net");
  if (::setns(netns_fd, CLONE_NEWNET) < 0) {
    int e = errno;
    ::close(self);
    throw_errno("enter the sandbox's network namespace (setns)", e);
  }
  int fd = -1, err = 0;
  try {
    fd = open_route_socket();
  } catch (const Error& e) {
    err = e.err() ? e.err() : EIO;
  }
  // Back to our own namespace whatever happened: later sockets of sbx must not
  // be the sandbox's.
  if (::setns(self, CLONE_NEWNET) < 0) {
    int e = errno;
    ::close(self);
    if (fd >= 0) ::close(fd);
    throw_errno("return to sbx's network namespace (setns)", e);
  }
  ::close(self);
  if (fd < 0) throw_errno("open a netlink socket in the sandbox's network namespace", err);
  return RtNetlink(fd);
}

RtNetlink::RtNetlink(RtNetlink&& o) noexcept : fd_(std::exchange(o.fd_, -1)), seq_(o.seq_) {}

RtNetlink::~RtNetlink() {
  if (fd_ >= 0) ::close(fd_);
}

void RtNetlink::request(void* m, const std::string& what, bool enodev_ok, bool* missing) {
  auto* h = static_cast<nlmsghdr*>(m);
  h->nlmsg_seq = ++seq_;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  ssize_t sent;
  do {
    sent = ::sendto(fd_, h, h->nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) throw_errno(what + " (netlink send)");
  alignas(NLMSG_ALIGNTO) char reply[8192];
  for (;;) {
    ssize_t got = ::recv(fd_, reply, sizeof reply, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw_errno(what + " (netlink receive)");
    for (auto* r = reinterpret_cast<nlmsghdr*>(reply); NLMSG_OK(r, static_cast<unsigned>(got));
         r = NLMSG_NEXT(r, got)) {
      if (r->nlmsg_seq != seq_ || r->nlmsg_type != NLMSG_ERROR) continue;
      int err = -reinterpret_cast<nlmsgerr*>(NLMSG_DATA(r))->error;
      if (err == 0) return;
      if (enodev_ok && err == ENODEV) {
        if (missing) *missing = true;
        return;
      }
      throw_errno(what, err);
    }
  }
}

int RtNetlink::index_of(const std::string& name) {
  // The index in *this* socket's namespace: if_nametoindex would look in the
  // caller's, which is not the sandbox's.
  Msg m(RTM_GETLINK, 0, sizeof(ifinfomsg));
  m.h()->nlmsg_flags = NLM_F_REQUEST;
  m.fixed<ifinfomsg>()->ifi_family = AF_UNSPEC;
  m.put_str(IFLA_IFNAME, name);
  m.h()->nlmsg_seq = ++seq_;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd_, m.buf, m.h()->nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) < 0)
    throw_errno("look up the link " + name + " (netlink send)");
  alignas(NLMSG_ALIGNTO) char reply[16384];
  for (;;) {
    ssize_t got = ::recv(fd_, reply, sizeof reply, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw_errno("look up the link " + name + " (netlink receive)");
    for (auto* r = reinterpret_cast<nlmsghdr*>(reply); NLMSG_OK(r, static_cast<unsigned>(got));
         r = NLMSG_NEXT(r, got)) {
      if (r->nlmsg_seq != seq_) continue;
      if (r->nlmsg_type == NLMSG_ERROR) {
        int err = -reinterpret_cast<nlmsgerr*>(NLMSG_DATA(r))->error;
        if (err == ENODEV || err == 0) return -1;
        throw_errno("look up the link " + name, err);
      }
      if (r->nlmsg_type == RTM_NEWLINK) return reinterpret_cast<ifinfomsg*>(NLMSG_DATA(r))->ifi_index;
    }
  }
}

bool RtNetlink::link_exists(const std::string& name) { return index_of(name) > 0; }

void RtNetlink::add_veth(const std::string& name, const std::string& peer_name, int peer_netns_fd,
                         const uint8_t* peer_mac) {
  Msg m(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, sizeof(ifinfomsg));
  m.fixed<ifinfomsg>()->ifi_family = AF_UNSPEC;
  m.put_str(IFLA_IFNAME, name);
  rtattr* info = m.begin_nest(IFLA_LINKINFO);
  m.put_str(IFLA_INFO_KIND, "veth");
  rtattr* data = m.begin_nest(IFLA_INFO_DATA);
  rtattr* peer = m.begin_nest(VETH_INFO_PEER);
  m.put_raw(sizeof(ifinfomsg));  // the peer's ifinfomsg (zero: AF_UNSPEC)
  m.put_str(IFLA_IFNAME, peer_name);
  if (peer_mac) m.put(IFLA_ADDRESS, peer_mac, 6);
  if (peer_netns_fd >= 0) m.put_u32(IFLA_NET_NS_FD, static_cast<uint32_t>(peer_netns_fd));
  m.end_nest(peer);
  m.end_nest(data);
  m.end_nest(info);
  request(m.buf, "create the veth pair " + name + " / " + peer_name);
}

void RtNetlink::add_bridge(const std::string& name, const uint8_t* mac) {
  Msg m(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, sizeof(ifinfomsg));
  m.fixed<ifinfomsg>()->ifi_family = AF_UNSPEC;
  m.put_str(IFLA_IFNAME, name);
  m.put(IFLA_ADDRESS, mac, 6);
  rtattr* info = m.begin_nest(IFLA_LINKINFO);
  m.put_str(IFLA_INFO_KIND, "bridge");
  m.end_nest(info);
  request(m.buf, "create the bridge " + name);
}

void RtNetlink::set_master(const std::string& name, const std::string& master) {
  int bridge = index_of(master);
  if (bridge <= 0) throw Error("attach " + name + " to the bridge " + master + ": no such bridge", ENODEV);
  Msg m(RTM_NEWLINK, 0, sizeof(ifinfomsg));
  m.fixed<ifinfomsg>()->ifi_family = AF_UNSPEC;
  m.put_str(IFLA_IFNAME, name);
  m.put_u32(IFLA_MASTER, static_cast<uint32_t>(bridge));
  request(m.buf, "attach " + name + " to the bridge " + master);
}

bool RtNetlink::delete_link(const std::string& name) {
  Msg m(RTM_DELLINK, 0, sizeof(ifinfomsg));
  m.fixed<ifinfomsg>()->ifi_family = AF_UNSPEC;
  m.put_str(IFLA_IFNAME, name);
  bool missing = false;
  request(m.buf, "delete the link " + name, true, &missing);
  return !missing;
}

void RtNetlink::link_up(const std::string& name) {
  Msg m(RTM_NEWLINK, 0, sizeof(ifinfomsg));
  auto* ifi = m.fixed<ifinfomsg>();
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_flags = IFF_UP;
  ifi->ifi_change = IFF_UP;
  m.put_str(IFLA_IFNAME, name);
  request(m.buf, "bring up the link " + name);
}

void RtNetlink::add_address(const std::string& name, Ipv4Prefix a) {
  int index = index_of(name);
  if (index <= 0) throw Error("add an address to the link " + name + ": no such link", ENODEV);
  Msg m(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, sizeof(ifaddrmsg));
  auto* ifa = m.fixed<ifaddrmsg>();
  ifa->ifa_family = AF_INET;
  ifa->ifa_prefixlen = static_cast<unsigned char>(a.len);
  ifa->ifa_scope = RT_SCOPE_UNIVERSE;
  ifa->ifa_index = static_cast<unsigned>(index);
  uint32_t be = htonl(a.addr);
  m.put(IFA_LOCAL, &be, 4);
  m.put(IFA_ADDRESS, &be, 4);
  request(m.buf, "add the address " + format_cidr(a) + " to " + name);
}

void RtNetlink::add_default_route(const std::string& name, uint32_t gateway) {
  int index = index_of(name);
  if (index <= 0) throw Error("add a route on the link " + name + ": no such link", ENODEV);
  Msg m(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, sizeof(rtmsg));
  auto* rt = m.fixed<rtmsg>();
  rt->rtm_family = AF_INET;
  rt->rtm_dst_len = 0;
  rt->rtm_table = RT_TABLE_MAIN;
  rt->rtm_protocol = RTPROT_BOOT;
  rt->rtm_scope = RT_SCOPE_UNIVERSE;
  rt->rtm_type = RTN_UNICAST;
  uint32_t be = htonl(gateway);
  m.put(RTA_GATEWAY, &be, 4);
  m.put_u32(RTA_OIF, static_cast<uint32_t>(index));
  request(m.buf, "add the default route via " + format_ipv4(gateway) + " on " + name);
}

uint32_t parse_ipv4(const std::string& text, const std::string& what) {
  in_addr a{};
  if (::inet_pton(AF_INET, text.c_str(), &a) != 1)
    throw Error(ErrorKind::InvalidArgument,
                "invalid " + what + " '" + text + "': expected an IPv4 address such as 198.51.100.7");
  return ntohl(a.s_addr);
}

std::string format_ipv4(uint32_t addr) {
  in_addr a{htonl(addr)};
  char buf[INET_ADDRSTRLEN];
  ::inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

Ipv4Prefix parse_cidr(const std::string& text, const std::string& what) {
  Ipv4Prefix p;
  size_t slash = text.find('/');
  p.addr = parse_ipv4(text.substr(0, slash), what);
  if (slash != std::string::npos) {
    std::string len = text.substr(slash + 1);
    if (len.empty() || len.size() > 2 || len.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(len) > 32)
      throw Error(ErrorKind::InvalidArgument, "invalid " + what + " '" + text + "': the prefix length must be 0 to 32");
    p.len = std::stoi(len);
  }
  if (p.len < 32) p.addr &= p.len == 0 ? 0 : ~((1u << (32 - p.len)) - 1);
  return p;
}

std::string format_cidr(Ipv4Prefix p) { return format_ipv4(p.addr) + "/" + std::to_string(p.len); }

}  // namespace sbx::runtime
