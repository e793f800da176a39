// Image endpoints of the Docker Engine API over sbx's image store
// (Engine: list_images, inspect, pull, tag, remove). Names are sbx's
// normalised ones: busybox, busybox:latest and docker.io/library/busybox:latest
// are one image (oci/reference.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "common/error.h"
#include "common/fs.h"
#include "engine/volume_holds.h"
#include "oci/reference.h"
#include "runtime/state.h"
#include "server/docker/api.h"
#include "server/temp_dir.h"

namespace sbx::server {

using nlohmann::json;

namespace {

int64_t unix_seconds(const std::string& rfc3339) {
  struct tm tm {};
  if (rfc3339.size() < 19 || !::strptime(rfc3339.substr(0, 19).c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return 0;
  return static_cast<int64_t>(::timegm(&tm));
}

json digests(const oci::ImageRecord& img) {
  json out = json::array();
  if (img.manifest_digest.empty()) return out;
  for (const auto& n : img.names) out.push_back(n.substr(0, n.rfind(':')) + "@" + img.manifest_digest);
  return out;
}

}  // namespace

json pull_message(const oci::PullEvent& e) {
  std::string id = e.digest.size() > 19 ? e.digest.substr(7, 12) : e.digest;
  if (e.kind == "blob-start") return {{"status", "Pulling fs layer"}, {"id", id}};
  if (e.kind == "blob-progress")
    return {{"status", "Downloading"}, {"id", id}, {"progressDetail", {{"current", e.bytes}, {"total", e.total}}}};
  if (e.kind == "blob-exists") return {{"status", "Already exists"}, {"id", id}};
  if (e.kind == "blob-done") return {{"status", "Download complete"}, {"id", id}};
  if (e.kind == "unpacking")
    return {{"status", "Extracting"}, {"progressDetail", {{"current", e.layer}, {"total", e.layers}}}};
  if (e.kind == "resolved") return {{"status", "Digest: " + e.digest}};
  return nullptr;
}

void Api::image_list(Connection& c, const Request&) {
  json out = json::array();
  for (const auto& img : engine_.list_images()) {
    out.push_back({{"Id", "sha256:" + img.id},
                   {"ParentId", ""},
                   {"RepoTags", img.names.empty() ? json::array({"<none>:<none>"}) : json(img.names)},
                   {"RepoDigests", digests(img)},
                   {"Created", unix_seconds(img.created.empty() ? img.imported : img.created)},
                   {"Size", img.unpacked_size},
                   {"SharedSize", -1},
                   {"VirtualSize", img.unpacked_size},
                   {"Labels", img.config.labels},
                   {"Containers", -1}});
  }
  c.send(200, out.dump());
}

void Api::image_inspect(Connection& c, const Request&, const std::string& name) {
  oci::ImageRecord img = find_image(name);
  const auto& cfg = img.config;
  json volumes = json::object();  // (docker's shape: {"/path": {}})
  try {
    for (const auto& v : engine::image_volumes(engine_.config().root, img.id)) volumes[v] = json::object();
  } catch (const Error&) {
  }
  json config = {{"Env", cfg.env},
                 {"Cmd", cfg.cmd.empty() ? json() : json(cfg.cmd)},
                 {"Entrypoint", cfg.entrypoint.empty() ? json() : json(cfg.entrypoint)},
                 {"WorkingDir", cfg.working_dir},
                 {"User", cfg.user},
                 {"StopSignal", cfg.stop_signal},
                 {"Volumes", volumes.empty() ? json() : volumes},
                 {"Labels", cfg.labels}};
  json out = {{"Id", "sha256:" + img.id},
              {"RepoTags", img.names},
              {"RepoDigests", digests(img)},
              {"Parent", ""},
              {"Comment", ""},
              {"Created", img.created.empty() ? img.imported : img.created},
              {"Author", ""},
              {"Architecture", img.architecture.empty() ? "amd64" : img.architecture},
              {"Os", img.os.empty() ? "linux" : img.os},
              {"Size", img.unpacked_size},
              {"VirtualSize", img.unpacked_size},
              {"Config", config},
              // (docker-compose 1.29 reads ContainerConfig's Volumes when it
              // recreates a service; docker fills it for API versions < 1.45)
              {"ContainerConfig", config},
              {"RootFS", {{"Type", "layers"}, {"Layers", img.diff_ids}}},
              {"Metadata", {{"LastTagTime", img.imported}}}};
  c.send(200, out.dump());
}

void Api::image_create(Connection& c, const Request& r) {
  std::string from = r.param("fromImage");
  if (from.empty()) throw HttpError{501, "sbx serve: POST /images/create supports fromImage (pull) only"};
  std::string tag = r.param("tag");
  std::string ref = from;
  if (!tag.empty()) ref += (tag.rfind("sha256:", 0) == 0 ? "@" : ":") + tag;
  oci::parse_reference(ref);  // a bad name is a 400 before anything is streamed
  if (!c.begin_chunks(200, "application/json")) return;
  auto line = [&](const json& j) { return c.chunk(j.dump() + "\r\n"); };
  line({{"status", "Pulling from " + from}, {"id", tag.empty() ? "latest" : tag}});
  oci::PullOptions po;
  po.progress = [&](const oci::PullEvent& e) {
    json m = pull_message(e);
    if (!m.is_null()) line(m);
  };
  try {
    oci::ImageRecord img = engine_.pull(ref, po);
    line({{"status", "Status: Downloaded newer image for " + (img.names.empty() ? ref : img.names[0])}});
  } catch (const Error& e) {
    line({{"errorDetail", {{"message", e.what()}}}, {"error", e.what()}});
  }
  c.end_chunks();
}

void Api::image_tag(Connection& c, const Request& r, const std::string& name) {
  std::string repo = r.param("repo"), tag = r.param("tag");
  if (repo.empty()) throw HttpError{400, "repository name (repo) is required"};
  engine_.tag_image(image_ref(name), repo + (tag.empty() ? "" : ":" + tag));
  c.send(201, "");
}

void Api::image_remove(Connection& c, const Request& r, const std::string& name) {
  oci::RemoveResult res = engine_.remove_image(image_ref(name), r.flag("force"));
  json out = json::array();
  for (const auto& u : res.untagged) out.push_back({{"Untagged", u}});
  if (!res.deleted.empty()) out.push_back({{"Deleted", "sha256:" + res.deleted}});
  c.send(200, out.dump());
}

void Api::image_load(Connection& c, const Request& r) {
  // The body is on disk (body_rule: spooled, bounded) and imported from there.
  struct stat st {};
  if (r.body_file.empty() || ::stat(r.body_file.c_str(), &st) < 0 || st.st_size == 0)
    throw HttpError{400, "POST /images/load needs a docker-archive (or oci-archive) tar as its body"};
  engine::ImportRequest req;
  req.path = r.body_file;
  oci::ImageRecord img;
  try {
    img = engine_.import_image(req);
  } catch (const Error& e) {
    throw HttpError{400, std::string("load the image archive: ") + e.what()};
  }
  // As dockerd: a JSON message stream, one "Loaded image" line per name.
  std::string out;
  if (img.names.empty()) out += json{{"stream", "Loaded image ID: sha256:" + img.id + "\n"}}.dump() + "\n";
  for (const auto& n : img.names) out += json{{"stream", "Loaded image: " + n + "\n"}}.dump() + "\n";
  c.send(200, out);
}

void Api::image_get(Connection& c, const Request&, const std::vector<std::string>& names) {
  if (names.empty()) throw HttpError{400, "give the image to save: GET /images/{name}/get or /images/get?names="};
  // (ref, the name recorded in the archive's RepoTags): the one asked for
  // when it is a name, so that `docker load` gives it back.
  std::vector<std::pair<std::string, std::string>> images;
  for (const auto& n : names) {
    if (n.empty()) throw HttpError{400, "an empty image name in names="};
    std::string ref = image_ref(n);
    std::string name;
    try {
      auto parsed = oci::parse_reference(ref);
      if (parsed.kind == oci::Reference::Kind::Name && !parsed.maybe_id) name = parsed.str();
    } catch (const Error&) {
    }
    images.emplace_back(ref, name);
  }
  TempDir tmp(engine_.config().root);
  std::string out = tmp.path() + "/image.tar";
  engine_.export_images(images, out);
  Fd f(::open(out.c_str(), O_RDONLY | O_CLOEXEC));
  if (f.fd < 0) throw_errno("open " + out);
  if (!c.begin_chunks(200, "application/x-tar")) return;
  std::string buf(1 << 20, '\0');
  for (;;) {
    ssize_t n = ::read(f.fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return c.set_close();  // (a short tar: the client sees the stream end early)
    if (n == 0) break;
    if (!c.chunk(std::string_view(buf.data(), static_cast<size_t>(n)))) return c.set_close();
  }
  c.end_chunks();
}

}  // namespace sbx::server

namespace sbx::server {

void Api::image_history(Connection& c, const Request&, const std::string& name) {
  oci::ImageRecord img = find_image(name);
  // As dockerd: newest first; the image's own entry carries its id and
  // names, the older ones "<missing>" (their steps are no images here).
  json out = json::array();
  for (const auto& h : engine_.history(img.id)) {
    const bool top = !h.id.empty();
    out.push_back({{"Id", top ? "sha256:" + h.id : "<missing>"},
                   {"Created", unix_seconds(h.created)},
                   {"CreatedBy", h.created_by},
                   {"Tags", top && !img.names.empty() ? json(img.names) : json()},
                   {"Size", h.size},
                   {"Comment", h.comment}});
  }
  c.send(200, out.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace sbx::server
