// rtnetlink (netlink(7), rtnetlink(7)): links, addresses and routes, spoken
// directly over a NETLINK_ROUTE socket (no `ip` process: a sandbox start pays
// microseconds, not an exec). A socket belongs to the network namespace it was
// opened in; open one inside a sandbox's namespace with RtNetlink::in_netns.
#pragma once
#include <cstdint>
#include <string>

namespace sbx::runtime {

/// An IPv4 address in host byte order and a prefix length (0..32).
struct Ipv4Prefix {
  uint32_t addr = 0;
  int len = 32;
};

/// One NETLINK_ROUTE socket. Every request waits for the kernel's ack and
/// throws sbx::Error (with the errno and what it did) on a negative one.
class RtNetlink {
 public:
  /// A socket in the caller's network namespace. Throws sbx::Error.
  RtNetlink();
  /// A socket in the network namespace of `netns_fd` (an open
  /// /proc/PID/ns/net): the calling thread enters it, opens the socket and
  /// goes back (setns(2)). Throws sbx::Error.
  static RtNetlink in_netns(int netns_fd);
  RtNetlink(RtNetlink&& o) noexcept;
  RtNetlink& operator=(RtNetlink&&) = delete;
  RtNetlink(const RtNetlink&) = delete;
  ~RtNetlink();

  /// RTM_NEWLINK kind "veth": `name` here, its peer `peer_name` created
  /// directly in the namespace of `peer_netns_fd` (-1: here), with MAC
  /// `peer_mac` (6 bytes; null: the kernel's random one). Both down.
  void add_veth(const std::string& name, const std::string& peer_name, int peer_netns_fd,
                const uint8_t* peer_mac = nullptr);
  /// RTM_NEWLINK kind "bridge" (down, no ports) with MAC `mac` (6 bytes):
  /// set, so that the kernel never changes it as ports come and go (a
  /// bridge's own MAC is otherwise its lowest port's, and every sandbox's
  /// ARP entry for the gateway would go stale). Throws EEXIST when the name is taken.
  void add_bridge(const std::string& name, const uint8_t* mac);
  /// Makes link `name` a port of bridge `master` (IFLA_MASTER).
  void set_master(const std::string& name, const std::string& master);
  /// RTM_DELLINK by name. Returns false when no such link exists (ENODEV).
  bool delete_link(const std::string& name);
  /// Sets IFF_UP on the link. Throws when it does not exist.
  void link_up(const std::string& name);
  /// RTM_NEWADDR: `a` on the link (scope global).
  void add_address(const std::string& name, Ipv4Prefix a);
  /// RTM_NEWROUTE: the default route via `gateway` (host byte order) on the link.
  void add_default_route(const std::string& name, uint32_t gateway);
  /// Whether a link of that name exists here.
  bool link_exists(const std::string& name);

 private:
  explicit RtNetlink(int fd) : fd_(fd) {}
  void request(void* msg, const std::string& what, bool enodev_ok = false, bool* missing = nullptr);
  int index_of(const std::string& name);
  int fd_ = -1;
  uint32_t seq_ = 0;
};

/// "a.b.c.d" → host byte order; throws sbx::Error naming `what` otherwise.
uint32_t parse_ipv4(const std::string& text, const std::string& what);
/// Host byte order → "a.b.c.d".
std::string format_ipv4(uint32_t addr);
/// "a.b.c.d/len" or "a.b.c.d" (/32) → prefix with the host bits cleared.
/// Throws sbx::Error naming `what` on a malformed one.
Ipv4Prefix parse_cidr(const std::string& text, const std::string& what);
/// "a.b.c.d/len".
std::string format_cidr(Ipv4Prefix p);

}  // namespace sbx::runtime
