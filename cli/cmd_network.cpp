// sbx network create|ls|inspect|rm|prune|connect|disconnect: user-defined
// networks (engine::Engine::create_network & co.; runtime/linux/user_network.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/error.h"
#include "runtime/linux/netlink.h"

namespace sbx::cli {

namespace {

using json = nlohmann::json;

/// KEY=VALUE (or KEY: empty value) → the pair. Throws sbx::Error.
std::pair<std::string, std::string> parse_label(const std::string& text) {
  size_t eq = text.find('=');
  std::string key = text.substr(0, eq);
  if (key.empty()) throw Error(ErrorKind::InvalidArgument, "invalid --label '" + text + "': expected KEY=VALUE");
  return {key, eq == std::string::npos ? "" : text.substr(eq + 1)};
}

/// Runs `one` for each ref; errors are printed and the last one's exit code returned.
int for_each_ref(const std::vector<std::string>& refs, const std::function<void(const std::string&)>& one) {
  int rc = 0;
  for (const auto& r : refs) {
    try {
      one(r);
    } catch (const Error& e) {
      std::cerr << "sbx: error: " << e.what() << "\n";
      rc = e.exit_code();
    }
  }
  return rc;
}

}  // namespace

void register_network_command(CLI::App& app, Globals& g, Action& action) {
  CLI::App* net = app.add_subcommand("network", "Manage user-defined networks (see 'sbx network --help')");
  net->require_subcommand(1);
  net->footer(
      "A user-defined network is a bridge of its own with a subnet from $SBX_NETWORK_POOL (or --subnet), its own\n"
      "gateway and DNS server (the names, aliases and short ids of its sandboxes), NAT out, and the egress rules of\n"
      "--network private for the whole network (--allow-egress, --deny-egress; --internal: no way out). Sandboxes\n"
      "on one network reach each other on every port; other networks, other sandboxes and the host's own services\n"
      "stay refused. Join with 'sbx run|create --network NAME [--network-alias A] [--ip ADDR]'. See sbx-network(1).");

  // ---- create ----------------------------------------------------------------
  {
    struct Flags {
      runtime::NetworkCreateOptions o;
      std::vector<std::string> labels;
      bool json = false;
    };
    auto f = std::make_shared<Flags>();
    CLI::App* c = net->add_subcommand("create", "Create a network");
    c->add_option("NAME", f->o.name, "The network's name (unique in this --run-root)")->required();
    c->add_option("--subnet", f->o.subnet, "Its IPv4 subnet, a.b.c.d/len (default: a free one of $SBX_NETWORK_POOL)");
    c->add_option("--gateway", f->o.gateway, "Its gateway and DNS server's address (default: the subnet's first)");
    c->add_flag("--internal", f->o.internal, "No way out: only its own sandboxes and its DNS server");
    c->add_option("--allow-egress", f->o.allow_egress,
                  "Allow only this IP, CIDR, DOMAIN or *.DOMAIN out of the network (repeatable); all else is refused")
        ->allow_extra_args(false);
    c->add_option("--deny-egress", f->o.deny_egress, "Refuse this IP or CIDR out of the network (repeatable)")
        ->allow_extra_args(false);
    c->add_option("--dns", f->o.dns, "An upstream server of the network's DNS server (repeatable; default: the host's)")
        ->allow_extra_args(false);
    c->add_option("-l,--label", f->labels, "A label KEY=VALUE (repeatable)")->allow_extra_args(false);
    c->add_option("-d,--driver", f->o.driver, "bridge (the only one)")->capture_default_str();
    c->add_flag("--json", f->json, "Print the network as JSON (as inspect)");
    c->callback([f, &g, &action] {
      action = [f, &g] {
        for (const auto& l : f->labels) f->o.labels.insert(parse_label(l));
        auto info = make_engine(g).create_network(f->o);
        if (f->json) {
          std::cout << json::parse(info.json()).dump(2) << "\n";
        } else {
          std::cout << info.network.id << "\n";
        }
        return 0;
      };
    });
  }

  // ---- ls --------------------------------------------------------------------
  {
    struct Flags {
      bool json = false, quiet = false, no_trunc = false;
      std::vector<std::string> filters;
    };
    auto f = std::make_shared<Flags>();
    CLI::App* c = net->add_subcommand("ls", "List networks");
    c->alias("list");
    c->add_flag("--json", f->json, "Print JSON (an array of inspect objects)");
    c->add_flag("-q,--quiet", f->quiet, "Print ids only");
    c->add_flag("--no-trunc", f->no_trunc, "Print full ids");
    c->add_option("-f,--filter", f->filters, "name=, id=, label=KEY[=VALUE], driver=")->allow_extra_args(false);
    c->callback([f, &g, &action] {
      action = [f, &g] {
        auto nets = make_engine(g).list_networks(f->filters);
        if (f->json) {
          json arr = json::array();
          for (const auto& n : nets) arr.push_back(json::parse(n.json()));
          std::cout << arr.dump(2) << "\n";
          return 0;
        }
        auto id = [&](const std::string& s) { return f->no_trunc ? s : s.substr(0, 12); };
        if (f->quiet) {
          for (const auto& n : nets) std::cout << id(n.network.id) << "\n";
          return 0;
        }
        std::printf("%-12s  %-24s  %-8s  %-18s  %-9s  %s\n", "NETWORK ID", "NAME", "DRIVER", "SUBNET", "SANDBOXES",
                    "EGRESS");
        for (const auto& n : nets) {
          const auto& u = n.network;
          std::string egress = u.internal                 ? "internal"
                               : !u.allow_egress.empty()  ? "allow-list"
                               : !u.deny_egress.empty()   ? "deny-list"
                                                          : "open";
          std::printf("%-12s  %-24s  %-8s  %-18s  %-9zu  %s\n", id(u.id).c_str(), u.name.c_str(), u.driver.c_str(),
                      runtime::format_cidr(u.subnet).c_str(), n.endpoints.size(), egress.c_str());
        }
        return 0;
      };
    });
  }

  // ---- inspect ---------------------------------------------------------------
  {
    auto refs = std::make_shared<std::vector<std::string>>();
    CLI::App* c = net->add_subcommand("inspect", "Show networks as JSON (docker's network inspect, plus sbx's fields)");
    c->add_option("NETWORK", *refs, "Names, ids or id prefixes")->required();
    c->callback([refs, &g, &action] {
      action = [refs, &g] {
        auto eng = make_engine(g);
        json arr = json::array();
        int rc = for_each_ref(*refs, [&](const std::string& r) { arr.push_back(json::parse(eng.inspect_network(r).json())); });
        std::cout << arr.dump(2) << "\n";
        return rc;
      };
    });
  }

  // ---- rm --------------------------------------------------------------------
  {
    auto refs = std::make_shared<std::vector<std::string>>();
    CLI::App* c = net->add_subcommand("rm", "Remove networks (refused while a sandbox is on one)");
    c->alias("remove");
    c->add_option("NETWORK", *refs, "Names, ids or id prefixes")->required();
    c->callback([refs, &g, &action] {
      action = [refs, &g] {
        auto eng = make_engine(g);
        return for_each_ref(*refs, [&](const std::string& r) {
          eng.remove_network(r);
          std::cout << r << "\n";
        });
      };
    });
  }

  // ---- prune -----------------------------------------------------------------
  {
    struct Flags {
      bool force = false, json = false;
      std::vector<std::string> filters;
    };
    auto f = std::make_shared<Flags>();
    CLI::App* c = net->add_subcommand("prune", "Remove every network no sandbox is on");
    c->add_flag("-f,--force", f->force, "Do not ask (sbx never asks; for docker's command lines)");
    c->add_option("--filter", f->filters, "name=, id=, label=KEY[=VALUE], driver=")->allow_extra_args(false);
    c->add_flag("--json", f->json, "Print the removed networks' names as a JSON array");
    c->callback([f, &g, &action] {
      action = [f, &g] {
        auto removed = make_engine(g).prune_networks(f->filters);
        if (f->json) {
          std::cout << json(removed).dump() << "\n";
        } else if (!removed.empty()) {
          std::cout << "Deleted Networks:\n";
          for (const auto& n : removed) std::cout << n << "\n";
        }
        return 0;
      };
    });
  }

  // ---- connect / disconnect --------------------------------------------------
  {
    struct Flags {
      std::string network, sandbox;
      NetworkAttachment a;
    };
    auto f = std::make_shared<Flags>();
    CLI::App* c = net->add_subcommand("connect", "Connect a running sandbox (sbx create) to a network");
    c->add_option("NETWORK", f->network, "The network")->required();
    c->add_option("SANDBOX", f->sandbox, "The sandbox: id, id prefix or name")->required();
    c->add_option("--alias", f->a.aliases, "Another name for it on the network's DNS (repeatable)")
        ->allow_extra_args(false);
    c->add_option("--ip", f->a.ip, "Its IPv4 address on the network (default: the next free one)");
    c->callback([f, &g, &action] {
      action = [f, &g] {
        make_engine(g).connect_network(f->network, f->sandbox, f->a);
        return 0;
      };
    });
  }
  {
    struct Flags {
      std::string network, sandbox;
      bool force = false;
    };
    auto f = std::make_shared<Flags>();
    CLI::App* c = net->add_subcommand("disconnect", "Disconnect a sandbox from a network");
    c->add_option("NETWORK", f->network, "The network")->required();
    c->add_option("SANDBOX", f->sandbox, "The sandbox: id, id prefix or name")->required();
    c->add_flag("-f,--force", f->force, "Accepted for docker's command lines (a disconnect always goes through)");
    c->callback([f, &g, &action] {
      action = [f, &g] {
        make_engine(g).disconnect_network(f->network, f->sandbox);
        return 0;
      };
    });
  }
}

}  // namespace sbx::cli
