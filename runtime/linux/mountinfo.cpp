// /proc/PID/mountinfo (mountinfo.h).
#include "runtime/linux/mountinfo.h"

#include <sstream>

#include "common/fs.h"

namespace sbx::runtime {

namespace {

/// Undoes the kernel's octal escapes of space, tab, newline and backslash ("\040").
std::string unescape(const std::string& s) {
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3') {
      o += static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      o += s[i];
    }
  }
  return o;
}

}  // namespace

std::vector<MountInfoLine> parse_mountinfo(const std::string& text) {
  std::vector<MountInfoLine> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    // id parent maj:min root mountpoint options [optional fields...] - fstype source superoptions
    std::istringstream l(line);
    MountInfoLine m;
    std::string root, point, options, f;
    if (!(l >> m.id >> m.parent >> m.dev >> root >> point >> options)) continue;
    while (l >> f && f != "-") {
    }
    if (f != "-" || !(l >> m.fstype >> m.source)) continue;
    l >> m.super_options;
    m.root = unescape(root);
    m.point = unescape(point);
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<MountInfoLine> read_mountinfo(int pid) {
  return parse_mountinfo(fs::read_file(pid > 0 ? "/proc/" + std::to_string(pid) + "/mountinfo" : "/proc/self/mountinfo"));
}

}  // namespace sbx::runtime
