// The catalog of directory and memory snapshots under the image store:
//   ROOT/snapshots/catalog.json   records, written atomically (temp + rename)
//   ROOT/snapshots/catalog.lock   flock held while the catalog is changed
//   ROOT/snapshots/dirs/<sha256>.tar.zst          directory snapshot blobs
//   ROOT/snapshots/checkpoints/<name>/            memory snapshot images
// Filesystem snapshots are ordinary images in the store (labelled
// sbx.snapshot.kind=fs); list_all() merges them in.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sbx::snapshot {

struct SnapshotRecord {
  std::string name;       ///< unique per kind-independent catalog ("NAME"); images: "name:tag"
  std::string kind;       ///< "fs" | "dir" | "memory"
  std::string id;         ///< dir: sha256 hex of the blob; memory: checkpoint dir name; fs: image id
  uint64_t size = 0;      ///< bytes on disk (blob, checkpoint dir, or the image's own new layer)
  std::string parent;     ///< sandbox id (and image) it was taken from
  std::string runtime;    ///< memory: the backend that took it (restores it); others empty
  std::string source;     ///< dir: the path inside the sandbox; memory: the bundle's image ref
  std::string created;    ///< RFC 3339 UTC
  std::string last_used;  ///< RFC 3339 UTC, empty when never used
};

/// Current time as RFC 3339 UTC with seconds ("2026-11-22T06:10:00Z").
std::string now_rfc3339();

/// Reads the dir/memory records (no images). Absent catalog: empty. Throws
/// sbx::Error when the catalog is corrupt (with its path).
std::vector<SnapshotRecord> read_catalog(const std::string& root);

/// Adds or replaces (same name) a record, under the catalog lock.
void put_record(const std::string& root, const SnapshotRecord& rec);

/// Finds a record by name; throws sbx::Error "snapshot 'x' not found; see
/// 'sbx snapshots'" (exit code 1) when absent, or when its kind is not `kind`
/// (unless `kind` is empty).
SnapshotRecord find_record(const std::string& root, const std::string& name, const std::string& kind = "");

/// Sets last_used of `name` to now (no error when it vanished meanwhile).
void touch_record(const std::string& root, const std::string& name);

/// Removes the record `name` and returns it (throws like find_record). The
/// caller deletes its content (see remove_snapshot).
SnapshotRecord take_record(const std::string& root, const std::string& name);

/// Every snapshot of every kind: the catalog plus images labelled as fs
/// snapshots, newest first.
std::vector<SnapshotRecord> list_all(const std::string& root);

/// `sbx snapshots rm NAME`: removes a dir or memory snapshot (record and
/// content not shared with another record) or an fs snapshot image (as rmi).
/// Throws sbx::Error (exit code 1) when no snapshot has that name.
SnapshotRecord remove_snapshot(const std::string& root, const std::string& run_root, const std::string& name);

/// Retention (`sbx gc --older-than D`): removes dir and memory snapshots and
/// fs snapshot images whose last use (or creation, if never used) is older
/// than `older_than_s` seconds. Returns the removed records. Images used by a
/// live sandbox are kept (rmi refuses them).
std::vector<SnapshotRecord> gc(const std::string& root, const std::string& run_root, int64_t older_than_s);

}  // namespace sbx::snapshot

namespace sbx::snapshot {
/// Parses a retention age: "7d", "2w", or anything common/units.h
/// parse_duration takes ("12h", "30m", "90s"). Returns seconds. Throws sbx::Error.
int64_t parse_age_seconds(const std::string& text);
}  // namespace sbx::snapshot
