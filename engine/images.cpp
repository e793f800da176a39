// Engine: images (oci/store.h, oci/export.h).
#include "engine/engine.h"

#include "common/log.h"

namespace sbx::engine {

oci::ImageRecord Engine::import_image(const ImportRequest& req) {
  oci::Store store(cfg_.root);
  oci::ImportOptions o;
  o.name = req.name;
  o.progress = req.progress;
  log::debug("import " + req.path + (req.name.empty() ? "" : " as " + req.name));
  oci::ImageRecord rec = store.import(req.path, o);
  log::debug("import " + req.path + ": image " + rec.id.substr(0, 12) + ", " + std::to_string(rec.diff_ids.size()) +
             " layers, " + std::to_string(rec.size) + " bytes");
  return rec;
}

std::vector<oci::ImageRecord> Engine::list_images() { return oci::Store(cfg_.root).list(); }

std::string Engine::inspect_image(const std::string& ref) {
  oci::Store store(cfg_.root);
  oci::ImageRecord img = store.resolve(ref);
  return oci::image_inspect_json(img, store.layer_dirs(img));
}

void Engine::tag_image(const std::string& ref, const std::string& name) { oci::Store(cfg_.root).tag(ref, name); }

oci::RemoveResult Engine::remove_image(const std::string& ref, bool force) {
  return oci::Store(cfg_.root).remove(ref, cfg_.run_root, force);
}

oci::ExportResult Engine::export_image(const std::string& ref, const std::string& out, const std::string& format,
                                       const std::string& name) {
  oci::Store store(cfg_.root);
  return oci::export_image(store, ref, out, oci::parse_archive_format(format), name);
}

uint64_t Engine::export_images(const std::vector<std::pair<std::string, std::string>>& images, const std::string& out) {
  oci::Store store(cfg_.root);
  return oci::export_docker_archive(store, images, out);
}

}  // namespace sbx::engine
