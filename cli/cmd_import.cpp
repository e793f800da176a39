// sbx import: an OCI layout, oci-archive or docker-archive into the store (engine/engine.h).
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "common/units.h"
#include "oci/store.h"

namespace sbx::cli {
namespace {

using units::format_size_si;  // podman's SI sizes ("5.12 MB")

// One progress line on a terminal, rewritten in place; nothing otherwise.
struct ProgressLine {
  bool tty = ::isatty(2);
  std::string last;
  int last_layer = -1;
  std::chrono::steady_clock::time_point last_time{};
  void operator()(const oci::ImportProgress& p) {
    if (!tty) return;
    std::string s;
    if (p.phase == "unpacking")
      s = "Unpacking layer " + std::to_string(p.layer) + "/" + std::to_string(p.layers) + ": " + format_size_si(p.bytes) +
          " / " + format_size_si(p.total);
    else
      s = (p.phase == "reading" ? "Reading archive: " : "Copying blobs: ") + format_size_si(p.bytes) +
          (p.total ? " / " + format_size_si(p.total) : "");
    // At most ~10 updates a second, but always when the layer changes.
    auto now = std::chrono::steady_clock::now();
    if (s == last || (p.layer == last_layer && now - last_time < std::chrono::milliseconds(100))) return;
    last = s;
    last_layer = p.layer;
    last_time = now;
    std::fprintf(stderr, "\r\033[K%s", s.c_str());
    std::fflush(stderr);
  }
  void done() {
    if (tty && !last.empty()) std::fprintf(stderr, "\r\033[K");
  }
};

}  // namespace

void register_import_command(CLI::App& app, Globals& g, Action& action) {
  // sbx import PATH [NAME[:TAG]]
  auto* cmd = app.add_subcommand("import", "Import an OCI image layout dir, oci-archive or docker-archive into the store");
  static std::string path, name;
  static bool quiet = false;
  cmd->add_option("PATH", path, "OCI layout directory, oci-archive tar or docker-archive tar")->required();
  cmd->add_option("NAME", name, "Name to give the image: repository[:tag] (default: the name in the archive)");
  cmd->add_flag("-q,--quiet", quiet, "No progress output");
  cmd->callback([&] {
    action = [&] {
      ProgressLine line;
      line.tty = line.tty && !quiet;
      engine::ImportRequest req;
      req.path = path;
      req.name = name;
      req.progress = [&](const oci::ImportProgress& p) { line(p); };
      oci::ImageRecord img;
      try {
        img = make_engine(g).import_image(req);
      } catch (...) {
        line.done();
        throw;
      }
      line.done();
      std::cout << img.id << "\n";
      return 0;
    };
  });
}

}  // namespace sbx::cli
