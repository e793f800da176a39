#include "runtime/linux/cgroup_tune.h"

#include <sys/mount.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "common/error.h"

namespace sbx::runtime {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) out.push_back(part);
  return out;
}

}  // namespace

std::optional<Cgroup2Mount> cgroup2_mount(const std::string& mounts) noexcept {
  try {
    std::ifstream in(mounts);
    std::string dev, dir, type, opts, rest;
    std::optional<Cgroup2Mount> found;
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream l(line);
      if (!(l >> dev >> dir >> type >> opts)) continue;
      if (type != "cgroup2" || (dir != "/sys/fs/cgroup" && dir != "/sys/fs/cgroup/unified")) continue;
      Cgroup2Mount m{dir, opts, false};
      for (const auto& o : split(opts, ','))
        if (o == "favordynmods") m.favordynmods = true;
      found = m;  // the last one listed is the one on top
    }
    return found;
  } catch (...) {
    return std::nullopt;
  }
}

std::string cgroup2_remount_options(const Cgroup2Mount& m, bool on) {
  // Per-mount flags (rw, relatime, nosuid, …) go as MS_* flags, not here;
  // the rest are cgroup2's own options.
  static const char* kPerMount[] = {"rw", "ro", "relatime", "noatime", "nodiratime", "strictatime",
                                    "nosuid", "nodev", "noexec", "seclabel"};
  std::string out;
  for (const auto& o : split(m.options, ',')) {
    bool per_mount = false;
    for (const char* p : kPerMount) per_mount = per_mount || o == p;
    if (per_mount || o == "favordynmods" || o.empty()) continue;
    out += (out.empty() ? "" : ",") + o;
  }
  if (on) out += (out.empty() ? "" : ",") + std::string("favordynmods");
  return out;
}

bool set_favordynmods(bool on) {
  auto m = cgroup2_mount();
  if (!m) throw Error("no cgroup2 mount at /sys/fs/cgroup or /sys/fs/cgroup/unified: favordynmods needs one");
  if (m->favordynmods == on) return on;
  unsigned long flags = MS_REMOUNT;
  for (const auto& o : split(m->options, ',')) {
    if (o == "ro") flags |= MS_RDONLY;
    if (o == "nosuid") flags |= MS_NOSUID;
    if (o == "nodev") flags |= MS_NODEV;
    if (o == "noexec") flags |= MS_NOEXEC;
    if (o == "relatime") flags |= MS_RELATIME;
    if (o == "noatime") flags |= MS_NOATIME;
  }
  std::string data = cgroup2_remount_options(*m, on);
  if (::mount("cgroup2", m->path.c_str(), nullptr, flags, data.c_str()) < 0)
    throw_errno_hint("remount " + m->path + " with \"" + data + "\"",
                     "needs root, and a kernel with cgroup2 favordynmods (6.0 or later)");
  auto after = cgroup2_mount();
  if (!after || after->favordynmods != on)
    throw Error("remount " + m->path + ": the kernel did not " + std::string(on ? "take" : "drop") +
                " favordynmods (options now: " + (after ? after->options : "?") + ")");
  return m->favordynmods;
}

}  // namespace sbx::runtime
