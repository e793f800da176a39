#include "oci/reference.h"

#include <cctype>

#include "common/error.h"
#include "oci/digest.h"

namespace sbx::oci {
namespace {

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  throw Error(ErrorKind::InvalidArgument, "invalid image reference '" + std::string(text.substr(0, 256)) + "': " + why);
}

bool is_hex(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool alnum_lower(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// A path component: [a-z0-9]+ ((\.|_|__|-+)[a-z0-9]+)*
bool valid_component(std::string_view c) {
  if (c.empty() || !alnum_lower(c.front()) || !alnum_lower(c.back())) return false;
  for (size_t i = 0; i < c.size(); ++i) {
    char ch = c[i];
    if (alnum_lower(ch)) continue;
    if (ch == '.' || ch == '_' || ch == '-') {
      if (ch == '.' && !alnum_lower(c[i + 1])) return false;
      if (ch == '_' && c[i + 1] != '_' && !alnum_lower(c[i + 1])) return false;
      if (ch == '_' && c[i + 1] == '_' && !alnum_lower(c[i + 2])) return false;
      if (ch == '_' && c[i + 1] == '_') ++i;
      continue;
    }
    return false;
  }
  return true;
}

// A registry host: letters (any case), digits, '.', '-', optional :port.
bool valid_domain(std::string_view d) {
  size_t colon = d.find(':');
  std::string_view host = d.substr(0, colon);
  if (host.empty() || host.front() == '.' || host.back() == '.' || host.front() == '-' || host.back() == '-' ||
      host.find("..") != std::string_view::npos)
    return false;
  for (char c : host)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-')) return false;
  if (colon != std::string_view::npos) {
    std::string_view port = d.substr(colon + 1);
    if (port.empty() || port.size() > 5) return false;
    for (char c : port)
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

void check_repository(std::string_view text, std::string_view repo) {
  if (repo.empty()) bad(text, "the repository name is empty");
  if (repo.size() > 255) bad(text, "the repository name is longer than 255 characters");
  size_t start = 0;
  // The first component is a registry domain when it has '.' or ':' or is "localhost".
  size_t slash = repo.find('/');
  if (slash != std::string_view::npos) {
    std::string_view first = repo.substr(0, slash);
    if (first.find_first_of(".:") != std::string_view::npos || first == "localhost") {
      if (!valid_domain(first)) bad(text, "'" + std::string(first) + "' is not a valid registry host");
      start = slash + 1;
    }
  }
  while (true) {
    size_t end = repo.find('/', start);
    std::string_view comp = repo.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (!valid_component(comp)) {
      bool upper = false;
      for (char c : comp) upper |= (c >= 'A' && c <= 'Z');
      bad(text, upper ? "repository names must be lower-case"
                      : "'" + std::string(comp) + "' is not a valid repository name component "
                        "(lower-case letters, digits and single '.', '_' or '-' separators)");
    }
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
}

void check_tag(std::string_view text, std::string_view tag) {
  if (tag.empty() || tag.size() > 128) bad(text, "a tag must be 1 to 128 characters");
  char c0 = tag.front();
  if (!(std::isalnum(static_cast<unsigned char>(c0)) || c0 == '_')) bad(text, "a tag must start with a letter, digit or '_'");
  for (char c : tag)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'))
      bad(text, "a tag may only hold letters, digits, '_', '.' and '-'");
}

}  // namespace

std::string normalize_repository(std::string_view repo) {
  // Until none is left: the result must be its own normal form, else
  // "docker.io/library/docker.io/library/x" is stored under a name that the
  // same text no longer finds (found by tests/fuzz/fuzz_reference).
  for (bool again = true; again;) {
    again = false;
    for (std::string_view p : {"localhost/", "docker.io/library/", "index.docker.io/library/"})
      if (repo.substr(0, p.size()) == p && repo.size() > p.size()) {
        repo.remove_prefix(p.size());
        again = true;
        break;
      }
  }
  return std::string(repo);
}

std::string Reference::str() const {
  switch (kind) {
    case Kind::Name: return repository + ":" + tag;
    case Kind::NameDigest: return repository + "@" + digest;
    case Kind::Id: return id;
  }
  return {};
}

Reference parse_reference(std::string_view text) {
  Reference r;
  if (text.empty()) bad(text, "it is empty");
  if (text.size() > 512) bad(text, "it is longer than 512 characters");
  if (text.substr(0, 7) == "sha256:") {
    if (!is_hex(text.substr(7))) bad(text, "expected sha256: followed by up to 64 lower-case hex digits");
    r.kind = Reference::Kind::Id;
    r.id = std::string(text.substr(7));
    return r;
  }
  if (text.size() == 64 && is_hex(text)) {  // a full id can never be a repository
    r.kind = Reference::Kind::Id;
    r.id = std::string(text);
    return r;
  }
  std::string_view rest = text;
  size_t at = rest.find('@');
  if (at != std::string_view::npos) {
    std::string_view digest = rest.substr(at + 1);
    if (!is_sha256_digest(digest)) bad(text, "the digest after '@' must be sha256: and 64 lower-case hex digits");
    r.kind = Reference::Kind::NameDigest;
    r.digest = std::string(digest);
    rest = rest.substr(0, at);
  }
  // A tag is after the last ':' that follows the last '/' (a ':' before it is a port).
  size_t slash = rest.rfind('/');
  size_t colon = rest.rfind(':');
  std::string tag = "latest";
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    check_tag(text, rest.substr(colon + 1));
    tag = std::string(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
  }
  check_repository(text, rest);
  r.repository = normalize_repository(rest);
  // "sha256:<hex>" means an image id: a repository of that name would print
  // as an id reference (found by tests/fuzz/fuzz_reference with
  // "index.docker.io/library/sha256:f1aea65783").
  if (r.repository == "sha256") bad(text, "the repository name 'sha256' is reserved for image ids");
  if (r.kind == Reference::Kind::Name) {
    r.tag = tag;
    r.maybe_id = is_hex(text);
  }
  return r;
}

std::string normalize_name(std::string_view text) {
  Reference r = parse_reference(text);
  if (r.kind != Reference::Kind::Name || (text.size() == 64 && is_hex(text)))
    bad(text, "an image name must be repository[:tag], not a digest or id");
  return r.str();
}

}  // namespace sbx::oci
