// libFuzzer harness: one image layer (tar, gzip or zstd) unpacked by
// oci/unpack.h into a fresh directory. The layer is hostile input: besides
// crashes and leaks, the harness checks that nothing was created outside the
// target directory (a sibling sentinel dir must stay empty).
// needs: oci/unpack.h
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/error.h"
#include "oci/tree.h"
#include "oci/unpack.h"

namespace {
std::string base;

bool dir_empty(const std::string& p) {
  DIR* d = opendir(p.c_str());
  if (!d) return false;
  int n = 0;
  while (dirent* e = readdir(d))
    if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") ++n;
  closedir(d);
  return n == 0;
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* tmp = getenv("TMPDIR");
  std::string t = std::string(tmp ? tmp : "/tmp") + "/sbx-fuzz-unpack.XXXXXX";
  if (!mkdtemp(t.data())) abort();
  base = t;
  mkdir((base + "/sentinel").c_str(), 0755);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string blob = base + "/blob", dest = base + "/layer", sentinel = base + "/sentinel";
  int fd = open(blob.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || write(fd, data, size) != static_cast<ssize_t>(size)) abort();
  close(fd);
  sbx::oci::remove_tree(dest);
  mkdir(dest.c_str(), 0755);
  sbx::oci::UnpackLimits lim;
  lim.max_bytes = 64u << 20;
  lim.max_entries = 100000;
  try {
    sbx::oci::unpack_layer(blob, dest, {}, {}, lim);
  } catch (const sbx::Error&) {
  }
  if (!dir_empty(sentinel)) {
    fprintf(stderr, "fuzz_unpack: the layer wrote outside its directory\n");
    abort();
  }
  sbx::oci::remove_tree(dest);
  return 0;
}
