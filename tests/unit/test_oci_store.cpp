// The image store: import round trips in all three formats, verification
// failures that leave nothing behind, rmi/gc, and concurrent processes.
#include <doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <dirent.h>

#include "common/error.h"
#include "oci/index.h"
#include "oci/store.h"
#include "oci_test_util.h"

using namespace sbx;
using namespace sbx::test;

namespace {

std::vector<std::string> ls(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") out.push_back(e->d_name);
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> two_layers() {
  return {make_tar({{.path = "etc", .type = AE_IFDIR, .perm = 0755},
                    {.path = "etc/gone", .data = "old"},
                    {.path = "etc/kept", .data = "k"},
                    {.path = "bin/sh", .data = "elf"}}),
          make_tar({{.path = "etc/.wh.gone"}, {.path = "etc/new", .data = "n"}})};
}

// The store is unchanged from `before` and holds no temp files.
void check_clean(const std::string& root, const std::vector<std::string>& layers_before) {
  CHECK(ls(root + "/tmp").empty());
  CHECK(ls(root + "/layers") == layers_before);
}

}  // namespace

TEST_CASE("store: import an OCI layout, resolve it every way, import again without rewriting") {
  TempDir t;
  auto b = make_oci_layout(t / "img", two_layers(), Compress::Gzip);
  oci::Store s(t / "store");
  oci::ImageRecord r = s.import(t / "img", {.name = "demo:1"});
  CHECK(r.id == b.config_hex);
  CHECK(r.manifest_digest == "sha256:" + b.manifest_hex);
  CHECK(r.names == std::vector<std::string>{"demo:1"});
  CHECK(r.config.cmd == std::vector<std::string>{"/bin/sh"});
  CHECK(r.config.working_dir == "/w");
  CHECK(r.config.user == "1000");
  REQUIRE(r.chain_ids.size() == 2);
  CHECK(r.chain_ids[0] == "sha256:" + b.diff_hex[0]);
  CHECK(r.chain_ids[1] == "sha256:" + oci::sha256_hex("sha256:" + b.diff_hex[0] + " sha256:" + b.diff_hex[1]));

  for (std::string ref : std::vector<std::string>{"demo:1", "localhost/demo:1", "sha256:" + r.id, r.id, r.id.substr(0, 6),
                          "demo@sha256:" + b.manifest_hex}) {
    CAPTURE(ref);
    CHECK(s.resolve(ref).id == r.id);
  }
  CHECK_THROWS_WITH_AS(s.resolve("demo"), doctest::Contains("not found"), Error);  // demo:latest
  CHECK_THROWS_AS(s.resolve("other@sha256:" + b.manifest_hex), Error);

  auto dirs = s.layer_dirs(r);
  REQUIRE(dirs.size() == 2);
  CHECK(fs::read_file(dirs[0] + "/etc/gone") == "old");
  struct stat st;
  REQUIRE(::lstat((dirs[1] + "/etc/gone").c_str(), &st) == 0);
  CHECK(S_ISCHR(st.st_mode));

  // Same image again: no blob or layer is rewritten.
  std::string blob = s.blob_path("sha256:" + b.layer_hex[0]);
  struct stat b1, b2;
  REQUIRE(::stat(blob.c_str(), &b1) == 0);
  auto blobs_before = ls(t / "store/blobs/sha256");
  auto r2 = s.import(t / "img", {.name = "demo:2"});
  CHECK(r2.id == r.id);
  REQUIRE(::stat(blob.c_str(), &b2) == 0);
  CHECK(b1.st_ino == b2.st_ino);
  CHECK(b1.st_mtim.tv_nsec == b2.st_mtim.tv_nsec);
  CHECK(ls(t / "store/blobs/sha256") == blobs_before);
  auto imgs = s.list();
  REQUIRE(imgs.size() == 1);
  CHECK(imgs[0].names == std::vector<std::string>{"demo:1", "demo:2"});
  CHECK(ls(t / "store/tmp").empty());
}

TEST_CASE("store: OCI layout, oci-archive and docker-archive give the same image id") {
  TempDir t;
  auto b = make_oci_layout(t / "img", two_layers(), Compress::None);
  // oci-archive: the layout dir as a tar.
  std::vector<TarEntry> es = {{.path = "oci-layout", .data = fs::read_file(t / "img/oci-layout")},
                              {.path = "index.json", .data = fs::read_file(t / "img/index.json")},
                              {.path = "blobs", .type = AE_IFDIR},
                              {.path = "blobs/sha256", .type = AE_IFDIR}};
  for (const auto& h : ls(t / "img/blobs/sha256"))
    es.push_back({.path = "./blobs/sha256/" + h, .data = fs::read_file(t / "img/blobs/sha256/" + h)});
  fs::write_file_atomic(t / "img.oci.tar", make_tar(es, Compress::Gzip));
  fs::write_file_atomic(t / "img.docker.tar", make_docker_archive(t / "img", b, "docker.io/library/demo:7"));

  oci::Store s1(t / "s1"), s2(t / "s2"), s3(t / "s3");
  auto a = s1.import(t / "img");
  auto o = s2.import(t / "img.oci.tar");
  auto d = s3.import(t / "img.docker.tar");
  CHECK(a.id == b.config_hex);
  CHECK(o.id == a.id);
  CHECK(d.id == a.id);
  CHECK(d.chain_ids == a.chain_ids);
  CHECK(a.names == std::vector<std::string>{"img:latest"});  // from the dir name + ref.name tag
  CHECK(o.names == std::vector<std::string>{"img:latest"});
  CHECK(d.names == std::vector<std::string>{"demo:7"});      // from RepoTags, normalised
  CHECK(fs::read_file(s3.layer_dirs(d)[0] + "/etc/kept") == "k");
  // All three in one store: one image.
  s1.import(t / "img.oci.tar");
  s1.import(t / "img.docker.tar");
  CHECK(s1.list().size() == 1);
}

TEST_CASE("store: corrupt input fails clearly and leaves nothing behind") {
  TempDir t;
  oci::Store s(t / "store");
  auto layers = two_layers();
  auto expect_fail = [&](const std::string& path, const std::string& needle) {
    CAPTURE(needle);
    std::string msg;
    try {
      s.import(path);
    } catch (const Error& e) {
      msg = e.what();
    }
    CHECK(msg.find(needle) != std::string::npos);
    check_clean(s.root(), {});
    CHECK(s.list().empty());
  };
  SUBCASE("layer digest mismatch") {
    auto b = make_oci_layout(t / "img", layers);
    std::string p = t / ("img/blobs/sha256/" + b.layer_hex[1]);
    std::string bytes = fs::read_file(p);
    bytes[bytes.size() / 2] ^= 0x55;
    fs::write_file_atomic(p, bytes);
    expect_fail(t / "img", "digest");
    CHECK_FALSE(fs::exists(s.blob_path("sha256:" + b.layer_hex[1])));
  }
  SUBCASE("missing blob") {
    auto b = make_oci_layout(t / "img", layers);
    ::unlink((t / ("img/blobs/sha256/" + b.layer_hex[0])).c_str());
    expect_fail(t / "img", "missing");
  }
  SUBCASE("config is not JSON") {
    std::string cfg = "this is not json";
    make_oci_layout(t / "img", layers, Compress::Gzip, "latest", &cfg);
    expect_fail(t / "img", "not valid JSON");
  }
  SUBCASE("config without rootfs") {
    std::string cfg = R"({"architecture":"amd64","os":"linux"})";
    make_oci_layout(t / "img", layers, Compress::Gzip, "latest", &cfg);
    expect_fail(t / "img", "\"rootfs\"");
  }
  SUBCASE("diff id in the config does not match the layer") {
    std::string cfg = nlohmann::json{{"rootfs",
                                      {{"type", "layers"},
                                       {"diff_ids", {"sha256:" + oci::sha256_hex(layers[0]),
                                                     "sha256:" + oci::sha256_hex("other")}}}}}
                          .dump();
    make_oci_layout(t / "img", layers, Compress::Gzip, "latest", &cfg);
    std::string msg;
    try {
      s.import(t / "img");
    } catch (const Error& e) {
      msg = e.what();
    }
    CHECK(msg.find("diff id") != std::string::npos);
    CHECK(ls(s.root() + "/tmp").empty());
    // The first layer was fine and may stay (content-addressed, complete); the bad one must not.
    CHECK(ls(s.root() + "/layers").size() <= 1);
    CHECK(s.list().empty());
  }
  SUBCASE("hostile layer") {
    make_oci_layout(t / "img", {make_tar({{.path = "../../evil", .data = "x"}})});
    expect_fail(t / "img", "'..'");
  }
  SUBCASE("truncated oci-archive") {
    auto b = make_oci_layout(t / "img", layers);
    std::vector<TarEntry> es = {{.path = "oci-layout", .data = fs::read_file(t / "img/oci-layout")},
                                {.path = "index.json", .data = fs::read_file(t / "img/index.json")}};
    for (const auto& h : ls(t / "img/blobs/sha256"))
      es.push_back({.path = "blobs/sha256/" + h, .data = fs::read_file(t / "img/blobs/sha256/" + h)});
    std::string tar = make_tar(es);
    fs::write_file_atomic(t / "cut.tar", tar.substr(0, tar.size() - 1500));
    expect_fail(t / "cut.tar", "truncated");
  }
  SUBCASE("neither format") {
    fs::mkdir_p(t / "empty");
    expect_fail(t / "empty", "neither an OCI image layout");
  }
}

TEST_CASE("store: rmi refuses while a sandbox uses the image; --force hides it; gc cleans up") {
  TempDir t;
  make_oci_layout(t / "img", two_layers());
  oci::Store s(t / "store");
  auto r = s.import(t / "img", {.name = "a:1"});
  s.tag("a:1", "b:2");
  CHECK(s.resolve("b:2").id == r.id);
  // Untag only while another name is left.
  auto u = s.remove("b:2", t / "run", false);
  CHECK(u.untagged == std::vector<std::string>{"b:2"});
  CHECK(u.deleted.empty());
  CHECK(s.resolve("a:1").id == r.id);

  fs::mkdir_p(t / "run/sbx1");
  fs::write_file_atomic(t / "run/sbx1/state.json", R"({"id":"sbx1","image_id":"sha256:)" + r.id + R"("})");
  CHECK(oci::Store::sandboxes_using(t / "run", r.id) == std::vector<std::string>{"sbx1"});
  try {
    s.remove("a:1", t / "run", false);
    FAIL("rmi of an image in use succeeded");
  } catch (const Error& e) {
    CHECK(e.exit_code() == 2);
    CHECK(std::string(e.what()).find("sbx1") != std::string::npos);
  }
  auto f = s.remove("a:1", t / "run", true);
  CHECK(f.deleted == r.id);
  CHECK(f.content_kept);
  CHECK(s.list().empty());
  CHECK_THROWS_AS(s.resolve(r.id), Error);
  s.gc(t / "run");
  for (const auto& d : s.layer_dirs(r)) CHECK(fs::exists(d));  // still used by sbx1

  oci::remove_tree(t / "run/sbx1");
  fs::mkdir_p(s.root() + "/tmp/import-crashed/layer-0");  // a crashed import's leftovers
  auto g = s.gc(t / "run");
  CHECK(g.images == 1);
  CHECK(g.layers == 2);
  CHECK(g.temps == 1);
  CHECK(ls(s.root() + "/layers").empty());
  CHECK(ls(s.root() + "/blobs/sha256").empty());
  CHECK(ls(s.root() + "/tmp").empty());
  try {
    s.remove("nope", t / "run", false);
    FAIL("rmi of a missing image succeeded");
  } catch (const Error& e) {
    CHECK(e.exit_code() == 1);
  }
}

TEST_CASE("store: rmi keeps layers shared with another image") {
  TempDir t;
  auto layers = two_layers();
  make_oci_layout(t / "one", {layers[0]});
  make_oci_layout(t / "two", layers);
  oci::Store s(t / "store");
  auto one = s.import(t / "one", {.name = "one"});
  auto two = s.import(t / "two", {.name = "two"});
  CHECK(one.chain_ids[0] == two.chain_ids[0]);
  CHECK(ls(s.root() + "/layers").size() == 2);
  s.remove("two", t / "run", false);
  CHECK(ls(s.root() + "/layers").size() == 1);
  CHECK(fs::read_file(s.layer_dirs(one)[0] + "/etc/kept") == "k");
  s.remove("one", t / "run", false);
  CHECK(ls(s.root() + "/layers").empty());
}

TEST_CASE("store: concurrent processes importing, listing and removing keep it consistent") {
  TempDir t;
  auto layers = two_layers();
  make_oci_layout(t / "x", layers);
  make_oci_layout(t / "y", {layers[0], make_tar({{.path = "y", .data = "y"}})});
  std::string root = t / "store";
  std::vector<pid_t> kids;
  for (int k = 0; k < 6; ++k) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int rc = 0;
      try {
        oci::Store s(root);
        for (int i = 0; i < 8; ++i) {
          std::string img = (k + i) % 2 ? "x" : "y";
          s.import(t / img, {.name = img + ":" + std::to_string(k)});
          (void)s.list();
          (void)s.resolve(img + ":" + std::to_string(k));
          if (i % 3 == 2) {
            try {
              s.remove(img + ":" + std::to_string(k), t / "run", false);
            } catch (const Error&) {  // another process may have moved the name
            }
          }
          if (k == 0 && i % 4 == 0) s.gc(t / "run");
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %d: %s\n", k, e.what());
        rc = 1;
      }
      ::_exit(rc);
    }
    kids.push_back(pid);
  }
  for (pid_t p : kids) {
    int st = 0;
    ::waitpid(p, &st, 0);
    CHECK(WIFEXITED(st));
    CHECK(WEXITSTATUS(st) == 0);
  }
  oci::Store s(root);
  auto imgs = s.list();  // the index parses
  s.gc(t / "run");
  // Every indexed image is complete on disk.
  for (const auto& r : s.list()) {
    auto dirs = s.layer_dirs(r);
    REQUIRE(dirs.size() == 2);
    CHECK(fs::exists(dirs[0] + "/etc/kept"));
    CHECK((fs::exists(dirs[1] + "/etc/new") || fs::exists(dirs[1] + "/y")));
  }
  CHECK(ls(root + "/tmp").empty());
}

TEST_CASE("store: resolve parses only matching index lines, and still reads a pretty-printed index") {
  TempDir t;
  auto layers = two_layers();
  make_oci_layout(t / "a", {layers[0]});
  make_oci_layout(t / "b", layers);
  oci::Store s(t / "store");
  auto a = s.import(t / "a", {.name = "a"});
  auto b = s.import(t / "b", {.name = "b"});
  // One record per line: resolve sees just the candidates.
  auto only_b = oci::read_index_matching(s.root(), {"\"b:latest\""});
  REQUIRE(only_b.size() == 1);
  CHECK(only_b[0].id == b.id);
  CHECK(oci::read_index_matching(s.root(), {"\"nothing\""}).empty());
  CHECK(s.resolve("a").id == a.id);
  CHECK(s.resolve("b").id == b.id);
  CHECK(s.resolve(b.id.substr(0, 10)).id == b.id);
  // An index written by hand (pretty-printed) still resolves.
  auto j = nlohmann::json::parse(fs::read_file(s.root() + "/images.json"));
  fs::write_file_atomic(s.root() + "/images.json", j.dump(2));
  CHECK(oci::read_index_matching(s.root(), {"\"b:latest\""}).size() == 2);  // fallback: all records
  CHECK(s.resolve("a").id == a.id);
  CHECK(s.resolve("sha256:" + b.id).id == b.id);
}
