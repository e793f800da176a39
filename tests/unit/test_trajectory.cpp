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
