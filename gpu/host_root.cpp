#include "gpu/host_root.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

namespace sbx::gpu {

std::string HostRoot::join(std::string_view abs) const {
  std::string r = path;
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  if (r == "/") r.clear();
  if (abs.empty() || abs.front() != '/') r += '/';
  r += abs;
  return r.empty() ? "/" : r;
}

namespace {
std::vector<std::string> split_path(std::string_view p) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string_view::npos) j = p.size();
    if (j > i) out.emplace_back(p.substr(i, j - i));
    i = j + 1;
  }
  return out;
}
}  // namespace

std::string HostRoot::resolve(std::string_view abs) const {
  // Walk component by component, like the kernel's path walk but confined to
  // the root: ".." never climbs above it and absolute link targets restart at it.
  std::vector<std::string> done;                   // resolved components
  std::vector<std::string> todo = split_path(abs);  // reversed work stack
  std::reverse(todo.begin(), todo.end());
  int links = 0;
  while (!todo.empty()) {
    std::string c = std::move(todo.back());
    todo.pop_back();
    if (c == ".") continue;
    if (c == "..") {
      if (!done.empty()) done.pop_back();
      continue;
    }
    std::string rel;
    for (auto& d : done) rel += "/" + d;
    rel += "/" + c;
    struct stat st;
    if (::lstat(join(rel).c_str(), &st) < 0) return "";
    if (S_ISLNK(st.st_mode)) {
      if (++links > 40) return "";
      char buf[PATH_MAX];
      ssize_t n = ::readlink(join(rel).c_str(), buf, sizeof buf - 1);
      if (n < 0) return "";
      std::string target(buf, static_cast<size_t>(n));
      if (!target.empty() && target.front() == '/') done.clear();
      auto parts = split_path(target);
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) todo.push_back(*it);
      continue;
    }
    done.push_back(c);
  }
  std::string out;
  for (auto& d : done) out += "/" + d;
  return out.empty() ? "/" : out;
}

}  // namespace sbx::gpu
