// Snapshot commands: snapshot, snapshot-dir, snapshots (ls/rm/extract/prune),
// export, checkpoint, restore (engine/engine.h).
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/error.h"
#include "common/units.h"
#include "snapshot/catalog.h"

namespace sbx::cli {
namespace {

using units::format_size_si;  // podman's SI sizes ("5.12 MB")

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
        engine::FsSnapshotRequest req;
        req.sandbox = id;
        req.upper_dir = upper;
        req.parent_image = image;
        req.name = name;
        auto res = make_engine(g).snapshot_fs(req);
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
        auto r = make_engine(g).export_image(ref, out, format, name);
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
        engine::DirSnapshotRequest req;
        req.sandbox = id;
        req.path = path;
        req.host_dir = host_dir;
        req.name = name;
        snapshot::SnapshotRecord rec = make_engine(g).snapshot_dir(req);
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
        auto recs = make_engine(g).list_snapshots();
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
        auto eng = make_engine(g);
        for (const auto& n : names) std::cout << eng.remove_snapshot(n).name << "\n";
        return 0;
      };
    });
    auto* ex = cmd->add_subcommand("extract", "Extract a directory snapshot into a host directory");
    static std::string xname, xdir;
    ex->add_option("NAME", xname, "Directory snapshot")->required();
    ex->add_option("DIR", xdir, "Target directory (created; must be empty)")->required();
    ex->callback([&] {
      action = [&] {
        make_engine(g).extract_snapshot(xname, xdir);
        return 0;
      };
    });
    auto* pr = cmd->add_subcommand("prune", "Remove snapshots not used for longer than --older-than");
    static std::string older;
    pr->add_option("--older-than", older, "Age, e.g. 7d, 12h, 30m")->required();
    pr->callback([&] {
      action = [&] {
        auto removed = make_engine(g).prune_snapshots(snapshot::parse_age_seconds(older));
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
        engine::CheckpointRequest req;
        req.sandbox = id;
        req.name = name;
        req.leave_running = leave;
        req.runsc = runsc;
        auto rec = make_engine(g).checkpoint(req);
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
        engine::RestoreRequest req;
        req.snapshot = name;
        req.name = newname;
        req.count = count;
        req.runsc = runsc;
        auto out = make_engine(g).restore(req);
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
