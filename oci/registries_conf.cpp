// registries.conf subset (see oci/registries_conf.h).
#include "oci/registries_conf.h"

#include "common/error.h"
#include "common/fs.h"

namespace sbx::oci {
namespace {

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

// Removes a '#' comment that is not inside a string.
std::string strip_comment(const std::string& s) {
  bool q = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '"' && (i == 0 || s[i - 1] != '\\')) q = !q;
    if (s[i] == '#' && !q) return s.substr(0, i);
  }
  return s;
}

}  // namespace

const RegistryEntry* RegistriesConf::find(const std::string& registry, const std::string& repository) const {
  const RegistryEntry* best = nullptr;
  std::string full = registry + "/" + repository;
  for (const auto& r : registries) {
    bool match = r.location == registry ||
                 (full.rfind(r.location, 0) == 0 && (full.size() == r.location.size() || full[r.location.size()] == '/'));
    if (match && (!best || r.location.size() > best->location.size())) best = &r;
  }
  return best;
}

RegistriesConf parse_registries_conf(const std::string& text, const std::string& what) {
  RegistriesConf c;
  enum { Top, Registry, Mirror, Other } section = Top;
  size_t lineno = 0, pos = 0;
  auto bad = [&](const std::string& why) -> Error {
    return Error(what + " line " + std::to_string(lineno) + ": " + why);
  };
  auto str = [&](const std::string& v) {
    if (v.size() < 2 || v.front() != '"' || v.back() != '"') throw bad("expected a quoted string, got " + v.substr(0, 60));
    return v.substr(1, v.size() - 2);
  };
  auto boolean = [&](const std::string& v) {
    if (v == "true") return true;
    if (v == "false") return false;
    throw bad("expected true or false, got " + v.substr(0, 60));
  };
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = trim(strip_comment(text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos)));
    pos = nl == std::string::npos ? text.size() + 1 : nl + 1;
    ++lineno;
    if (line.empty()) continue;
    if (line == "[[registry]]") {
      c.registries.emplace_back();
      section = Registry;
      continue;
    }
    if (line == "[[registry.mirror]]") {
      if (c.registries.empty()) throw bad("[[registry.mirror]] before any [[registry]]");
      c.registries.back().mirrors.emplace_back();
      section = Mirror;
      continue;
    }
    if (line[0] == '[') {
      section = Other;  // tables this subset ignores (e.g. [aliases], v1 [registries.search])
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string::npos) throw bad("expected KEY = VALUE");
    std::string key = trim(line.substr(0, eq)), val = trim(line.substr(eq + 1));
    // A multi-line array: read on to the closing bracket.
    if (!val.empty() && val[0] == '[')
      while (val.find(']') == std::string::npos && pos <= text.size()) {
        size_t n2 = text.find('\n', pos);
        val += " " + trim(strip_comment(text.substr(pos, n2 == std::string::npos ? std::string::npos : n2 - pos)));
        pos = n2 == std::string::npos ? text.size() + 1 : n2 + 1;
        ++lineno;
      }
    if (section == Top && key == "unqualified-search-registries") {
      if (val.empty() || val.front() != '[' || val.back() != ']') throw bad("expected an array of strings");
      std::string inner = val.substr(1, val.size() - 2);
      size_t i = 0;
      while (i < inner.size()) {
        size_t comma = inner.find(',', i);
        std::string item = trim(inner.substr(i, comma == std::string::npos ? std::string::npos : comma - i));
        if (!item.empty()) c.search.push_back(str(item));
        if (comma == std::string::npos) break;
        i = comma + 1;
      }
    } else if (section == Registry) {
      RegistryEntry& r = c.registries.back();
      if (key == "location" || (key == "prefix" && r.location.empty())) r.location = str(val);
      else if (key == "insecure") r.insecure = boolean(val);
      else if (key == "blocked") r.blocked = boolean(val);
    } else if (section == Mirror) {
      RegistryEndpoint& m = c.registries.back().mirrors.back();
      if (key == "location") m.location = str(val);
      else if (key == "insecure") m.insecure = boolean(val);
    }
  }
  for (const auto& r : c.registries)
    if (r.location.empty()) throw Error(what + ": a [[registry]] has no location");
  return c;
}

RegistriesConf load_registries_conf(const std::string& path) {
  if (path.empty() || !fs::exists(path)) return {};
  return parse_registries_conf(fs::read_file(path), path);
}

}  // namespace sbx::oci
