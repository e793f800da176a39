// POST /sbx/v1/sandboxes's body → the engine's options (server/v1/sbx_v1.h
// v1_create_options): translation only, apart from the handlers so that the
// fuzz harness of the body (tests/fuzz/fuzz_v1_create.cpp) links it alone.
#include <chrono>

#include "server/v1/sbx_v1.h"
#include "common/json_number.h"

namespace sbx::server {

using nlohmann::json;

std::vector<std::string> v1_string_list(const json& j, const char* what) {
  std::vector<std::string> out;
  if (j.is_null()) return out;
  if (!j.is_array()) throw V1Error{400, "InvalidArgument", std::string(what) + " must be a list of strings"};
  for (const auto& e : j) {
    if (!e.is_string()) throw V1Error{400, "InvalidArgument", std::string(what) + " must be a list of strings"};
    out.push_back(e.get<std::string>());
  }
  return out;
}

namespace {

/// `key` of `body` in seconds (json_number::kMaxSeconds at most) as ms; 0
/// when absent or null. Throws V1Error 400 for anything else.
std::chrono::milliseconds seconds(const json& body, const char* key) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::chrono::milliseconds(0);
  auto ms = json_number::seconds_to_ms(*it, json_number::kMaxSeconds);
  if (!ms) throw V1Error{400, "InvalidArgument", std::string(key) + " must be a number of seconds, 0 to 1e9"};
  return *ms;
}

}  // namespace

static engine::SandboxOptions v1_create_options_unchecked(const json& b) {
  std::string image = b.value("image", "");
  // The SDK's options as the engine's (engine/sandbox_options.h): the
  // builder decides, as for `sbx create`.
  engine::SandboxOptions o;
  o.names.volume = "volumes";
  o.names.mount = "mounts";
  o.names.network = "network";
  o.names.cpus = "cpu";
  o.names.command = "create";
  o.name = b.value("name", "");
  o.image = image;
  o.command = v1_string_list(b.value("cmd", json()), "cmd");
  if (!o.command.empty()) o.entrypoint = std::vector<std::string>{};  // the command is the whole argv, as Modal's
  o.hold_without_command = true;  // no command: the sandbox holds until terminated
  if (auto e = b.find("env"); e != b.end() && e->is_object()) {
    for (const auto& [k, v] : e->items()) {
      if (!v.is_string()) throw V1Error{400, "InvalidArgument", "env values must be strings"};
      o.env.push_back(k + "=" + v.get<std::string>());
    }
  }
  if (std::string w = b.value("workdir", ""); !w.empty()) o.workdir = w;
  if (auto l = b.find("labels"); l != b.end() && l->is_object())
    for (const auto& [k, v] : l->items())
      if (v.is_string()) o.labels[k] = v.get<std::string>();
  if (auto v = b.find("volumes"); v != b.end() && v->is_object()) {
    for (const auto& [host, ctr] : v->items()) {
      if (!ctr.is_string()) throw V1Error{400, "InvalidArgument", "volumes: {host path: sandbox path[:ro]}"};
      o.volumes.push_back(host + ":" + ctr.get<std::string>());
    }
  }
  // Docker's --mount syntax: type=volume,target=/p (no source: an anonymous
  // volume), type=volume,source=NAME,target=/p, type=tmpfs,target=/p.
  o.mounts = v1_string_list(b.value("mounts", json()), "mounts");
  o.allow_host_idmap = false;
  if (auto mem = b.find("memory"); mem != b.end() && !mem->is_null()) {
    auto n = json_number::to_int64(*mem);
    if (!n || *n <= 0) throw V1Error{400, "InvalidArgument", "memory must be a number of bytes > 0"};
    o.memory_bytes = *n;
  }
  if (auto cpu = b.find("cpu"); cpu != b.end() && !cpu->is_null()) {
    // Bounded before the conversion to nanoseconds below (1e300 would be
    // undefined behaviour); 1e6 CPUs is beyond any host.
    if (!cpu->is_number() || !(cpu->get<double>() > 0 && cpu->get<double>() <= 1e6))
      throw V1Error{400, "InvalidArgument", "cpu must be a number > 0 and at most 1e6"};
    // As Docker's NanoCpus, which /sbx/v1 once went through.
    o.cpus = static_cast<double>(static_cast<int64_t>(cpu->get<double>() * 1e9)) / 1e9;
  }
  o.runtime = b.value("runtime", "");
  std::string net = b.value("network", "none");
  if (net != "none" && net != "private")
    throw V1Error{400, "InvalidArgument", "network must be none or private, not '" + net + "'"};
  o.network = net;
  o.allow_egress = v1_string_list(b.value("allow_egress", json()), "allow_egress");
  if (net != "private" && !o.allow_egress.empty())
    throw V1Error{400, "InvalidArgument", "allow_egress needs network='private'"};
  o.timeout = seconds(b, "timeout");
  o.idle_timeout = seconds(b, "idle_timeout");
  o.gpu.gpus = b.value("gpu", "");
  // Directory snapshots as volumes: a private, writable copy each
  // (RUN_ROOT/.snapshot-copies/<id>/<n>, made by the engine's create; the
  // watcher removes them when the sandbox ends, sbx gc after a crash).
  if (auto s = b.find("snapshots"); s != b.end() && s->is_object()) {
    for (const auto& [name, target] : s->items()) {
      if (!target.is_string()) throw V1Error{400, "InvalidArgument", "snapshots: {snapshot name: sandbox path}"};
      o.snapshot_mounts.push_back(name + ":" + target.get<std::string>());
    }
  }
  return o;
}

engine::SandboxOptions v1_create_options(const json& b) {
  // A field of the wrong JSON type is the client's error: 400, not a 500.
  try {
    return v1_create_options_unchecked(b);
  } catch (const json::exception& e) {
    throw V1Error{400, "InvalidArgument", std::string("invalid sandbox body: a field has the wrong JSON type (") + e.what() + ")"};
  }
}

}  // namespace sbx::server
