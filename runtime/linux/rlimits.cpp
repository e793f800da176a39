#include "runtime/linux/rlimits.h"

#include <sys/resource.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace sbx::runtime {

namespace {

struct Known {
  const char* docker;
  const char* oci;
  int resource;
};
const Known kKnown[] = {
    {"core", "RLIMIT_CORE", RLIMIT_CORE},          {"cpu", "RLIMIT_CPU", RLIMIT_CPU},
    {"data", "RLIMIT_DATA", RLIMIT_DATA},          {"fsize", "RLIMIT_FSIZE", RLIMIT_FSIZE},
    {"locks", "RLIMIT_LOCKS", RLIMIT_LOCKS},       {"memlock", "RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},
    {"msgqueue", "RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE}, {"nice", "RLIMIT_NICE", RLIMIT_NICE},
    {"nofile", "RLIMIT_NOFILE", RLIMIT_NOFILE},    {"nproc", "RLIMIT_NPROC", RLIMIT_NPROC},
    {"rss", "RLIMIT_RSS", RLIMIT_RSS},             {"rtprio", "RLIMIT_RTPRIO", RLIMIT_RTPRIO},
    {"rttime", "RLIMIT_RTTIME", RLIMIT_RTTIME},    {"sigpending", "RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
    {"stack", "RLIMIT_STACK", RLIMIT_STACK},       {"as", "RLIMIT_AS", RLIMIT_AS},
};

const Known* find(const std::string& oci) {
  for (const auto& k : kKnown)
    if (oci == k.oci) return &k;
  return nullptr;
}

uint64_t parse_value(const std::string& v, const std::string& text) {
  if (v == "unlimited" || v == "-1") return RLIM_INFINITY;
  if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos)
    throw Error(ErrorKind::InvalidArgument,
                "invalid --ulimit '" + text + "': expected NAME=SOFT[:HARD] with numbers or 'unlimited'");
  return std::stoull(v);
}

}  // namespace

Rlimit parse_ulimit(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos) throw Error(ErrorKind::InvalidArgument,
              "invalid --ulimit '" + text + "': expected NAME=SOFT[:HARD]");
  std::string name = text.substr(0, eq), vals = text.substr(eq + 1);
  const Known* k = nullptr;
  for (const auto& kk : kKnown)
    if (name == kk.docker) k = &kk;
  if (!k) throw Error(ErrorKind::InvalidArgument,
              "invalid --ulimit '" + text + "': unknown limit '" + name + "' (nofile, nproc, core, stack, …)");
  Rlimit r;
  r.type = k->oci;
  auto colon = vals.find(':');
  r.soft = parse_value(vals.substr(0, colon), text);
  r.hard = colon == std::string::npos ? r.soft : parse_value(vals.substr(colon + 1), text);
  if (r.soft > r.hard) throw Error(ErrorKind::InvalidArgument,
              "invalid --ulimit '" + text + "': the soft limit is above the hard limit");
  return r;
}

std::vector<std::string> clamp_rlimits(std::vector<Rlimit>& limits) {
  std::vector<std::string> warnings;
  for (auto& r : limits) {
    const Known* k = find(r.type);
    if (!k) continue;
    struct rlimit cur {};
    if (getrlimit(k->resource, &cur) < 0) continue;
    if (r.hard > cur.rlim_max) {
      warnings.push_back("--ulimit " + std::string(k->docker) + ": hard limit " +
                         (r.hard == RLIM_INFINITY ? std::string("unlimited") : std::to_string(r.hard)) +
                         " is above this host's hard limit " + std::to_string(cur.rlim_max) +
                         " (raising it needs CAP_SYS_RESOURCE); using " + std::to_string(cur.rlim_max));
      r.hard = cur.rlim_max;
      if (r.soft > r.hard) r.soft = r.hard;
    }
  }
  return warnings;
}

void check_rlimit(const Rlimit& r) {
  if (!find(r.type))
    throw Error("rlimit type '" + r.type + "' is not a resource limit of this kernel (RLIMIT_NOFILE, RLIMIT_NPROC, …)", EINVAL);
  if (r.soft > r.hard)
    throw Error("rlimit " + r.type + ": the soft limit " + std::to_string(r.soft) + " is above the hard limit " +
                    std::to_string(r.hard),
                EINVAL);
}

void apply_rlimits(const std::vector<Rlimit>& limits) {
  for (const auto& r : limits) {
    const Known* k = find(r.type);
    if (!k) throw Error("unknown rlimit " + r.type);
    struct rlimit rl {r.soft, r.hard};
    if (setrlimit(k->resource, &rl) < 0) throw_errno("set " + r.type);
  }
}

}  // namespace sbx::runtime
