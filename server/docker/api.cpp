// Routing and the system endpoints of the Docker Engine API (server/docker/api.h).
#include "server/error_status.h"
#include "server/docker/api.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <ctime>
#include <regex>

#include "common/error.h"
#include "common/log.h"
#include "runtime/backends.h"
#include "server/v1/sbx_v1.h"

namespace sbx::server {

using nlohmann::json;

bool Container::auto_remove() const {
  auto hc = config.find("HostConfig");
  return hc != config.end() && hc->is_object() && hc->value("AutoRemove", false);
}

bool Container::tty() const { return config.value("Tty", false); }

BodyRule Api::body_rule(const Request& r) {
  if ((r.method == "PUT" && r.path.rfind("/containers/", 0) == 0 && r.path.ends_with("/archive")) ||
      (r.method == "POST" && (r.path == "/images/load" || r.path == "/build" || r.path == "/sbx/v1/build" ||
                              r.path.rfind("/sbx/v1/trajectories/", 0) == 0)))
    return {kMaxArchiveBody, true};
  return {kMaxJsonBody, false};
}

void Api::handle(Connection& c, Request& r) {
  if (log::enabled(log::Level::debug)) log::debug("serve: " + r.method + " " + r.target);
  static const std::regex kContainer("^/containers/([^/]+)/([a-z]+)$");
  static const std::regex kContainerOnly("^/containers/([^/]+)$");
  static const std::regex kExec("^/exec/([^/]+)/([a-z]+)$");
  static const std::regex kImage("^/images/(.+)/(json|tag|get|history)$");
  static const std::regex kImageOnly("^/images/(.+)$");
  static const std::regex kNetwork("^/networks/([^/]+)/(connect|disconnect)$");
  static const std::regex kNetworkOnly("^/networks/([^/]+)$");
  static const std::regex kVolumeOnly("^/volumes/([^/]+)$");
  std::smatch m;
  const std::string& p = r.path;
  const std::string& meth = r.method;
  // sbx's own API (server/v1/sbx_v1.h): its own errors ({"message", "kind"}).
  if (p.rfind("/sbx/v1/", 0) == 0) return sbx_v1(engine_.config(), default_runtime_).handle(c, r);
  try {
    if (p == "/_ping" && (meth == "GET" || meth == "HEAD")) return ping(c, r);
    if (p == "/version" && meth == "GET") return version(c, r);
    if (p == "/info" && meth == "GET") return info(c, r);
    if (p == "/containers/create" && meth == "POST") return container_create(c, r);
    if (p == "/containers/json" && meth == "GET") return container_list(c, r);
    if (p == "/commit" && meth == "POST") return commit(c, r);
    if (p == "/images/json" && meth == "GET") return image_list(c, r);
    if (p == "/images/create" && meth == "POST") return image_create(c, r);
    if (p == "/images/load" && meth == "POST") return image_load(c, r);
    if (p == "/build" && meth == "POST") return build(c, r);
    if (p == "/images/get" && meth == "GET") return image_get(c, r, r.params("names"));
    if (p == "/events" && meth == "GET") return events(c, r);
    if (p == "/volumes" && meth == "GET") return volume_list(c, r);
    if (p == "/volumes/create" && meth == "POST") return volume_create(c, r);
    if (p == "/volumes/prune" && meth == "POST") return volume_prune(c, r);
    if (std::regex_match(p, m, kVolumeOnly)) {
      if (meth == "GET") return volume_inspect(c, r, m[1]);
      if (meth == "DELETE") return volume_remove(c, r, m[1]);
    }
    if (p == "/networks" && meth == "GET") return network_list(c, r);
    if (p == "/networks/create" && meth == "POST") return network_create(c, r);
    if (p == "/networks/prune" && meth == "POST") return network_prune(c, r);
    if (std::regex_match(p, m, kNetwork) && meth == "POST") return network_connect(c, r, m[1], m[2] == "connect");
    if (std::regex_match(p, m, kNetworkOnly)) {
      if (meth == "GET") return network_inspect(c, r, m[1]);
      if (meth == "DELETE") return network_remove(c, r, m[1]);
    }
    if (std::regex_match(p, m, kContainer)) {
      std::string id = m[1], op = m[2];
      if (op == "start" && meth == "POST") return container_start(c, r, id);
      if (op == "attach" && meth == "POST") return container_attach(c, r, id);
      if (op == "wait" && meth == "POST") return container_wait(c, r, id);
      if (op == "json" && meth == "GET") return container_inspect(c, r, id);
      if (op == "logs" && meth == "GET") return container_logs(c, r, id);
      if (op == "stop" && meth == "POST") return container_stop(c, r, id);
      if (op == "kill" && meth == "POST") return container_kill(c, r, id);
      if (op == "exec" && meth == "POST") return exec_create(c, r, id);
      if (op == "archive" && (meth == "GET" || meth == "PUT" || meth == "HEAD")) return container_archive(c, r, id);
      if (op == "restart" && meth == "POST") return container_restart(c, r, id);
      if (op == "pause" && meth == "POST") return container_pause(c, r, id, true);
      if (op == "unpause" && meth == "POST") return container_pause(c, r, id, false);
      if (op == "top" && meth == "GET") return container_top(c, r, id);
      if (op == "stats" && meth == "GET") return container_stats(c, r, id);
      if (op == "resize" && meth == "POST") return container_resize(c, r, id);
      if (op == "rename" && meth == "POST") return container_rename(c, r, id);
    }
    if (std::regex_match(p, m, kContainerOnly) && meth == "DELETE") return container_remove(c, r, m[1]);
    if (std::regex_match(p, m, kExec)) {
      std::string id = m[1], op = m[2];
      if (op == "start" && meth == "POST") return exec_start(c, r, id);
      if (op == "json" && meth == "GET") return exec_inspect(c, r, id);
      if (op == "resize" && meth == "POST") {  // (execs run on pipes: nothing to resize)
        bool known;
        {
          std::lock_guard lk(mu_);
          known = execs_.count(id) > 0;
        }
        if (!known) throw HttpError{404, "No such exec instance: " + id};
        return (void)c.send(200, "");
      }
    }
    if (std::regex_match(p, m, kImage)) {
      if (m[2] == "json" && meth == "GET") return image_inspect(c, r, m[1]);
      if (m[2] == "tag" && meth == "POST") return image_tag(c, r, m[1]);
      if (m[2] == "get" && meth == "GET") return image_get(c, r, {m[1]});
      if (m[2] == "history" && meth == "GET") return image_history(c, r, m[1]);
    }
    if (std::regex_match(p, m, kImageOnly) && meth == "DELETE") return image_remove(c, r, m[1]);
    c.send_error(501, "sbx serve does not implement " + meth + " " + p);
  } catch (const HttpError& e) {
    c.send_error(e.status, e.message);
  } catch (const Error& e) {
    c.send_error(docker_status(e), e.what());
  } catch (const json::exception& e) {
    c.send_error(400, std::string("malformed JSON: ") + e.what());
  } catch (const std::exception& e) {
    c.send_error(500, e.what());
  }
}

void Api::ping(Connection& c, const Request&) {
  // HEAD too: the connection sends the head alone (Content-Length of the GET body).
  std::vector<std::pair<std::string, std::string>> h = {{"Cache-Control", "no-cache, no-store, must-revalidate"},
                                                        {"Pragma", "no-cache"},
                                                        {"Builder-Version", "1"}};
  c.send(200, "OK", "text/plain; charset=utf-8", h);
}

void Api::version(Connection& c, const Request&) {
  struct utsname u {};
  ::uname(&u);
  // The docker CLI prints the Engine component's Details (OS/Arch, minimum
  // API version), not the top-level fields: both carry them.
  json details = {{"ApiVersion", "1.44"}, {"MinAPIVersion", "1.24"}, {"Os", "linux"}, {"Arch", "amd64"},
                  {"KernelVersion", u.release}, {"GitCommit", ""}, {"GoVersion", "n/a"}, {"BuildTime", ""},
                  {"Experimental", "false"}};
  json v = {{"Platform", {{"Name", "sbx"}}},
            {"Components", json::array({{{"Name", "Engine"}, {"Version", SBX_VERSION}, {"Details", details}}})},
            {"Version", SBX_VERSION},
            {"ApiVersion", "1.44"},
            {"MinAPIVersion", "1.24"},
            {"GitCommit", ""},
            {"GoVersion", "n/a"},
            {"Os", "linux"},
            {"Arch", "amd64"},
            {"KernelVersion", u.release},
            {"BuildTime", ""}};
  c.send(200, v.dump());
}

void Api::info(Connection& c, const Request&) {
  struct utsname u {};
  ::uname(&u);
  auto all = engine_.list(engine::ListRequest{true, {}});
  int running = 0, stopped = 0;
  for (const auto& s : all) (s.status == "running" ? running : stopped)++;
  int created = 0;
  {
    std::lock_guard lk(mu_);
    for (const auto& [id, ctr] : containers_) created += !ctr->started && !ctr->removed;
  }
  char host[256] = "";
  ::gethostname(host, sizeof host - 1);
  json i = {{"ID", "sbx"},
            {"Containers", running + stopped + created},
            {"ContainersRunning", running},
            {"ContainersPaused", 0},
            {"ContainersStopped", stopped + created},
            {"Images", engine_.list_images().size()},
            {"Driver", "overlay"},
            {"DockerRootDir", engine_.config().root},
            {"OperatingSystem", "sbx"},
            {"OSType", "linux"},
            {"Architecture", u.machine},
            {"KernelVersion", u.release},
            {"NCPU", ::sysconf(_SC_NPROCESSORS_ONLN)},
            {"MemTotal", static_cast<int64_t>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGE_SIZE)},
            {"Name", host},
            {"ServerVersion", SBX_VERSION},
            {"DefaultRuntime", default_runtime_.empty() ? runtime::default_backend_name() : default_runtime_},
            {"CgroupDriver", "cgroupfs"},
            {"SecurityOptions", json::array({"name=seccomp,profile=default", "name=userns"})},
            {"Warnings", json::array()}};
  // Every backend, each through sbx (the registry knows them).
  json runtimes = json::object();
  for (const auto& n : runtime::backend_names()) runtimes[n] = {{"path", "sbx"}};
  i["Runtimes"] = runtimes;
  c.send(200, i.dump());
}

std::shared_ptr<Container> Api::record(const std::string& id) {
  std::lock_guard lk(mu_);
  auto it = containers_.find(id);
  return it == containers_.end() ? nullptr : it->second;
}

std::string Api::resolve_container(const std::string& ref) {
  {
    std::lock_guard lk(mu_);
    std::vector<std::string> hits;
    for (const auto& [id, ctr] : containers_) {
      if (ctr->removed) continue;
      if (id == ref || (!ctr->name.empty() && ctr->name == ref)) return id;
      if (id.rfind(ref, 0) == 0) hits.push_back(id);
    }
    if (hits.size() == 1) return hits[0];
    if (hits.size() > 1) throw HttpError{400, "container id prefix '" + ref + "' is ambiguous"};
  }
  try {
    return engine_.resolve(ref);
  } catch (const Error&) {
    throw HttpError{404, "No such container: " + ref};
  }
}

std::string Api::image_ref(const std::string& ref) {
  try {
    engine_.resolve_or_pull(ref, oci::PullPolicy::Never, false, {});
    return ref;
  } catch (const Error&) {
  }
  // The docker CLI names images of Docker Hub users with their registry
  // ("docker commit c sbxtest/app" sends repo=docker.io/sbxtest/app) but asks
  // for them without it ("docker run sbxtest/app"): one image, as dockerd.
  std::string first = ref.substr(0, ref.find('/'));
  if (ref.find('/') != std::string::npos && first.find_first_of(".:") == std::string::npos && first != "localhost") {
    try {
      engine_.resolve_or_pull("docker.io/" + ref, oci::PullPolicy::Never, false, {});
      return "docker.io/" + ref;
    } catch (const Error&) {
    }
  }
  throw HttpError{404, "No such image: " + ref};
}

oci::ImageRecord Api::find_image(const std::string& ref) {
  return engine_.resolve_or_pull(image_ref(ref), oci::PullPolicy::Never, false, {});
}

}  // namespace sbx::server
