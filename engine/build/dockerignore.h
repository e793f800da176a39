// .dockerignore: which paths of a build context COPY and ADD do not see.
// The rules are docker's (moby/patternmatcher, "dockerignore file" in the
// docker build reference):
//   - one pattern a line; lines starting with # are comments; blank lines
//     and surrounding white space are ignored;
//   - a pattern is cleaned like Go's filepath.Clean, a leading / dropped (all
//     patterns are relative to the context root);
//   - * matches any run of characters but /, ? one character but /, [a-z]
//     a class ([^a-z] negated), \ escapes the next character, ** any number
//     of directories (zero included);
//   - a path is excluded when it or one of its parent directories matches;
//   - !PATTERN re-includes what earlier patterns excluded; the last matching
//     pattern wins.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace sbx::build {

class IgnoreMatcher {
 public:
  IgnoreMatcher() = default;
  /// From the file's text. Throws sbx::Error for a pattern "!" alone or a
  /// malformed class ("[a-"), naming the line.
  explicit IgnoreMatcher(std::string_view text, const std::string& path = ".dockerignore");
  /// From patterns as given (the API's and tests' form).
  static IgnoreMatcher from_patterns(const std::vector<std::string>& patterns);

  /// Whether `path` (relative to the context, '/'-separated, no leading '/')
  /// is excluded: it or a parent directory matches, and no later ! pattern
  /// re-includes it. The context root itself is never excluded.
  bool excluded(std::string_view path) const;
  /// Whether any pattern starts with ! (then an excluded directory may hold
  /// re-included files, and a walk must look inside it).
  bool has_exceptions() const { return exceptions_; }
  bool empty() const { return patterns_.empty(); }

 private:
  struct Pattern {
    std::string text;  ///< cleaned, without the !
    bool exclusion = false;
  };
  void add(std::string p, const std::string& where);
  std::vector<Pattern> patterns_;
  bool exceptions_ = false;
};

/// Whether `name` matches `pattern` with the rules above (no parent
/// matching); exposed for tests and for COPY's source globs, which use
/// the same syntax within one path component (`**` there is two `*`).
bool ignore_pattern_match(std::string_view pattern, std::string_view name);

/// Go's filepath.Clean for '/'-separated paths: "a//b/../c/" -> "a/c",
/// "" -> ".".
std::string clean_path(std::string_view p);

}  // namespace sbx::build
