// A command's usage lines as its users type them. CLI11 (2.1) derives the
// usage line from the declared positionals, which run, create and exec cannot
// declare (they take everything after IMAGE or SANDBOX verbatim).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sbx::cli {

/// A CLI11 formatter that prints fixed usage lines.
class UsageFormatter : public CLI::Formatter {
 public:
  explicit UsageFormatter(std::vector<std::string> lines) : lines_(std::move(lines)) {}
  std::string make_usage(const CLI::App*, std::string) const override {
    std::string out;
    for (size_t i = 0; i < lines_.size(); ++i) out += (i == 0 ? "Usage: " : "       ") + lines_[i] + "\n";
    return out;
  }

 private:
  std::vector<std::string> lines_;
};

/// Makes `sbx CMD --help` show LINES (each a whole usage, e.g. "sbx exec
/// [OPTIONS] SANDBOX [--] COMMAND [ARG...]") as CMD's usage.
inline void set_usage(CLI::App& cmd, std::vector<std::string> lines) {
  cmd.formatter(std::make_shared<UsageFormatter>(std::move(lines)));
}

}  // namespace sbx::cli
