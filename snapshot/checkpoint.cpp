#include "snapshot/checkpoint.h"

#include <cstring>
#include <filesystem>
#include <random>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "oci/tree.h"

namespace sbx::snapshot {

namespace {

std::string ckpt_dir(const std::string& root, const std::string& id) { return root + "/snapshots/checkpoints/" + id; }

std::string random_hex(size_t n) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* k = "0123456789abcdef";
  std::string s;
  while (s.size() < n) s += k[rng() & 15];
  return s;
}

uint64_t dir_bytes(const std::string& d) {
  uint64_t n = 0;
  std::error_code ec;
  for (auto& e : std::filesystem::recursive_directory_iterator(d, ec))
    if (e.is_regular_file(ec)) n += e.file_size(ec);
  return n;
}

}  // namespace

SnapshotRecord checkpoint_sandbox(const std::string& root, runtime::Backend& backend, const runtime::SandboxRef& sb,
                                  const std::string& name_in, bool leave_running) {
  const std::string& sid = sb.state.id;
  if (sid.empty()) throw Error("checkpoint: no sandbox id given");
  std::string name = name_in.empty() ? "ckpt-" + sid.substr(0, 12) + "-" + random_hex(6) : name_in;
  if (name.find('/') != std::string::npos || name.find(':') != std::string::npos || name[0] == '.')
    throw Error(ErrorKind::InvalidArgument,
                "invalid snapshot name '" + name + "': use letters, digits, '.', '-', '_' (no '/' or ':')");
  const std::string id = random_hex(32);  // content dir: names can be reused while an old copy is removed
  runtime::CheckpointRequest req;
  req.dir = ckpt_dir(root, id);
  req.name = name;
  req.leave_running = leave_running;
  runtime::CheckpointResult res;
  try {
    res = backend.checkpoint(sb, req);
  } catch (...) {
    // (The backend removes what it wrote; a directory it left goes too.)
    if (fs::exists(req.dir)) {
      try {
        oci::remove_tree(req.dir);
      } catch (const Error& e) {
        log::warn(e.what());
      }
    }
    throw;
  }
  SnapshotRecord rec;
  rec.name = name;
  rec.kind = "memory";
  rec.runtime = backend.name();
  rec.id = id;
  rec.size = dir_bytes(req.dir);
  rec.parent = sid;
  rec.source = res.image;
  rec.created = now_rfc3339();
  // A name reused: the old content goes once the new record replaces it.
  std::vector<SnapshotRecord> old = read_catalog(root);
  put_record(root, rec);
  for (const auto& o : old)
    if (o.name == name && o.kind == "memory" && o.id != id) {
      try {
        oci::remove_tree(ckpt_dir(root, o.id));
      } catch (const Error& e) {
        log::warn(e.what());
      }
    }
  if (!res.resume_error.empty())
    throw Error("sandbox " + sid.substr(0, 12) + " was checkpointed as '" + name +
                    "' but could not be resumed (--leave-running), so it is stopped: " + res.resume_error +
                    "; start a copy with 'sbx restore " + name + "'",
                0, res.resume_exit_code ? res.resume_exit_code : kExitSbxFailed);
  return rec;
}

std::vector<RestoredSandbox> restore_sandboxes(const std::string& root, runtime::Backend& backend,
                                               const std::string& snapshot, const std::string& name, int count) {
  if (count < 1 || count > 4096) throw Error(ErrorKind::InvalidArgument, "--count must be between 1 and 4096");
  SnapshotRecord rec = find_record(root, snapshot, "memory");
  runtime::RestoreRequest req;
  req.dir = ckpt_dir(root, rec.id);
  req.snapshot = snapshot;
  req.name = name;
  req.count = count;
  auto out = backend.restore(req);
  touch_record(root, snapshot);
  return out;
}

}  // namespace sbx::snapshot
