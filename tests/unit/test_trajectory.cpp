// The trajectory format (engine/trajectory.h, docs/trajectory.md): the
// parser's refusals, secret names, and the upper-dir checkpoint and its fold
// (files_at, materialize) on a real directory tree.
#include <doctest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>

#include "common/error.h"
#include "common/fs.h"
#include "engine/trajectory.h"

using namespace sbx;
using namespace sbx::engine;
using json = nlohmann::json;

namespace {

const std::string kHeader = R"({"format":"sbx-trajectory","version":1,"spec":{}})";

int error_code(const std::function<void()>& f, std::string* msg = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (msg) *msg = e.what();
    return e.exit_code();
  }
  return 0;
}

struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/sbx-traj-unit.XXXXXX";
    path = ::mkdtemp(t);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

}  // namespace

TEST_CASE("trajectory: a well-formed file parses") {
  auto t = trajectory::parse(kHeader + "\n" + R"({"step":1,"kind":"exec"})" + "\n" + R"({"step":2,"kind":"cp_in"})" + "\n",
                             "t");
  CHECK(t.header["version"] == 1);
  REQUIRE(t.steps.size() == 2);
  CHECK(t.steps[1]["kind"] == "cp_in");
}

TEST_CASE("trajectory: bad input is refused with exit 125, naming the problem") {
  std::string msg;
  CHECK(error_code([] { trajectory::parse("", "t"); }, &msg) == 125);
  CHECK(msg.find("empty") != std::string::npos);
  CHECK(error_code([] { trajectory::parse(kHeader + "\n{\"step\":1,\"kind\":\"exec\"}", "t"); }, &msg) == 125);
  CHECK(msg.find("truncated") != std::string::npos);
  CHECK(error_code([] { trajectory::parse(kHeader + "\n{\"step\":1,\n", "t"); }, &msg) == 125);
  CHECK(msg.find("line 2 is not JSON") != std::string::npos);
  CHECK(error_code([] { trajectory::parse(R"({"format":"sbx-trajectory","version":2})" "\n", "t"); }, &msg) == 125);
  CHECK(msg.find("version 2") != std::string::npos);
  CHECK(error_code([] { trajectory::parse(R"({"step":1,"kind":"exec"})" "\n", "t"); }, &msg) == 125);
  CHECK(msg.find("header") != std::string::npos);
  CHECK(error_code([] { trajectory::parse(kHeader + "\n{\"step\":1,\"kind\":\"exec\"}\n{\"step\":3,\"kind\":\"exec\"}\n", "t"); },
                   &msg) == 125);
  CHECK(msg.find("expected 2") != std::string::npos);
  CHECK(error_code([] { trajectory::parse(kHeader + "\n{\"kind\":\"exec\"}\n", "t"); }, &msg) == 125);
  CHECK(error_code([] { trajectory::parse(kHeader + "\n[1]\n", "t"); }, &msg) == 125);
}

TEST_CASE("trajectory: secret-looking and --redact names are stored as digests") {
  CHECK(trajectory::is_secret_name("OPENAI_API_KEY", {}));
  CHECK(trajectory::is_secret_name("github_token", {}));
  CHECK(trajectory::is_secret_name("DB_PASSWORD", {}));
  CHECK_FALSE(trajectory::is_secret_name("PATH", {}));
  CHECK(trajectory::is_secret_name("MY_VAR", {"MY_VAR"}));
  CHECK(trajectory::is_secret_name("AWS_X", {"AWS_.*"}));
  CHECK_FALSE(trajectory::is_secret_name("XAWS_X", {"AWS_.*"}));  // the whole name
  auto env = trajectory::env_json({"PATH=/bin", "API_KEY=hunter2"}, {});
  CHECK(env[0]["value"] == "/bin");
  CHECK_FALSE(env[1].contains("value"));
  CHECK(env[1]["sha256"].get<std::string>().size() == 64);
  CHECK(env.dump().find("hunter2") == std::string::npos);
}

TEST_CASE("trajectory: checkpoints hold changed files only, deduplicated; files_at folds them") {
  TempDir d;
  std::string up = d.path + "/upper", tdir = d.path + "/t";
  fs::mkdir_p(up + "/work", 0755);
  fs::mkdir_p(tdir + "/objects", 0700);
  fs::write_file_atomic(up + "/work/a", "one");
  fs::write_file_atomic(up + "/work/same1", "same");
  json c1 = trajectory::checkpoint_upper(tdir, up);
  REQUIRE(c1.is_object());
  CHECK(c1["files"].size() == 3);  // /work, /work/a, /work/same1
  CHECK(trajectory::checkpoint_upper(tdir, up).is_null());  // nothing changed
  fs::write_file_atomic(up + "/work/same2", "same");        // the same content: no new object
  size_t before = std::distance(std::filesystem::directory_iterator(tdir + "/objects"), {});
  json c2 = trajectory::checkpoint_upper(tdir, up);
  size_t after = std::distance(std::filesystem::directory_iterator(tdir + "/objects"), {});
  CHECK(after == before);
  REQUIRE(c2["files"].size() == 1);
  CHECK(c2["files"][0]["path"] == "/work/same2");
  ::unlink((up + "/work/a").c_str());                        // gone from upper: deleted
  REQUIRE(::mknod((up + "/work/img").c_str(), S_IFCHR | 0, makedev(0, 0)) == 0);  // a whiteout
  json c3 = trajectory::checkpoint_upper(tdir, up);
  CHECK(c3["deleted"].size() == 2);

  trajectory::Trajectory t;
  t.steps = {json{{"step", 1}, {"kind", "exec"}, {"checkpoint", c1}}, json{{"step", 2}, {"kind", "exec"}, {"checkpoint", c2}},
             json{{"step", 3}, {"kind", "exec"}, {"checkpoint", c3}}};
  auto s2 = trajectory::files_at(t, 2);
  CHECK(s2.at("/work/a")["type"] == "file");
  CHECK(s2.count("/work/same2") == 1);
  auto s3 = trajectory::files_at(t, 3);
  CHECK(s3.at("/work/a")["type"] == "deleted");
  CHECK(s3.at("/work/img")["type"] == "deleted");
  std::string out = d.path + "/out";
  auto del = trajectory::materialize(s2, tdir + "/objects", out);
  CHECK(del.empty());
  CHECK(fs::read_file(out + "/work/a") == "one");
  CHECK(error_code([&] { trajectory::files_at(t, 4); }) == 125);
  CHECK(error_code([&] { trajectory::files_at(t, 0); }) == 125);
  std::filesystem::remove_all(tdir + "/objects");
  std::string msg;
  CHECK(error_code([&] { trajectory::materialize(s2, tdir + "/objects", d.path + "/out2"); }, &msg) == 125);
  CHECK(msg.find("missing") != std::string::npos);
  t.steps[0]["not_restorable"] = "no upper dir";
  CHECK(error_code([&] { trajectory::files_at(t, 2); }, &msg) == 125);
  CHECK(msg.find("cannot be restored") != std::string::npos);
}

TEST_CASE("trajectory: a hostile step is refused by the parser, before anything is written") {
  const std::string sha(64, 'a');
  auto step = [](const std::string& body) { return kHeader + "\n" + body + "\n"; };
  auto ck = [&](const std::string& file) {
    return step(R"({"step":1,"kind":"exec","checkpoint":{"files":[)" + file + R"(],"deleted":[]}})");
  };
  std::string msg;
  // A path that climbs out, is relative, has an empty or "." component.
  for (const char* p : {"/../../etc/x", "etc/x", "/a//b", "/a/./b", "/a/.."}) {
    CHECK(error_code([&] { trajectory::parse(ck(R"({"path":")" + std::string(p) + R"(","type":"file","sha256":")" + sha + "\"}"), "t"); },
                     &msg) == 125);
    CHECK(msg.find("refused") != std::string::npos);
  }
  // An object name that is a path, or no digest at all.
  CHECK(error_code([&] { trajectory::parse(ck(R"({"path":"/x","type":"file","sha256":"../../../etc/passwd"})"), "t"); }, &msg) == 125);
  CHECK(msg.find("64 hex") != std::string::npos);
  CHECK(error_code([&] { trajectory::parse(ck(R"({"path":"/x","type":"file"})"), "t"); }) == 125);
  CHECK(error_code([&] { trajectory::parse(ck(R"({"path":"/x","type":"fifo"})"), "t"); }) == 125);
  CHECK(error_code([&] { trajectory::parse(ck(R"({"path":"/x","type":"dir","mode":"rwx"})"), "t"); }) == 125);
  CHECK(error_code([&] {
          trajectory::parse(step(R"({"step":1,"kind":"exec","checkpoint":{"files":[],"deleted":["/../x"]}})"), "t");
        }) == 125);
  // A copy whose source name or manifest path climbs out.
  CHECK(error_code([&] {
          trajectory::parse(step(R"({"step":1,"kind":"cp_in","source_name":"../x","manifest":[]})"), "t");
        }, &msg) == 125);
  CHECK(msg.find("source_name") != std::string::npos);
  CHECK(error_code([&] {
          trajectory::parse(
              step(R"({"step":1,"kind":"cp_in","source_name":"d","manifest":[{"path":"../x","type":"file","sha256":")" + sha + "\"}]}"),
              "t");
        }) == 125);
  // What the recorder writes still parses.
  CHECK(error_code([&] {
          trajectory::parse(ck(R"({"path":"/w/a b","type":"file","mode":420,"size":1,"sha256":")" + sha +
                               R"("},{"path":"/w","type":"dir","mode":493,"opaque":true},{"path":"/l","type":"symlink","target":"../etc"})"),
                            "t");
          trajectory::parse(step(R"({"step":1,"kind":"cp_in","source_name":"d","manifest":[{"path":"","type":"dir","mode":493},{"path":"d/f","type":"file","mode":420,"size":0,"sha256":")" +
                                 sha + "\"}]}"),
                            "t");
        }, &msg) == 0);
}

TEST_CASE("trajectory: materialize never writes through a symlink of the same state") {
  TempDir d;
  const std::string sha(64, 'b');
  fs::mkdir_p(d.path + "/objects", 0700);
  fs::mkdir_p(d.path + "/outside", 0700);
  fs::write_file_atomic(d.path + "/objects/" + sha, "x");
  std::map<std::string, json> state;
  state["/l"] = {{"path", "/l"}, {"type", "symlink"}, {"target", d.path + "/outside"}};
  state["/l/pwned"] = {{"path", "/l/pwned"}, {"type", "file"}, {"mode", 420}, {"sha256", sha}};
  std::string msg;
  CHECK(error_code([&] { trajectory::materialize(state, d.path + "/objects", d.path + "/files"); }, &msg) == 125);
  CHECK(msg.find("under the symlink /l") != std::string::npos);
  CHECK(!fs::exists(d.path + "/outside/pwned"));
  // A deleted path under a link (a dir replaced by a link) is fine: nothing is written for it.
  state["/l/pwned"] = {{"type", "deleted"}};
  CHECK(error_code([&] { trajectory::materialize(state, d.path + "/objects", d.path + "/files2"); }) == 0);
}

TEST_CASE("trajectory: the header says whether the clocks start at zero") {
  SandboxSpec s;
  s.runtime = "native";
  trajectory::pin_reproducible(s);
  CHECK(s.annotations["dev.sbx.timens"] == "true");
  CHECK(trajectory::make_header(s, {})["timens"] == true);
  SandboxSpec off;
  off.runtime = "native";
  off.annotations["dev.sbx.timens"] = "false";  // --no-timens
  trajectory::pin_reproducible(off);
  CHECK(off.annotations["dev.sbx.timens"] == "false");
  json h = trajectory::make_header(off, {});
  CHECK(h["timens"] == false);
  CHECK(h["unpinned"].dump().find("monotonic") != std::string::npos);
  SandboxSpec gv;
  gv.runtime = "gvisor";
  gv.annotations["dev.sbx.timens"] = "false";
  CHECK(trajectory::make_header(gv, {})["timens"] == true);
}
