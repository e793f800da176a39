#include "runtime/user.h"

#include <cerrno>
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

uint32_t parse_id(const std::string& text, const std::string& what) {
  // (uid_t)-1 = 4294967295 means "leave unchanged" to setresuid(2)/chown(2):
  // accepting it ran the workload as whatever the init was (root).
  if (!is_number(text) || text.size() > 10 || std::stoull(text) >= 4294967295ULL)
    throw Error(ErrorKind::InvalidArgument,
                "invalid " + what + " '" + text + "': ids are numbers from 0 to 4294967294", EINVAL, 125);
  return static_cast<uint32_t>(std::stoull(text));
}

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
      r.uid = parse_id(f[2], "uid of user " + f[0] + " in /etc/passwd");
      r.gid = parse_id(f[3], "gid of user " + f[0] + " in /etc/passwd");
      r.home = f[5].empty() ? "/" : f[5];
      found = true;
      break;
    }
  }
  if (!found) {
    if (!is_number(u)) throw Error("unable to find user " + u + ": no matching entries in passwd file");
    r.uid = parse_id(u, "user id");
    r.gid = 0;
  }
  auto group = read_db(base + "/etc/group");
  if (!g.empty()) {
    bool gfound = false;
    for (const auto& f : group)
      if (f.size() >= 3 && (f[0] == g || (is_number(g) && f[2] == g))) {
        r.gid = parse_id(f[2], "gid of group " + f[0] + " in /etc/group");
        gfound = true;
        break;
      }
    if (!gfound) {
      if (!is_number(g)) throw Error("unable to find group " + g + ": no matching entries in group file");
      r.gid = parse_id(g, "group id");
    }
  }
  if (found) {
    for (const auto& f : group) {
      if (f.size() < 4) continue;
      for (const auto& member : split(f[3], ','))
        if (member == name) {
          uint32_t gid = parse_id(f[2], "gid of group " + f[0] + " in /etc/group");
          if (gid != r.gid) r.groups.push_back(gid);
        }
    }
  }
  return r;
}

std::optional<uint32_t> group_id(const std::string& name, const std::string& root) {
  std::string base = root == "/" ? "" : root;
  for (const auto& f : read_db(base + "/etc/group"))
    if (f.size() >= 3 && f[0] == name) return parse_id(f[2], "gid of group " + f[0] + " in /etc/group");
  return std::nullopt;
}

}  // namespace sbx::runtime
