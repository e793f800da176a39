// sbx login: a registry's credentials into the auth file (oci/auth_config.h).
#include <CLI/CLI.hpp>

#include <unistd.h>
#include <termios.h>

#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "common/error.h"
#include "cli/registry_flags.h"

namespace sbx::cli {

void register_login_command(CLI::App& app, Globals& g, Action& action) {
  // sbx login [-u USER] [-p PASS | --password-stdin] REGISTRY
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

}  // namespace sbx::cli
