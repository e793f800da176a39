// Pulling images from a registry into the store (see oci/pull.h).
#include "oci/pull.h"

#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/fd.h"
#include "common/fs.h"
#include "common/log.h"
#include "oci/digest.h"
#include "oci/registries_conf.h"
#include "oci/tree.h"

namespace sbx::oci {
namespace {

using json = nlohmann::json;

constexpr uint64_t kMaxJson = 4u << 20;            // manifests and configs (as import)
constexpr uint64_t kMaxLayerBytes = 64ull << 30;   // one compressed layer
constexpr size_t kMaxLayers = 500;
constexpr int kTries = 5;                          // per blob, resuming with Range

const char* kOciManifest = "application/vnd.oci.image.manifest.v1+json";
const char* kOciIndex = "application/vnd.oci.image.index.v1+json";
const char* kDockerManifest = "application/vnd.docker.distribution.manifest.v2+json";
const char* kDockerList = "application/vnd.docker.distribution.manifest.list.v2+json";

struct Desc {
  std::string media_type, digest;
  uint64_t size = 0;
};

Desc desc(const json& j, const std::string& what) {
  if (!j.is_object() || !j.contains("digest") || !j["digest"].is_string() || !j.contains("size") ||
      !j["size"].is_number_integer() || j["size"].get<int64_t>() < 0)
    throw Error(what + " is not a valid descriptor (digest, size); the manifest is corrupt");
  Desc d;
  d.media_type = j.value("mediaType", "");
  d.digest = j["digest"].get<std::string>();
  digest_hex(d.digest, what);
  d.size = j["size"].get<uint64_t>();
  return d;
}

json parse(const std::string& body, const std::string& what) {
  try {
    json j = json::parse(body);
    if (!j.is_object()) throw Error(what + " is not a JSON object");
    return j;
  } catch (const json::exception& e) {
    throw Error(what + " is not valid JSON (" + e.what() + ")");
  }
}

// The host's platform in OCI terms (image-spec image-index.md: GOARCH names).
std::string host_platform() {
  struct utsname u;
  std::string m = ::uname(&u) == 0 ? u.machine : "x86_64";
  if (m == "x86_64") return "linux/amd64";
  if (m == "aarch64") return "linux/arm64/v8";
  if (m == "armv7l") return "linux/arm/v7";
  if (m == "ppc64le" || m == "s390x" || m == "riscv64") return "linux/" + m;
  return "linux/" + m;
}

void write_all(int fd, const char* p, size_t n, const std::string& path) { fs::write_all(fd, {p, n}, path); }

class Puller {
 public:
  Puller(Store& store, RegistryClient& client, const PullOptions& opts) : store_(store), client_(client), opts_(opts) {}

  void emit(const PullEvent& e) {
    if (!opts_.progress) return;
    std::lock_guard<std::mutex> l(mu_);
    opts_.progress(e);
  }

  // Ensures blob `d` is in the store, verified, and tells wait_for. Safe to
  // call from several threads.
  void fetch(http::Session& s, const Desc& d) {
    fetch_blob(s, d);
    std::lock_guard<std::mutex> l(state_mu_);
    done_.insert(d.digest);
    done_cv_.notify_all();
  }

  // Returns once blob `digest` is in the store, or rethrows the error that
  // stopped the downloads (fetch_all).
  void wait_for(const std::string& digest) {
    std::unique_lock<std::mutex> l(state_mu_);
    done_cv_.wait(l, [&] { return done_.count(digest) || err_; });
    if (!done_.count(digest)) std::rethrow_exception(err_);
  }

  // Makes running and later fetches stop (the unpacking side failed).
  void stop() { failed_ = true; }

  // The error that stopped fetch_all, if any.
  std::exception_ptr error() {
    std::lock_guard<std::mutex> l(state_mu_);
    return err_;
  }

 private:
  void fetch_blob(http::Session& s, const Desc& d) {
    std::string hex = digest_hex(d.digest);
    std::string dst = store_.blob_path(d.digest);
    if (fs::exists(dst)) return emit({"blob-exists", d.digest, d.size, d.size});
    std::string part = store_.root() + "/tmp/blob-" + hex + ".partial";
    // One downloader per blob across processes: a second pull waits here and
    // then finds the blob in the store.
    fs::FileLock lock(part + ".lock", fs::FileLock::Exclusive);
    if (fs::exists(dst)) {
      ::unlink((part + ".lock").c_str());
      return emit({"blob-exists", d.digest, d.size, d.size});
    }
    Fd f(::open(part.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (f.fd < 0) throw_errno("create " + part);
    // Resume: what an earlier, interrupted pull left is hashed again.
    Sha256 h;
    uint64_t have = 0;
    {
      struct stat st;
      if (::fstat(f.fd, &st) < 0) throw_errno("stat " + part);
      if (static_cast<uint64_t>(st.st_size) > d.size) {
        if (::ftruncate(f.fd, 0) < 0) throw_errno("truncate " + part);
      } else if (st.st_size > 0) {
        fs::read_fd(f.fd, part, [&](std::string_view b) { h.update(b); });
        have = h.size();
      }
    }
    if (::lseek(f.fd, static_cast<off_t>(have), SEEK_SET) < 0) throw_errno("seek " + part);
    emit({"blob-start", d.digest, have, d.size});
    auto last = std::chrono::steady_clock::now();
    auto restart = [&] {
      if (::ftruncate(f.fd, 0) < 0 || ::lseek(f.fd, 0, SEEK_SET) < 0) throw_errno("truncate " + part);
      h = Sha256();
      have = 0;
    };
    for (int attempt = 1; have < d.size || d.size == 0; ++attempt) {
      if (failed_.load()) throw Error("pull stopped (another blob failed)");
      try {
        bool ok = client_.get_blob(
            s, d.digest, have,
            [&](long status) {
              if (status != 206 && have > 0) restart();  // Range ignored: the body starts at byte 0
            },
            [&](std::string_view b) {
              if (failed_.load()) throw Error("pull stopped (another blob failed)");
              if (have + b.size() > d.size) {
                ::unlink(part.c_str());
                throw Error("blob " + d.digest + " from " + client_.ref().registry + " is larger than the " +
                            std::to_string(d.size) + " bytes the manifest says; refusing it (corrupt or hostile registry)");
              }
              write_all(f.fd, b.data(), b.size(), part);
              h.update(b);
              have += b.size();
              auto now = std::chrono::steady_clock::now();
              if (now - last > std::chrono::milliseconds(100)) {
                last = now;
                emit({"blob-progress", d.digest, have, d.size});
              }
            });
        if (!ok) {
          restart();
          continue;
        }
        if (have == d.size) break;
        if (attempt >= kTries)
          throw Error("blob " + d.digest + " from " + client_.ref().registry + " ended after " + std::to_string(have) +
                      " of " + std::to_string(d.size) + " bytes, " + std::to_string(kTries) + " times");
      } catch (const http::TransportError& e) {
        if (attempt >= kTries)
          throw Error("download of blob " + d.digest + " failed " + std::to_string(kTries) + " times (last: " +
                      e.what() + "); run the pull again to resume from byte " + std::to_string(have));
        log::info(std::string("blob ") + d.digest + ": " + e.what() + "; resuming at byte " + std::to_string(have));
        std::this_thread::sleep_for(std::chrono::milliseconds(200 << attempt));
      }
      if (d.size == 0) break;
    }
    std::string got = h.hex();
    if (got != hex || have != d.size) {
      ::unlink(part.c_str());
      throw Error("blob " + d.digest + " from " + client_.ref().registry + " has digest sha256:" + got + " (" +
                  std::to_string(have) + " bytes); refusing it: the registry sent corrupt or tampered-with data");
    }
    if (::fsync(f.fd) < 0) throw_errno("fsync " + part);
    if (::fchmod(f.fd, 0444) < 0) throw_errno("chmod " + part);
    if (::renameat2(AT_FDCWD, part.c_str(), AT_FDCWD, dst.c_str(), RENAME_NOREPLACE) < 0) {
      if (errno != EEXIST) throw_errno("move blob into the store at " + dst);
      ::unlink(part.c_str());
    }
    ::unlink((part + ".lock").c_str());
    emit({"blob-done", d.digest, d.size, d.size});
  }


 public:
  // Fetches `blobs` in order with up to opts.jobs threads; the first error
  // stops the rest and is kept for error() and wait_for. No throw.
  void fetch_all(const std::vector<Desc>& blobs) noexcept {
    std::atomic<size_t> next{0};
    auto worker = [&] {
      try {
        http::Session s;
        for (size_t i; (i = next++) < blobs.size() && !failed_.load();) fetch(s, blobs[i]);
      } catch (...) {
        std::lock_guard<std::mutex> l(state_mu_);
        if (!err_) err_ = std::current_exception();
        failed_ = true;
        done_cv_.notify_all();
      }
    };
    int n = std::max(1, std::min<int>(opts_.jobs, static_cast<int>(blobs.size())));
    std::vector<std::thread> ts;
    for (int i = 1; i < n; ++i) ts.emplace_back(worker);
    worker();
    for (auto& t : ts) t.join();
  }

 private:
  Store& store_;
  RegistryClient& client_;
  const PullOptions& opts_;
  std::mutex mu_;  // serialises progress callbacks
  std::atomic<bool> failed_{false};
  std::mutex state_mu_;  // done_, err_
  std::condition_variable done_cv_;
  std::set<std::string> done_;
  std::exception_ptr err_;
};

// From an index or manifest list: the manifest for `platform` ("os/arch[/variant]").
Desc pick_platform(const json& index, const std::string& platform, const std::string& what) {
  std::string os = platform.substr(0, platform.find('/'));
  std::string rest = platform.find('/') == std::string::npos ? "" : platform.substr(platform.find('/') + 1);
  std::string arch = rest.substr(0, rest.find('/'));
  std::string variant = rest.find('/') == std::string::npos ? "" : rest.substr(rest.find('/') + 1);
  auto ms = index.find("manifests");
  if (ms == index.end() || !ms->is_array() || ms->empty()) throw Error(what + " lists no manifests");
  if (ms->size() > 1000) throw Error(what + " lists more than 1000 manifests; refusing it");
  std::vector<std::string> seen;
  const json* best = nullptr;
  for (const auto& m : *ms) {
    if (!m.is_object()) continue;
    json p = m.value("platform", json::object());
    if (!p.is_object()) continue;
    std::string mos = p.value("os", ""), march = p.value("architecture", ""), mvar = p.value("variant", "");
    if (mos == "unknown") continue;  // attestations (buildkit)
    seen.push_back(mos + "/" + march + (mvar.empty() ? "" : "/" + mvar));
    if (mos != os || march != arch) continue;
    // A wanted variant must match; "arm64" matches "v8" or none (as containerd).
    if (!variant.empty() && !mvar.empty() && mvar != variant) continue;
    if (!best) best = &m;
  }
  if (!best) {
    std::string list;
    for (const auto& s : seen) list += (list.empty() ? "" : ", ") + s;
    throw Error(what + " has no image for " + platform + " (it has: " + (list.empty() ? "none" : list) +
                "); choose one with --platform");
  }
  return desc(*best, what + " entry for " + platform);
}

}  // namespace

// One pull from one endpoint: `ref` is where the bytes come from (a mirror
// perhaps), `local_name` what the image is called in the store.
ImageRecord pull_one(Store& store, const RemoteRef& ref, const std::string& local_name, const PullOptions& opts,
                     const RegistryOptions& ropts) {
  RegistryClient client(ref, "pull", ropts);
  http::Session s;
  client.ping(s);
  std::string platform = opts.platform.empty() ? host_platform() : opts.platform;
  if (std::count(platform.begin(), platform.end(), '/') < 1)
    throw Error(ErrorKind::InvalidArgument,
                "invalid --platform '" + platform + "': expected os/arch[/variant], e.g. linux/amd64");

  FetchedManifest m = client.get_manifest(s, ref.digest.empty() ? ref.tag : ref.digest);
  json j = parse(m.body, "manifest of " + ref.str());
  if (m.media_type == kOciIndex || m.media_type == kDockerList || (m.media_type.empty() && j.contains("manifests"))) {
    Desc d = pick_platform(j, platform, "image index " + ref.str());
    if (d.size > kMaxJson) throw Error("manifest " + d.digest + " of " + ref.str() + " is larger than 4 MiB; refusing it");
    m = client.get_manifest(s, d.digest);
    if (m.body.size() != d.size)
      throw Error("manifest " + d.digest + " of " + ref.str() + " has " + std::to_string(m.body.size()) +
                  " bytes but the index says " + std::to_string(d.size));
    j = parse(m.body, "manifest " + d.digest);
    if (m.media_type == kOciIndex || m.media_type == kDockerList || j.contains("manifests"))
      throw Error("image index " + ref.str() + " nests another index for " + platform + "; sbx does not follow nested indexes");
  }
  if (!m.media_type.empty() && m.media_type != kOciManifest && m.media_type != kDockerManifest)
    throw Error("manifest of " + ref.str() + " has media type " + m.media_type + ", not an image manifest");
  std::string what = "manifest " + m.digest + " of " + ref.str();
  if (j.value("schemaVersion", 0) != 2) throw Error(what + " has no schemaVersion 2");
  Desc config = desc(j.value("config", json()), what + " config");
  if (config.size > kMaxJson) throw Error(what + ": the config is larger than 4 MiB; refusing it");
  json layers = j.value("layers", json());
  if (!layers.is_array()) throw Error(what + " has no \"layers\" array");
  if (layers.size() > kMaxLayers) throw Error(what + " has more than 500 layers; refusing it");
  std::vector<Desc> blobs;
  for (const auto& l : layers) {
    Desc d = desc(l, what + " layer");
    if (d.size > kMaxLayerBytes) throw Error(what + ": layer " + d.digest + " is larger than 64 GiB; refusing it");
    blobs.push_back(d);
  }
  if (opts.progress) opts.progress({"resolved", m.digest, 0, 0, 0, static_cast<int>(blobs.size())});

  // Held shared until the image is in the index: gc must not delete the blobs
  // we add before an image references them.
  fs::FileLock gc_lock(store.root() + "/gc.lock", fs::FileLock::Shared);
  Puller p(store, client, opts);
  p.fetch(s, config);
  std::string mpath = store.blob_path(m.digest);
  if (!fs::exists(mpath)) fs::write_file_atomic(mpath, m.body, 0444);

  // An OCI layout of this one image, for Store::import: oci-layout, index.json
  // and hard links to the manifest and config (the layers it finds in the store).
  std::string tmpl = store.root() + "/tmp/-pull-XXXXXX";  // "-": never a name import could derive
  if (!::mkdtemp(tmpl.data())) throw_errno("create temp dir in " + store.root() + "/tmp");
  std::string dir = tmpl;
  std::thread downloads;
  auto finish_downloads = [&](bool stop) {
    if (stop) p.stop();
    if (downloads.joinable()) downloads.join();
  };
  try {
    fs::mkdir_p(dir + "/blobs/sha256", 0700);
    fs::write_file_atomic(dir + "/oci-layout", R"({"imageLayoutVersion":"1.0.0"})", 0644);
    json idx = {{"schemaVersion", 2},
                {"manifests", json::array({{{"mediaType", m.media_type.empty() ? kOciManifest : m.media_type},
                                            {"digest", m.digest},
                                            {"size", m.body.size()}}})}};
    fs::write_file_atomic(dir + "/index.json", idx.dump(), 0644);
    for (const std::string& dg : {m.digest, config.digest})
      if (::link(store.blob_path(dg).c_str(), (dir + "/blobs/sha256/" + digest_hex(dg)).c_str()) < 0 && errno != EEXIST)
        throw_errno("link " + store.blob_path(dg) + " into " + dir);
    ImportOptions io;
    io.name = local_name;
    io.progress = [&](const ImportProgress& ip) {
      if (ip.phase == "unpacking") p.emit({"unpacking", "", ip.bytes, ip.total, ip.layer, ip.layers});
    };
    // The layers download (several at a time, in order) while import unpacks
    // them one by one, each as soon as its blob is in the store.
    io.wait_for_blob = [&](const std::string& digest) { p.wait_for(digest); };
    downloads = std::thread([&] { p.fetch_all(blobs); });
    ImageRecord rec = store.import(dir, io);
    finish_downloads(false);
    if (std::exception_ptr e = p.error()) std::rethrow_exception(e);
    remove_tree(dir);
    if (opts.progress) opts.progress({"done", rec.id, rec.size, rec.size, 0, static_cast<int>(blobs.size())});
    return rec;
  } catch (...) {
    finish_downloads(true);
    try {
      remove_tree(dir);
    } catch (const Error&) {
    }
    throw;
  }
}

std::string default_registries_conf() {
  const char* env = std::getenv("CONTAINERS_REGISTRIES_CONF");
  return env && *env ? env : "/etc/containers/registries.conf";
}

ImageRecord pull_image(Store& store, const std::string& text, const PullOptions& opts) {
  bool qualified = false;
  RemoteRef ref = parse_remote_ref(text, &qualified);
  RegistriesConf conf = load_registries_conf(opts.registries_conf);
  std::vector<RemoteRef> cands;
  if (qualified) {
    cands.push_back(ref);
  } else {  // a short name: each unqualified-search registry in turn (docker.io by default, as docker)
    for (const auto& reg : conf.search.empty() ? std::vector<std::string>{"docker.io"} : conf.search)
      cands.push_back(parse_remote_ref(reg + "/" + text));
  }
  std::optional<Error> last;
  for (const auto& c : cands) {
    const RegistryEntry* entry = conf.find(c.registry, c.repository);
    if (entry && entry->blocked)
      throw Error("registry " + c.registry + " is blocked in " + opts.registries_conf + "; not pulling " + c.str());
    // Mirrors first, then the registry itself (containers-registries.conf(5)).
    std::vector<std::pair<RemoteRef, bool>> endpoints;  // where, insecure
    if (entry)
      for (const auto& m : entry->mirrors) {
        RemoteRef mr = c;
        size_t slash = m.location.find('/');
        mr.registry = m.location.substr(0, slash);
        // A mirror of "host/ns" at "mirror/other": the part of the repository under the entry moves.
        std::string rest = (c.registry + "/" + c.repository).substr(entry->location.size());
        std::string mprefix = slash == std::string::npos ? "" : m.location.substr(slash + 1);
        if (entry->location == c.registry) rest = "/" + c.repository;
        mr.repository = (mprefix.empty() ? "" : mprefix) + rest;
        if (!mr.repository.empty() && mr.repository[0] == '/') mr.repository.erase(0, 1);
        endpoints.emplace_back(mr, m.insecure);
      }
    endpoints.emplace_back(c, entry && entry->insecure);
    for (size_t i = 0; i < endpoints.size(); ++i) {
      RegistryOptions ro = opts.registry;
      if (endpoints[i].second) ro.tls_verify = false;
      try {
        return pull_one(store, endpoints[i].first, c.local_name(), opts, ro);
      } catch (const Error& e) {
        last = e;
        if (i + 1 < endpoints.size()) {
          log::info("mirror " + endpoints[i].first.registry + " failed (" + e.what() + "); trying the next");
          continue;
        }
        if (cands.size() > 1 && e.kind() == ErrorKind::ImageNotFound) break;
        throw;
      }
    }
  }
  if (last) throw Error(*last, std::string(last->what()) + " (searched: unqualified-search-registries in " + opts.registries_conf + ")");
  throw Error("sbx pull " + text + ": no registry to pull from");
}

PullPolicy parse_pull_policy(const std::string& s) {
  if (s == "missing") return PullPolicy::Missing;
  if (s == "always") return PullPolicy::Always;
  if (s == "never") return PullPolicy::Never;
  if (s == "newer") return PullPolicy::Newer;
  throw Error(ErrorKind::InvalidArgument, "invalid --pull '" + s + "': use missing, always, never or newer");
}

ImageRecord resolve_or_pull(Store& store, const std::string& ref, PullPolicy policy, bool policy_explicit,
                            const PullOptions& opts) {
  if (policy == PullPolicy::Never) return store.resolve(ref);
  bool qualified = false;
  std::optional<RemoteRef> remote;
  try {
    remote = parse_remote_ref(ref, &qualified);
  } catch (const Error&) {
    return store.resolve(ref);  // an id or id prefix: local only
  }
  if (policy == PullPolicy::Missing) {
    try {
      return store.resolve(ref);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::ImageNotFound) throw;  // e.g. an ambiguous id prefix
    }
    try {
      return pull_image(store, ref, opts);
    } catch (const Error& e) {
      // Say both: it is not here, and the registry could not give it.
      throw Error(e, "image '" + ref + "' is not in the store, and pulling it failed: " + e.what() +
                         (qualified || policy_explicit ? "" : " (import a local image with 'sbx import')"));
    }
  }
  if (policy == PullPolicy::Newer) {
    try {
      return pull_image(store, ref, opts);
    } catch (const Error& e) {
      try {
        ImageRecord local = store.resolve(ref);
        log::warn(std::string("could not check for a newer image (") + e.what() + "); using the local one");
        return local;
      } catch (const Error&) {
      }
      throw;
    }
  }
  return pull_image(store, ref, opts);  // Always
}

}  // namespace sbx::oci
