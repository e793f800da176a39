#include "oci/index.h"

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fs.h"

namespace sbx::oci {
namespace {

using json = nlohmann::json;
constexpr int kIndexVersion = 1;

json to_json(const ImageRecord& r) {
  json c = {{"Env", r.config.env},
            {"Entrypoint", r.config.entrypoint},
            {"Cmd", r.config.cmd},
            {"WorkingDir", r.config.working_dir},
            {"User", r.config.user},
            {"StopSignal", r.config.stop_signal},
            {"Labels", r.config.labels}};
  json j = {{"id", r.id},
            {"manifest_digest", r.manifest_digest},
            {"names", r.names},
            {"diff_ids", r.diff_ids},
            {"chain_ids", r.chain_ids},
            {"layer_digests", r.layer_digests},
            {"config", c},
            {"created", r.created},
            {"architecture", r.architecture},
            {"os", r.os},
            {"size", r.size},
            {"unpacked_size", r.unpacked_size},
            {"layer_unpacked_sizes", r.layer_unpacked_sizes},
            {"imported", r.imported}};
  if (r.removed) j["removed"] = true;
  if (r.build_cache) j["build_cache"] = true;
  return j;
}

template <class T>
T get_or(const json& j, const char* key, T def) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  return it->get<T>();
}

ImageRecord from_json(const json& j) {
  ImageRecord r;
  r.id = j.at("id").get<std::string>();
  r.manifest_digest = get_or<std::string>(j, "manifest_digest", "");
  r.names = get_or<std::vector<std::string>>(j, "names", {});
  r.diff_ids = get_or<std::vector<std::string>>(j, "diff_ids", {});
  r.chain_ids = get_or<std::vector<std::string>>(j, "chain_ids", {});
  r.layer_digests = get_or<std::vector<std::string>>(j, "layer_digests", {});
  r.created = get_or<std::string>(j, "created", "");
  r.architecture = get_or<std::string>(j, "architecture", "");
  r.os = get_or<std::string>(j, "os", "");
  r.size = get_or<uint64_t>(j, "size", 0);
  r.unpacked_size = get_or<uint64_t>(j, "unpacked_size", 0);
  r.layer_unpacked_sizes = get_or<std::vector<uint64_t>>(j, "layer_unpacked_sizes", {});
  r.imported = get_or<std::string>(j, "imported", "");
  r.removed = get_or<bool>(j, "removed", false);
  r.build_cache = get_or<bool>(j, "build_cache", false);
  if (auto it = j.find("config"); it != j.end() && it->is_object()) {
    const json& c = *it;
    r.config.env = get_or<std::vector<std::string>>(c, "Env", {});
    r.config.entrypoint = get_or<std::vector<std::string>>(c, "Entrypoint", {});
    r.config.cmd = get_or<std::vector<std::string>>(c, "Cmd", {});
    r.config.working_dir = get_or<std::string>(c, "WorkingDir", "");
    r.config.user = get_or<std::string>(c, "User", "");
    r.config.stop_signal = get_or<std::string>(c, "StopSignal", "");
    r.config.labels = get_or<std::map<std::string, std::string>>(c, "Labels", {});
  }
  return r;
}

// The index's text into `text`; false when there is none yet (an empty
// store). Other read errors throw sbx::Error.
bool read_if_exists(const std::string& path, std::string& text) {
  try {
    text = fs::read_file(path);
  } catch (const Error& e) {
    if (e.err() == ENOENT) return false;
    throw;
  }
  return true;
}

}  // namespace

std::vector<ImageRecord> read_index(const std::string& root) {
  std::string path = root + "/images.json";
  std::string text;
  if (!read_if_exists(path, text)) return {};
  std::vector<ImageRecord> out;
  try {
    json j = json::parse(text);
    int v = j.at("version").get<int>();
    if (v != kIndexVersion)
      throw Error("image index " + path + " has version " + std::to_string(v) + "; this sbx reads version " +
                  std::to_string(kIndexVersion));
    for (const auto& img : j.at("images")) out.push_back(from_json(img));
  } catch (const json::exception& e) {
    throw Error("image index " + path + " is corrupt (" + e.what() +
                "); move it away and re-import the images");
  }
  return out;
}

constexpr const char* kIndexHeader = "{\"version\":1,\"images\":[\n";

void write_index(const std::string& root, const std::vector<ImageRecord>& images) {
  std::string out = kIndexHeader;
  for (size_t i = 0; i < images.size(); ++i) {
    out += to_json(images[i]).dump();  // one line: dump() escapes newlines inside strings
    out += i + 1 < images.size() ? ",\n" : "\n";
  }
  out += "]}\n";
  fs::write_file_atomic(root + "/images.json", out, 0644);
}

std::vector<ImageRecord> read_index_matching(const std::string& root, const std::vector<std::string>& needles) {
  std::string path = root + "/images.json";
  std::string text;
  if (!read_if_exists(path, text)) return {};
  std::string_view t(text);
  if (t.substr(0, std::char_traits<char>::length(kIndexHeader)) != kIndexHeader) return read_index(root);
  std::vector<ImageRecord> out;
  size_t pos = std::char_traits<char>::length(kIndexHeader);
  while (pos < t.size()) {
    size_t end = t.find('\n', pos);
    if (end == std::string_view::npos) end = t.size();
    std::string_view line = t.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() || line[0] != '{') continue;  // the closing "]}"
    bool hit = false;
    for (const auto& n : needles) hit = hit || line.find(n) != std::string_view::npos;
    if (!hit) continue;
    if (line.back() == ',') line.remove_suffix(1);
    try {
      out.push_back(from_json(json::parse(line)));
    } catch (const json::exception& e) {
      throw Error("image index " + path + " is corrupt (" + e.what() + "); move it away and re-import the images");
    }
  }
  return out;
}

std::string image_inspect_json(const ImageRecord& r, const std::vector<std::string>& layer_dirs) {
  json j = {
      {"Id", r.id},
      {"Digest", r.manifest_digest},
      {"RepoTags", r.names},
      {"Created", r.created},
      {"Imported", r.imported},
      {"Architecture", r.architecture},
      {"Os", r.os},
      {"Size", r.size},
      {"UnpackedSize", r.unpacked_size},
      {"Config",
       {{"Env", r.config.env},
        {"Entrypoint", r.config.entrypoint},
        {"Cmd", r.config.cmd},
        {"WorkingDir", r.config.working_dir},
        {"User", r.config.user},
        {"StopSignal", r.config.stop_signal},
        {"Labels", r.config.labels}}},
      {"RootFS", {{"Type", "layers"}, {"DiffIDs", r.diff_ids}}},
      {"Layers", r.layer_digests},
      {"ChainIDs", r.chain_ids},
  };
  if (!layer_dirs.empty()) j["LayerDirs"] = layer_dirs;
  return j.dump(2);
}

}  // namespace sbx::oci
