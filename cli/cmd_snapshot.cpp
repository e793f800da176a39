// Snapshot commands: snapshot, snapshot-dir, snapshots (ls/rm/extract/prune),
// export, checkpoint, restore (implemented with snapshot/ and oci/).
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/units.h"
#include "oci/export.h"
#include "oci/store.h"
#include "runtime/gvisor/gvisor_backend.h"
#include "runtime/state.h"
#include "snapshot/catalog.h"
#include "snapshot/checkpoint.h"
#include "snapshot/dir_snapshot.h"
#include "snapshot/fs_snapshot.h"
#include "snapshot/sandbox_fs.h"

namespace sbx::cli {
namespace {

using units::format_size_si;  // podman's SI sizes ("5.12 MB")

/// The sandbox named by `ref` (full id, name or unique id prefix), resolved
/// as every lifecycle command does (same errors, exit 125).
runtime::SandboxState sandbox_state(const Globals& g, const std::string& ref) {
  return runtime::read_state(runtime::sandbox_dir(g.run_root, runtime::resolve_id(g.run_root, ref)));
}

void print_record_table(const std::vector<snapshot::SnapshotRecord>& recs) {
  std::printf("%-28s %-7s %-10s %-14s %-21s %s\n", "NAME", "KIND", "SIZE", "PARENT", "CREATED", "LAST USED");
  for (const auto& r : recs)
    std::printf("%-28s %-7s %-10s %-14s %-21s %s\n", r.name.c_str(), r.kind.c_str(), format_size_si(r.size).c_str(),
                r.parent.substr(0, 12).c_str(), r.created.c_str(), r.last_used.empty() ? "-" : r.last_used.c_str());
}

nlohmann::json record_json(const snapshot::SnapshotRecord& r) {
  return {{"Name", r.name},     {"Kind", r.kind},       {"Id", r.id},         {"Size", r.size},
          {"Parent", r.parent}, {"Runtime", r.runtime}, {"Source", r.source}, {"Created", r.created},
          {"LastUsed", r.last_used}};
}

}  // namespace

void register_snapshot_commands(CLI::App& app, Globals& g, Action& action) {
  // sbx snapshot ID [--name NAME[:TAG]]  |  sbx snapshot --upper DIR --image IMAGE
  {
    auto* cmd = app.add_subcommand("snapshot", "Save a sandbox's file system changes as a new image (one layer on its image)");
    static std::string id, name, upper, image;
    cmd->add_option("ID", id, "Sandbox id or name");
    cmd->add_option("--name", name, "Name for the new image: repository[:tag]");
    cmd->add_option("--upper", upper, "Instead of a sandbox: commit this overlay upper dir ...");
    cmd->add_option("--image", image, "... on top of this image (with --upper)");
    cmd->callback([&] {
      action = [&] {
        oci::Store store(g.root);
        snapshot::FsSnapshotRequest req;
        std::string parent_id;
        std::optional<fs::FileLock> one_at_a_time;
        if (!upper.empty()) {
          if (image.empty() || !id.empty()) throw Error("--upper needs --image and no sandbox ID");
          req.upper_dir = upper;
          req.parent_image = image;
        } else {
          if (id.empty()) throw Error("sbx snapshot: give a sandbox ID (or --upper DIR --image IMAGE)");
          runtime::SandboxState st = sandbox_state(g, id);
          if (st.runtime == "gvisor")
            throw Error("sandbox " + id + " runs on gvisor, whose writes live in runsc's memory, not in a host directory; "
                        "save it with 'sbx checkpoint " + id + "' instead");
          // Two snapshots of one sandbox at once: the first thaw would let the
          // second read a running sandbox. They take turns.
          one_at_a_time.emplace(runtime::sandbox_dir(g.run_root, st.id) + "/snapshot.lock");
          snapshot::SandboxFs sfs = snapshot::sandbox_fs(g.run_root, st);
          req.upper_dir = sfs.upper_dir;
          req.freeze_cgroups = sfs.freeze_cgroups;
          req.uid_map = sfs.uid_map;
          req.gid_map = sfs.gid_map;
          req.freeze_members = sfs.freeze_members;
          req.parent_image = st.image_id.empty() ? st.image_ref : st.image_id;
          parent_id = st.id;
        }
        req.commit.name = name;
        req.commit.created_by = "sbx snapshot " + (parent_id.empty() ? req.upper_dir : parent_id);
        req.commit.labels = {{"sbx.snapshot.kind", "fs"}, {"sbx.snapshot.parent", parent_id.empty() ? req.parent_image : parent_id}};
        auto res = snapshot::snapshot_upper(store, req);
        std::cout << res.image.id << "\n";
        return 0;
      };
    });
  }
  // sbx export IMAGE -o FILE [--format oci-archive|docker-archive]
  {
    auto* cmd = app.add_subcommand("export", "Write an image (snapshots too) as an oci-archive or docker-archive");
    static std::string ref, out, format = "oci-archive", name;
    cmd->add_option("IMAGE", ref, "Image name or id")->required();
    cmd->add_option("-o,--output", out, "Archive file to write")->required();
    cmd->add_option("--format", format, "oci-archive or docker-archive")->capture_default_str();
    cmd->add_option("--name", name, "Name to record in the archive (default: the image's name)");
    cmd->callback([&] {
      action = [&] {
        oci::Store store(g.root);
        auto r = oci::export_image(store, ref, out, oci::parse_archive_format(format), name);
        if (g.json)
          std::cout << nlohmann::json{{"Id", r.image_id}, {"Digest", r.manifest_digest}, {"Name", r.name}, {"Size", r.bytes}}.dump(2) << "\n";
        else
          std::cout << r.manifest_digest << "\n";
        return 0;
      };
    });
    cmd->add_flag("--json", g.json, "Print JSON");
  }
  // sbx snapshot-dir ID PATH [--name NAME]  |  sbx snapshot-dir --host-dir DIR --name NAME
  {
    auto* cmd = app.add_subcommand("snapshot-dir", "Save one directory of a sandbox as a content-addressed snapshot");
    static std::string id, path, name, host_dir;
    cmd->add_option("ID", id, "Sandbox id or name");
    cmd->add_option("PATH", path, "Directory inside the sandbox");
    cmd->add_option("--name", name, "Snapshot name (default: dir-<digest prefix>)");
    cmd->add_option("--host-dir", host_dir, "Instead of a sandbox: capture this host directory");
    cmd->callback([&] {
      action = [&] {
        snapshot::SnapshotRecord rec;
        snapshot::DirSnapshotRequest req;
        req.name = name;
        if (!host_dir.empty()) {
          if (!id.empty()) throw Error("--host-dir takes no sandbox ID");
          req.dir = host_dir;
          req.parent = "host";
          rec = snapshot::snapshot_dir(g.root, req);
        } else {
          if (id.empty() || path.empty()) throw Error("sbx snapshot-dir: give a sandbox ID and a PATH inside it (or --host-dir DIR)");
          runtime::SandboxState st = sandbox_state(g, id);
          if (st.runtime == "gvisor")
            throw Error("sandbox " + id + " runs on gvisor, whose files live in runsc's memory; directory snapshots need a native sandbox");
          if (!runtime::state_alive(st)) throw Error("sandbox " + id + " is not running; start it to snapshot a directory of it");
          req.parent = st.id;
          fs::FileLock one_at_a_time(runtime::sandbox_dir(g.run_root, st.id) + "/snapshot.lock");  // as snapshot
          snapshot::freeze_cgroups(g.run_root, st, req.freeze_cgroups, req.freeze_members);
          snapshot::sandbox_id_maps(g.run_root, st, req.uid_map, req.gid_map);
          rec = snapshot::snapshot_sandbox_dir(g.root, st.pid, path, req);
        }
        std::cout << rec.name << "\n";
        return 0;
      };
    });
  }
  // sbx snapshots [--json] | snapshots rm NAME... | snapshots extract NAME DIR | snapshots prune --older-than D
  {
    auto* cmd = app.add_subcommand("snapshots", "List snapshots of every kind (fs, dir, memory)");
    cmd->add_flag("--json", g.json, "Print JSON");
    cmd->callback([&, cmd] {
      if (!cmd->get_subcommands().empty()) return;
      action = [&] {
        auto recs = snapshot::list_all(g.root);
        if (g.json) {
          nlohmann::json arr = nlohmann::json::array();
          for (const auto& r : recs) arr.push_back(record_json(r));
          std::cout << arr.dump(2) << "\n";
        } else {
          print_record_table(recs);
        }
        return 0;
      };
    });
    auto* rm = cmd->add_subcommand("rm", "Remove snapshots (fs snapshots are images: as sbx rmi)");
    static std::vector<std::string> names;
    rm->add_option("NAME", names, "Snapshot names")->required();
    rm->callback([&] {
      action = [&] {
        for (const auto& n : names) std::cout << snapshot::remove_snapshot(g.root, g.run_root, n).name << "\n";
        return 0;
      };
    });
    auto* ex = cmd->add_subcommand("extract", "Extract a directory snapshot into a host directory");
    static std::string xname, xdir;
    ex->add_option("NAME", xname, "Directory snapshot")->required();
    ex->add_option("DIR", xdir, "Target directory (created; must be empty)")->required();
    ex->callback([&] {
      action = [&] {
        if (fs::exists(xdir) && !std::filesystem::is_empty(xdir)) throw Error("extract: " + xdir + " is not empty");
        snapshot::extract_dir_snapshot(g.root, xname, xdir);
        return 0;
      };
    });
    auto* pr = cmd->add_subcommand("prune", "Remove snapshots not used for longer than --older-than");
    static std::string older;
    pr->add_option("--older-than", older, "Age, e.g. 7d, 12h, 30m")->required();
    pr->callback([&] {
      action = [&] {
        auto removed = snapshot::gc(g.root, g.run_root, snapshot::parse_age_seconds(older));
        for (const auto& r : removed) std::cout << "removed " << r.kind << " snapshot " << r.name << "\n";
        return 0;
      };
    });
  }
  // sbx checkpoint ID [--name NAME] [--leave-running]
  {
    auto* cmd = app.add_subcommand("checkpoint", "Save a running sandbox's memory and file system (gvisor; native needs CRIU)");
    static std::string id, name, runsc;
    static bool leave = false;
    cmd->add_option("ID", id, "Sandbox id or name")->required();
    cmd->add_option("--name", name, "Snapshot name (default: ckpt-<id>-<random>)");
    cmd->add_flag("--leave-running", leave,
                  "Keep the sandbox running: it is resumed from the checkpoint under the same id and name");
    cmd->add_option("--runsc", runsc, "Path to runsc");
    cmd->callback([&] {
      action = [&] {
        runtime::SandboxState st = sandbox_state(g, id);
        if (st.runtime != "gvisor") snapshot::fail_native_checkpoint();
        if (!runtime::state_alive(st)) throw Error("sandbox " + id + " is not running; only a running sandbox can be checkpointed");
        auto req = snapshot::gvisor_request(g.run_root, st);
        req.runsc = runtime::find_runsc(runsc);
        req.name = name;
        // runsc's own --leave-running (destroy + restore in place) fails on
        // Debian's runsc 20221219 and kills the sandbox: sbx does the same two steps.
        auto rec = leave ? snapshot::checkpoint_gvisor_resume(g.root, g.run_root, req)
                         : snapshot::checkpoint_gvisor(g.root, req);
        std::cout << rec.name << "\n";
        return 0;
      };
    });
  }
  // sbx restore NAME [--name NEW] [--count N]
  {
    auto* cmd = app.add_subcommand("restore", "Start sandboxes that continue from a memory snapshot");
    static std::string name, newname, runsc;
    static int count = 1;
    cmd->add_option("NAME", name, "Memory snapshot")->required();
    cmd->add_option("--name", newname, "Name of the new sandbox (with --count: NEW-1, NEW-2, ...)");
    cmd->add_option("--count", count, "Independent copies to start")->capture_default_str();
    cmd->add_option("--runsc", runsc, "Path to runsc");
    cmd->add_flag("--json", g.json, "Print JSON");
    cmd->callback([&] {
      action = [&] {
        snapshot::RestoreOptions o;
        o.runsc = runtime::find_runsc(runsc);
        o.run_root = g.run_root;
        o.count = count;
        o.name = newname;
        auto out = snapshot::restore_gvisor(g.root, name, o);
        if (g.json) {
          nlohmann::json arr = nlohmann::json::array();
          for (const auto& s : out) arr.push_back({{"Id", s.id}, {"Pid", s.pid}, {"Output", s.output}, {"RestoreMs", s.restore_ms}});
          std::cout << arr.dump(2) << "\n";
        } else {
          for (const auto& s : out) std::cout << s.id << "\n";
        }
        return 0;
      };
    });
  }
}

}  // namespace sbx::cli
