// A fake NVIDIA host for gpu/ unit tests: a temporary directory standing in
// for "/" with what the driver would create. This is a fake only because this
// machine has no GPU; its parts are real: char device nodes made with
// mknod(2) (tests run as root), ELF shared libraries built with the system C
// compiler with the driver's sonames, and an /etc/ld.so.cache written by the
// real ldconfig (`ldconfig -r ROOT`), which also makes the soname links.
#pragma once
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace sbx::test {

class FakeNvidiaTree {
 public:
  FakeNvidiaTree() {
    char tmpl[] = "/tmp/sbx-gpu-test.XXXXXX";
    if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    root = tmpl;
  }
  ~FakeNvidiaTree() {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
  FakeNvidiaTree(const FakeNvidiaTree&) = delete;
  FakeNvidiaTree& operator=(const FakeNvidiaTree&) = delete;

  std::string p(const std::string& abs) const { return root + abs; }

  void write(const std::string& abs, const std::string& text) const {
    std::filesystem::create_directories(std::filesystem::path(p(abs)).parent_path());
    std::ofstream(p(abs)) << text;
  }

  void mknod_c(const std::string& abs, int maj, int min) const {
    std::filesystem::create_directories(std::filesystem::path(p(abs)).parent_path());
    if (::mknod(p(abs).c_str(), S_IFCHR | 0666, makedev(maj, min)) < 0)
      throw std::runtime_error("mknod " + p(abs) + " failed (tests need root): " + std::to_string(errno));
    ::chmod(p(abs).c_str(), 0666);  // as the driver makes them, whatever the umask
  }

  void driver_version(const std::string& v) const {
    write("/proc/driver/nvidia/version",
          "NVRM version: NVIDIA UNIX x86_64 Kernel Module  " + v +
              "  Sat Aug 19 01:15:15 UTC 2023\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n");
  }

  // Same layout as the real file (tabs and spaces included).
  void gpu(const std::string& bus, int minor, const std::string& uuid, const std::string& model = "NVIDIA H100 80GB HBM3") const {
    write("/proc/driver/nvidia/gpus/" + bus + "/information",
          "Model: \t\t " + model + "\nIRQ:   \t\t 40\nGPU UUID: \t " + uuid +
              "\nVideo BIOS: \t 96.00.30.00.01\nBus Type: \t PCIe\nDMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\n"
              "Bus Location: \t " + bus + "\nDevice Minor: \t " + std::to_string(minor) + "\nGPU Excluded:\t No\n");
    mknod_c("/dev/nvidia" + std::to_string(minor), 195, minor);
  }

  void control_nodes() const {
    mknod_c("/dev/nvidiactl", 195, 255);
    mknod_c("/dev/nvidia-modeset", 195, 254);
    mknod_c("/dev/nvidia-uvm", 235, 0);
    mknod_c("/dev/nvidia-uvm-tools", 235, 1);
    mknod_c("/dev/nvidia-caps/nvidia-cap1", 237, 1);
  }

  // A real ELF shared object `dir/stem.version` with SONAME `stem.1`.
  void library(const std::string& dir, const std::string& stem, const std::string& version) const {
    std::filesystem::create_directories(p(dir));
    std::string cmd = "cc -shared -o '" + p(dir + "/" + stem + "." + version) + "' -Wl,-soname," + stem +
                      ".1 -x c /dev/null";
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("cannot build a fake library: " + cmd);
  }

  // Runs the real ldconfig over the tree: writes ROOT/etc/ld.so.cache (paths
  // relative to ROOT, as on a real host) and creates the soname links.
  void ldconfig(const std::vector<std::string>& dirs, const std::string& format = "new") const {
    std::string conf;
    for (const auto& d : dirs) conf += d + "\n";
    write("/etc/ld.so.conf", conf);
    std::string cmd = "ldconfig -c " + format + " -r '" + root + "' 2>/dev/null";
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("ldconfig failed: " + cmd);
  }

  void binary(const std::string& abs) const {
    write(abs, "#!/bin/sh\necho fake\n");
    ::chmod(p(abs).c_str(), 0755);
  }

  void unix_socket(const std::string& abs) const {
    std::filesystem::create_directories(std::filesystem::path(p(abs)).parent_path());
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::string path = p(abs);
    path.copy(a.sun_path, sizeof a.sun_path - 1);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) throw std::runtime_error("bind " + path);
    ::close(fd);
  }

  // A complete two-GPU host with driver `version`. Bus order differs from
  // minor order on purpose: index 0 is bus 0000:3b:00.0 = /dev/nvidia1.
  void full_host(const std::string& version = "550.54.15") const {
    driver_version(version);
    gpu("0000:86:00.0", 0, "GPU-bbbbbbbb-0000-0000-0000-000000000002");
    gpu("0000:3b:00.0", 1, "GPU-aaaaaaaa-0000-0000-0000-000000000001");
    control_nodes();
    const std::string lib = "/usr/lib/x86_64-linux-gnu";
    library(lib, "libcuda.so", version);
    library(lib, "libnvidia-ml.so", version);
    library(lib, "libnvidia-ptxjitcompiler.so", version);
    ldconfig({lib});
    binary("/usr/bin/nvidia-smi");
    binary("/usr/bin/nvidia-debugdump");
    unix_socket("/run/nvidia-persistenced/socket");
  }

  std::string root;
};

}  // namespace sbx::test
