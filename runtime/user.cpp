#include "runtime/user.h"

#include <fstream>
#include <sstream>

#include "common/error.h"

namespace sbx::runtime {

namespace {

bool is_number(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string f;
  std::istringstream in(line);
  while (std::getline(in, f, sep)) out.push_back(f);
  if (!line.empty() && line.back() == sep) out.emplace_back();
  return out;
}

/// Lines of a colon-separated file, split; missing file -> none.
std::vector<std::vector<std::string>> read_db(const std::string& path) {
  std::vector<std::vector<std::string>> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    out.push_back(split(line, ':'));
  }
  return out;
}

}  // namespace

ResolvedUser resolve_user(const std::string& user, const std::string& root) {
  ResolvedUser r;
  if (user.empty()) {
    r.home = "/root";
    return r;
  }
  std::string base = root == "/" ? "" : root;
  auto colon = user.find(':');
  std::string u = user.substr(0, colon);
  std::string g = colon == std::string::npos ? "" : user.substr(colon + 1);
  auto passwd = read_db(base + "/etc/passwd");
  std::string name;
  bool found = false;
  for (const auto& f : passwd) {
    if (f.size() < 7) continue;
    if (f[0] == u || (is_number(u) && f[2] == u)) {
      name = f[0];
      r.uid = static_cast<uint32_t>(std::stoul(f[2]));
      r.gid = static_cast<uint32_t>(std::stoul(f[3]));
      r.home = f[5].empty() ? "/" : f[5];
      found = true;
      break;
    }
  }
  if (!found) {
    if (!is_number(u)) throw Error("unable to find user " + u + ": no matching entries in passwd file");
    r.uid = static_cast<uint32_t>(std::stoul(u));
    r.gid = 0;
  }
  auto group = read_db(base + "/etc/group");
  if (!g.empty()) {
    bool gfound = false;
    for (const auto& f : group)
      if (f.size() >= 3 && (f[0] == g || (is_number(g) && f[2] == g))) {
        r.gid = static_cast<uint32_t>(std::stoul(f[2]));
        gfound = true;
        break;
      }
    if (!gfound) {
      if (!is_number(g)) throw Error("unable to find group " + g + ": no matching entries in group file");
      r.gid = static_cast<uint32_t>(std::stoul(g));
    }
  }
  if (found) {
    for (const auto& f : group) {
      if (f.size() < 4) continue;
      for (const auto& member : split(f[3], ','))
        if (member == name) {
          uint32_t gid = static_cast<uint32_t>(std::stoul(f[2]));
          if (gid != r.gid) r.groups.push_back(gid);
        }
    }
  }
  return r;
}

}  // namespace sbx::runtime
