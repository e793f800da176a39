// libFuzzer harness: the JSON documents of an image (OCI index.json, image
// manifest, image config, docker-archive manifest.json) imported through the
// real entry point, oci::Store::import, from an OCI layout / docker-archive
// directory the harness builds around the fuzzed document.
//
// Input: one selector byte, then the document.
//   0: index.json    (must name the manifest by digest: the seeds do)
//   1: the manifest  (index.json is written to point at it)
//   2: the config    (a manifest is written to point at it)
//   3: docker-archive manifest.json
// Every other blob is fixed: a one-file gzip layer and a minimal config; their
// digests are in the seeds and in image_json.dict. Only sbx::Error may escape.
// needs: oci/store.h
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <archive.h>
#include <archive_entry.h>

#include "common/error.h"
#include "oci/digest.h"
#include "oci/store.h"
#include "oci/tree.h"

namespace {
std::string base;
int execs = 0;

// A gzip'd tar holding "hello" (6 bytes), made once by the seed script.
const unsigned char kLayer[] = {
#include "fuzz_image_json_layer.inc"
};
const std::string kConfig =
    R"({"architecture":"amd64","os":"linux","config":{"Env":["PATH=/bin"],"Cmd":["/hello"]},)"
    R"("rootfs":{"type":"layers","diff_ids":["sha256:DIFFID"]}})";

void put(const std::string& path, std::string_view data) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || write(fd, data.data(), data.size()) != static_cast<ssize_t>(data.size())) abort();
  close(fd);
}
std::string layer() { return std::string(reinterpret_cast<const char*>(kLayer), sizeof kLayer); }
std::string put_blob(const std::string& dir, std::string_view data) {
  std::string hex = sbx::oci::sha256_hex(data);
  put(dir + "/blobs/sha256/" + hex, data);
  return hex;
}
std::string desc(const char* media, const std::string& hex, size_t size) {
  return std::string(R"({"mediaType":")") + media + R"(","digest":"sha256:)" + hex + R"(","size":)" +
         std::to_string(size) + "}";
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* tmp = getenv("TMPDIR");
  std::string t = std::string(tmp ? tmp : "/tmp") + "/sbx-fuzz-image.XXXXXX";
  if (!mkdtemp(t.data())) abort();
  base = t;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  int kind = data[0] % 4;
  std::string_view doc(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string src = base + "/src", root = base + "/store";
  sbx::oci::remove_tree(src);
  if (++execs % 500 == 0) sbx::oci::remove_tree(root);  // bound the store's growth
  mkdir(src.c_str(), 0755);
  mkdir((src + "/blobs").c_str(), 0755);
  mkdir((src + "/blobs/sha256").c_str(), 0755);

  std::string l = layer();
  std::string lhex = put_blob(src, l);
  std::string config = kConfig;
  config.replace(config.find("DIFFID"), 6, "6bef0f01ab43302cf674289b434797d5cd856cbe838db521f1216ce325911958");
  if (kind == 3) {
    // docker-archive ("docker save"): a tar of manifest.json, config, layer.
    struct archive* a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    src = base + "/docker.tar";
    if (archive_write_open_filename(a, src.c_str()) != ARCHIVE_OK) abort();
    std::string layer_tar = l;  // gzip is fine: sbx sniffs the compression
    for (auto [name, body] : {std::pair<const char*, std::string_view>{"manifest.json", doc},
                              {"config.json", config}, {"layer.tar", layer_tar}}) {
      struct archive_entry* e = archive_entry_new();
      archive_entry_set_pathname(e, name);
      archive_entry_set_size(e, static_cast<la_int64_t>(body.size()));
      archive_entry_set_filetype(e, AE_IFREG);
      archive_entry_set_perm(e, 0644);
      archive_write_header(a, e);
      archive_write_data(a, body.data(), body.size());
      archive_entry_free(e);
    }
    archive_write_close(a);
    archive_write_free(a);
  } else {
    put(src + "/oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
    std::string chex = kind == 2 ? put_blob(src, doc) : put_blob(src, config);
    size_t csize = kind == 2 ? doc.size() : config.size();
    std::string manifest = std::string(R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":)") +
                           desc("application/vnd.oci.image.config.v1+json", chex, csize) + R"(,"layers":[)" +
                           desc("application/vnd.oci.image.layer.v1.tar+gzip", lhex, l.size()) + "]}";
    if (kind == 1) manifest = std::string(doc);
    std::string mhex = put_blob(src, manifest);
    std::string index = std::string(R"({"schemaVersion":2,"manifests":[)") +
                        desc("application/vnd.oci.image.manifest.v1+json", mhex, manifest.size()) + "]}";
    if (kind == 0) index = std::string(doc);
    put(src + "/index.json", index);
  }
  try {
    sbx::oci::Store store(root);
    sbx::oci::ImportOptions opts;
    opts.name = "fuzz:latest";
    store.import(src, opts);
  } catch (const sbx::Error&) {
  }
  return 0;
}
