// One options type, one builder (engine/sandbox_options.h): the same request
// through the CLI's flags, Docker's create body and /sbx/v1's body gives the
// same spec; error kinds set where errors are raised map to one status table.
#include <doctest.h>

#include <algorithm>

#include "cli/sandbox_flags.h"
#include "common/error.h"
#include "engine/batch.h"
#include "engine/sandbox_options.h"
#include "server/docker/docker_spec.h"
#include "server/error_status.h"
#include "server/v1/sbx_v1.h"
#include "spec/spec_json.h"

using namespace sbx;
using nlohmann::json;

namespace {

/// An image without Cmd or Entrypoint (a `podman import`ed rootfs).
engine::ResolvedImage bare_image() {
  engine::ResolvedImage img;
  img.ref = "bare";
  img.id = std::string(64, 'e');
  img.config.env = {"PATH=/usr/bin:/bin"};
  img.layer_dirs = {"/layers/0"};
  return img;
}

const std::string kId(64, 'f');

/// `sbx create [flags] bare [CMD...]` as CLI11 leaves it.
cli::SandboxFlags create_flags(std::vector<std::string> positional) {
  cli::SandboxFlags f;
  f.exact = true;
  f.positional = std::move(positional);
  f.name = "n1";
  f.env = {"A=1"};
  f.workdir = "/w";
  f.workdir_set = true;
  f.volumes = {"/tmp:/data:ro"};
  f.memory = "256m";
  f.cpus = 1.5;
  f.runtime = "native";
  return f;
}

SandboxSpec from_cli(const cli::SandboxFlags& f) {
  cli::BuildOptions b;
  b.command = "create";
  b.hold_without_command = true;
  engine::SandboxOptions o = cli::sandbox_options(f, b);
  o.id = kId;
  return engine::build_sandbox(o, bare_image()).spec;
}

SandboxSpec from_docker(const json& cfg) {
  engine::SandboxOptions o = server::options_from_docker(cfg, kId, "n1");
  return engine::build_sandbox(o, bare_image()).spec;
}

SandboxSpec from_v1(const json& body) {
  engine::SandboxOptions o = server::v1_create_options(body);
  o.id = kId;
  return engine::build_sandbox(o, bare_image()).spec;
}

std::string dump(const SandboxSpec& s) { return spec::spec_to_json(s).dump(); }

}  // namespace

TEST_CASE("the same request through the CLI, Docker and /sbx/v1 gives the same spec") {
  SandboxSpec cli = from_cli(create_flags({"bare", "echo", "hi"}));
  SandboxSpec docker = from_docker(json::parse(R"({
    "Image": "bare", "Cmd": ["echo", "hi"], "Env": ["A=1"], "WorkingDir": "/w", "Privileged": false,
    "HostConfig": {"Binds": ["/tmp:/data:ro"], "Memory": 268435456, "NanoCpus": 1500000000, "Runtime": "native",
                   "PidMode": "", "Privileged": false, "SecurityOpt": null, "CgroupParent": ""}})"));
  SandboxSpec v1 = from_v1(json::parse(R"({"image": "bare", "name": "n1", "cmd": ["echo", "hi"], "env": {"A": "1"},
    "workdir": "/w", "volumes": {"/tmp": "/data:ro"}, "memory": 268435456, "cpu": 1.5, "runtime": "native"})"));
  CHECK(cli.process.args == std::vector<std::string>{"echo", "hi"});
  CHECK(*cli.resources.memory_bytes == 268435456);
  CHECK(*cli.resources.pids_limit == 1024);
  REQUIRE(cli.mounts.size() == 1);
  CHECK(cli.mounts[0].options == std::vector<std::string>{"rbind", "ro"});
  CHECK(dump(cli) == dump(docker));
  CHECK(dump(cli) == dump(v1));

  // The same with a private network and a published port (CLI and Docker).
  cli::SandboxFlags f = create_flags({"bare", "echo", "hi"});
  f.network = "private";
  f.publish = {"127.0.0.1:18080:80/tcp"};
  f.tmpfs = {"/scratch:size=1048576,mode=1777"};
  SandboxSpec cli_net = from_cli(f);
  SandboxSpec docker_net = from_docker(json::parse(R"({
    "Image": "bare", "Cmd": ["echo", "hi"], "Env": ["A=1"], "WorkingDir": "/w",
    "HostConfig": {"Binds": ["/tmp:/data:ro"], "Memory": 268435456, "NanoCpus": 1500000000, "Runtime": "native",
                   "PortBindings": {"80/tcp": [{"HostIp": "127.0.0.1", "HostPort": "18080"}]},
                   "Mounts": [{"Type": "tmpfs", "Target": "/scratch", "TmpfsOptions": {"SizeBytes": 1048576, "Mode": 1023}}]}})"));
  CHECK(cli_net.network == NetworkMode::Private);
  CHECK(dump(cli_net) == dump(docker_net));
}

TEST_CASE("without a command the sandbox holds, also on an image without Cmd or Entrypoint") {
  SandboxSpec cli = from_cli(create_flags({"bare"}));
  SandboxSpec v1 = from_v1(json::parse(R"({"image": "bare", "name": "n1", "env": {"A": "1"}, "workdir": "/w",
    "volumes": {"/tmp": "/data:ro"}, "memory": 268435456, "cpu": 1.5, "runtime": "native"})"));
  CHECK(cli.process.args.empty());
  CHECK(dump(cli) == dump(v1));
  // Docker has no "hold": a create without a command to run is refused, as dockerd does.
  CHECK_THROWS_AS(from_docker(json::parse(R"({"Image": "bare"})")), Error);
}

TEST_CASE("the builder checks Docker's tmpfs options as the CLI's") {
  try {
    from_docker(json::parse(R"({"Image": "bare", "Cmd": ["true"], "HostConfig": {"Tmpfs": {"/t": "size=1m,bogus"}}})"));
    FAIL("an unknown tmpfs option was accepted");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidArgument);
    CHECK(std::string(e.what()).find("bogus") != std::string::npos);
  }
  // idmap=host is the command line's opt-in only.
  CHECK_THROWS_AS(from_docker(json::parse(R"({"Image": "bare", "Cmd": ["true"],
                                              "HostConfig": {"Binds": ["/tmp:/d:idmap=host"]}})")),
                  Error);
}

TEST_CASE("Docker's security fields: defaults pass, anything else is refused naming the field") {
  auto refused = [](const char* hc) -> std::string {
    try {
      from_docker(json::parse(std::string(R"({"Image": "bare", "Cmd": ["true"], "HostConfig": )") + hc + "}"));
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::Unsupported);
      return e.what();
    }
    return "";
  };
  CHECK(refused(R"({"Privileged": true})").find("HostConfig.Privileged") != std::string::npos);
  CHECK(refused(R"({"SecurityOpt": ["seccomp=unconfined"]})").find("HostConfig.SecurityOpt") != std::string::npos);
  CHECK(refused(R"({"SecurityOpt": ["apparmor=unconfined"]})").find("HostConfig.SecurityOpt") != std::string::npos);
  CHECK(refused(R"({"SecurityOpt": ["no-new-privileges=false"]})").find("HostConfig.SecurityOpt") != std::string::npos);
  CHECK(refused(R"({"Sysctls": {"net.ipv4.ip_forward": "1"}})").find("HostConfig.Sysctls") != std::string::npos);
  CHECK(refused(R"({"PidMode": "host"})").find("HostConfig.PidMode") != std::string::npos);
  CHECK(refused(R"({"IpcMode": "host"})").find("HostConfig.IpcMode") != std::string::npos);
  CHECK(refused(R"({"UTSMode": "host"})").find("HostConfig.UTSMode") != std::string::npos);
  CHECK(refused(R"({"CgroupParent": "/x"})").find("HostConfig.CgroupParent") != std::string::npos);
  // What the docker CLI sends on every create, and no-new-privileges (always on).
  CHECK(refused(R"({"Privileged": false, "PidMode": "", "IpcMode": "private", "UTSMode": "", "CgroupParent": "",
                    "Sysctls": {}, "SecurityOpt": ["no-new-privileges"]})")
            .empty());
}

TEST_CASE("error kinds map to one status table per wire format") {
  CHECK(server::docker_status(Error(ErrorKind::SandboxNotFound, "x")) == 404);
  CHECK(server::docker_status(Error(ErrorKind::Conflict, "x")) == 409);
  CHECK(server::docker_status(Error(ErrorKind::InvalidArgument, "x")) == 400);
  CHECK(server::docker_status(Error("no such sandbox, but said only in words")) == 500);
  CHECK(server::v1_status(Error(ErrorKind::ImageNotFound, "x")).kind == ErrorKind::ImageNotFound);
  CHECK(server::v1_status(Error("open x: No such file or directory", ENOENT)).kind == ErrorKind::FileNotFound);
  CHECK(server::v1_status(Error(ErrorKind::Unsupported, "x")).status == 400);
  CHECK(std::string(server::connect_code(Error(ErrorKind::FileNotFound, "x"))) == "not_found");
  CHECK(server::e2b_status(Error(ErrorKind::Internal, "x")) == 500);
  CHECK(std::string(error_kind_name(ErrorKind::SnapshotNotFound)) == "SnapshotNotFound");
}

TEST_CASE("a batch task line goes through the same builder as `sbx run`") {
  // An image with an Entrypoint: a task's cmd is its whole argv, as
  // `sbx run --entrypoint '' IMAGE CMD…`.
  engine::ResolvedImage img = bare_image();
  img.config.entrypoint = {"/ep"};
  img.config.env = {"PATH=/usr/bin:/bin", "A=0"};
  cli::BuildOptions run;
  run.command = "run";
  cli::SandboxFlags f;
  f.exact = true;
  f.positional = {"bare", "echo", "hi"};
  f.entrypoint = "";
  f.entrypoint_set = true;
  f.env = {"A=1"};
  f.memory = "256m";
  f.cpus = 1.5;
  f.pids_limit = 64;
  f.timeout = "10s";
  f.runtime = "native";
  engine::SandboxOptions from_flags = cli::sandbox_options(f, run);
  from_flags.id = kId;
  SandboxSpec want = engine::build_sandbox(from_flags, img).spec;

  // `sbx batch --runtime native` (no --image: the task names it).
  cli::SandboxFlags bf;
  bf.exact = true;
  bf.runtime = "native";
  engine::SandboxOptions base = cli::sandbox_options(bf, run);
  engine::SandboxOptions task = engine::batch_task_options(
      base, R"({"id": "t1", "image": "bare", "cmd": ["echo", "hi"], "env": {"A": "1"}, "memory": "256m",
                "cpus": 1.5, "pids_limit": 64, "timeout": 10})");
  CHECK(task.image == "bare");
  task.id = kId;
  SandboxSpec got = engine::build_sandbox(task, img).spec;
  CHECK(got.process.args == std::vector<std::string>{"echo", "hi"});
  CHECK(std::count(got.process.env.begin(), got.process.env.end(), "A=1") == 1);
  CHECK(got.timeout == std::chrono::milliseconds(10000));
  CHECK(dump(got) == dump(want));

  // A script runs under /bin/sh -c; the batch's --image when the line names none.
  base.image = "bare";
  engine::SandboxOptions script = engine::batch_task_options(base, R"({"id": 2, "script": "echo hi"})");
  CHECK(script.image == "bare");
  CHECK(engine::build_sandbox(script, img).spec.process.args == std::vector<std::string>{"/bin/sh", "-c", "echo hi"});
  // A malformed line is refused with the message its result carries.
  CHECK_THROWS_AS(engine::batch_task_options(base, R"({"id": "x", "cmd": []})"), Error);
  CHECK_THROWS_AS(engine::batch_task_options(base, R"({"id": "x", "script": "true", "network": "moon"})"), Error);
}

TEST_CASE("a batch task's network over the batch's: egress options stay only from private to private") {
  engine::ResolvedImage img = bare_image();
  cli::BuildOptions run;
  run.command = "run";
  cli::SandboxFlags bf;
  bf.exact = true;
  bf.runtime = "native";
  bf.network = "private";
  bf.allow_egress = {"192.0.2.0/24"};
  bf.dns = {"192.0.2.53"};
  engine::SandboxOptions base = cli::sandbox_options(bf, run);
  base.image = "bare";
  SandboxSpec same = engine::build_sandbox(engine::batch_task_options(base, R"({"id": "a", "script": "true"})"), img).spec;
  CHECK(same.network == NetworkMode::Private);
  CHECK(same.net.allow_egress == std::vector<std::string>{"192.0.2.0/24"});
  SandboxSpec priv = engine::build_sandbox(
      engine::batch_task_options(base, R"({"id": "b", "script": "true", "network": "bridge"})"), img).spec;
  CHECK(priv.net.dns == std::vector<std::string>{"192.0.2.53"});
  // To none (or host): the egress options go (the builder would refuse them there).
  SandboxSpec none = engine::build_sandbox(
      engine::batch_task_options(base, R"({"id": "c", "script": "true", "network": "none"})"), img).spec;
  CHECK(none.network == NetworkMode::None);
  CHECK(none.net.allow_egress.empty());
  CHECK(none.net.dns.empty());
  // From none to private: open egress.
  bf = {};
  bf.exact = true;
  bf.runtime = "native";
  engine::SandboxOptions nbase = cli::sandbox_options(bf, run);
  nbase.image = "bare";
  SandboxSpec open = engine::build_sandbox(
      engine::batch_task_options(nbase, R"({"id": "d", "script": "true", "network": "private"})"), img).spec;
  CHECK(open.network == NetworkMode::Private);
  CHECK(open.net.allow_egress.empty());
}
