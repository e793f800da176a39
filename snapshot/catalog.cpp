#include "snapshot/catalog.h"

#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/units.h"
#include "oci/store.h"
#include "oci/tree.h"

namespace sbx::snapshot {

namespace {

using json = nlohmann::json;

std::string dir_of(const std::string& root) { return root + "/snapshots"; }
std::string file_of(const std::string& root) { return dir_of(root) + "/catalog.json"; }

json to_json(const SnapshotRecord& r) {
  return {{"name", r.name},     {"kind", r.kind},       {"id", r.id},           {"size", r.size},
          {"parent", r.parent}, {"runtime", r.runtime}, {"source", r.source},   {"created", r.created},
          {"last_used", r.last_used}};
}

SnapshotRecord from_json(const json& j) {
  SnapshotRecord r;
  r.name = j.at("name").get<std::string>();
  r.kind = j.at("kind").get<std::string>();
  r.id = j.at("id").get<std::string>();
  r.size = j.value("size", uint64_t{0});
  r.parent = j.value("parent", "");
  r.runtime = j.value("runtime", "");
  r.source = j.value("source", "");
  r.created = j.value("created", "");
  r.last_used = j.value("last_used", "");
  return r;
}

std::vector<SnapshotRecord> read_unlocked(const std::string& root) {
  std::string path = file_of(root);
  if (!fs::exists(path)) return {};
  std::vector<SnapshotRecord> out;
  try {
    json j = json::parse(fs::read_file(path));
    for (const auto& e : j.at("snapshots")) out.push_back(from_json(e));
  } catch (const json::exception& e) {
    throw Error("snapshot catalog " + path + " is corrupt (" + e.what() + "); move it away to start afresh");
  }
  return out;
}

void write_unlocked(const std::string& root, const std::vector<SnapshotRecord>& recs) {
  json arr = json::array();
  for (const auto& r : recs) arr.push_back(to_json(r));
  fs::write_file_atomic(file_of(root), json{{"snapshots", arr}}.dump(2), 0600);
}

fs::FileLock lock(const std::string& root) {
  fs::mkdir_p(dir_of(root), 0700);
  return fs::FileLock(dir_of(root) + "/catalog.lock", fs::FileLock::Exclusive);
}

int64_t parse_time(const std::string& s) {
  std::tm tm{};
  if (s.empty() || !::strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return 0;
  return static_cast<int64_t>(::timegm(&tm));
}

[[noreturn]] void not_found(const std::string& name) {
  throw Error(ErrorKind::SnapshotNotFound, "snapshot '" + name + "' not found; see 'sbx snapshots'", ENOENT);
}

/// Deletes what a catalog record owns, unless another record still uses it.
void delete_content(const std::string& root, const SnapshotRecord& r, const std::vector<SnapshotRecord>& rest) {
  for (const auto& o : rest)
    if (o.kind == r.kind && o.id == r.id) return;  // same content under another name
  if (r.kind == "dir") {
    std::string blob = dir_of(root) + "/dirs/" + r.id + ".tar.zst";
    if (::unlink(blob.c_str()) < 0 && errno != ENOENT) throw_errno("remove " + blob);
    oci::remove_tree(dir_of(root) + "/unpacked/" + r.id);
  } else if (r.kind == "memory") {
    oci::remove_tree(dir_of(root) + "/checkpoints/" + r.id);
  }
}

}  // namespace

std::string now_rfc3339() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::vector<SnapshotRecord> read_catalog(const std::string& root) {
  if (!fs::exists(dir_of(root))) return {};
  auto l = lock(root);
  return read_unlocked(root);
}

void put_record(const std::string& root, const SnapshotRecord& rec) {
  auto l = lock(root);
  auto recs = read_unlocked(root);
  recs.erase(std::remove_if(recs.begin(), recs.end(), [&](const SnapshotRecord& r) { return r.name == rec.name; }),
             recs.end());
  recs.push_back(rec);
  write_unlocked(root, recs);
}

SnapshotRecord find_record(const std::string& root, const std::string& name, const std::string& kind) {
  for (const auto& r : read_catalog(root))
    if (r.name == name) {
      if (!kind.empty() && r.kind != kind)
        throw Error("snapshot '" + name + "' is a " + r.kind + " snapshot, not a " + kind + " snapshot", 0);
      return r;
    }
  not_found(name);
}

void touch_record(const std::string& root, const std::string& name) {
  auto l = lock(root);
  auto recs = read_unlocked(root);
  for (auto& r : recs)
    if (r.name == name) {
      r.last_used = now_rfc3339();
      write_unlocked(root, recs);
      return;
    }
}

SnapshotRecord take_record(const std::string& root, const std::string& name) {
  auto l = lock(root);
  auto recs = read_unlocked(root);
  auto it = std::find_if(recs.begin(), recs.end(), [&](const SnapshotRecord& r) { return r.name == name; });
  if (it == recs.end()) not_found(name);
  SnapshotRecord r = *it;
  recs.erase(it);
  write_unlocked(root, recs);
  delete_content(root, r, recs);
  return r;
}

std::vector<SnapshotRecord> list_all(const std::string& root) {
  std::vector<SnapshotRecord> out = read_catalog(root);
  if (fs::exists(root + "/images.json")) {
    oci::Store store(root);
    for (const auto& img : store.list()) {
      auto& l = img.config.labels;
      auto k = l.find("sbx.snapshot.kind");
      if (k == l.end() || k->second != "fs") continue;
      SnapshotRecord r;
      r.kind = "fs";
      r.name = img.names.empty() ? img.id.substr(0, 12) : img.names.front();
      r.id = img.id;
      r.size = img.layer_unpacked_sizes.empty() ? 0 : img.layer_unpacked_sizes.back();
      auto p = l.find("sbx.snapshot.parent");
      r.parent = p == l.end() ? "" : p->second;
      r.created = img.created.substr(0, 19) + (img.created.size() >= 19 ? "Z" : "");
      out.push_back(r);
    }
  }
  std::sort(out.begin(), out.end(), [](const SnapshotRecord& a, const SnapshotRecord& b) { return a.created > b.created; });
  return out;
}

SnapshotRecord remove_snapshot(const std::string& root, const std::string& run_root, const std::string& name) {
  for (const auto& r : read_catalog(root))
    if (r.name == name) return take_record(root, name);
  for (const auto& r : list_all(root))
    if (r.kind == "fs" && (r.name == name || r.id == name)) {
      oci::Store store(root);
      store.remove(r.id, run_root, false);
      return r;
    }
  not_found(name);
}

std::vector<SnapshotRecord> gc(const std::string& root, const std::string& run_root, int64_t older_than_s) {
  std::vector<SnapshotRecord> removed;
  const int64_t cutoff = static_cast<int64_t>(std::time(nullptr)) - older_than_s;
  for (const auto& r : list_all(root)) {
    int64_t t = parse_time(r.last_used.empty() ? r.created : r.last_used);
    if (t == 0 || t >= cutoff) continue;
    try {
      remove_snapshot(root, run_root, r.kind == "fs" ? r.id : r.name);
      removed.push_back(r);
    } catch (const Error& e) {
      log::warn("snapshot gc: keeping " + r.name + ": " + e.what());
    }
  }
  return removed;
}

int64_t parse_age_seconds(const std::string& text) {
  if (!text.empty() && (text.back() == 'd' || text.back() == 'w')) {
    std::string n = text.substr(0, text.size() - 1);
    if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos)
      throw Error(ErrorKind::InvalidArgument, "invalid age '" + text + "': expected e.g. 7d, 2w, 12h, 30m");
    return std::stoll(n) * (text.back() == 'd' ? 86400 : 7 * 86400);
  }
  return std::chrono::duration_cast<std::chrono::seconds>(units::parse_duration(text, "age")).count();
}

}  // namespace sbx::snapshot
