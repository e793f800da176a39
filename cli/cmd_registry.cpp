// Registry commands: pull, push, login, logout (oci/pull.h, oci/push.h,
// oci/auth_config.h do the work; this file parses flags and prints).
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <termios.h>

#include "cli/commands.h"
#include "common/error.h"
#include "common/units.h"
#include "engine/engine.h"

namespace sbx::cli {
namespace {

// Flags every registry command shares (podman's names).
struct RegistryFlags {
  std::string tls_verify = "true", authfile, cert_dir = "/etc/containers/certs.d";
};

void add_registry_flags(CLI::App* cmd, RegistryFlags& f) {
  cmd->add_option("--tls-verify", f.tls_verify,
                  "Verify TLS certificates (false: also allows plain HTTP; plain HTTP is always allowed for localhost/127.0.0.1)")
      ->check(CLI::IsMember({"true", "false"}))
      ->capture_default_str();
  cmd->add_option("--authfile", f.authfile, "Credentials file (default: $REGISTRY_AUTH_FILE or ${XDG_RUNTIME_DIR}/containers/auth.json)");
  cmd->add_option("--cert-dir", f.cert_dir, "Directory of HOST/ca.crt CA files")->capture_default_str();
}

oci::RegistryOptions registry_options(const RegistryFlags& f) {
  oci::RegistryOptions o;
  o.tls_verify = f.tls_verify != "false";
  o.authfile = f.authfile;
  o.cert_dir = f.cert_dir;
  return o;
}

}  // namespace

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

void register_registry_commands(CLI::App& app, Globals& g, Action& action) {
  // sbx pull [--platform P] [-q] [--json] REF
  {
    auto* cmd = app.add_subcommand("pull", "Pull an image from a registry into the store");
    static std::string ref, platform, conf = oci::default_registries_conf();
    static bool quiet = false;
    static int jobs = 3;
    static RegistryFlags rf;
    cmd->add_option("IMAGE", ref, "Image reference: [REGISTRY/]REPOSITORY[:TAG|@DIGEST] (docker.io when no registry)")
        ->required();
    cmd->add_option("--platform", platform, "os/arch[/variant] to pick from a multi-platform image (default: the host's)");
    cmd->add_flag("-q,--quiet", quiet, "No progress output; print only the image id");
    cmd->add_flag("--json", g.json, "Progress as JSON lines on stderr (one event a line)");
    cmd->add_option("--registries-conf", conf,
                    "registries.conf: search registries for short names, insecure/blocked registries, mirrors (default: $CONTAINERS_REGISTRIES_CONF, else /etc/containers/registries.conf)")
        ->capture_default_str();
    cmd->add_option("--jobs", jobs, "Blobs to download at once")->capture_default_str()->check(CLI::Range(1, 16));
    add_registry_flags(cmd, rf);
    cmd->callback([&] {
      action = [&] {
        oci::PullOptions o;
        o.registry = registry_options(rf);
        o.platform = platform;
        o.jobs = jobs;
        o.registries_conf = conf;
        o.progress = make_pull_printer(quiet, g.json);
        oci::ImageRecord rec = make_engine(g).pull(ref, o);
        std::cout << rec.id << "\n";
        return 0;
      };
    });
  }
  // sbx push IMAGE [DEST]
  {
    auto* cmd = app.add_subcommand("push", "Push an image of the store (snapshots too) to a registry");
    static std::string image, dest;
    static bool quiet = false;
    static RegistryFlags rf;
    cmd->add_option("IMAGE", image, "Image in the store (name, id or snapshot image)")->required();
    cmd->add_option("DEST", dest, "Where to: REGISTRY/REPOSITORY[:TAG] (default: IMAGE's own name)");
    cmd->add_flag("-q,--quiet", quiet, "No progress output");
    cmd->add_flag("--json", g.json, "Progress as JSON lines on stderr");
    add_registry_flags(cmd, rf);
    cmd->callback([&] {
      action = [&] {
        oci::PushOptions o;
        o.registry = registry_options(rf);
        o.progress = make_pull_printer(quiet, g.json);
        std::string digest = make_engine(g).push(image, dest, o);
        std::cout << digest << "\n";
        return 0;
      };
    });
  }
  // sbx login [-u USER] [-p PASS | --password-stdin] REGISTRY
  {
    auto* cmd = app.add_subcommand("login", "Log in to a registry (credentials go to the auth file, mode 0600)");
    static std::string registry, user, password;
    static bool from_stdin = false;
    static RegistryFlags rf;
    cmd->add_option("REGISTRY", registry, "Registry host[:port] (e.g. quay.io, localhost:5000)")->required();
    cmd->add_option("-u,--username", user, "User name (asked for on a terminal when not given)");
    cmd->add_option("-p,--password", password, "Password (visible in ps; prefer --password-stdin)");
    cmd->add_flag("--password-stdin", from_stdin, "Read the password from stdin");
    add_registry_flags(cmd, rf);
    cmd->callback([&] {
      action = [&] {
        auto ask = [](const char* prompt, bool echo) {
          std::string s;
          if (!::isatty(0)) throw Error(std::string("sbx login: no terminal to ask for the ") + prompt +
                                        "; use --username and --password-stdin");
          std::fprintf(stderr, "%s: ", prompt);
          termios old{};
          bool hide = !echo && ::tcgetattr(0, &old) == 0;
          if (hide) {
            termios t = old;
            t.c_lflag &= ~static_cast<tcflag_t>(ECHO);
            ::tcsetattr(0, TCSANOW, &t);
          }
          std::getline(std::cin, s);
          if (hide) {
            ::tcsetattr(0, TCSANOW, &old);
            std::fprintf(stderr, "\n");
          }
          return s;
        };
        if (from_stdin && !password.empty()) throw Error("sbx login: give --password or --password-stdin, not both");
        if (from_stdin && user.empty()) throw Error("sbx login: --password-stdin needs --username");
        if (user.empty()) user = ask("Username", true);
        if (from_stdin) {
          std::getline(std::cin, password, '\0');
          while (!password.empty() && (password.back() == '\n' || password.back() == '\r')) password.pop_back();
        } else if (password.empty()) {
          password = ask("Password", false);
        }
        if (user.empty() || password.empty()) throw Error("sbx login: user name and password must not be empty");
        oci::RegistryOptions o = registry_options(rf);
        o.credentials = oci::Credentials{user, password};
        make_engine(g).login(registry, o, rf.authfile);
        std::cout << "Login Succeeded!\n";
        return 0;
      };
    });
  }
  // sbx logout [--all] [REGISTRY]
  {
    auto* cmd = app.add_subcommand("logout", "Remove a registry's credentials from the auth file");
    static std::string registry, authfile;
    static bool all = false;
    cmd->add_option("REGISTRY", registry, "Registry host[:port]");
    cmd->add_flag("-a,--all", all, "Remove the credentials of every registry");
    cmd->add_option("--authfile", authfile, "Credentials file (default: $REGISTRY_AUTH_FILE or ${XDG_RUNTIME_DIR}/containers/auth.json)");
    cmd->callback([&] {
      action = [&] {
        if (registry.empty() && !all) throw Error("sbx logout: name a REGISTRY or use --all");
        std::string reg = make_engine(g).logout(all ? "" : registry, authfile);
        std::cout << (all ? "Removed login credentials for all registries\n" : "Removed login credentials for " + reg + "\n");
        return 0;
      };
    });
  }
}

}  // namespace sbx::cli
