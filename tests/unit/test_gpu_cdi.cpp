// gpu/cdi and gpu/yaml_json: CDI specs in JSON and YAML, resolution of
// vendor/class=name, and the edits applied to a SandboxSpec (device nodes are
// real char devices in a fake tree; see test_gpu_fake_tree.h).
#include <doctest.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "gpu/cdi.h"
#include "gpu/yaml_json.h"
#include "test_gpu_fake_tree.h"

using namespace sbx;
using namespace sbx::gpu;
using sbx::test::FakeNvidiaTree;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

bool has_env(const SandboxSpec& s, const std::string& kv) {
  return std::find(s.process.env.begin(), s.process.env.end(), kv) != s.process.env.end();
}

// What `nvidia-ctk cdi generate` writes, trimmed to two GPUs (JSON form).
const char* kNvidiaJson = R"({
  "cdiVersion": "0.5.0",
  "kind": "nvidia.com/gpu",
  "devices": [
    {"name": "0", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0"}]}},
    {"name": "1", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia1"}]}},
    {"name": "GPU-aaaa", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia1"}]}}
  ],
  "containerEdits": {
    "env": ["NVIDIA_VISIBLE_DEVICES=void"],
    "deviceNodes": [{"path": "/dev/nvidiactl"}, {"path": "/dev/nvidia-uvm"}],
    "hooks": [{"hookName": "createContainer", "path": "/usr/bin/nvidia-cdi-hook",
               "args": ["nvidia-cdi-hook", "update-ldcache", "--folder", "/usr/lib/x86_64-linux-gnu"],
               "env": ["NVIDIA_CTK_DEBUG=false"], "timeout": 10}],
    "mounts": [{"hostPath": "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15",
                "containerPath": "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15",
                "options": ["ro", "nosuid", "nodev", "bind"]}]
  }
})";

// A YAML spec using YAML features: comments, quoting, octal, a flow list, an anchor.
const char* kVendorYaml = R"(# written by hand
cdiVersion: "0.6.0"
kind: example.com/fpga
annotations: {owner: lab}
containerEdits:
  env: &common ["FPGA_RUNTIME=1"]
  additionalGids: [44, 107]
devices:
- name: card0
  containerEdits:
    env: *common
    deviceNodes:
    - path: /dev/fpga0
      hostPath: /dev/fake-fpga
      permissions: rw
      fileMode: 0660
      uid: 1000
      gid: 44
    - path: /dev/fpga-fixed
      type: c
      major: 240
      minor: 7
    mounts:
    - hostPath: /opt/fpga/bitstreams
      containerPath: /bitstreams
      type: bind
      options: [ro, rbind]
- name: "card1"
  containerEdits:
    env: ["FPGA_CARD='1'"]
)";

}  // namespace

TEST_CASE("yaml_to_json types plain scalars, keeps quoted ones as strings, follows aliases") {
  auto j = yaml_to_json("a: 12\nb: '12'\nc: 0660\nd: 0x1f\ne: true\nf: ~\ng: hello world\nh: -3\ni: 1.5\n"
                        "l: &x [1, two]\nm: *x\n",
                        "t");
  CHECK(j["a"] == 12);
  CHECK(j["b"] == "12");
  CHECK(j["c"] == 0660);
  CHECK(j["d"] == 31);
  CHECK(j["e"] == true);
  CHECK(j["f"].is_null());
  CHECK(j["g"] == "hello world");
  CHECK(j["h"] == -3);
  CHECK(j["i"] == 1.5);
  CHECK(j["m"] == nlohmann::json::array({1, "two"}));
  std::string e = error_of([] { yaml_to_json("a: [1, 2\nb: c\n", "spec.yaml"); });
  CHECK(e.find("spec.yaml: invalid YAML") == 0);
  CHECK(e.find("line") != std::string::npos);
  // An alias bomb is bounded instead of eating the memory.
  std::string bomb = "a: &a [x,x,x,x,x,x,x,x,x,x]\n";
  for (char c = 'b'; c <= 'j'; ++c) {
    std::string p(1, static_cast<char>(c - 1));
    bomb += std::string(1, c) + ": &" + c + " [*" + p + ",*" + p + ",*" + p + ",*" + p + ",*" + p + ",*" + p + ",*" + p +
            ",*" + p + ",*" + p + ",*" + p + "]\n";
  }
  CHECK(error_of([&] { yaml_to_json(bomb, "bomb.yaml"); }).find("more than") != std::string::npos);
}

TEST_CASE("parse_cdi_spec reads JSON and YAML specs") {
  CdiSpec j = parse_cdi_spec(kNvidiaJson, "/etc/cdi/nvidia.json");
  CHECK(j.version == "0.5.0");
  CHECK(j.kind == "nvidia.com/gpu");
  REQUIRE(j.devices.size() == 3);
  CHECK(j.devices[2].name == "GPU-aaaa");
  REQUIRE(j.edits.hooks.size() == 1);
  CHECK(j.edits.hooks[0].timeout_s == 10);
  CHECK(j.edits.device_nodes[0].host_path == "/dev/nvidiactl");

  CdiSpec y = parse_cdi_spec(kVendorYaml, "/etc/cdi/fpga.yaml");
  CHECK(y.kind == "example.com/fpga");
  REQUIRE(y.devices.size() == 2);
  const auto& n = y.devices[0].edits.device_nodes[0];
  CHECK(n.host_path == "/dev/fake-fpga");
  CHECK(n.file_mode == 0660u);
  CHECK(n.uid == 1000u);
  CHECK(n.permissions == "rw");
  CHECK(y.devices[0].edits.env == std::vector<std::string>{"FPGA_RUNTIME=1"});
  CHECK(y.edits.additional_gids == std::vector<uint32_t>{44, 107});
  CHECK(y.devices[1].edits.env == std::vector<std::string>{"FPGA_CARD='1'"});
}

TEST_CASE("parse_cdi_spec rejects malformed specs with the file and field named") {
  auto err = [](const std::string& text, const std::string& file = "/etc/cdi/x.json") {
    return error_of([&] { parse_cdi_spec(text, file); });
  };
  CHECK(err("{").find("CDI spec /etc/cdi/x.json: invalid JSON") == 0);
  CHECK(err(R"({"cdiVersion":"0.2.0","kind":"a.com/b","devices":[{"name":"x"}]})").find("unsupported version '0.2.0'") !=
        std::string::npos);
  CHECK(err(R"({"cdiVersion":"0.6.0","kind":"nvidia.com","devices":[{"name":"x"}]})").find("kind: 'nvidia.com' is not") !=
        std::string::npos);
  CHECK(err(R"({"cdiVersion":"0.6.0","kind":"a.com/b","devices":[]})").find("at least one device") != std::string::npos);
  CHECK(err(R"({"cdiVersion":"0.6.0","kind":"a.com/b","devices":[{"name":"x"},{"name":"x"}]})").find("defined twice") !=
        std::string::npos);
  CHECK(err(R"({"cdiVersion":"0.6.0","kind":"a.com/b","devices":[{"name":"-x"}]})").find("not a valid device name") !=
        std::string::npos);
  CHECK(err(R"({"cdiVersion":"0.6.0","kind":"a.com/b","devices":[{"name":"x","containerEdits":{"deviceNodes":[{"path":"dev/x"}]}}]})")
            .find("devices[0].containerEdits.deviceNodes[0].path: must be an absolute path") != std::string::npos);
  CHECK(err(R"({"cdiVersion":"0.6.0","kind":"a.com/b","devices":[{"name":"x","containerEdits":{"env":"A=1"}}]})")
            .find("env: must be a list of strings") != std::string::npos);
  CHECK(err(R"({"cdiVersion":"0.6.0","kind":"a.com/b","devices":[{"name":"x","containerEdits":{"deviceNodes":[{"path":"/dev/x","major":"195"}]}}]})")
            .find("major: must be an integer") != std::string::npos);
  CHECK(err(R"({"cdiVersion":"0.6.0","kind":"a.com/b","devices":[{"name":"x","containerEdits":{"hooks":[{"hookName":"poststop","path":"/bin/true"}]}}]})")
            .find("only createContainer") != std::string::npos);
  CHECK(err("cdiVersion: 0.6\nkind: a.com/b\n", "/etc/cdi/x.yaml").find("cdiVersion: must be a string") != std::string::npos);
}

TEST_CASE("parse_qualified_name and is_cdi_name") {
  CHECK(parse_qualified_name("nvidia.com/gpu=0") == std::pair<std::string, std::string>{"nvidia.com/gpu", "0"});
  CHECK(parse_qualified_name("nvidia.com/gpu=GPU-12:3") == std::pair<std::string, std::string>{"nvidia.com/gpu", "GPU-12:3"});
  CHECK_THROWS_AS(parse_qualified_name("nvidia.com/gpu"), Error);
  CHECK_THROWS_AS(parse_qualified_name("nvidia.com=0"), Error);
  CHECK_THROWS_AS(parse_qualified_name("nvidia.com/gpu="), Error);
  CHECK(is_cdi_name("nvidia.com/gpu=all"));
  CHECK(!is_cdi_name("/dev/fuse"));
  CHECK(!is_cdi_name("/dev/a=b"));
}

TEST_CASE("CdiRegistry resolves devices and applies spec- and device-level edits") {
  FakeNvidiaTree t;
  t.mknod_c("/dev/nvidia0", 195, 0);
  t.mknod_c("/dev/nvidia1", 195, 1);
  t.mknod_c("/dev/nvidiactl", 195, 255);
  t.mknod_c("/dev/nvidia-uvm", 235, 0);
  t.mknod_c("/dev/fake-fpga", 241, 3);
  t.write("/etc/cdi/nvidia.json", kNvidiaJson);
  t.write("/etc/cdi/fpga.yaml", kVendorYaml);
  t.write("/etc/cdi/broken.yaml", "cdiVersion: \"0.6.0\"\nkind: [oops\n");
  t.write("/etc/cdi/README.txt", "not a spec");
  HostRoot root{t.root};
  CdiRegistry reg = CdiRegistry::load(root);
  CHECK(reg.specs().size() == 2);
  REQUIRE(reg.errors().size() == 1);
  CHECK(reg.errors()[0].find("CDI spec /etc/cdi/broken.yaml: invalid YAML") == 0);
  CHECK(reg.device_names() == std::vector<std::string>{"example.com/fpga=card0", "example.com/fpga=card1",
                                                       "nvidia.com/gpu=0", "nvidia.com/gpu=1", "nvidia.com/gpu=GPU-aaaa"});

  SUBCASE("one NVIDIA GPU: spec edits once, then the device's") {
    SandboxSpec s;
    s.process.env = {"NVIDIA_VISIBLE_DEVICES=all"};
    reg.apply({"nvidia.com/gpu=1"}, root, s);
    std::vector<std::string> paths;
    for (const auto& d : s.devices) paths.push_back(d.path + " " + std::to_string(d.major) + ":" + std::to_string(d.minor));
    CHECK(paths == std::vector<std::string>{"/dev/nvidiactl 195:255", "/dev/nvidia-uvm 235:0", "/dev/nvidia1 195:1"});
    CHECK(s.resources.devices.size() == 3);
    CHECK(s.resources.devices[2].allow);
    CHECK(s.resources.devices[2].minor == 1);
    CHECK(has_env(s, "NVIDIA_VISIBLE_DEVICES=void"));
    CHECK(s.process.env.size() == 1);
    REQUIRE(s.mounts.size() == 1);
    CHECK(s.mounts[0].type == "bind");
    CHECK(s.mounts[0].source == t.p("/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"));
    REQUIRE(s.create_container_hooks.size() == 1);
    CHECK(s.create_container_hooks[0].path == "/usr/bin/nvidia-cdi-hook");
    CHECK(s.create_container_hooks[0].args.size() == 4);
    CHECK(s.create_container_hooks[0].timeout_s == 10);
  }
  SUBCASE("=all takes every device of the kind, shared nodes once") {
    SandboxSpec s;
    reg.apply({"nvidia.com/gpu=all"}, root, s);
    CHECK(s.devices.size() == 4);  // ctl, uvm, nvidia0, nvidia1 (GPU-aaaa is nvidia1 again)
    CHECK(s.resources.devices.size() == 4);
    CHECK(s.create_container_hooks.size() == 1);
  }
  SUBCASE("YAML device: hostPath, permissions, fileMode, uid/gid, fixed major/minor, mounts, gids") {
    SandboxSpec s;
    reg.apply({"example.com/fpga=card0"}, root, s);
    REQUIRE(s.devices.size() == 2);
    CHECK(s.devices[0].path == "/dev/fpga0");
    CHECK(s.devices[0].major == 241);
    CHECK(s.devices[0].minor == 3);
    CHECK(s.devices[0].file_mode == 0660);
    CHECK(s.devices[0].uid == 1000);
    CHECK(s.devices[0].gid == 44);
    CHECK(s.devices[1].major == 240);  // from the spec; no host node needed
    CHECK(s.devices[1].minor == 7);
    REQUIRE(s.resources.devices.size() == 2);
    CHECK(s.resources.devices[0].access == "rw");
    CHECK(s.resources.devices[1].access == "rwm");
    REQUIRE(s.mounts.size() == 1);
    CHECK(s.mounts[0].destination == "/bitstreams");
    CHECK(s.mounts[0].options == std::vector<std::string>{"ro", "rbind"});
    CHECK(s.process.additional_gids == std::vector<uint32_t>{44, 107});
    CHECK(has_env(s, "FPGA_RUNTIME=1"));
  }
  SUBCASE("unknown devices and kinds are clear errors and change nothing") {
    SandboxSpec s;
    std::string e = error_of([&] { reg.apply({"nvidia.com/gpu=0", "nvidia.com/gpu=7"}, root, s); });
    CHECK(e.find("unknown CDI device nvidia.com/gpu=7: kind nvidia.com/gpu has devices 0, 1, GPU-aaaa") == 0);
    CHECK(e.find("unreadable: CDI spec /etc/cdi/broken.yaml") != std::string::npos);
    e = error_of([&] { reg.apply({"amd.com/gpu=0"}, root, s); });
    CHECK(e.find("unknown CDI device amd.com/gpu=0: no spec of kind amd.com/gpu") == 0);
    CHECK(e.find("kinds found: example.com/fpga, nvidia.com/gpu") != std::string::npos);
    CHECK(error_of([&] { reg.apply({"gpu0"}, root, s); }).find("not a CDI device name") != std::string::npos);
    CHECK(s.devices.empty());
    CHECK(s.process.env.empty());
  }
  SUBCASE("a missing host node is an error naming the spec, and leaves the spec unchanged") {
    std::filesystem::remove(t.p("/dev/nvidia-uvm"));
    SandboxSpec s;
    std::string e = error_of([&] { reg.apply({"nvidia.com/gpu=0"}, root, s); });
    CHECK(e.find("/dev/nvidia-uvm does not exist") != std::string::npos);
    CHECK(e.find("(needed by /etc/cdi/nvidia.json)") != std::string::npos);
    CHECK(s.devices.empty());
  }
}

TEST_CASE("CdiRegistry: /var/run/cdi overrides /etc/cdi; same-directory duplicates are an error") {
  FakeNvidiaTree t;
  t.mknod_c("/dev/a", 10, 1);
  t.mknod_c("/dev/b", 10, 2);
  auto spec = [](const std::string& dev) {
    return R"({"cdiVersion":"0.8.0","kind":"x.io/d","devices":[{"name":"one","containerEdits":{"deviceNodes":[{"path":")" +
           dev + R"("}]}}]})";
  };
  t.write("/etc/cdi/x.json", spec("/dev/a"));
  t.write("/var/run/cdi/x.json", spec("/dev/b"));
  HostRoot root{t.root};
  SandboxSpec s;
  CdiRegistry::load(root).apply({"x.io/d=one"}, root, s);
  REQUIRE(s.devices.size() == 1);
  CHECK(s.devices[0].path == "/dev/b");
  t.write("/var/run/cdi/y.json", spec("/dev/a"));
  SandboxSpec s2;
  CHECK(error_of([&] { CdiRegistry::load(root).apply({"x.io/d=one"}, root, s2); })
            .find("CDI device x.io/d=one is defined in both /var/run/cdi/x.json and /var/run/cdi/y.json") == 0);
}

TEST_CASE("apply_host_device: docker's --device /dev/x[:/dev/y][:perms]") {
  FakeNvidiaTree t;
  t.mknod_c("/dev/fuse", 10, 229);
  HostRoot root{t.root};
  SandboxSpec s;
  apply_host_device("/dev/fuse", root, s);
  apply_host_device("/dev/fuse:/dev/myfuse:rw", root, s);
  apply_host_device("/dev/fuse:r", root, s);  // replaces the node at /dev/fuse, adds an "r" rule
  REQUIRE(s.devices.size() == 2);
  CHECK(s.devices[0].path == "/dev/fuse");
  CHECK(s.devices[1].path == "/dev/myfuse");
  CHECK(s.devices[1].major == 10);
  CHECK(s.devices[1].minor == 229);
  REQUIRE(s.resources.devices.size() == 3);
  CHECK(s.resources.devices[0].access == "rwm");
  CHECK(s.resources.devices[1].access == "rw");
  CHECK(s.resources.devices[2].access == "r");
  CHECK(error_of([&] { apply_host_device("/dev/fuse:/dev/x:rwx", root, s); }).find("must be a combination") != std::string::npos);
  CHECK(error_of([&] { apply_host_device("/dev/nope", root, s); }).find("does not exist") != std::string::npos);
  t.write("/dev/regular", "x");
  CHECK(error_of([&] { apply_host_device("/dev/regular", root, s); }).find("is not a character or block device") !=
        std::string::npos);
}

TEST_CASE("parse_cdi_spec: every truncation of a JSON and a YAML spec parses or throws sbx::Error") {
  for (auto [text, file] : {std::pair<std::string, std::string>{kNvidiaJson, "x.json"}, {kVendorYaml, "x.yaml"}}) {
    size_t ok = 0, rejected = 0;
    for (size_t n = 0; n <= text.size(); ++n) {
      try {
        parse_cdi_spec(text.substr(0, n), file);
        ++ok;
      } catch (const Error&) {
        ++rejected;
      }
    }
    CHECK(ok >= 1);  // the whole text
    CHECK(rejected > 0);
  }
}
