// The distribution-spec client (see oci/registry_client.h).
#include "oci/registry_client.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "oci/digest.h"
#include "oci/reference.h"

namespace sbx::oci {
namespace {

using json = nlohmann::json;

const char* kAccept =
    "Accept: application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, "
    "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";

int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Percent-encodes a query parameter value.
std::string qenc(const std::string& s) {
  std::string o;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      o += static_cast<char>(c);
    } else {
      char b[4];
      std::snprintf(b, sizeof b, "%%%02X", c);
      o += b;
    }
  }
  return o;
}

// WWW-Authenticate: Bearer realm="…",service="…",scope="…" -> scheme + params.
std::pair<std::string, std::map<std::string, std::string>> parse_challenge(const std::string& h) {
  std::map<std::string, std::string> p;
  size_t sp = h.find(' ');
  std::string scheme = h.substr(0, sp);
  for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t i = sp == std::string::npos ? h.size() : sp + 1;
  while (i < h.size()) {
    while (i < h.size() && (h[i] == ' ' || h[i] == ',')) ++i;
    size_t eq = h.find('=', i);
    if (eq == std::string::npos) break;
    std::string key = h.substr(i, eq - i);
    for (auto& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string val;
    i = eq + 1;
    if (i < h.size() && h[i] == '"') {
      ++i;
      while (i < h.size() && h[i] != '"') {
        if (h[i] == '\\' && i + 1 < h.size()) ++i;
        val += h[i++];
      }
      ++i;
    } else {
      size_t e = h.find(',', i);
      val = h.substr(i, e == std::string::npos ? std::string::npos : e - i);
      i = e == std::string::npos ? h.size() : e;
    }
    p[key] = val;
  }
  return {scheme, p};
}

// "errors":[{"code":"MANIFEST_UNKNOWN","message":"…"}] -> "MANIFEST_UNKNOWN: …".
std::string registry_error(const std::string& body) {
  try {
    json j = json::parse(body);
    if (j.is_object() && j.contains("errors") && j["errors"].is_array() && !j["errors"].empty()) {
      const json& e = j["errors"][0];
      std::string s = e.value("code", "");
      std::string m = e.value("message", "");
      return s + (m.empty() ? "" : ": " + m);
    }
  } catch (const json::exception&) {
  }
  return "";
}

}  // namespace

std::string RemoteRef::api_host() const { return registry == "docker.io" ? "registry-1.docker.io" : registry; }

std::string RemoteRef::str() const {
  return registry + "/" + repository + (digest.empty() ? ":" + tag : "@" + digest);
}

std::string RemoteRef::local_name() const {
  if (!digest.empty() && tag.empty()) return "";
  return normalize_name(registry + "/" + repository + ":" + tag);
}

RemoteRef parse_remote_ref(std::string_view text, bool* qualified) {
  Reference r = parse_reference(text);  // validates (throws with the reason)
  if (r.kind == Reference::Kind::Id)
    throw Error("'" + std::string(text) + "' is an image id, not a reference to an image on a registry");
  std::string t(text);
  std::string rest = t.substr(0, t.find('@'));
  RemoteRef out;
  size_t slash = rest.find('/');
  std::string first = slash == std::string::npos ? "" : rest.substr(0, slash);
  bool q = !first.empty() && (first.find_first_of(".:") != std::string::npos || first == "localhost");
  if (qualified) *qualified = q;
  std::string path = q ? rest.substr(slash + 1) : rest;
  out.registry = q ? first : "docker.io";
  if (out.registry == "index.docker.io" || out.registry == "registry-1.docker.io") out.registry = "docker.io";
  size_t colon = path.rfind(':');
  if (colon != std::string::npos && path.find('/', colon) == std::string::npos) path = path.substr(0, colon);
  if (out.registry == "docker.io" && path.find('/') == std::string::npos) path = "library/" + path;
  out.repository = path;
  if (r.kind == Reference::Kind::NameDigest) {
    out.digest = r.digest;
    // A tag before '@' is kept for the local name only when given.
    size_t tc = rest.rfind(':');
    if (tc != std::string::npos && rest.find('/', tc) == std::string::npos) out.tag = rest.substr(tc + 1);
  } else {
    out.tag = r.tag;
  }
  return out;
}

bool is_loopback_registry(const std::string& registry) {
  std::string host = registry;
  if (!host.empty() && host[0] == '[') {
    host = host.substr(1, host.find(']') - 1);
    return host == "::1";
  }
  host = host.substr(0, host.find(':'));
  in_addr a;  // a real IPv4 address in 127.0.0.0/8, not "127.0.0.1.example.com"
  return host == "localhost" || (::inet_pton(AF_INET, host.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127);
}

RegistryClient::RegistryClient(RemoteRef ref, std::string actions, RegistryOptions opts)
    : ref_(std::move(ref)), actions_(std::move(actions)), opts_(std::move(opts)) {
  if (!opts_.cert_dir.empty()) {
    std::string ca = opts_.cert_dir + "/" + ref_.registry + "/ca.crt";
    if (fs::exists(ca)) ca_file_ = ca;
  }
  if (!opts_.credentials) opts_.credentials = find_credentials(ref_.registry, opts_.authfile);
}

http::Request RegistryClient::base(const std::string& method, const std::string& path) const {
  http::Request r;
  r.method = method;
  r.url = (path.rfind("http", 0) == 0) ? path : base_url_ + path;
  r.tls_verify = opts_.tls_verify;
  r.ca_file = ca_file_;
  return r;
}

void RegistryClient::ping(http::Session& s) {
  std::string host = ref_.api_host();
  bool may_http = !opts_.tls_verify || is_loopback_registry(ref_.registry);
  base_url_ = "https://" + host;
  http::Response r;
  try {
    r = s.perform(base("GET", "/v2/"));
  } catch (const http::TransportError& e) {
    // A plain-HTTP registry answers a TLS handshake with garbage (SSL connect error).
    if (!(may_http && e.curl_code == 35)) {
      std::string hint = e.tls ? (may_http ? "" : "; for a registry without valid TLS use --tls-verify=false")
                               : "; check the host name and that the registry is running";
      throw Error("cannot reach registry " + ref_.registry + ": " + e.what() + hint);
    }
    base_url_ = "http://" + host;
    try {
      r = s.perform(base("GET", "/v2/"));
    } catch (const http::TransportError& e2) {
      throw Error(std::string("cannot reach registry ") + ref_.registry + ": " + e2.what());
    }
  }
  if (r.status == 401) {
    std::lock_guard<std::mutex> l(mu_);
    challenge_ = r.headers["www-authenticate"];
    return;
  }
  if (r.status / 100 == 2) return;
  throw Error(ref_.registry + " does not look like an OCI/Docker registry: GET /v2/ answered HTTP " +
              std::to_string(r.status));
}

void RegistryClient::authenticate(http::Session& s, const std::string& challenge) {
  auto [scheme, params] = parse_challenge(challenge);
  const auto& cred = opts_.credentials;
  if (scheme == "basic") {
    if (!cred)
      throw Error("registry " + ref_.registry + " requires a login; run 'sbx login " + ref_.registry + "'");
    std::lock_guard<std::mutex> l(mu_);
    auth_header_ = "Authorization: Basic " + base64_encode(cred->username + ":" + cred->password);
    token_expiry_ = 0;
    return;
  }
  if (scheme != "bearer" || params["realm"].empty())
    throw Error("registry " + ref_.registry + " asks for an authentication sbx does not know: '" +
                challenge.substr(0, 100) + "'");
  std::string realm = params["realm"];
  if (realm.rfind("https://", 0) != 0 && !(realm.rfind("http://", 0) == 0 && (!opts_.tls_verify || is_loopback_registry(ref_.registry))))
    throw Error("registry " + ref_.registry + " names a token server that is not https: " + realm);
  std::string scope = "repository:" + ref_.repository + ":" + actions_;
  std::string url = realm + (realm.find('?') == std::string::npos ? "?" : "&");
  if (!params["service"].empty()) url += "service=" + qenc(params["service"]) + "&";
  url += "scope=" + qenc(scope);
  if (params.count("scope") && !params["scope"].empty() && params["scope"] != scope) url += "&scope=" + qenc(params["scope"]);
  http::Request req;
  req.url = url;
  req.tls_verify = opts_.tls_verify;
  req.ca_file = ca_file_;
  if (cred) req.headers.push_back("Authorization: Basic " + base64_encode(cred->username + ":" + cred->password));
  http::Response r;
  try {
    r = s.perform(req);
  } catch (const http::TransportError& e) {
    throw Error(std::string("cannot reach the token server of ") + ref_.registry + ": " + e.what());
  }
  if (r.status == 401 || r.status == 403)
    throw Error("login to " + ref_.registry + " failed: " +
                (cred ? "wrong user name or password (user '" + cred->username + "')"
                      : "the registry wants credentials; run 'sbx login " + ref_.registry + "'"));
  if (r.status / 100 != 2)
    throw Error("token server of " + ref_.registry + " answered HTTP " + std::to_string(r.status));
  std::string token;
  int64_t expires = 60;
  try {
    json j = json::parse(r.body);
    token = j.value("token", "");
    if (token.empty()) token = j.value("access_token", "");
    if (j.contains("expires_in") && j["expires_in"].is_number()) expires = j["expires_in"].get<int64_t>();
  } catch (const json::exception&) {
  }
  if (token.empty()) throw Error("token server of " + ref_.registry + " answered no token");
  std::lock_guard<std::mutex> l(mu_);
  auth_header_ = "Authorization: Bearer " + token;
  token_expiry_ = now_s() + std::max<int64_t>(expires - 10, 5);
}

http::Response RegistryClient::send(http::Session& s, http::Request req, bool allow_auth_retry) {
  std::string challenge;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (token_expiry_ && now_s() >= token_expiry_) auth_header_.clear();  // expired: get a new one
    challenge = auth_header_.empty() ? challenge_ : "";
  }
  if (!challenge.empty()) authenticate(s, challenge);
  http::Request sent = req;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!auth_header_.empty()) sent.headers.push_back(auth_header_);
  }
  http::Response r = s.perform(sent);
  if (r.status == 401 && allow_auth_retry) {
    std::string ch = r.headers["www-authenticate"];
    bool had = false;
    {
      std::lock_guard<std::mutex> l(mu_);
      had = !auth_header_.empty() && token_expiry_ == 0;  // Basic already sent
      challenge_ = ch;
      auth_header_.clear();
    }
    if (had)
      throw Error("login to " + ref_.registry + " failed: wrong user name or password" +
                  (opts_.credentials ? " (user '" + opts_.credentials->username + "')" : ""));
    if (!ch.empty()) {
      authenticate(s, ch);
      return send(s, std::move(req), false);
    }
  }
  if (r.status == 401)
    throw Error("registry " + ref_.registry + " refused access to " + ref_.repository +
                " (HTTP 401); run 'sbx login " + ref_.registry + "' or check the name");
  return r;
}

void RegistryClient::check_login(http::Session& s) {
  ping(s);
  http::Response r = send(s, base("GET", "/v2/"));
  if (r.status / 100 != 2) fail("login check", r);
}

void RegistryClient::fail(const std::string& what, const http::Response& r) {
  std::string e = registry_error(r.body);
  if (r.status == 403)
    throw Error(what + ": registry " + ref_.registry + " denied access to " + ref_.repository + " (HTTP 403" +
                (e.empty() ? "" : ", " + e) + ")");
  throw Error(what + ": registry " + ref_.registry + " answered HTTP " + std::to_string(r.status) +
              (e.empty() ? "" : " (" + e + ")"));
}

FetchedManifest RegistryClient::get_manifest(http::Session& s, const std::string& ref) {
  http::Request req = base("GET", "/v2/" + ref_.repository + "/manifests/" + ref);
  req.headers.push_back(kAccept);
  req.max_body = 4u << 20;
  http::Response r = send(s, req);
  if (r.status == 404)
    throw Error(ErrorKind::ImageNotFound, "image " + ref_.registry + "/" + ref_.repository + (ref.rfind("sha256:", 0) == 0 ? "@" : ":") + ref +
                " not found on the registry (" + (registry_error(r.body).empty() ? "HTTP 404" : registry_error(r.body)) +
                "); check the name and tag");
  if (r.status / 100 != 2) fail("get manifest " + ref_.repository + ":" + ref, r);
  FetchedManifest m;
  m.body = std::move(r.body);
  m.digest = "sha256:" + sha256_hex(m.body);
  std::string ct = r.headers["content-type"];
  m.media_type = ct.substr(0, ct.find(';'));
  try {
    json j = json::parse(m.body);
    if (j.is_object() && j.contains("mediaType") && j["mediaType"].is_string()) m.media_type = j["mediaType"];
    if (j.is_object() && j.value("schemaVersion", 0) == 1)
      throw Error("image " + ref_.str() + " has a Docker schema 1 manifest, which sbx does not support (it is "
                  "deprecated and unverifiable); push it again with a current docker or skopeo");
  } catch (const json::exception& e) {
    throw Error("manifest of " + ref_.str() + " is not valid JSON (" + e.what() + ")");
  }
  if (ref.rfind("sha256:", 0) == 0 && m.digest != ref)
    throw Error("manifest " + ref + " from " + ref_.registry + " has digest " + m.digest +
                "; the registry sent other bytes than asked for (corrupt or tampered with)");
  std::string dcd = r.headers["docker-content-digest"];
  if (dcd.rfind("sha256:", 0) == 0 && dcd != m.digest)
    throw Error("manifest of " + ref_.str() + " has digest " + m.digest + " but the registry says " + dcd +
                "; refusing it (corrupt or tampered with)");
  return m;
}

bool RegistryClient::get_blob(http::Session& s, const std::string& digest, uint64_t offset,
                              const std::function<void(long)>& on_status,
                              const std::function<void(std::string_view)>& sink) {
  http::Request req = base("GET", "/v2/" + ref_.repository + "/blobs/" + digest);
  if (offset) req.range_from = std::to_string(offset);
  req.sink = sink;
  req.on_status = on_status;
  req.max_body = 64 << 10;
  http::Response r = send(s, req);
  if (r.status == 404)
    throw Error(ErrorKind::NotFound,
                "blob " + digest + " of " + ref_.str() + " not found on the registry; the image there is incomplete");
  if (r.status == 416) return false;  // range not satisfiable: the caller starts again
  if (r.status / 100 != 2) fail("get blob " + digest, r);
  return true;
}

bool RegistryClient::has_blob(http::Session& s, const std::string& digest) {
  http::Response r = send(s, base("HEAD", "/v2/" + ref_.repository + "/blobs/" + digest));
  if (r.status == 200) return true;
  if (r.status == 404) return false;
  fail("check blob " + digest, r);
}

uint64_t default_chunk_bytes() {
  const char* env = std::getenv("SBX_PUSH_CHUNK_BYTES");
  if (env && *env && std::string(env).find_first_not_of("0123456789") == std::string::npos && std::strlen(env) < 19) {
    uint64_t n = std::stoull(env);
    if (n >= 1024) return n;
  }
  return 16u << 20;
}

bool RegistryClient::upload_blob(http::Session& s, const std::string& digest, int fd, uint64_t size,
                                 const std::string& from_repo) {
  std::string path = "/v2/" + ref_.repository + "/blobs/uploads/";
  if (!from_repo.empty() && from_repo != ref_.repository)
    path += "?mount=" + qenc(digest) + "&from=" + qenc(from_repo);  // cross-repository mount
  http::Request post = base("POST", path);
  std::string empty;
  post.body = &empty;
  http::Response r = send(s, post);
  if (r.status == 201 && !from_repo.empty()) return true;  // mounted: no bytes to send
  if (r.status != 202) fail("start upload of " + digest, r);
  std::string loc = upload_url(r.headers["location"]);
  uint64_t sent = 0;
  if (size > opts_.chunk_bytes && opts_.chunk_bytes > 0) sent = upload_chunks(s, digest, fd, size, loc);
  loc += (loc.find('?') == std::string::npos ? "?" : "&") + std::string("digest=") + qenc(digest);
  http::Request put = base("PUT", loc);
  put.headers.push_back("Content-Type: application/octet-stream");
  if (sent == size) {
    put.body = &empty;  // all bytes went up in chunks: PUT closes the upload
  } else {
    if (::lseek(fd, 0, SEEK_SET) < 0) throw_errno("seek blob " + digest);
    put.body_fd = fd;
    put.body_size = size;
  }
  r = send(s, put);
  if (r.status != 201) fail("upload blob " + digest, r);
  return false;
}

std::string RegistryClient::upload_url(std::string loc) const {
  if (loc.empty()) throw Error("registry " + ref_.registry + " answered an upload step with no Location");
  if (loc[0] == '/') loc = base_url_ + loc;
  if (loc.rfind(base_url_, 0) != 0 && loc.rfind("http", 0) != 0)
    throw Error("registry " + ref_.registry + " gave an upload Location that is not a URL: " + loc.substr(0, 200));
  return loc;
}

uint64_t RegistryClient::upload_chunks(http::Session& s, const std::string& digest, int fd, uint64_t size,
                                       std::string& loc) {
  uint64_t off = 0;
  int failures = 0;
  while (off < size) {
    uint64_t n = std::min<uint64_t>(opts_.chunk_bytes, size - off);
    if (::lseek(fd, static_cast<off_t>(off), SEEK_SET) < 0) throw_errno("seek blob " + digest);
    http::Request patch = base("PATCH", loc);
    patch.headers.push_back("Content-Type: application/octet-stream");
    patch.headers.push_back("Content-Range: " + std::to_string(off) + "-" + std::to_string(off + n - 1));
    patch.body_fd = fd;
    patch.body_size = n;
    try {
      http::Response r = send(s, patch);
      if (off == 0 && (r.status == 405 || r.status == 501)) return 0;  // no chunked uploads here: one PUT
      if (r.status != 202) fail("upload chunk " + std::to_string(off) + "-" + std::to_string(off + n - 1) + " of " + digest, r);
      loc = upload_url(r.headers["location"]);
      off += n;
    } catch (const http::TransportError& e) {
      if (++failures >= 5)
        throw Error("upload of blob " + digest + " to " + ref_.registry + " failed 5 times (last: " + e.what() + ")");
      // Where the registry's copy ends (GET upload: "Range: 0-LAST").
      http::Response st = send(s, base("GET", loc));
      if (st.status != 204) fail("ask how far the upload of " + digest + " got", st);
      // ("0-0" is what docker's registry says for nothing yet, too: send it all.)
      std::string range = st.headers["range"];
      size_t dash = range.find('-');
      uint64_t last = 0;
      if (dash != std::string::npos && range.size() > dash + 1 && range.size() - dash <= 20 &&
          range.find_first_not_of("0123456789", dash + 1) == std::string::npos)
        last = std::stoull(range.substr(dash + 1));
      if (last + 1 > size) throw Error("registry " + ref_.registry + " says it has bytes " + range + " of blob " + digest +
                                       ", which has " + std::to_string(size) + "; refusing it");
      off = last == 0 ? 0 : last + 1;
      if (!st.headers["location"].empty()) loc = upload_url(st.headers["location"]);
      log::info("upload of blob " + digest + ": " + e.what() + "; resuming at byte " + std::to_string(off));
    }
  }
  return off;
}

void RegistryClient::put_manifest(http::Session& s, const std::string& tag_or_digest, const std::string& media_type,
                                  const std::string& body) {
  http::Request put = base("PUT", "/v2/" + ref_.repository + "/manifests/" + tag_or_digest);
  put.headers.push_back("Content-Type: " + media_type);
  put.body = &body;
  http::Response r = send(s, put);
  if (r.status != 201 && r.status != 200) fail("push manifest " + ref_.repository + ":" + tag_or_digest, r);
}

}  // namespace sbx::oci
