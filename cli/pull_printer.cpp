// The pull/push progress printer (cli/commands.h make_pull_printer): podman's
// per-blob lines on a terminal, plain lines for logs, JSON events with --json.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/units.h"

namespace sbx::cli {

PullPrinter make_pull_printer(bool quiet, bool json) {
  struct Line {
    std::string status;
    uint64_t bytes = 0, total = 0;
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  };
  struct State {
    bool tty = ::isatty(2);
    std::vector<std::string> order;
    std::map<std::string, Line> lines;
    size_t drawn = 0;
    std::chrono::steady_clock::time_point last{};
    std::string unpack;
  };
  auto st = std::make_shared<State>();
  return [st, quiet, json](const oci::PullEvent& e) {
    if (json) {
      nlohmann::json j = {{"event", e.kind}, {"digest", e.digest}, {"bytes", e.bytes}, {"total", e.total}};
      if (e.kind == "unpacking") j["layer"] = e.layer, j["layers"] = e.layers;
      std::fprintf(stderr, "%s\n", j.dump().c_str());
      return;
    }
    if (quiet) return;
    std::string short_id = e.digest.substr(e.digest.find(':') + 1).substr(0, 12);
    if (!st->tty) {  // plain lines for logs
      if (e.kind == "resolved") std::fprintf(stderr, "Getting image source signatures\n");
      if (e.kind == "blob-exists") std::fprintf(stderr, "Copying blob %s skipped: already exists\n", short_id.c_str());
      if (e.kind == "blob-start") std::fprintf(stderr, "Copying blob %s\n", short_id.c_str());
      if (e.kind == "blob-mounted")
        std::fprintf(stderr, "Copying blob %s skipped: mounted from another repository\n", short_id.c_str());
      if (e.kind == "blob-done")
        std::fprintf(stderr, "Copying blob %s done %s\n", short_id.c_str(), units::format_size_si(e.bytes).c_str());
      if (e.kind == "unpacking" && e.bytes == 0) std::fprintf(stderr, "Unpacking layer %d/%d\n", e.layer, e.layers);
      if (e.kind == "done") std::fprintf(stderr, "Writing manifest to image destination\n");
      return;
    }
    // A terminal: one line per blob, redrawn in place (as podman).
    auto now = std::chrono::steady_clock::now();
    if (e.kind.rfind("blob-", 0) == 0) {
      if (!st->lines.count(e.digest)) st->order.push_back(e.digest);
      Line& l = st->lines[e.digest];
      l.bytes = e.bytes;
      l.total = e.total;
      l.status = e.kind == "blob-exists"    ? "skipped: already exists"
                 : e.kind == "blob-mounted" ? "skipped: mounted from another repository"
                 : e.kind == "blob-done"    ? "done"
                                            : "";
    } else if (e.kind == "unpacking") {
      st->unpack = "Unpacking layer " + std::to_string(e.layer) + "/" + std::to_string(e.layers) + " " +
                   units::format_size_si(e.bytes) + " / " + units::format_size_si(e.total);
    }
    bool final = e.kind == "done";
    if (!final && e.kind == "blob-progress" && now - st->last < std::chrono::milliseconds(100)) return;
    if (!final && e.kind == "unpacking" && now - st->last < std::chrono::milliseconds(100) && e.bytes != 0) return;
    st->last = now;
    std::string out;
    if (st->drawn) out += "\033[" + std::to_string(st->drawn) + "A";
    size_t n = 0;
    for (const auto& d : st->order) {
      const Line& l = st->lines[d];
      std::string s = "Copying blob " + d.substr(d.find(':') + 1).substr(0, 12) + " ";
      if (!l.status.empty()) {
        s += l.status;
      } else {
        double secs = std::chrono::duration<double>(now - l.t0).count();
        s += units::format_size_si(l.bytes) + " / " + units::format_size_si(l.total);
        if (secs > 0.2) s += " (" + units::format_size_si(static_cast<uint64_t>(l.bytes / secs)) + "/s)";
      }
      out += "\r\033[K" + s + "\n";
      ++n;
    }
    if (!st->unpack.empty()) {
      out += "\r\033[K" + (final ? std::string("Writing manifest to image destination") : st->unpack) + "\n";
      ++n;
    }
    st->drawn = n;
    std::fputs(out.c_str(), stderr);
    std::fflush(stderr);
  };
}

}  // namespace sbx::cli
