#include "gpu/nvidia.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "gpu/devnode.h"
#include "gpu/ldcache.h"

namespace sbx::gpu {

const std::vector<std::string> kDriverLibraries = {
    // required: the CUDA driver API and NVML (nvidia-smi, every framework)
    "libcuda.so", "libnvidia-ml.so",
    // compute
    "libnvidia-ptxjitcompiler.so", "libnvidia-nvvm.so", "libcudadebugger.so", "libnvidia-gpucomp.so",
    "libnvidia-allocator.so", "libnvidia-opencl.so", "libnvidia-pkcs11.so", "libnvidia-pkcs11-openssl3.so",
    // utility
    "libnvidia-cfg.so",
    // pre-R470 drivers
    "libnvidia-fatbinaryloader.so", "libnvidia-compiler.so"};
constexpr size_t kRequiredLibraries = 2;

const std::vector<std::string> kDriverBinaries = {"nvidia-smi", "nvidia-debugdump", "nvidia-persistenced",
                                                  "nvidia-cuda-mps-control", "nvidia-cuda-mps-server"};

namespace {

std::string trim(std::string s) {
  auto sp = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!s.empty() && sp(s.back())) s.pop_back();
  size_t i = 0;
  while (i < s.size() && sp(s[i])) ++i;
  return s.substr(i);
}

bool is_version(const std::string& t) {
  if (t.empty() || !std::isdigit(static_cast<unsigned char>(t.front())) || !std::isdigit(static_cast<unsigned char>(t.back())))
    return false;
  bool dot = false;
  for (char c : t) {
    if (c == '.')
      dot = true;
    else if (!std::isdigit(static_cast<unsigned char>(c)))
      return false;
  }
  return dot;
}

bool path_exists(const std::string& p) {
  struct stat st;
  return ::lstat(p.c_str(), &st) == 0;
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (auto* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::string dirname_of(const std::string& p) {
  auto s = p.rfind('/');
  return s == 0 ? "/" : p.substr(0, s);
}

std::string basename_of(const std::string& p) { return p.substr(p.rfind('/') + 1); }

// One candidate file for a library stem: where it was found and its version.
struct Candidate {
  std::string real;     // resolved path relative to the root
  std::string version;  // the suffix after "<stem>."
  std::string origin;   // "ld.so.cache" or the driver directory
};

bool is_regular(const HostRoot& root, const std::string& rel) {
  struct stat st;
  return ::stat(root.join(rel).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

std::string parse_driver_version(const std::string& text, const std::string& what) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("NVRM version:", 0) != 0) continue;
    std::istringstream words(line.substr(13));
    std::string w;
    while (words >> w)
      if (is_version(w)) return w;
  }
  throw Error(what + " has no 'NVRM version: ... <version>' line; is this an NVIDIA kernel module?");
}

GpuInfo parse_gpu_information(const std::string& text, const std::string& what) {
  GpuInfo g;
  std::istringstream in(text);
  std::string line;
  bool have_minor = false;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = trim(line.substr(0, colon)), val = trim(line.substr(colon + 1));
    if (key == "Model") {
      g.model = val;
    } else if (key == "GPU UUID") {
      g.uuid = val;
    } else if (key == "Bus Location") {
      g.bus_location = val;
    } else if (key == "Device Minor") {
      try {
        size_t used = 0;
        g.minor = std::stoi(val, &used);
        have_minor = used == val.size() && g.minor >= 0;
      } catch (const std::exception&) {
        have_minor = false;
      }
    }
  }
  if (!have_minor) throw Error(what + ": no valid 'Device Minor:' line; cannot tell which /dev/nvidia<N> is this GPU");
  return g;
}

bool nvidia_present(const HostRoot& root) { return path_exists(root.join("/proc/driver/nvidia/version")); }

NvidiaHost discover_nvidia(const DiscoverOptions& o) {
  const HostRoot& root = o.root;
  NvidiaHost h;
  const std::string vfile = root.join("/proc/driver/nvidia/version");
  if (!path_exists(vfile))
    throw Error("no NVIDIA driver found: /proc/driver/nvidia/version is missing (the nvidia kernel module is not "
                "loaded, or this host has no NVIDIA GPU); install the NVIDIA driver or load it with 'modprobe nvidia'",
                ENOENT);
  h.driver_version = parse_driver_version(fs::read_file(vfile), "/proc/driver/nvidia/version");

  // GPUs: one directory per PCI function, named by bus location; sorting the
  // names gives PCI bus order, which is the order nvidia-smi and NVML number them.
  const std::string gdir = root.join("/proc/driver/nvidia/gpus");
  for (const auto& bus : list_dir(gdir)) {
    std::string info = gdir + "/" + bus + "/information";
    if (!path_exists(info)) continue;
    GpuInfo g = parse_gpu_information(fs::read_file(info), "/proc/driver/nvidia/gpus/" + bus + "/information");
    if (g.bus_location.empty()) g.bus_location = bus;
    g.index = static_cast<int>(h.gpus.size());
    h.gpus.push_back(std::move(g));
  }

  // Control nodes. nvidiactl is needed by every client; the others are
  // created on demand by nvidia-modprobe and are optional.
  if (!path_exists(root.join("/dev/nvidiactl")))
    throw Error("NVIDIA driver loaded (version " + h.driver_version +
                    ") but /dev/nvidiactl is missing; create the device nodes with 'nvidia-modprobe' or by running "
                    "'nvidia-smi' once on the host",
                ENOENT);
  for (const char* n : {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"})
    if (path_exists(root.join(n))) h.control_nodes.push_back(n);
  if (std::find(h.control_nodes.begin(), h.control_nodes.end(), "/dev/nvidia-uvm") == h.control_nodes.end())
    log::warn("/dev/nvidia-uvm is missing: CUDA programs will fail in the sandbox until the nvidia-uvm module is "
              "loaded ('nvidia-modprobe -u -c=0' on the host)");
  for (const auto& c : list_dir(root.join("/dev/nvidia-caps"))) h.caps_nodes.push_back("/dev/nvidia-caps/" + c);

  // Libraries: the ld.so cache first (what the host's programs load), then the
  // driver's own directories.
  std::vector<LdCacheEntry> cache;
  if (path_exists(root.join(o.ldcache))) cache = native_entries(parse_ldcache(fs::read_file(root.join(o.ldcache)), o.ldcache));
  std::vector<std::pair<std::string, std::vector<std::string>>> driver_dirs;  // listed once, not per library
  for (const auto& d : o.driver_lib_dirs) driver_dirs.emplace_back(d, list_dir(root.join(d)));
  std::set<std::string> dirs_seen;
  for (size_t li = 0; li < kDriverLibraries.size(); ++li) {
    const std::string& stem = kDriverLibraries[li];
    const std::string prefix = stem + ".";
    std::vector<Candidate> cands;
    auto consider = [&](const std::string& rel, const std::string& origin) {
      std::string real = root.resolve(rel);
      if (real.empty() || !is_regular(root, real)) return;
      std::string base = basename_of(real);
      if (base.rfind(prefix, 0) != 0) return;  // e.g. a link to an unrelated file
      cands.push_back({real, base.substr(prefix.size()), origin});
    };
    for (const auto& e : cache)
      if (e.soname == stem || e.soname.rfind(prefix, 0) == 0) consider(e.path, o.ldcache);
    for (const auto& [d, names] : driver_dirs)
      for (const auto& n : names)
        if (n.rfind(prefix, 0) == 0) consider(d + "/" + n, d);
    auto exact = std::find_if(cands.begin(), cands.end(), [&](const Candidate& c) { return c.version == h.driver_version; });
    if (exact != cands.end()) {
      h.libraries.push_back({exact->real, exact->real});
      std::string dir = dirname_of(exact->real);
      if (dirs_seen.insert(dir).second) h.library_dirs.push_back(dir);
      continue;
    }
    if (li >= kRequiredLibraries) {
      if (!cands.empty())
        log::debug("skipping " + cands.front().real + ": its version " + cands.front().version +
                   " is not the kernel module's " + h.driver_version);
      continue;
    }
    if (!cands.empty())
      throw Error("NVIDIA driver library version " + cands.front().version + " does not match the kernel module " +
                  h.driver_version + ": " + cands.front().real + " (found via " + cands.front().origin +
                  "); the user-space driver was upgraded without reloading the kernel module (reboot, or reload "
                  "'nvidia' modules) or an old copy shadows it");
    std::string where = o.ldcache;
    for (const auto& d : o.driver_lib_dirs) where += ", " + d;
    throw Error(ErrorKind::NotFound, "NVIDIA driver libraries missing: " + prefix + h.driver_version + " not found in " + where +
                "; install the user-space driver matching kernel module " + h.driver_version +
                " (e.g. the libcuda1/libnvidia-ml1 packages or the .run installer) and run 'ldconfig'");
  }

  for (const auto& name : kDriverBinaries)
    for (const auto& d : o.bin_dirs) {
      if (!path_exists(root.join(d + "/" + name))) continue;  // one lstat before the full walk
      std::string real = root.resolve(d + "/" + name);
      if (!real.empty() && is_regular(root, real)) {
        h.binaries.push_back({real, "/usr/bin/" + name});
        break;
      }
    }
  if (path_exists(root.join("/run/nvidia-persistenced/socket"))) h.persistenced_socket = "/run/nvidia-persistenced/socket";
  return h;
}

std::vector<GpuInfo> select_gpus(const NvidiaHost& host, const std::string& spec_in) {
  auto unquote = [](std::string s) {
    s = trim(s);
    while (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front()) s = trim(s.substr(1, s.size() - 2));
    return s;
  };
  std::string spec = unquote(spec_in);
  const size_t n = host.gpus.size();
  auto range = [&] { return n == 0 ? std::string("this host has no GPUs") : "this host has " + std::to_string(n) +
                                                                                 (n == 1 ? " GPU (0)" : " GPUs (0-" + std::to_string(n - 1) + ")"); };
  if (spec.empty()) throw Error("--gpus needs a value: all, an index (0), a list (0,1), a GPU UUID or count=N");
  if (spec == "none" || spec == "void") return {};
  std::vector<GpuInfo> out;
  if (spec == "all" || spec == "count=all" || spec == "count=-1") {
    if (n == 0) throw Error("--gpus " + spec_in + ": the NVIDIA driver is loaded but reports no GPUs");
    return host.gpus;
  }
  if (spec.rfind("count=", 0) == 0) {
    std::string v = spec.substr(6);
    size_t used = 0;
    long c = -2;
    try {
      c = std::stol(v, &used);
    } catch (const std::exception&) {
    }
    if (used != v.size() || c < 1) throw Error(ErrorKind::InvalidArgument,
                "--gpus " + spec_in + ": count must be a positive number or 'all'");
    if (static_cast<size_t>(c) > n) throw Error("--gpus " + spec_in + ": asked for " + v + " GPUs but " + range());
    return std::vector<GpuInfo>(host.gpus.begin(), host.gpus.begin() + c);
  }
  if (spec.rfind("device=", 0) == 0) spec = unquote(spec.substr(7));
  if (spec.empty()) throw Error("--gpus " + spec_in + ": empty device list");
  std::set<int> seen;
  std::vector<std::string> items;
  for (size_t i = 0;;) {
    size_t j = spec.find(',', i);
    items.push_back(trim(spec.substr(i, j == std::string::npos ? std::string::npos : j - i)));
    if (j == std::string::npos) break;
    i = j + 1;
  }
  for (const auto& item : items) {
    const GpuInfo* g = nullptr;
    if (!item.empty() && std::all_of(item.begin(), item.end(), [](unsigned char c) { return std::isdigit(c); })) {
      unsigned long idx = item.size() > 6 ? ~0ul : std::stoul(item);
      if (idx >= n) throw Error("GPU index " + item + " is out of range: " + range());
      g = &host.gpus[idx];
    } else if (item.rfind("GPU-", 0) == 0 || item.rfind("MIG-", 0) == 0) {
      if (item.rfind("MIG-", 0) == 0)
        throw Error(ErrorKind::Unsupported,
                    "--gpus " + item + ": MIG devices are not supported; use CDI (--device nvidia.com/gpu=...) for MIG");
      for (const auto& x : host.gpus)
        if (x.uuid == item) g = &x;
      if (!g) throw Error("no GPU with UUID " + item + " on this host; list them with 'nvidia-smi -L' or 'sbx info'");
    } else {
      throw Error("--gpus: cannot parse '" + item + "'; use all, an index (0), a list (0,1), a GPU UUID (GPU-...), "
                  "device=0,1 or count=N");
    }
    if (seen.insert(g->index).second) out.push_back(*g);
  }
  return out;
}

void apply_gpus(const NvidiaHost& host, const std::vector<GpuInfo>& gpus, const HostRoot& root, SandboxSpec& spec) {
  if (gpus.empty()) {
    set_env(spec, "NVIDIA_VISIBLE_DEVICES", "void");
    return;
  }
  for (const auto& g : gpus) add_device(spec, stat_device_node(root.join(g.device_path()), g.device_path()));
  for (const auto& c : host.control_nodes) add_device(spec, stat_device_node(root.join(c), c));
  for (const auto& l : host.libraries) add_ro_bind(spec, root.join(l.host_path), l.container_path);
  for (const auto& b : host.binaries) add_ro_bind(spec, root.join(b.host_path), b.container_path);
  if (!host.persistenced_socket.empty())
    add_ro_bind(spec, root.join(host.persistenced_socket), host.persistenced_socket);
  for (const auto& d : host.library_dirs)
    if (std::find(spec.ldconfig_dirs.begin(), spec.ldconfig_dirs.end(), d) == spec.ldconfig_dirs.end())
      spec.ldconfig_dirs.push_back(d);
  bool uuids = std::all_of(gpus.begin(), gpus.end(), [](const GpuInfo& g) { return !g.uuid.empty(); });
  std::string visible;
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (i) visible += ",";
    visible += uuids ? gpus[i].uuid : std::to_string(i);
  }
  set_env(spec, "NVIDIA_VISIBLE_DEVICES", visible);
  set_env(spec, "CUDA_VISIBLE_DEVICES", visible);
  set_env(spec, "NVIDIA_DRIVER_CAPABILITIES", "compute,utility");
}

}  // namespace sbx::gpu
