// /sbx/v1/volumes: named volumes (engine/volumes.h) for the SDK's Volume.
//   GET    /sbx/v1/volumes               → [volume]
//   POST   /sbx/v1/volumes               {"name", "labels"} → 201 volume (an existing name: that one, 200)
//   GET    /sbx/v1/volumes/{name}        → volume; 404
//   DELETE /sbx/v1/volumes/{name}[?force=1] → 204; 404; 409 in use
// volume: {"name", "driver", "labels", "created", "mountpoint", "used_by": [sandbox ids]}.
#include "common/error.h"
#include "server/v1/sbx_v1.h"

namespace sbx::server {

using nlohmann::json;

namespace {

json volume_json(const engine::Volume& v) {
  return {{"name", v.name},     {"driver", v.driver},         {"labels", v.labels},
          {"created", v.created}, {"mountpoint", v.mountpoint}, {"used_by", v.used_by}};
}

}  // namespace

void SbxV1::volume_list(Connection& c) {
  json out = json::array();
  for (const auto& v : engine_.list_volumes()) out.push_back(volume_json(v));
  c.send(200, out.dump());
}

void SbxV1::volume_create(Connection& c, const Request& r) {
  json b = json::parse(r.body.empty() ? "{}" : r.body);
  if (!b.is_object()) throw V1Error{400, "InvalidArgument", "volume create: expected a JSON object {\"name\", \"labels\"}"};
  engine::VolumeCreateRequest req;
  if (auto n = b.find("name"); n != b.end() && !n->is_null()) {
    if (!n->is_string()) throw V1Error{400, "InvalidArgument", "volume create: name must be a string"};
    req.name = n->get<std::string>();
  }
  if (auto l = b.find("labels"); l != b.end() && !l->is_null()) {
    if (!l->is_object()) throw V1Error{400, "InvalidArgument", "volume create: labels must be an object of strings"};
    for (const auto& [k, v] : l->items()) {
      if (!v.is_string()) throw V1Error{400, "InvalidArgument", "volume create: labels must be an object of strings"};
      req.labels[k] = v.get<std::string>();
    }
  }
  // Docker's local-driver options ({"type": "tmpfs", "o": "size=64m"}).
  if (auto o = b.find("options"); o != b.end() && !o->is_null()) {
    if (!o->is_object()) throw V1Error{400, "InvalidArgument", "volume create: options must be an object of strings"};
    for (const auto& [k, v] : o->items()) {
      if (!v.is_string()) throw V1Error{400, "InvalidArgument", "volume create: options must be an object of strings"};
      req.options[k] = v.get<std::string>();
    }
  }
  bool existed = false;
  if (!req.name.empty()) {
    try {
      engine_.inspect_volume(req.name);
      existed = true;
    } catch (const Error&) {
    }
  }
  c.send(existed ? 200 : 201, volume_json(engine_.create_volume(req)).dump());
}

void SbxV1::volume_get(Connection& c, const std::string& name) {
  c.send(200, volume_json(engine_.inspect_volume(name)).dump());
}

void SbxV1::volume_remove(Connection& c, const Request& r, const std::string& name) {
  engine_.remove_volume(name, r.flag("force"));
  c.send(204, "");
}

}  // namespace sbx::server
