// Build parameters of the server's build endpoints (server/build_request.h).
#include "server/build_request.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fd.h"
#include "common/fs.h"
#include "engine/build/context.h"
#include "oci/reference.h"

namespace sbx::server {

using nlohmann::json;

namespace {

Error bad(const std::string& msg) { return Error(ErrorKind::InvalidArgument, msg); }


/// A JSON object parameter of strings (null values skipped when `nulls`).
std::vector<std::pair<std::string, std::string>> string_map(const Request& r, const std::string& k) {
  std::vector<std::pair<std::string, std::string>> out;
  std::string text = r.param(k);
  if (text.empty()) return out;
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw bad("the " + k + " parameter is not JSON (want {\"KEY\": \"VALUE\"}): " + e.what());
  }
  if (j.is_null()) return out;
  if (!j.is_object()) throw bad("the " + k + " parameter must be a JSON object {\"KEY\": \"VALUE\"}");
  for (const auto& [key, v] : j.items()) {
    if (key.empty()) throw bad("the " + k + " parameter has an empty key");
    if (v.is_null()) continue;  // declared without a value: not given (as Docker)
    if (!v.is_string()) throw bad("the " + k + " parameter's value of " + key + " must be a string");
    out.emplace_back(key, v.get<std::string>());
  }
  return out;
}

}  // namespace

std::string tagged_name(const std::string& ref) {
  size_t slash = ref.rfind('/');
  std::string last = slash == std::string::npos ? ref : ref.substr(slash + 1);
  if (last.find(':') != std::string::npos || ref.find('@') != std::string::npos) return ref;
  return ref + ":latest";
}

bool peer_closed(int fd) {
  char b;
  ssize_t n = ::recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;
  return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

build::BuildOptions build_options(const Request& r) {
  build::BuildOptions o;
  if (!r.param("remote").empty())
    throw Error(ErrorKind::Unsupported,
                "remote build contexts (remote=" + r.param("remote") + ") are not supported: send the context as a tar");
  if (r.param("version") == "2")
    throw Error(ErrorKind::Unsupported,
                "sbx serve has the classic builder only (version=1), not BuildKit: build with DOCKER_BUILDKIT=0, "
                "or through sbx's docker-buildx plugin (sbx serve --install-buildx-plugin)");
  if (r.flag("squash")) throw Error(ErrorKind::Unsupported, "squash is not supported by sbx's builder");

  // The context: the body.
  struct stat st {};
  if (!r.body_file.empty() && ::stat(r.body_file.c_str(), &st) == 0 && st.st_size > 0) {
    if (sbx::build::looks_like_archive(r.body_file)) {
      o.context_tar = r.body_file;
    } else {
      if (static_cast<uint64_t>(st.st_size) > kMaxDockerfileBody)
        throw bad("the request body is neither a tar (plain, gzip or zstd) nor a Dockerfile of at most 4 MiB");
      o.dockerfile_text = fs::read_file(r.body_file);
      o.has_dockerfile_text = true;
    }
  } else if (!r.body.empty()) {
    o.dockerfile_text = r.body;  // (a body that was not spooled: a Dockerfile alone)
    o.has_dockerfile_text = true;
  } else {
    throw bad("the build needs a context: a tar of it (or a Dockerfile alone) as the request body");
  }
  o.context_limits.max_bytes = kMaxBuildContext;

  // The Dockerfile: a path inside the context, never outside it.
  std::string df = r.param("dockerfile");
  while (!df.empty() && df[0] == '/') df.erase(0, 1);
  if (df.rfind("./", 0) == 0) df.erase(0, 2);
  for (size_t i = 0; i <= df.size();) {
    size_t j = df.find('/', i);
    if (j == std::string::npos) j = df.size();
    if (df.compare(i, j - i, "..") == 0)
      throw bad("dockerfile=" + r.param("dockerfile") + ": the Dockerfile must be inside the build context");
    i = j + 1;
  }
  if (!df.empty()) o.dockerfile = df;

  for (const auto& t : r.params("t")) {
    if (t.empty()) continue;
    try {
      o.tags.push_back(oci::normalize_name(t));
    } catch (const Error& e) {
      throw bad("invalid tag t=" + t + ": " + e.what());
    }
  }
  o.build_args = string_map(r, "buildargs");
  for (auto& [k, v] : string_map(r, "labels")) o.labels[k] = v;
  o.target = r.param("target");
  o.no_cache = r.flag("nocache");
  std::string pull = r.param("pull");
  if (pull.empty() || pull == "0" || pull == "false" || pull == "False" || pull == "missing") {
    o.pull = oci::PullPolicy::Missing;
  } else if (pull == "never") {
    o.pull = oci::PullPolicy::Never;
    o.pull_explicit = true;
  } else if (pull == "1" || pull == "true" || pull == "True" || pull == "always") {
    o.pull = oci::PullPolicy::Always;
    o.pull_explicit = true;
  } else {
    throw bad("pull=" + pull + ": use 1 (always), 0 (missing images only) or never");
  }
  std::string net = r.param("networkmode");
  if (net.empty() || net == "default" || net == "bridge" || net == "private")
    o.network = NetworkMode::Private;
  else if (net == "none")
    o.network = NetworkMode::None;
  else if (net == "host")
    o.network = NetworkMode::Host;
  else
    throw bad("networkmode=" + net + ": the build's RUN steps take default (bridge), none or host");
  o.platform = r.param("platform");
  o.forward_signals = false;
  return o;
}

}  // namespace sbx::server
