#include "engine/build/dockerignore.h"

#include <vector>

#include "common/error.h"

namespace sbx::build {

namespace {

/// A [...] class at pat[i] (i at '['): whether `c` is in it; `end` is set to
/// the index after ']'. Throws on an unterminated class.
bool match_class(std::string_view pat, size_t i, char c, size_t& end) {
  size_t j = i + 1;
  bool negate = false;
  if (j < pat.size() && (pat[j] == '^' || pat[j] == '!')) {
    negate = true;
    ++j;
  }
  bool matched = false, first = true;
  while (j < pat.size() && (pat[j] != ']' || first)) {
    first = false;
    char lo = pat[j];
    if (lo == '\\' && j + 1 < pat.size()) lo = pat[++j];
    ++j;
    char hi = lo;
    if (j + 1 < pat.size() && pat[j] == '-' && pat[j + 1] != ']') {
      hi = pat[j + 1];
      if (hi == '\\' && j + 2 < pat.size()) {
        hi = pat[j + 2];
        ++j;
      }
      j += 2;
    }
    if (lo <= c && c <= hi) matched = true;
  }
  if (j >= pat.size()) throw Error("syntax error in pattern '" + std::string(pat) + "': unterminated [");
  end = j + 1;
  return matched != negate;
}

/// Matches pat[pi..] against s[si..] (backtracking). ** (with the / that
/// follows it) matches any run of directories, "**" at the end anything.
bool match_at(std::string_view pat, size_t pi, std::string_view s, size_t si) {
  while (pi < pat.size()) {
    char p = pat[pi];
    if (p == '*') {
      if (pi + 1 < pat.size() && pat[pi + 1] == '*') {
        size_t next = pi + 2;
        if (next < pat.size() && pat[next] == '/') ++next;
        if (next == pat.size()) return true;  // "**" at the end: everything
        // "(.*/)?": nothing, or any prefix ending in '/'.
        if (match_at(pat, next, s, si)) return true;
        for (size_t k = si; k < s.size(); ++k)
          if (s[k] == '/' && match_at(pat, next, s, k + 1)) return true;
        return false;
      }
      for (size_t k = si;; ++k) {  // [^/]*
        if (match_at(pat, pi + 1, s, k)) return true;
        if (k >= s.size() || s[k] == '/') return false;
      }
    }
    if (si >= s.size()) return false;
    if (p == '?') {
      if (s[si] == '/') return false;
    } else if (p == '[') {
      size_t end;
      if (!match_class(pat, pi, s[si], end)) return false;
      pi = end;
      ++si;
      continue;
    } else {
      if (p == '\\' && pi + 1 < pat.size()) p = pat[++pi];
      if (p != s[si]) return false;
    }
    ++pi;
    ++si;
  }
  return si == s.size();
}

}  // namespace

std::string clean_path(std::string_view p) {
  const bool rooted = !p.empty() && p[0] == '/';
  std::vector<std::string_view> parts;
  size_t i = 0;
  while (i <= p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string_view::npos) j = p.size();
    std::string_view c = p.substr(i, j - i);
    if (c.empty() || c == ".") {
    } else if (c == "..") {
      if (!parts.empty() && parts.back() != "..")
        parts.pop_back();
      else if (!rooted)
        parts.push_back(c);
    } else {
      parts.push_back(c);
    }
    i = j + 1;
  }
  std::string out = rooted ? "/" : "";
  for (size_t k = 0; k < parts.size(); ++k) out += (k ? "/" : "") + std::string(parts[k]);
  if (out.empty()) out = ".";
  return out;
}

bool ignore_pattern_match(std::string_view pattern, std::string_view name) { return match_at(pattern, 0, name, 0); }

void IgnoreMatcher::add(std::string p, const std::string& where) {
  // (trimmed by the caller)
  if (p.empty()) return;
  Pattern pat;
  if (p[0] == '!') {
    if (p.size() == 1) throw Error(where + ": illegal exclusion pattern: \"!\"");
    pat.exclusion = true;
    exceptions_ = true;
    p = p.substr(1);
    size_t b = p.find_first_not_of(" \t");
    p = b == std::string::npos ? "" : p.substr(b);
    if (p.empty()) return;
  }
  p = clean_path(p);
  if (p.size() > 1 && p[0] == '/') p = p.substr(1);
  // Check the syntax now (as docker does with filepath.Match).
  try {
    (void)match_at(p, 0, std::string_view(p), 0);
    for (size_t i = 0; i < p.size(); ++i)
      if (p[i] == '\\')
        ++i;
      else if (p[i] == '[') {
        size_t end;
        match_class(p, i, 'a', end);
        i = end - 1;
      }
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
  pat.text = std::move(p);
  patterns_.push_back(std::move(pat));
}

IgnoreMatcher::IgnoreMatcher(std::string_view text, const std::string& path) {
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  size_t i = 0;
  int line = 0;
  while (i < text.size()) {
    size_t nl = text.find('\n', i);
    std::string_view l = text.substr(i, nl == std::string_view::npos ? std::string_view::npos : nl - i);
    i = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line;
    if (!l.empty() && l[0] == '#') continue;
    size_t b = l.find_first_not_of(" \t\r\v\f");
    if (b == std::string_view::npos) continue;
    size_t e = l.find_last_not_of(" \t\r\v\f");
    add(std::string(l.substr(b, e - b + 1)), path + ":" + std::to_string(line));
  }
}

IgnoreMatcher IgnoreMatcher::from_patterns(const std::vector<std::string>& patterns) {
  IgnoreMatcher m;
  for (const auto& p : patterns) {
    size_t b = p.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) continue;
    size_t e = p.find_last_not_of(" \t\r\n");
    m.add(p.substr(b, e - b + 1), "pattern '" + p + "'");
  }
  return m;
}

bool IgnoreMatcher::excluded(std::string_view path) const {
  std::string file = clean_path(path);
  if (file == "." || patterns_.empty()) return false;
  // Parent directories: "a", "a/b", ... of "a/b/c".
  std::vector<std::string_view> parents;
  for (size_t k = file.find('/'); k != std::string::npos; k = file.find('/', k + 1))
    parents.push_back(std::string_view(file).substr(0, k));
  bool matched = false;
  for (const auto& p : patterns_) {
    if (p.exclusion != matched) continue;
    bool m = match_at(p.text, 0, file, 0);
    for (size_t k = 0; !m && k < parents.size(); ++k) m = match_at(p.text, 0, parents[k], 0);
    if (m) matched = !p.exclusion;
  }
  return matched;
}

}  // namespace sbx::build
