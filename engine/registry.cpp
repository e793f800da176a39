// Engine: registries — pull, resolve-or-pull, push, login, logout over the
// image store (oci/pull.h, oci/push.h, oci/auth_config.h).
#include "common/error.h"
#include "engine/engine.h"
#include "oci/http.h"
#include "oci/reference.h"
#include "oci/registry_client.h"

namespace sbx::engine {

oci::ImageRecord Engine::pull(const std::string& ref, const oci::PullOptions& opts) {
  oci::Store store(cfg_.root);
  return oci::pull_image(store, ref, opts);
}

oci::ImageRecord Engine::resolve_or_pull(const std::string& ref, oci::PullPolicy policy, bool policy_explicit,
                                         const oci::PullOptions& opts) {
  oci::Store store(cfg_.root);
  return oci::resolve_or_pull(store, ref, policy, policy_explicit, opts);
}

std::vector<std::string> Engine::layer_dirs(const oci::ImageRecord& image) {
  oci::Store store(cfg_.root);
  return store.layer_dirs(image);
}

std::string Engine::push(const std::string& image, const std::string& dest, const oci::PushOptions& opts) {
  oci::Store store(cfg_.root);
  return oci::push_image(store, image, dest, opts);
}

std::string Engine::login(const std::string& registry, oci::RegistryOptions opts, const std::string& authfile) {
  if (!opts.credentials) throw Error("login to " + registry + ": no credentials given");
  std::string reg = oci::parse_remote_ref(registry + "/x").registry;
  oci::RemoteRef r{reg, "library/x", "latest", ""};
  oci::RegistryClient client(r, "pull", opts);
  oci::http::Session s;
  client.check_login(s);
  oci::save_credentials(reg, *opts.credentials, authfile);
  return reg;
}

std::string Engine::logout(const std::string& registry, const std::string& authfile) {
  std::string reg = registry.empty() ? "" : oci::parse_remote_ref(registry + "/x").registry;
  if (!oci::remove_credentials(reg, authfile))
    throw Error("sbx logout: not logged in to " + (reg.empty() ? std::string("any registry") : reg));
  return reg;
}

}  // namespace sbx::engine
