#include "engine/build/context.h"

#include <fcntl.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fd.h"
#include "oci/digest.h"

namespace sbx::build {

namespace {

std::vector<std::string> split(const std::string& p) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string::npos) j = p.size();
    if (j > i) out.push_back(p.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) ++i;
    out += s[i];
  }
  return out;
}

std::string join(const std::string& dir, const std::string& name) { return dir == "/" ? "/" + name : dir + "/" + name; }

std::string file_sha256(const std::string& path) {
  Fd f(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (f.fd < 0) throw_errno("read " + path);
  oci::Sha256 h;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("read " + path);
    if (n == 0) break;
    h.update(buf, static_cast<size_t>(n));
  }
  return h.hex();
}

}  // namespace

bool has_glob(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
      continue;
    }
    if (s[i] == '*' || s[i] == '?' || s[i] == '[') return true;
  }
  return false;
}

SourceTree SourceTree::context(const std::string& dir, IgnoreMatcher ignore) {
  return SourceTree(RootfsView({dir}, true), std::move(ignore), true, "the build context");
}

SourceTree SourceTree::layers(std::vector<std::string> layers_top_first, std::string what) {
  return SourceTree(RootfsView(std::move(layers_top_first)), IgnoreMatcher(), false, std::move(what));
}

bool SourceTree::excluded(const std::string& path) const {
  if (!confined_) return false;
  std::string rel = rooted(path);
  if (rel == "/") return false;
  return ignore_.excluded(rel.substr(1));
}

void SourceTree::glob(const std::vector<std::string>& comps, size_t i, const std::string& at, const std::string& name,
                      std::vector<Match>& out) const {
  if (i == comps.size()) {
    auto e = view_.lookup(at);
    if (e && !excluded(at)) out.push_back({at, *e, name});
    return;
  }
  const std::string& comp = comps[i];
  if (!has_glob(comp)) {
    std::string n = unescape(comp);
    auto r = view_.resolve(join(at, n), true, confined_);
    if (r.entry) glob(comps, i + 1, r.path, n, out);
    return;
  }
  for (const auto& n : view_.list(at)) {
    if (!ignore_pattern_match(comp, n)) continue;
    auto r = view_.resolve(join(at, n), true, confined_);
    if (!r.entry) continue;
    if (i + 1 < comps.size() && !S_ISDIR(r.entry->st.st_mode)) continue;
    glob(comps, i + 1, r.path, n, out);
  }
}

std::vector<SourceTree::Match> SourceTree::sources(const std::string& pattern) const {
  std::string rel = clean_path(pattern);
  if (!rel.empty() && rel[0] == '/') rel = rel.substr(1);
  if (rel.empty()) rel = ".";
  if (confined_ && (rel == ".." || rel.rfind("../", 0) == 0))
    throw Error("'" + pattern + "' is outside the build context: COPY and ADD can only read files inside it");
  std::vector<Match> out;
  if (!has_glob(rel)) {
    auto r = view_.resolve("/" + rel, true, confined_);
    std::string name = rel == "." ? "" : rel.substr(rel.rfind('/') + 1);
    if (r.entry && !excluded(r.path)) out.push_back({r.path, *r.entry, name});
  } else {
    glob(split(rel), 0, "/", "", out);
  }
  if (out.empty())
    throw Error(ErrorKind::NotFound, "'" + pattern + "' not found in " + what_ +
                (confined_ ? " (or excluded by .dockerignore)" : "") + "");
  return out;
}

std::string SourceTree::digest(const std::vector<Match>& matches) const {
  oci::Sha256 h;
  for (const auto& m : matches) {
    h.update("source " + m.path + '\0');
    walk(m, [&](const std::string& rel, const RootfsView::Entry& e) {
      const auto& st = e.st;
      std::string line = rel + '\0' + std::to_string(st.st_mode) + '\0';
      if (S_ISREG(st.st_mode)) {
        line += std::to_string(st.st_size) + '\0' + file_sha256(e.host_path);
      } else if (S_ISLNK(st.st_mode)) {
        std::string t(static_cast<size_t>(st.st_size) + 1, '\0');
        ssize_t n = ::readlink(e.host_path.c_str(), t.data(), t.size());
        if (n < 0) throw_errno("read the symlink " + e.host_path);
        t.resize(static_cast<size_t>(n));
        line += t;
      } else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
        line += std::to_string(st.st_rdev);
      }
      h.update(line + '\n');
    });
  }
  return h.hex();
}

bool looks_like_archive(const std::string& path) {
  Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  unsigned char b[512] = {};
  ssize_t n = f.fd < 0 ? 0 : ::pread(f.fd, b, sizeof b, 0);
  if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b) return true;                                    // gzip
  if (n >= 4 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd) return true;  // zstd
  return n >= 262 && std::string(reinterpret_cast<char*>(b) + 257, 5) == "ustar";
}

}  // namespace sbx::build
