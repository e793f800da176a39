// gpu/nvidia: discovery, selection and the SandboxSpec it produces, on a fake
// device tree (tests/unit/test_gpu_fake_tree.h; this machine has no GPU).
#include <doctest.h>

#include <algorithm>
#include <functional>

#include "common/error.h"
#include "gpu/nvidia.h"
#include "test_gpu_fake_tree.h"

using namespace sbx;
using namespace sbx::gpu;
using sbx::test::FakeNvidiaTree;

namespace {

DiscoverOptions opts(const FakeNvidiaTree& t) {
  DiscoverOptions o;
  o.root = HostRoot{t.root};
  return o;
}

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

const Mount* mount_at(const SandboxSpec& s, const std::string& dest) {
  for (const auto& m : s.mounts)
    if (m.destination == dest) return &m;
  return nullptr;
}

const char* kUuidA = "GPU-aaaaaaaa-0000-0000-0000-000000000001";  // bus 3b, minor 1, index 0
const char* kUuidB = "GPU-bbbbbbbb-0000-0000-0000-000000000002";  // bus 86, minor 0, index 1

}  // namespace

TEST_CASE("parse_driver_version reads proprietary and open kernel module lines") {
  CHECK(parse_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 2023\n", "v") ==
        "535.104.05");
  CHECK(parse_driver_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  "
                             "(dvs-builder@U16)  Tue Mar  5 22:23:13 UTC 2024\nGCC version: 12\n",
                             "v") == "550.54.15");
  CHECK_THROWS_AS(parse_driver_version("GCC version: gcc 12.2.0\n", "v"), Error);
}

TEST_CASE("parse_gpu_information needs a numeric Device Minor") {
  auto g = parse_gpu_information("Model: \t\t Tesla T4\nGPU UUID: \t GPU-1\nBus Location: \t 0000:00:1e.0\nDevice Minor: \t 3\n", "i");
  CHECK(g.model == "Tesla T4");
  CHECK(g.uuid == "GPU-1");
  CHECK(g.bus_location == "0000:00:1e.0");
  CHECK(g.minor == 3);
  CHECK(g.device_path() == "/dev/nvidia3");
  CHECK_THROWS_AS(parse_gpu_information("Model: x\nDevice Minor: three\n", "i"), Error);
  CHECK_THROWS_AS(parse_gpu_information("Model: x\n", "i"), Error);
}

TEST_CASE("discover_nvidia finds GPUs in PCI order, nodes, versioned libraries, binaries and the socket") {
  FakeNvidiaTree t;
  t.full_host("550.54.15");
  NvidiaHost h = discover_nvidia(opts(t));
  CHECK(h.driver_version == "550.54.15");
  REQUIRE(h.gpus.size() == 2);
  CHECK(h.gpus[0].index == 0);
  CHECK(h.gpus[0].bus_location == "0000:3b:00.0");
  CHECK(h.gpus[0].minor == 1);
  CHECK(h.gpus[0].uuid == kUuidA);
  CHECK(h.gpus[0].model == "NVIDIA H100 80GB HBM3");
  CHECK(h.gpus[1].minor == 0);
  CHECK(h.control_nodes ==
        std::vector<std::string>{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"});
  CHECK(h.caps_nodes == std::vector<std::string>{"/dev/nvidia-caps/nvidia-cap1"});
  // Found through the ld.so cache entry libcuda.so.1 and resolved to the real file.
  std::vector<std::string> libs;
  for (const auto& l : h.libraries) libs.push_back(l.host_path);
  const std::string d = "/usr/lib/x86_64-linux-gnu/";
  CHECK(libs == std::vector<std::string>{d + "libcuda.so.550.54.15", d + "libnvidia-ml.so.550.54.15",
                                         d + "libnvidia-ptxjitcompiler.so.550.54.15"});
  CHECK(h.library_dirs == std::vector<std::string>{"/usr/lib/x86_64-linux-gnu"});
  REQUIRE(h.binaries.size() == 2);
  CHECK(h.binaries[0].host_path == "/usr/bin/nvidia-smi");
  CHECK(h.binaries[0].container_path == "/usr/bin/nvidia-smi");
  CHECK(h.binaries[1].container_path == "/usr/bin/nvidia-debugdump");
  CHECK(h.persistenced_socket == "/run/nvidia-persistenced/socket");
}

TEST_CASE("discover_nvidia falls back to the driver's own directory, uncached") {
  FakeNvidiaTree t;
  t.driver_version("535.104.05");
  t.gpu("0000:00:1e.0", 0, "GPU-cccccccc");
  t.control_nodes();
  t.library("/usr/local/nvidia/lib64", "libcuda.so", "535.104.05");
  t.library("/usr/local/nvidia/lib64", "libnvidia-ml.so", "535.104.05");
  t.binary("/usr/local/nvidia/bin/nvidia-smi");
  NvidiaHost h = discover_nvidia(opts(t));
  REQUIRE(h.libraries.size() == 2);
  CHECK(h.libraries[0].host_path == "/usr/local/nvidia/lib64/libcuda.so.535.104.05");
  CHECK(h.library_dirs == std::vector<std::string>{"/usr/local/nvidia/lib64"});
  REQUIRE(h.binaries.size() == 1);
  CHECK(h.binaries[0].host_path == "/usr/local/nvidia/bin/nvidia-smi");
  CHECK(h.binaries[0].container_path == "/usr/bin/nvidia-smi");
  CHECK(h.persistenced_socket.empty());
}

TEST_CASE("discover_nvidia gives clear errors: no driver, no nodes, no libraries, version mismatch") {
  FakeNvidiaTree t;
  CHECK(!nvidia_present(HostRoot{t.root}));
  CHECK(error_of([&] { discover_nvidia(opts(t)); }).find("no NVIDIA driver found: /proc/driver/nvidia/version is missing") == 0);

  t.driver_version("550.54.15");
  t.gpu("0000:3b:00.0", 0, "GPU-a");
  CHECK(nvidia_present(HostRoot{t.root}));
  CHECK(error_of([&] { discover_nvidia(opts(t)); }).find("/dev/nvidiactl is missing") != std::string::npos);

  t.control_nodes();
  std::string e = error_of([&] { discover_nvidia(opts(t)); });
  CHECK(e.find("NVIDIA driver libraries missing: libcuda.so.550.54.15 not found in /etc/ld.so.cache") == 0);

  // The user-space driver was upgraded, the kernel module was not.
  t.library("/usr/lib/x86_64-linux-gnu", "libcuda.so", "560.35.03");
  t.library("/usr/lib/x86_64-linux-gnu", "libnvidia-ml.so", "560.35.03");
  t.ldconfig({"/usr/lib/x86_64-linux-gnu"});
  e = error_of([&] { discover_nvidia(opts(t)); });
  CHECK(e.find("NVIDIA driver library version 560.35.03 does not match the kernel module 550.54.15") == 0);
  CHECK(e.find("/usr/lib/x86_64-linux-gnu/libcuda.so.560.35.03") != std::string::npos);

  // With the matching version installed beside it, that one is chosen.
  t.library("/usr/local/nvidia/lib64", "libcuda.so", "550.54.15");
  t.library("/usr/local/nvidia/lib64", "libnvidia-ml.so", "550.54.15");
  NvidiaHost h = discover_nvidia(opts(t));
  REQUIRE(h.libraries.size() == 2);
  CHECK(h.libraries[0].host_path == "/usr/local/nvidia/lib64/libcuda.so.550.54.15");
}

TEST_CASE("select_gpus: all, index, list, UUID, docker forms, errors") {
  FakeNvidiaTree t;
  t.full_host();
  NvidiaHost h = discover_nvidia(opts(t));
  auto idx = [&](const std::string& s) {
    std::vector<int> out;
    for (const auto& g : select_gpus(h, s)) out.push_back(g.index);
    return out;
  };
  CHECK(idx("all") == std::vector<int>{0, 1});
  CHECK(idx("1") == std::vector<int>{1});
  CHECK(idx("1,0") == std::vector<int>{1, 0});
  CHECK(idx("0,0") == std::vector<int>{0});
  CHECK(idx(kUuidB) == std::vector<int>{1});
  CHECK(idx(std::string(kUuidB) + "," + kUuidA) == std::vector<int>{1, 0});
  CHECK(idx("device=1") == std::vector<int>{1});
  CHECK(idx("\"device=0,1\"") == std::vector<int>{0, 1});
  CHECK(idx("count=1") == std::vector<int>{0});
  CHECK(idx("count=all") == std::vector<int>{0, 1});
  CHECK(idx("none").empty());
  CHECK(error_of([&] { select_gpus(h, "2"); }) == "GPU index 2 is out of range: this host has 2 GPUs (0-1)");
  CHECK(error_of([&] { select_gpus(h, "0,99999999999"); }).find("GPU index 99999999999 is out of range") == 0);
  CHECK(error_of([&] { select_gpus(h, "GPU-nope"); }).find("no GPU with UUID GPU-nope") == 0);
  CHECK(error_of([&] { select_gpus(h, "count=3"); }).find("asked for 3 GPUs but this host has 2 GPUs") != std::string::npos);
  CHECK(error_of([&] { select_gpus(h, "count=0"); }).find("count must be a positive number") != std::string::npos);
  CHECK(error_of([&] { select_gpus(h, "first"); }).find("cannot parse 'first'") != std::string::npos);
  CHECK(error_of([&] { select_gpus(h, ""); }).find("--gpus needs a value") == 0);
  CHECK(error_of([&] { select_gpus(h, "0,"); }).find("cannot parse ''") != std::string::npos);
}

TEST_CASE("apply_gpus adds exactly the selected GPU's nodes, cgroup rules, read-only driver mounts and env") {
  FakeNvidiaTree t;
  t.full_host("550.54.15");
  HostRoot root{t.root};
  NvidiaHost h = discover_nvidia(opts(t));
  SandboxSpec s;
  s.process.env = {"PATH=/usr/bin:/bin", "CUDA_VISIBLE_DEVICES=7", "NVIDIA_VISIBLE_DEVICES=all"};
  apply_gpus(h, select_gpus(h, "0"), root, s);  // index 0 = /dev/nvidia1 (195:1)

  std::vector<std::string> paths;
  for (const auto& d : s.devices) paths.push_back(d.path);
  CHECK(paths == std::vector<std::string>{"/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                                          "/dev/nvidia-modeset"});
  CHECK(s.devices[0].type == 'c');
  CHECK(s.devices[0].major == 195);
  CHECK(s.devices[0].minor == 1);
  CHECK(s.devices[0].file_mode == 0666);
  CHECK(s.devices[2].major == 235);
  CHECK(s.devices[2].minor == 0);

  std::vector<std::string> rules;
  for (const auto& r : s.resources.devices)
    rules.push_back(std::string(r.allow ? "allow " : "deny ") + r.type + " " + std::to_string(r.major) + ":" +
                    std::to_string(r.minor) + " " + r.access);
  CHECK(rules == std::vector<std::string>{"allow c 195:1 rwm", "allow c 195:255 rwm", "allow c 235:0 rwm",
                                          "allow c 235:1 rwm", "allow c 195:254 rwm"});

  const std::string lib = "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15";
  const Mount* m = mount_at(s, lib);
  REQUIRE(m != nullptr);
  CHECK(m->type == "bind");
  CHECK(m->source == t.p(lib));
  CHECK(std::find(m->options.begin(), m->options.end(), "ro") != m->options.end());
  REQUIRE(mount_at(s, "/usr/bin/nvidia-smi") != nullptr);
  CHECK(mount_at(s, "/usr/bin/nvidia-smi")->source == t.p("/usr/bin/nvidia-smi"));
  REQUIRE(mount_at(s, "/run/nvidia-persistenced/socket") != nullptr);
  CHECK(mount_at(s, "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15") != nullptr);
  CHECK(s.mounts.size() == 3 + 2 + 1);
  CHECK(s.ldconfig_dirs == std::vector<std::string>{"/usr/lib/x86_64-linux-gnu"});

  CHECK(has_env(s, std::string("CUDA_VISIBLE_DEVICES=") + kUuidA));
  CHECK(has_env(s, std::string("NVIDIA_VISIBLE_DEVICES=") + kUuidA));
  CHECK(has_env(s, "NVIDIA_DRIVER_CAPABILITIES=compute,utility"));
  CHECK(!has_env(s, "CUDA_VISIBLE_DEVICES=7"));
  CHECK(s.process.env.size() == 4);

  // Applying a second selection on top is idempotent for shared nodes.
  apply_gpus(h, select_gpus(h, "0,1"), root, s);
  CHECK(s.devices.size() == 6);
  CHECK(s.resources.devices.size() == 6);
  CHECK(s.mounts.size() == 6);
  CHECK(has_env(s, std::string("CUDA_VISIBLE_DEVICES=") + kUuidA + "," + kUuidB));
}

TEST_CASE("apply_gpus with an empty selection hides all GPUs and a missing GPU node is an error") {
  FakeNvidiaTree t;
  t.full_host();
  HostRoot root{t.root};
  NvidiaHost h = discover_nvidia(opts(t));
  SandboxSpec s;
  apply_gpus(h, {}, root, s);
  CHECK(s.devices.empty());
  CHECK(s.mounts.empty());
  CHECK(has_env(s, "NVIDIA_VISIBLE_DEVICES=void"));

  std::filesystem::remove(t.p("/dev/nvidia0"));
  SandboxSpec s2;
  CHECK(error_of([&] { apply_gpus(h, select_gpus(h, "1"), root, s2); }).find("device node") == 0);
}
