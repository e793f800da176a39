// Registry credentials in auth.json files (see oci/auth_config.h).
#include "oci/auth_config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fs.h"

namespace sbx::oci {
namespace {

using json = nlohmann::json;

// The keys a registry may have in an auth file (docker's legacy names for Docker Hub).
std::vector<std::string> keys_for(const std::string& registry) {
  std::vector<std::string> k{registry, "https://" + registry, "http://" + registry};
  if (registry == "docker.io")
    for (const char* s : {"index.docker.io", "https://index.docker.io/v1/", "registry-1.docker.io"}) k.push_back(s);
  return k;
}

json read_auth(const std::string& path) {
  if (!fs::exists(path)) return json::object();
  std::string text = fs::read_file(path);
  try {
    json j = json::parse(text);
    if (!j.is_object()) throw Error("auth file " + path + " is not a JSON object; fix or remove it");
    return j;
  } catch (const json::exception& e) {
    throw Error("auth file " + path + " is not valid JSON (" + e.what() + "); fix or remove it");
  }
}

}  // namespace

std::vector<std::string> auth_files(const std::string& authfile) {
  std::vector<std::string> f;
  const char* env = std::getenv("REGISTRY_AUTH_FILE");
  if (!authfile.empty())
    f.push_back(authfile);
  else if (env && *env)
    f.push_back(env);
  else if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg)
    f.push_back(std::string(xdg) + "/containers/auth.json");
  else
    f.push_back("/run/containers/" + std::to_string(::getuid()) + "/auth.json");
  if (const char* home = std::getenv("HOME"); home && *home) {
    f.push_back(std::string(home) + "/.config/containers/auth.json");
    f.push_back(std::string(home) + "/.docker/config.json");
  }
  return f;
}

std::optional<Credentials> find_credentials(const std::string& registry, const std::string& authfile) {
  for (const auto& path : auth_files(authfile)) {
    json j = read_auth(path);
    auto auths = j.find("auths");
    if (auths == j.end() || !auths->is_object()) continue;
    for (const auto& key : keys_for(registry)) {
      auto e = auths->find(key);
      if (e == auths->end() || !e->is_object() || !e->contains("auth") || !(*e)["auth"].is_string()) continue;
      std::string raw = base64_decode((*e)["auth"].get<std::string>());
      size_t colon = raw.find(':');
      if (colon == std::string::npos)
        throw Error("auth file " + path + ": the entry for " + key + " is not base64(user:password); log in again");
      return Credentials{raw.substr(0, colon), raw.substr(colon + 1)};
    }
  }
  return std::nullopt;
}

std::string save_credentials(const std::string& registry, const Credentials& c, const std::string& authfile) {
  std::string path = auth_files(authfile).front();
  std::string dir = path.substr(0, path.rfind('/'));
  if (!dir.empty()) fs::mkdir_p(dir, 0700);
  json j = read_auth(path);
  if (!j.contains("auths") || !j["auths"].is_object()) j["auths"] = json::object();
  j["auths"][registry] = {{"auth", base64_encode(c.username + ":" + c.password)}};
  fs::write_file_atomic(path, j.dump(1, '\t') + "\n", 0600);
  return path;
}

bool remove_credentials(const std::string& registry, const std::string& authfile) {
  std::string path = auth_files(authfile).front();
  json j = read_auth(path);
  if (!j.contains("auths") || !j["auths"].is_object()) return false;
  bool found = false;
  if (registry.empty()) {
    found = !j["auths"].empty();
    j["auths"] = json::object();
  } else {
    for (const auto& key : keys_for(registry)) found |= j["auths"].erase(key) > 0;
  }
  if (found) fs::write_file_atomic(path, j.dump(1, '\t') + "\n", 0600);
  return found;
}

static const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_encode(const std::string& in) {
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kB64[(v >> s) & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += kB64[(v >> 18) & 63];
    out += kB64[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += kB64[(v >> 18) & 63];
    out += kB64[(v >> 12) & 63];
    out += kB64[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::string base64_decode(const std::string& in) {
  std::string out;
  uint32_t v = 0;
  int bits = 0;
  for (char ch : in) {
    if (ch == '=' || ch == '\n' || ch == '\r') continue;
    const char* p = std::strchr(kB64, ch);
    if (!p || !ch) throw Error(ErrorKind::InvalidArgument, "invalid base64 in an auth file entry");
    v = (v << 6) | static_cast<uint32_t>(p - kB64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((v >> bits) & 0xff);
    }
  }
  return out;
}

}  // namespace sbx::oci
