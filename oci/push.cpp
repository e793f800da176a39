// Pushing images to a registry (see oci/push.h).
#include "oci/push.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fd.h"
#include "common/fs.h"
#include "oci/digest.h"

namespace sbx::oci {

std::string push_image(Store& store, const std::string& image, const std::string& dest, const PushOptions& opts) {
  using json = nlohmann::json;
  ImageRecord rec = store.resolve(image);
  bool qualified = false;
  RemoteRef ref = parse_remote_ref(dest.empty() ? image : dest, &qualified);
  if (dest.empty() && !qualified)
    throw Error("sbx push " + image + ": name a registry to push to, e.g. 'sbx push " + image +
                " localhost:5000/" + image + "'");
  if (!ref.digest.empty()) throw Error("sbx push: the destination " + ref.str() + " must have a tag, not a digest");
  std::string body = fs::read_file(store.blob_path(rec.manifest_digest));
  json m;
  try {
    m = json::parse(body);
  } catch (const json::exception& e) {
    throw Error("manifest " + rec.manifest_digest + " in the store is not valid JSON; re-import the image");
  }
  std::vector<std::pair<std::string, uint64_t>> blobs;
  try {
    blobs.emplace_back(m.at("config").at("digest").get<std::string>(), m.at("config").at("size").get<uint64_t>());
    for (const auto& l : m.at("layers")) blobs.emplace_back(l.at("digest").get<std::string>(), l.at("size").get<uint64_t>());
  } catch (const json::exception& e) {
    throw Error("manifest " + rec.manifest_digest + " in the store is malformed (" + e.what() + ")");
  }
  std::string media = m.value("mediaType", "application/vnd.oci.image.manifest.v1+json");
  RegistryClient client(ref, "pull,push", opts.registry);
  http::Session s;
  client.ping(s);
  auto emit = [&](const PullEvent& e) {
    if (opts.progress) opts.progress(e);
  };
  // A repository of the same registry the image came from (its names):
  // the registry can mount blobs from there instead of receiving them again.
  std::string from_repo;
  for (const auto& n : rec.names) {
    try {
      bool q = false;
      RemoteRef nr = parse_remote_ref(n, &q);
      if (q && nr.registry == ref.registry && nr.repository != ref.repository) from_repo = nr.repository;
    } catch (const Error&) {
    }
  }
  for (const auto& [digest, size] : blobs) {
    if (client.has_blob(s, digest)) {
      emit({"blob-exists", digest, size, size});
      continue;
    }
    std::string path = store.blob_path(digest);
    Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (f.fd < 0) throw_errno("open blob " + path + " (re-import the image)");
    emit({"blob-start", digest, 0, size});
    bool mounted = client.upload_blob(s, digest, f.fd, size, from_repo);
    emit({mounted ? "blob-mounted" : "blob-done", digest, size, size});
  }
  client.put_manifest(s, ref.tag, media, body);
  std::string digest = "sha256:" + sha256_hex(body);
  emit({"done", digest, 0, 0});
  return digest;
}

}  // namespace sbx::oci
