// The Docker Engine API's volumes (/volumes: list, create, inspect, remove,
// prune) over the engine's named volumes (engine/volumes.cpp), and the
// volume entries of a container inspect's Mounts. Shapes: the Engine API
// v1.41–1.44 reference (Volume, VolumeCreateOptions, VolumeListResponse,
// VolumePruneResponse, MountPoint).
#include <set>

#include "common/error.h"
#include "server/docker/api.h"

namespace sbx::server {

using nlohmann::json;

namespace {

std::string jstr(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

/// Docker's filters as the engine's: the values of one key are
/// alternatives, the keys all apply; so each key is asked of the engine on
/// its own and the names kept are those every key allowed.
std::optional<std::set<std::string>> filtered(engine::Engine& e, const std::string& text,
                                              const std::set<std::string>& keys) {
  std::optional<std::set<std::string>> keep;
  for (const auto& [key, vals] : parse_filters(text)) {
    if (!keys.count(key)) {
      std::string list;
      for (const auto& k : keys) list += (list.empty() ? "" : ", ") + k;
      throw HttpError{400, "invalid filter '" + key + "' (sbx serve: " + list + ")"};
    }
    std::set<std::string> any;
    for (const auto& v : vals)
      for (const auto& vol : e.list_volumes({key + "=" + v})) any.insert(vol.name);
    if (keep) {
      std::set<std::string> both;
      for (const auto& n : *keep)
        if (any.count(n)) both.insert(n);
      keep = both;
    } else {
      keep = any;
    }
  }
  return keep;
}

}  // namespace

void Api::volume_list(Connection& c, const Request& r) {
  auto keep = filtered(engine_, r.param("filters"), {"name", "label", "dangling", "driver"});
  json vols = json::array();
  for (const auto& v : engine_.list_volumes())
    if (!keep || keep->count(v.name)) vols.push_back(json::parse(v.json()));
  c.send(200, json{{"Volumes", vols}, {"Warnings", json::array()}}.dump());
}

void Api::volume_create(Connection& c, const Request& r) {
  json body = json::parse(r.body.empty() ? "{}" : r.body);
  if (!body.is_object()) throw HttpError{400, "invalid volume config: expected a JSON object"};
  engine::VolumeCreateRequest req;
  req.name = jstr(body, "Name");
  std::string driver = jstr(body, "Driver");
  if (!driver.empty() && driver != "local")
    throw HttpError{400, "volume driver '" + driver + "' is not supported by sbx serve (local only)"};
  // The local driver's options (type=tmpfs, o=size=…): the engine checks them.
  if (auto o = body.find("DriverOpts"); o != body.end() && o->is_object())
    for (const auto& [k, v] : o->items()) {
      if (!v.is_string()) throw HttpError{400, "invalid DriverOpts: " + k + " must be a string"};
      req.options[k] = v.get<std::string>();
    }
  if (auto l = body.find("Labels"); l != body.end() && l->is_object())
    for (const auto& [k, v] : l->items())
      if (v.is_string()) req.labels[k] = v.get<std::string>();
  try {
    engine::Volume v = engine_.create_volume(req);
    emit_object("volume", "create", v.name, {{"driver", v.driver}});
    c.send(201, v.json());
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Unsupported || e.kind() == ErrorKind::InvalidArgument) throw HttpError{400, e.what()};
    throw;
  }
}

void Api::volume_inspect(Connection& c, const Request&, const std::string& name) {
  c.send(200, engine_.inspect_volume(name).json());
}

void Api::volume_remove(Connection& c, const Request& r, const std::string& name) {
  bool existed = true;
  try {
    engine_.inspect_volume(name);
  } catch (const Error&) {
    existed = false;
  }
  engine_.remove_volume(name, r.flag("force"));
  if (existed) emit_object("volume", "destroy", name, {{"driver", "local"}});
  c.send(204, "");
}

void Api::volume_prune(Connection& c, const Request& r) {
  // (Docker 23+ prunes anonymous volumes only unless all=true; sbx prunes
  // every unused one, anonymous or named, as docker before 23.)
  auto keep = filtered(engine_, r.param("filters"), {"label", "all"});
  std::vector<std::string> filters;
  for (const auto& [key, vals] : parse_filters(r.param("filters")))
    if (key == "label")
      for (const auto& v : vals) filters.push_back("label=" + v);
  auto res = engine_.prune_volumes(filters);
  for (const auto& n : res.deleted) emit_object("volume", "destroy", n, {{"driver", "local"}});
  c.send(200, json{{"VolumesDeleted", res.deleted}, {"SpaceReclaimed", res.reclaimed}}.dump());
}

json Api::container_mounts(const std::shared_ptr<Container>& ctr, const std::string& dir) {
  if (!dir.empty()) return engine::mount_points_json(engine::sandbox_mount_points(engine_.config().root, dir));
  if (!ctr) return json::array();
  std::lock_guard lk(mu_);
  return engine::mount_points_json(ctr->mounts);
}

}  // namespace sbx::server
