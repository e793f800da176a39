// Engine: image builds (engine/build/), image history, prune and disk usage.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "engine/build/cache.h"
#include "engine/engine.h"
#include "oci/commit.h"
#include "runtime/state.h"

namespace sbx::engine {

build::BuildResult Engine::build(const build::BuildOptions& req) {
  return build::build_image(cfg_.root, cfg_.run_root, req);
}

std::vector<HistoryEntry> Engine::history(const std::string& ref) {
  oci::Store store(cfg_.root);
  oci::ImageRecord img = store.resolve(ref);
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(oci::image_config_json(store, img));
  } catch (const nlohmann::json::exception& e) {
    throw Error("image " + img.id.substr(0, 12) + " has a malformed config: " + e.what());
  }
  std::vector<HistoryEntry> out;
  size_t layer = 0;
  if (config.contains("history") && config["history"].is_array()) {
    for (const auto& h : config["history"]) {
      if (!h.is_object()) continue;
      HistoryEntry e;
      e.created = h.value("created", "");
      e.created_by = h.value("created_by", "");
      e.comment = h.value("comment", "");
      e.empty_layer = h.value("empty_layer", false);
      if (!e.empty_layer) {
        if (layer < img.layer_unpacked_sizes.size()) e.size = img.layer_unpacked_sizes[layer];
        ++layer;
      }
      out.push_back(std::move(e));
    }
  }
  // Layers the history does not describe (images made without one).
  for (; layer < img.diff_ids.size(); ++layer) {
    HistoryEntry e;
    e.created = img.created;
    if (layer < img.layer_unpacked_sizes.size()) e.size = img.layer_unpacked_sizes[layer];
    out.push_back(std::move(e));
  }
  std::reverse(out.begin(), out.end());
  if (!out.empty()) out.front().id = img.id;
  return out;
}

namespace {

/// Bytes of the unpacked layers `ids` (chain ids), as the records say.
std::map<std::string, uint64_t> layer_sizes(const std::vector<oci::ImageRecord>& imgs) {
  std::map<std::string, uint64_t> sizes;
  for (const auto& r : imgs)
    for (size_t i = 0; i < r.chain_ids.size() && i < r.layer_unpacked_sizes.size(); ++i)
      sizes[r.chain_ids[i]] = r.layer_unpacked_sizes[i];
  return sizes;
}

}  // namespace

ImagePruneResult Engine::prune_images(bool dangling) {
  oci::Store store(cfg_.root);
  ImagePruneResult res;
  std::vector<oci::ImageRecord> all = store.list(true);
  auto sizes = layer_sizes(all);
  std::set<std::string> before;
  for (const auto& [c, s] : sizes) before.insert(c);
  for (const auto& r : all) {
    if (!r.names.empty()) continue;
    if (!r.build_cache && !dangling) continue;
    if (!oci::Store::sandboxes_using(cfg_.run_root, r.id).empty()) continue;
    try {
      store.remove(r.id, cfg_.run_root, false);
    } catch (const Error&) {
      continue;  // removed meanwhile, or taken into use
    }
    res.deleted.push_back(r.id);
    if (r.build_cache) ++res.build_cache;
  }
  std::set<std::string> left;
  for (const auto& r : store.list(true))
    for (const auto& c : r.chain_ids) left.insert(c);
  for (const auto& c : before)
    if (!left.count(c)) res.reclaimed += sizes[c];
  build::BuildCache(store).prune();
  return res;
}

DiskUsage Engine::disk_usage() {
  oci::Store store(cfg_.root);
  DiskUsage du;
  std::vector<oci::ImageRecord> all = store.list(true);
  auto sizes = layer_sizes(all);
  std::set<std::string> listed, named, cache;
  for (const auto& r : all) {
    bool is_cache = r.build_cache && r.names.empty();
    if (is_cache) {
      ++du.build_cache;
      for (const auto& c : r.chain_ids) cache.insert(c);
      continue;
    }
    ++du.images;
    for (const auto& c : r.chain_ids) {
      listed.insert(c);
      if (!r.names.empty() || !oci::Store::sandboxes_using(cfg_.run_root, r.id).empty()) named.insert(c);
    }
  }
  for (const auto& c : listed) {
    du.images_size += sizes[c];
    if (!named.count(c)) du.images_reclaimable += sizes[c];
  }
  for (const auto& c : cache)
    if (!listed.count(c)) du.build_cache_size += sizes[c];
  du.sandboxes = runtime::list_ids(cfg_.run_root).size();
  du.volumes_size = volumes_size(&du.volumes, &du.volumes_unused, &du.volumes_reclaimable);
  return du;
}

}  // namespace sbx::engine
