// sbx adversarial probe: one static binary (gcc -static) with one sub-command
// per attack. tests/adversarial/run.sh copies it into a sandbox through a
// read-only volume and runs it there; the HOST is checked by run.sh afterwards.
//
// Output, one line per attempt:
//   ok      WHAT: why it failed (errno name)
//   ESCAPE  WHAT: what the attack achieved
//   info    WHAT: facts for the log (never decide a case)
// Exit status: 0 when no attempt escaped, 3 when one did, 2 on a usage error.
// run.sh treats a missing "done" line as "the probe did not finish" (e.g. it
// was killed), which some cases expect (memory bomb) and others do not.
//
// The probe is written to be safe to run where the sandbox is broken: it
// never writes bytes to /sys, /proc/sysrq-trigger or core_pattern (an open for
// writing that succeeds is already the finding), it bounds every bomb, and it
// only signals processes whose command line carries the test's marker.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/bpf.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <sys/ioctl.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/reboot.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/swap.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int escapes = 0;

static void ok(const char* what, int err) { printf("ok      %s: %s\n", what, strerrorname_np(err) ? strerrorname_np(err) : "?"); }
static void escape(const char* what, const char* detail) {
  printf("ESCAPE  %s: %s\n", what, detail);
  escapes++;
}
static void info(const char* what, const char* detail) { printf("info    %s: %s\n", what, detail); }

// A system call that must fail, with one of the listed errnos (0-terminated).
static void expect_fail(const char* what, long rc, const int* allowed) {
  int e = errno;
  if (rc >= 0) {
    char d[64];
    snprintf(d, sizeof d, "succeeded (returned %ld)", rc);
    escape(what, d);
    return;
  }
  for (const int* a = allowed; *a; a++)
    if (*a == e) return ok(what, e);
  char d[96];
  snprintf(d, sizeof d, "failed, but with %s, not EPERM/ENOSYS", strerrorname_np(e));
  escape(what, d);
}

static const int EPERM_ENOSYS[] = {EPERM, ENOSYS, 0};
static const int EPERM_ENOSYS_EACCES[] = {EPERM, ENOSYS, EACCES, 0};

// ---- syscalls: privileged system calls must fail with EPERM/ENOSYS -------------
static int cmd_syscalls(void) {
  errno = 0;
  expect_fail("mount tmpfs", mount("none", "/tmp", "tmpfs", 0, NULL), EPERM_ENOSYS_EACCES);
  expect_fail("mount proc", mount("proc", "/mnt", "proc", 0, NULL), (const int[]){EPERM, ENOSYS, EACCES, ENOENT, 0});
  expect_fail("umount /proc", umount2("/proc", MNT_DETACH), EPERM_ENOSYS);
  expect_fail("unshare(CLONE_NEWNS)", unshare(CLONE_NEWNS), EPERM_ENOSYS);
  expect_fail("unshare(CLONE_NEWUSER)", unshare(CLONE_NEWUSER), EPERM_ENOSYS);
  expect_fail("unshare(CLONE_NEWNET)", unshare(CLONE_NEWNET), EPERM_ENOSYS);
  int nsfd = open("/proc/self/ns/mnt", O_RDONLY);
  if (nsfd >= 0) {
    expect_fail("setns(own mnt ns)", setns(nsfd, CLONE_NEWNS), EPERM_ENOSYS);
    close(nsfd);
  } else {
    info("setns", "cannot open /proc/self/ns/mnt");
  }
  nsfd = open("/proc/1/ns/pid", O_RDONLY);
  if (nsfd >= 0) {
    expect_fail("setns(pid 1's pid ns)", setns(nsfd, 0), (const int[]){EPERM, ENOSYS, EINVAL, 0});
    close(nsfd);
  }
  pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  expect_fail("ptrace(PTRACE_ATTACH child)", ptrace(PTRACE_ATTACH, child, 0, 0), EPERM_ENOSYS);
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  union bpf_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.map_type = BPF_MAP_TYPE_ARRAY;
  attr.key_size = 4;
  attr.value_size = 4;
  attr.max_entries = 1;
  expect_fail("bpf(BPF_MAP_CREATE)", syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr), EPERM_ENOSYS);
  struct perf_event_attr pe;
  memset(&pe, 0, sizeof pe);
  pe.type = PERF_TYPE_SOFTWARE;
  pe.size = sizeof pe;
  pe.config = PERF_COUNT_SW_CPU_CLOCK;
  long pfd = syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0);
  expect_fail("perf_event_open(self)", pfd, EPERM_ENOSYS_EACCES);
  if (pfd >= 0) close((int)pfd);
  expect_fail("keyctl(JOIN_SESSION_KEYRING)", syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, "sbx-adv"), EPERM_ENOSYS);
  expect_fail("add_key", syscall(SYS_add_key, "user", "sbx-adv", "x", 1, KEY_SPEC_PROCESS_KEYRING), EPERM_ENOSYS);
  expect_fail("kexec_load", syscall(SYS_kexec_load, 0, 0, NULL, 0), EPERM_ENOSYS);
  expect_fail("kexec_file_load", syscall(SYS_kexec_file_load, -1, -1, 0, "", 0), (const int[]){EPERM, ENOSYS, EBADF, 0});
  expect_fail("init_module", syscall(SYS_init_module, NULL, 0, ""), EPERM_ENOSYS);
  expect_fail("finit_module", syscall(SYS_finit_module, 0, "", 0), EPERM_ENOSYS);
  expect_fail("delete_module", syscall(SYS_delete_module, "sbx_none", O_NONBLOCK), EPERM_ENOSYS);
  // CAD_ON is harmless where it succeeds (only the meaning of ctrl-alt-del).
  expect_fail("reboot(CAD_ON)", syscall(SYS_reboot, LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2, LINUX_REBOOT_CMD_CAD_ON, NULL), EPERM_ENOSYS);
  expect_fail("swapoff", swapoff("/dev/vda"), (const int[]){EPERM, ENOSYS, 0});
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  expect_fail("clock_settime", clock_settime(CLOCK_REALTIME, &now), EPERM_ENOSYS);
  expect_fail("iopl(3)", syscall(SYS_iopl, 3), EPERM_ENOSYS);
  expect_fail("ioperm", syscall(SYS_ioperm, 0x80, 1, 1), EPERM_ENOSYS);
  expect_fail("acct", syscall(SYS_acct, "/tmp/acct"), (const int[]){EPERM, ENOSYS, 0});
  // open_by_handle_at ("shocker", 2014): needs CAP_DAC_READ_SEARCH.
  struct {
    struct file_handle fh;
    unsigned char bytes[8];
  } h;
  memset(&h, 0, sizeof h);
  h.fh.handle_bytes = 8;
  h.fh.handle_type = 1;
  expect_fail("open_by_handle_at", syscall(SYS_open_by_handle_at, AT_FDCWD, &h.fh, O_RDONLY), (const int[]){EPERM, ENOSYS, 0});
  return 0;
}

// ---- devices: /dev/mem, raw disks, mknod ---------------------------------------
static void try_open_dev(const char* path) {
  for (int mode = 0; mode < 2; mode++) {
    int fd = open(path, mode ? O_RDWR : O_RDONLY);
    char what[128];
    snprintf(what, sizeof what, "open %s %s", path, mode ? "rw" : "ro");
    if (fd >= 0) {
      char b[16];
      ssize_t n = read(fd, b, sizeof b);
      char d[64];
      snprintf(d, sizeof d, "opened; read returned %zd", n);
      escape(what, d);
      close(fd);
    } else {
      ok(what, errno);
    }
  }
}

static int cmd_devices(int argc, char** argv) {
  // argv: list of "b:MAJ:MIN" or "c:MAJ:MIN" of host devices to recreate with mknod.
  const char* fixed[] = {"/dev/mem", "/dev/kmem", "/dev/port", "/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/kmsg", "/dev/fuse", NULL};
  for (const char** p = fixed; *p; p++) try_open_dev(*p);
  for (int i = 0; i < argc; i++) {
    char t;
    unsigned maj, min;
    if (sscanf(argv[i], "%c:%u:%u", &t, &maj, &min) != 3) return 2;
    char path[64];
    snprintf(path, sizeof path, "/tmp/sbx-adv-node-%d", i);
    unlink(path);
    char what[96];
    snprintf(what, sizeof what, "mknod %c %u:%u", t, maj, min);
    if (mknod(path, (t == 'b' ? S_IFBLK : S_IFCHR) | 0600, makedev(maj, min)) < 0) {
      ok(what, errno);
      continue;
    }
    info(what, "created (CAP_MKNOD): opening it must still fail");
    try_open_dev(path);
    unlink(path);
  }
  return 0;
}

// ---- writable scan of /proc/sys and /sys ---------------------------------------
static long scanned, writable;
static int scan_one(const char* path, const struct stat* st, int type, struct FTW* f) {
  (void)f;
  if (type != FTW_F || !S_ISREG(st->st_mode)) return 0;
  scanned++;
  // O_NONBLOCK: never block on an odd file. Opening for write does not change
  // anything in procfs/sysfs; only write(2) would, and we never write.
  int fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY);
  if (fd >= 0) {
    writable++;
    escape("open for writing", path);
    close(fd);
  }
  return 0;
}

static int cmd_scan(const char* root) {
  scanned = writable = 0;
  if (nftw(root, scan_one, 64, FTW_PHYS) < 0) {
    char d[128];
    snprintf(d, sizeof d, "cannot walk %s: %s", root, strerrorname_np(errno));
    info("scan", d);
  }
  char d[128];
  snprintf(d, sizeof d, "%s: %ld files, %ld writable", root, scanned, writable);
  info("scan", d);
  if (scanned == 0) escape("scan", "nothing scanned: the probe cannot tell");
  return 0;
}

// ---- masked paths, core_pattern, sysrq-trigger ---------------------------------
static int cmd_masked(void) {
  const char* never_writable[] = {"/proc/sys/kernel/core_pattern", "/proc/sysrq-trigger", "/proc/sys/kernel/modprobe",
                                  "/proc/sys/vm/drop_caches", "/proc/sys/kernel/hostname", "/proc/kcore", "/proc/keys",
                                  "/proc/timer_list", "/proc/sched_debug", "/sys/kernel/uevent_helper",
                                  "/sys/firmware", NULL};
  for (const char** p = never_writable; *p; p++) {
    char what[128];
    snprintf(what, sizeof what, "open %s for writing", *p);
    int fd = open(*p, O_WRONLY | O_NONBLOCK);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)) {
      info(what, "masked with /dev/null");  // what runc/podman do: writes go nowhere
      close(fd);
    } else if (fd >= 0) {
      escape(what, "opened");
      close(fd);
    } else {
      ok(what, errno);
    }
  }
  // Reading these must give nothing (masked by an empty file or denied).
  const char* never_readable[] = {"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/proc/kallsyms", NULL};
  for (const char** p = never_readable; *p; p++) {
    char what[128];
    snprintf(what, sizeof what, "read %s", *p);
    int fd = open(*p, O_RDONLY | O_NONBLOCK);
    if (fd < 0) {
      ok(what, errno);
      continue;
    }
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    if (n <= 0) {
      ok(what, n < 0 ? errno : 0);
      continue;
    }
    // kallsyms shows zeros as addresses without CAP_SYSLOG: only real
    // addresses are a leak.
    if (strcmp(*p, "/proc/kallsyms") == 0) {
      buf[n - 1] = 0;
      if (strncmp(buf, "0000000000000000", 16) == 0) {
        ok(what, 0);
        continue;
      }
    }
    char d[64];
    snprintf(d, sizeof d, "read %zd bytes", n);
    escape(what, d);
  }
  return 0;
}

// ---- fds and cwd (CVE-2024-21626) ----------------------------------------------
static int cmd_fds(void) {
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd)) {
    char d[64];
    snprintf(d, sizeof d, "getcwd failed: %s (cwd outside the root)", strerrorname_np(errno));
    escape("cwd", d);
  } else if (cwd[0] != '/') {
    escape("cwd", cwd);
  } else {
    info("cwd", cwd);
  }
  char link[4096];
  ssize_t n = readlink("/proc/self/cwd", link, sizeof link - 1);
  if (n > 0) {
    link[n] = 0;
    if (strstr(link, "(unreachable)") || strstr(link, "/sys/fs/cgroup") || strstr(link, "/run/sbx"))
      escape("/proc/self/cwd", link);
    else
      info("/proc/self/cwd", link);
  }
  // Every fd above 2 is a leak: the probe itself opens none before this point.
  for (int fd = 3; fd < 4096; fd++) {
    if (fcntl(fd, F_GETFD) < 0) continue;
    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
    n = readlink(p, link, sizeof link - 1);
    link[n > 0 ? n : 0] = 0;
    char d[4200];
    snprintf(d, sizeof d, "fd %d -> %s", fd, link);
    escape("leaked fd", d);
  }
  // The ls -l /proc/self/fd view, for the log.
  DIR* d = opendir("/proc/self/fd");
  if (d) {
    struct dirent* e;
    char list[512] = "";
    while ((e = readdir(d)))
      if (e->d_name[0] != '.') {
        strncat(list, e->d_name, sizeof list - strlen(list) - 2);
        strcat(list, " ");
      }
    closedir(d);
    info("/proc/self/fd", list);
  }
  return 0;
}

// ---- reading a host file by every indirect path --------------------------------
static int matches(const char* path, const char* secret) {
  int fd = open(path, O_RDONLY | O_NONBLOCK);
  if (fd < 0) return 0;
  char buf[256];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  return strstr(buf, secret) != NULL;
}

static void try_read(const char* path, const char* secret) {
  if (matches(path, secret)) escape("read host file", path);
}

static int cmd_hostread(const char* hostpath, const char* secret) {
  char p[4096];
  try_read(hostpath, secret);
  const char* prefixes[] = {"/proc/1/root", "/proc/self/root", "/proc/self/cwd", "/proc/1/cwd", "/proc/thread-self/root", NULL};
  for (const char** pre = prefixes; *pre; pre++) {
    snprintf(p, sizeof p, "%s%s", *pre, hostpath);
    try_read(p, secret);
  }
  // Every visible process's root and cwd, and every fd of every process.
  DIR* d = opendir("/proc");
  struct dirent* e;
  int procs = 0;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    procs++;
    snprintf(p, sizeof p, "/proc/%s/root%s", e->d_name, hostpath);
    try_read(p, secret);
    snprintf(p, sizeof p, "/proc/%s/cwd%s", e->d_name, hostpath);
    try_read(p, secret);
    char fdd[300];
    snprintf(fdd, sizeof fdd, "/proc/%s/fd", e->d_name);
    DIR* fdir = opendir(fdd);
    struct dirent* fe;
    while (fdir && (fe = readdir(fdir))) {
      if (fe->d_name[0] == '.') continue;
      snprintf(p, sizeof p, "%s/%s%s", fdd, fe->d_name, hostpath);  // fd as a directory
      try_read(p, secret);
      snprintf(p, sizeof p, "%s/%s", fdd, fe->d_name);  // fd as the file itself
      try_read(p, secret);
    }
    if (fdir) closedir(fdir);
  }
  if (d) closedir(d);
  // sbx's own environment on the host (the test puts the secret there): the
  // sandbox's init is a fork of sbx, so its /proc/1/environ must be closed.
  d = opendir("/proc");
  while (d && (e = readdir(d))) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    snprintf(p, sizeof p, "/proc/%s/environ", e->d_name);
    int fd = open(p, O_RDONLY);
    if (fd < 0) continue;
    static char env[1 << 16];
    ssize_t n = read(fd, env, sizeof env - 1);
    close(fd);
    for (ssize_t i = 0; i < n; i++)
      if (!env[i]) env[i] = '\n';
    if (n > 0) {
      env[n] = 0;
      if (strstr(env, secret)) escape("host environment of sbx readable", p);
    }
    snprintf(p, sizeof p, "/proc/%s/cmdline", e->d_name);
    fd = open(p, O_RDONLY);
    if (fd < 0) continue;
    n = read(fd, env, sizeof env - 1);
    close(fd);
    for (ssize_t i = 0; i < n; i++)
      if (!env[i]) env[i] = ' ';
    if (n > 0) {
      env[n] = 0;
      if (strncmp(env, "/adv/probe", 10) && strstr(env, "--run-root")) {
        char line[600];
        snprintf(line, sizeof line, "%.300s shows sbx's host command line: %.200s", p, env);
        info("hostread", line);
      }
    }
  }
  if (d) closedir(d);
  // Climbing out with .. from the root and from /proc/self/cwd.
  snprintf(p, sizeof p, "/../../../../../..%s", hostpath);
  try_read(p, secret);
  char info_line[64];
  snprintf(info_line, sizeof info_line, "%d processes visible", procs);
  info("hostread", info_line);
  return 0;
}

// ---- network: reach the host with --network none -------------------------------
static int cmd_connect(int argc, char** argv) {
  // argv: "tcp:IP:PORT" or "unix:@NAME" (abstract) or "unix:/path"
  for (int i = 0; i < argc; i++) {
    char what[160];
    snprintf(what, sizeof what, "connect %s", argv[i]);
    if (strncmp(argv[i], "tcp:", 4) == 0) {
      char ip[64];
      int port;
      if (sscanf(argv[i] + 4, "%63[^:]:%d", ip, &port) != 2) return 2;
      int s = socket(AF_INET, SOCK_STREAM, 0);
      if (s < 0) {
        ok(what, errno);
        continue;
      }
      struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
      inet_pton(AF_INET, ip, &a.sin_addr);
      struct timeval tv = {2, 0};
      setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      if (connect(s, (struct sockaddr*)&a, sizeof a) == 0) {
        if (write(s, "sbx-adv-escape\n", 15) < 0) {}
        escape(what, "connected");
      } else {
        ok(what, errno);
      }
      close(s);
    } else if (strncmp(argv[i], "unix:", 5) == 0) {
      int s = socket(AF_UNIX, SOCK_STREAM, 0);
      struct sockaddr_un a = {.sun_family = AF_UNIX};
      const char* name = argv[i] + 5;
      socklen_t len;
      if (name[0] == '@') {
        strncpy(a.sun_path + 1, name + 1, sizeof a.sun_path - 2);
        len = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name + 1);
      } else {
        strncpy(a.sun_path, name, sizeof a.sun_path - 1);
        len = sizeof a;
      }
      if (connect(s, (struct sockaddr*)&a, len) == 0) {
        if (write(s, "sbx-adv-escape\n", 15) < 0) {}
        escape(what, "connected");
      } else {
        ok(what, errno);
      }
      close(s);
    } else {
      return 2;
    }
  }
  return 0;
}

// ---- user-defined networks: spoofing a neighbour, UDP ---------------------------
// udplisten PORT SECONDS: prints each datagram's source and payload ("info").
static int cmd_udplisten(int port, int seconds) {
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  if (s < 0 || bind(s, (struct sockaddr*)&a, sizeof a) < 0) {
    printf("info    udplisten: cannot bind port %d: %s\n", port, strerror(errno));
    return 0;
  }
  printf("info    udplisten: listening on %d\n", port);
  time_t end = time(NULL) + seconds;
  while (time(NULL) < end) {
    struct timeval tv = {1, 0};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[128];
    struct sockaddr_in from;
    socklen_t len = sizeof from;
    ssize_t n = recvfrom(s, buf, sizeof buf - 1, 0, (struct sockaddr*)&from, &len);
    if (n <= 0) continue;
    buf[n] = 0;
    printf("info    udp from %s: %s\n", inet_ntoa(from.sin_addr), buf);
  }
  close(s);
  return 0;
}

// udpsend IP PORT PAYLOAD: one datagram through an ordinary socket.
static int cmd_udpsend(const char* ip, int port, const char* payload) {
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, ip, &a.sin_addr);
  if (s < 0 || sendto(s, payload, strlen(payload), 0, (struct sockaddr*)&a, sizeof a) < 0)
    printf("info    udpsend %s:%d: %s\n", ip, port, strerror(errno));
  else
    printf("info    udpsend %s:%d: sent\n", ip, port);
  if (s >= 0) close(s);
  return 0;
}

static uint16_t ip_checksum(const void* data, size_t len) {
  const uint16_t* w = data;
  uint32_t sum = 0;
  for (; len > 1; len -= 2) sum += *w++;
  if (len) sum += *(const uint8_t*)w;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return (uint16_t)~sum;
}

static int parse_mac(const char* text, uint8_t mac[6]) {
  unsigned v[6];
  if (sscanf(text, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6) return -1;
  for (int i = 0; i < 6; i++) mac[i] = (uint8_t)v[i];
  return 0;
}

// spoof IFACE VICTIM_IP VICTIM_MAC TARGET_IP TARGET_MAC PORT: raw frames on
// IFACE (AF_PACKET, CAP_NET_RAW) that try to take a neighbour's place:
// gratuitous ARP replies claiming VICTIM_IP with our MAC, a UDP datagram to
// TARGET_IP:PORT from VICTIM_IP (our MAC), and one from VICTIM_IP and
// VICTIM_MAC; then, as a control, an ordinary datagram from our own address.
// What arrived is for run.sh to check at the target (its listener and its
// ARP table); the probe reports what it could send.
static int cmd_spoof(char** a) {
  const char* ifname = a[0];
  struct in_addr victim, target;
  uint8_t victim_mac[6], target_mac[6], own[6], bcast[6] = {255, 255, 255, 255, 255, 255};
  if (inet_pton(AF_INET, a[1], &victim) != 1 || parse_mac(a[2], victim_mac) || inet_pton(AF_INET, a[3], &target) != 1 ||
      parse_mac(a[4], target_mac))
    return 2;
  int port = atoi(a[5]);
  int s = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
  if (s < 0) {
    ok("spoof: open a raw packet socket", errno);
    return 0;
  }
  struct ifreq ifr = {0};
  strncpy(ifr.ifr_name, ifname, IFNAMSIZ - 1);
  if (ioctl(s, SIOCGIFHWADDR, &ifr) < 0 || ioctl(s, SIOCGIFINDEX, &ifr) < 0) {
    ok("spoof: look up the interface", errno);
    close(s);
    return 0;
  }
  ioctl(s, SIOCGIFHWADDR, &ifr);
  memcpy(own, ifr.ifr_hwaddr.sa_data, 6);
  ioctl(s, SIOCGIFINDEX, &ifr);
  struct sockaddr_ll ll = {.sll_family = AF_PACKET, .sll_ifindex = ifr.ifr_ifindex, .sll_halen = 6};
  int sent = 0;
  // ARP replies: "VICTIM_IP is at our MAC", broadcast and to the target.
  for (int k = 0; k < 6; k++) {
    uint8_t f[42] = {0};
    const uint8_t* dst = k % 2 ? target_mac : bcast;
    memcpy(f, dst, 6);
    memcpy(f + 6, own, 6);
    f[12] = 0x08, f[13] = 0x06;                                 // ARP
    f[14] = 0, f[15] = 1, f[16] = 0x08, f[17] = 0, f[18] = 6, f[19] = 4, f[20] = 0, f[21] = 2;  // reply
    memcpy(f + 22, own, 6);
    memcpy(f + 28, &victim, 4);
    memcpy(f + 32, k % 2 ? target_mac : bcast, 6);
    memcpy(f + 38, k % 2 ? (void*)&target : (void*)&victim, 4);
    memcpy(ll.sll_addr, dst, 6);
    if (sendto(s, f, sizeof f, 0, (struct sockaddr*)&ll, sizeof ll) == (ssize_t)sizeof f) sent++;
  }
  // UDP from the victim's address: with our MAC, then with the victim's MAC.
  for (int k = 0; k < 2; k++) {
    const char* payload = k == 0 ? "spoofed-ip" : "spoofed-mac";
    size_t plen = strlen(payload);
    uint8_t f[64] = {0};
    memcpy(f, target_mac, 6);
    memcpy(f + 6, k == 0 ? own : victim_mac, 6);
    f[12] = 0x08, f[13] = 0x00;
    uint8_t* ip = f + 14;
    ip[0] = 0x45;
    uint16_t tot = htons((uint16_t)(20 + 8 + plen));
    memcpy(ip + 2, &tot, 2);
    ip[8] = 64, ip[9] = 17;
    memcpy(ip + 12, &victim, 4);
    memcpy(ip + 16, &target, 4);
    uint16_t c = ip_checksum(ip, 20);
    memcpy(ip + 10, &c, 2);
    uint8_t* udp = ip + 20;
    uint16_t sp = htons(4242), dp = htons((uint16_t)port), ul = htons((uint16_t)(8 + plen));
    memcpy(udp, &sp, 2), memcpy(udp + 2, &dp, 2), memcpy(udp + 4, &ul, 2);  // checksum 0: none (IPv4)
    memcpy(udp + 8, payload, plen);
    size_t flen = 14 + 20 + 8 + plen;
    memcpy(ll.sll_addr, target_mac, 6);
    for (int r = 0; r < 3; r++)
      if (sendto(s, f, flen, 0, (struct sockaddr*)&ll, sizeof ll) == (ssize_t)flen) sent++;
  }
  printf("info    spoof: %d forged frames sent on %s\n", sent, ifname);
  close(s);
  usleep(200000);
  cmd_udpsend(a[3], port, "legit");
  return 0;
}

// ---- signal host processes ------------------------------------------------------
static int cmd_kill(const char* pidtext, const char* marker) {
  pid_t hostpid = atoi(pidtext);
  // Only ever signal a process whose command line carries the test's marker.
  DIR* d = opendir("/proc");
  struct dirent* e;
  int found = 0;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char p[300], cmd[512];
    snprintf(p, sizeof p, "/proc/%s/cmdline", e->d_name);
    int fd = open(p, O_RDONLY);
    if (fd < 0) continue;
    ssize_t n = read(fd, cmd, sizeof cmd - 1);
    close(fd);
    if (n <= 0) continue;
    for (ssize_t i = 0; i < n; i++)
      if (!cmd[i]) cmd[i] = ' ';
    cmd[n] = 0;
    char victim[300];
    snprintf(victim, sizeof victim, "sbx-adv-victim-%s", marker);
    if (strstr(cmd, victim) && atoi(e->d_name) != getpid()) {
      found++;
      if (kill(atoi(e->d_name), SIGKILL) == 0) escape("kill marked host process", e->d_name);
    }
  }
  if (d) closedir(d);
  if (!found) info("kill", "no marked process visible");
  errno = 0;
  long rc = kill(hostpid, 0);
  if (rc == 0) {
    // Visible under its host pid: it must be one of ours (then the marker
    // check above covered it), else it is visible, which is itself a leak.
    char p[64];
    snprintf(p, sizeof p, "host pid %d exists in the sandbox", hostpid);
    info("kill", p);
  } else {
    ok("kill(host pid, 0)", errno);
  }
  return 0;
}

// ---- bombs ------------------------------------------------------------------------
static int cmd_forkbomb(int cap) {
  pid_t* kids = calloc(cap, sizeof *kids);
  int n = 0, err = 0;
  for (; n < cap; n++) {
    pid_t p = fork();
    if (p == 0) {
      pause();
      _exit(0);
    }
    if (p < 0) {
      err = errno;
      break;
    }
    kids[n] = p;
  }
  printf("info    forkbomb: %d children, then %s\n", n, err ? strerrorname_np(err) : "cap reached");
  fflush(stdout);
  for (int i = 0; i < n; i++) kill(kids[i], SIGKILL);
  for (int i = 0; i < n; i++) waitpid(kids[i], NULL, 0);
  printf("result  forkbomb %d\n", n);
  return 0;
}

static void* idle_thread(void* arg) {
  (void)arg;
  pause();
  return NULL;
}
static int cmd_threads(int cap) {
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, 64 * 1024);
  int n = 0, err = 0;
  for (; n < cap; n++) {
    pthread_t t;
    err = pthread_create(&t, &a, idle_thread, NULL);
    if (err) break;
  }
  printf("info    threads: %d created, then %s\n", n, err ? strerrorname_np(err) : "cap reached");
  printf("result  threads %d\n", n);
  fflush(stdout);
  _exit(0);  // kills all threads
}

static int cmd_mem(int max_mb) {
  const size_t step = 8u << 20;
  int mb = 0;
  for (; mb < max_mb; mb += 8) {
    char* p = mmap(NULL, step, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      printf("info    mem: mmap failed at %d MiB: %s\n", mb, strerrorname_np(errno));
      break;
    }
    memset(p, 0xa5, step);  // touch every page
    printf("result  mem %d\n", mb + 8);
    fflush(stdout);
  }
  return 0;
}

static int cmd_disk(const char* path, int max_mb) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) {
    printf("info    disk: open %s: %s\n", path, strerrorname_np(errno));
    return 0;
  }
  static char buf[1 << 20];
  memset(buf, 0x5a, sizeof buf);
  int mb = 0, err = 0;
  for (; mb < max_mb; mb++) {
    ssize_t n = write(fd, buf, sizeof buf);
    if (n != (ssize_t)sizeof buf) {
      err = n < 0 ? errno : ENOSPC;
      break;
    }
  }
  if (!err && fsync(fd) < 0) err = errno;
  close(fd);
  printf("info    disk: wrote %d MiB, then %s\n", mb, err ? strerrorname_np(err) : "cap reached");
  printf("result  disk %d %s\n", mb, err ? strerrorname_np(err) : "none");
  unlink(path);
  return 0;
}

// socket(AF_VSOCK): a VM's hypervisor listens there, outside --network none.
static int cmd_vsock(void) {
  int fd = socket(40 /* AF_VSOCK */, SOCK_STREAM, 0);
  if (fd >= 0) {
    printf("ESCAPE  vsock: socket(AF_VSOCK) succeeded\n");
    escapes++;
    close(fd);
  } else {
    printf("info    vsock: socket(AF_VSOCK): %s\n", strerrorname_np(errno));
  }
  return 0;
}

// Open up to max file descriptors (dup of one), bounded: how many does RLIMIT_NOFILE allow?
static int cmd_fdbomb(int max) {
  int n = 0, err = 0;
  for (; n < max; n++)
    if (open("/dev/null", O_RDONLY) < 0) {
      err = errno;
      break;
    }
  printf("result  fds %d %s\n", n, err ? strerrorname_np(err) : "cap-reached");
  return 0;
}

// Create up to max empty files in dir: how many inodes does the file system allow?
static int cmd_inodes(const char* dir, int max) {
  char path[4096];
  int n = 0, err = 0;
  mkdir(dir, 0755);
  for (; n < max; n++) {
    snprintf(path, sizeof path, "%s/f%d", dir, n);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
      err = errno;
      break;
    }
    close(fd);
  }
  printf("result  inodes %d %s\n", n, err ? strerrorname_np(err) : "cap-reached");
  fflush(stdout);
  return 0;
}

static int cmd_spin(void) {
  for (volatile unsigned long i = 0;; i++) {
  }
  return 0;
}

// ---- read-only binds ------------------------------------------------------------
static int cmd_robind(const char* dir) {
  char p[4096];
  snprintf(p, sizeof p, "%s/sbx-adv-written", dir);
  int fd = open(p, O_WRONLY | O_CREAT, 0644);
  if (fd >= 0) {
    escape("create file in read-only bind", p);
    close(fd);
  } else {
    ok("create file in read-only bind", errno);
  }
  expect_fail("remount read-only bind rw", mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND, NULL), (const int[]){EPERM, ENOSYS, EACCES, 0});
  expect_fail("remount read-only bind rw (no MS_BIND)", mount(NULL, dir, NULL, MS_REMOUNT, NULL), (const int[]){EPERM, ENOSYS, EACCES, 0});
  expect_fail("bind it again rw", mount(dir, "/tmp", NULL, MS_BIND, NULL), (const int[]){EPERM, ENOSYS, EACCES, 0});
  // A new mount API way: open_tree + mount_setattr clearing MOUNT_ATTR_RDONLY.
  long t = syscall(SYS_open_tree, AT_FDCWD, dir, 1 /*OPEN_TREE_CLONE*/);
  expect_fail("open_tree(OPEN_TREE_CLONE)", t, (const int[]){EPERM, ENOSYS, EACCES, 0});
  if (t >= 0) close((int)t);
  // After the attempts, writing must still fail.
  fd = open(p, O_WRONLY | O_CREAT, 0644);
  if (fd >= 0) {
    escape("create file after remount attempts", p);
    close(fd);
  } else {
    ok("create file after remount attempts", errno);
  }
  return 0;
}

// ---- facts for the log -------------------------------------------------------------
static void cat_line(const char* what, const char* path, const char* prefix) {
  FILE* f = fopen(path, "r");
  char line[512];
  while (f && fgets(line, sizeof line, f)) {
    if (prefix && strncmp(line, prefix, strlen(prefix))) continue;
    line[strcspn(line, "\n")] = 0;
    info(what, line);
  }
  if (f) fclose(f);
}
static int cmd_info(void) {
  cat_line("uid_map", "/proc/self/uid_map", NULL);
  cat_line("gid_map", "/proc/self/gid_map", NULL);
  cat_line("status", "/proc/self/status", "Cap");
  cat_line("status", "/proc/self/status", "NoNewPrivs");
  cat_line("status", "/proc/self/status", "Seccomp");
  char h[256];
  gethostname(h, sizeof h);
  info("hostname", h);
  return 0;
}

// Writes security.capability = cap_setuid,cap_setgid+ep on FILE: a v2 entry
// (ROOTID < 0) or a v3 one keyed to ROOTID (the uid, in this namespace, the
// capability is for). The host decides whether it took (getxattr there).
static int cmd_setcap(const char* file, long rootid) {
  struct {
    uint32_t magic_etc;
    struct { uint32_t permitted, inheritable; } data[2];
    uint32_t rootid;
  } v = {0};
  const uint32_t bits = (1u << 6) | (1u << 7);  // CAP_SETGID, CAP_SETUID
  v.magic_etc = (rootid < 0 ? 0x02000000u : 0x03000000u) | 1u;  // VFS_CAP_REVISION_2/3 | EFFECTIVE
  v.data[0].permitted = bits;
  v.rootid = rootid < 0 ? 0 : (uint32_t)rootid;
  size_t size = rootid < 0 ? 20 : 24;
  char what[64];
  snprintf(what, sizeof what, "setcap-%s", rootid < 0 ? "v2" : "v3");
  if (setxattr(file, "security.capability", &v, size, 0) < 0) ok(what, errno);
  else info(what, "written (the host checks what landed)");
  return 0;
}

// The attacker of `docker exec` through sbx serve: stops every new process of
// this sandbox the moment its pid appears and, before it has exec'd its
// program, tries to read it: /proc/PID/mem (each writable mapping: heap,
// stack, data, where a server keeps its tokens), /proc/PID/environ, and a
// ptrace attach. A process counts as "before its exec" when the program
// /proc/PID/exe names is not that file in this sandbox (a fork of sbx, a
// helper of sbx's own); reading a process after its exec is allowed (the
// workload's own). Everything read is searched for the lines of the file
// NEEDLES (the test's planted secrets; never in this sandbox otherwise) and
// dumped to DUMPDIR/PID.mem and PID.environ (bounded; where DUMPDIR is
// writable) for the host to search as well. Runs until STOPFILE exists. New
// pids come from /proc/sys/kernel/ns_last_pid (this pid namespace's last
// pid), else from probing the next pids with kill(0).
static long racer_dumped = 0;
static const long kRacerDumpMax = 512L << 20, kRacerPerProcess = 64L << 20;
static char racer_needles[8][256];
static int racer_nneedles = 0;
static int racer_secret_hits = 0;

// Searches `buf` (of `n` bytes, following the `carry` bytes kept before it
// in `win`) for the needles; keeps the last 255 bytes as the next carry.
// Returns how many needles were found.
static int racer_search(char* win, size_t* carry, const char* buf, size_t n) {
  memcpy(win + *carry, buf, n);
  size_t len = *carry + n;
  int found = 0;
  for (int i = 0; i < racer_nneedles; i++)
    if (memmem(win, len, racer_needles[i], strlen(racer_needles[i]))) found++;
  size_t keep = len < 255 ? len : 255;
  memmove(win, win + len - keep, keep);
  *carry = keep;
  return found;
}

static long racer_dump_mem(pid_t p, int memfd, const char* dir) {
  char path[256];
  snprintf(path, sizeof path, "/proc/%d/maps", p);
  FILE* maps = fopen(path, "r");
  if (!maps) return -1;
  snprintf(path, sizeof path, "%s/%d.mem", dir, p);
  int out = racer_dumped < kRacerDumpMax ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
  char line[512];
  long total = 0;
  static char buf[1 << 16], win[(1 << 16) + 256];
  size_t carry = 0;
  while (fgets(line, sizeof line, maps) && total < kRacerPerProcess) {
    unsigned long lo, hi;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r' || perms[1] != 'w') continue;
    for (unsigned long a = lo; a < hi && total < kRacerPerProcess;) {
      size_t n = hi - a < sizeof buf ? hi - a : sizeof buf;
      ssize_t r = pread(memfd, buf, n, (off_t)a);
      if (r <= 0) break;
      racer_secret_hits += racer_search(win, &carry, buf, (size_t)r);
      if (out >= 0 && racer_dumped < kRacerDumpMax) {
        if (write(out, buf, (size_t)r) == r) racer_dumped += r;
      }
      total += r;
      a += (unsigned long)r;
    }
  }
  fclose(maps);
  if (out >= 0) close(out);
  return total;
}

// 1: /proc/PID/exe is not that file in this sandbox (sbx's own image);
// 0: it is (the process has exec'd its program); -1: unreadable.
static int racer_before_exec(pid_t p, char* prog, size_t len) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/exe", p);
  ssize_t n = readlink(path, prog, len - 1);
  if (n < 0) return -1;
  prog[n] = 0;
  struct stat a, b;
  if (stat(path, &a) < 0) return -1;
  if (stat(prog, &b) < 0) return 1;
  return a.st_dev != b.st_dev || a.st_ino != b.st_ino;
}

static int racer_reported = 0;
static void racer_escape(const char* what, pid_t p, const char* prog, long bytes) {
  char d[512];
  snprintf(d, sizeof d, "pid %d before its exec (program %s): %ld bytes", p, prog, bytes);
  if (racer_reported++ < 5) escape(what, d);
  else escapes++;
}

// How far the race got, on stdout (which the script reads through `docker
// logs` while the racer runs; the shared dir is not writable from every
// sandbox kind): "progress KIND N".
static void racer_progress(const char* kind, long n) { printf("progress %s %ld\n", kind, n); }

static int cmd_racer(const char* dir, const char* stopfile, const char* needles) {
  const pid_t self = getpid();
  FILE* nf = fopen(needles, "r");
  if (!nf) {
    info("racer", "no needles file: nothing to search for");
  } else {
    while (racer_nneedles < 8 && fgets(racer_needles[racer_nneedles], sizeof racer_needles[0], nf)) {
      racer_needles[racer_nneedles][strcspn(racer_needles[racer_nneedles], "\n")] = 0;
      if (strlen(racer_needles[racer_nneedles]) >= 8) racer_nneedles++;
    }
    fclose(nf);
  }
  int lastfd = open("/proc/sys/kernel/ns_last_pid", O_RDONLY | O_CLOEXEC);
  long last = self, seen = 0, stopped = 0, before_read = 0, after_read = 0, denied = 0, attached = 0, bytes = 0;
  char num[32];
  if (lastfd >= 0) {
    ssize_t n = pread(lastfd, num, sizeof num - 1, 0);
    if (n > 0) {
      num[n] = 0;
      last = atol(num);
    } else {
      close(lastfd);
      lastfd = -1;
    }
  }
  info("racer", lastfd >= 0 ? "new pids from /proc/sys/kernel/ns_last_pid" : "new pids by probing kill(pid, 0)");
  unsigned long spins = 0;
  for (;;) {
    if ((++spins & 0xfff) == 0 && access(stopfile, F_OK) == 0) break;
    long now = last;
    if (lastfd >= 0) {
      ssize_t n = pread(lastfd, num, sizeof num - 1, 0);
      if (n <= 0) continue;
      num[n] = 0;
      now = atol(num);
    } else {
      for (long q = last + 1; q <= last + 16; q++)
        if (kill((pid_t)q, 0) == 0) now = q;
    }
    for (long q = last + 1; q <= now; q++) {
      pid_t p = (pid_t)q;
      if (p == self) continue;
      seen++;
      if (kill(p, SIGSTOP) < 0) continue;  // gone already
      stopped++;
      racer_progress("caught", stopped);
      // Wait (briefly) until it is stopped: it stops on its way back to user mode.
      char path[64], st[512];
      snprintf(path, sizeof path, "/proc/%d/stat", p);
      for (int i = 0; i < 2000; i++) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) break;
        ssize_t n = read(fd, st, sizeof st - 1);
        close(fd);
        if (n <= 0) break;
        st[n] = 0;
        char* rp = strrchr(st, ')');
        if (rp && rp[1] == ' ' && (rp[2] == 'T' || rp[2] == 't')) break;
        usleep(50);
      }
      char prog[4096] = "?";
      long got = -1;
      int access_ok = 0;
      snprintf(path, sizeof path, "/proc/%d/mem", p);
      int memfd = open(path, O_RDONLY | O_CLOEXEC);
      if (memfd >= 0) {
        access_ok = 1;
        got = racer_dump_mem(p, memfd, dir);
        close(memfd);
      }
      snprintf(path, sizeof path, "/proc/%d/environ", p);
      int envfd = open(path, O_RDONLY | O_CLOEXEC);
      if (envfd >= 0) {
        static char env[1 << 16];
        ssize_t n = read(envfd, env, sizeof env);
        close(envfd);
        if (n >= 0) {
          access_ok = 1;
          static char ewin[(1 << 16) + 256];
          size_t ecarry = 0;
          racer_secret_hits += racer_search(ewin, &ecarry, env, (size_t)n);
          char out[256];
          snprintf(out, sizeof out, "%s/%d.environ", dir, p);
          int o = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
          if (o >= 0) {
            if (write(o, env, (size_t)n) < 0) {
            }
            close(o);
          }
        }
      }
      int traced = 0;
      if (ptrace(PTRACE_SEIZE, p, 0, 0) == 0) {
        traced = 1;
        access_ok = 1;
        ptrace(PTRACE_INTERRUPT, p, 0, 0);
        int ws;
        waitpid(p, &ws, __WALL);
        ptrace(PTRACE_DETACH, p, 0, 0);
      }
      if (racer_secret_hits > 0) {
        char d[256];
        snprintf(d, sizeof d, "pid %d: a planted secret of the server's, %d times in what was read", p, racer_secret_hits);
        if (racer_reported++ < 5) escape("racer-secret", d);
        else escapes++;
        racer_secret_hits = 0;
      }
      if (access_ok) {
        int before = racer_before_exec(p, prog, sizeof prog);
        if (before == 1) {
          before_read++;
          racer_progress("early", before_read + denied);
          if (traced) attached++;
          racer_escape(traced ? "racer-read-and-ptrace" : "racer-read", p, prog, got);
        } else {
          after_read++;
        }
        if (got > 0) bytes += got;
      } else {
        denied++;
        racer_progress("early", before_read + denied);
      }
      kill(p, SIGCONT);
    }
    if (now > last) last = now;
  }
  if (lastfd >= 0) close(lastfd);
  char d[512];
  snprintf(d, sizeof d,
           "%ld new pids, %ld stopped; read before their exec: %ld (%ld ptrace-attached); read after: %ld; "
           "denied: %ld; %ld bytes of memory read, %ld dumped; searched for %d secrets",
           seen, stopped, before_read, attached, after_read, denied, bytes, racer_dumped, racer_nneedles);
  info("racer", d);
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc < 2) {
    fprintf(stderr, "usage: probe COMMAND [ARGS]\n");
    return 2;
  }
  const char* c = argv[1];
  int rc = 2;
  if (!strcmp(c, "syscalls")) rc = cmd_syscalls();
  else if (!strcmp(c, "devices")) rc = cmd_devices(argc - 2, argv + 2);
  else if (!strcmp(c, "scan") && argc == 3) rc = cmd_scan(argv[2]);
  else if (!strcmp(c, "masked")) rc = cmd_masked();
  else if (!strcmp(c, "fds")) rc = cmd_fds();
  else if (!strcmp(c, "hostread") && argc == 4) rc = cmd_hostread(argv[2], argv[3]);
  else if (!strcmp(c, "connect")) rc = cmd_connect(argc - 2, argv + 2);
  else if (!strcmp(c, "kill") && argc == 4) rc = cmd_kill(argv[2], argv[3]);
  else if (!strcmp(c, "forkbomb") && argc == 3) rc = cmd_forkbomb(atoi(argv[2]));
  else if (!strcmp(c, "threads") && argc == 3) rc = cmd_threads(atoi(argv[2]));
  else if (!strcmp(c, "mem") && argc == 3) rc = cmd_mem(atoi(argv[2]));
  else if (!strcmp(c, "disk") && argc == 4) rc = cmd_disk(argv[2], atoi(argv[3]));
  else if (!strcmp(c, "spin")) rc = cmd_spin();
  else if (!strcmp(c, "vsock")) rc = cmd_vsock();
  else if (!strcmp(c, "fdbomb") && argc == 3) rc = cmd_fdbomb(atoi(argv[2]));
  else if (!strcmp(c, "inodes") && argc == 4) rc = cmd_inodes(argv[2], atoi(argv[3]));
  else if (!strcmp(c, "robind") && argc == 3) rc = cmd_robind(argv[2]);
  else if (!strcmp(c, "info")) rc = cmd_info();
  else if (!strcmp(c, "udplisten") && argc == 4) rc = cmd_udplisten(atoi(argv[2]), atoi(argv[3]));
  else if (!strcmp(c, "udpsend") && argc == 5) rc = cmd_udpsend(argv[2], atoi(argv[3]), argv[4]);
  else if (!strcmp(c, "spoof") && argc == 8) rc = cmd_spoof(argv + 2);
  else if (!strcmp(c, "racer") && argc == 5) rc = cmd_racer(argv[2], argv[3], argv[4]);
  else if (!strcmp(c, "setcap") && (argc == 3 || argc == 4)) rc = cmd_setcap(argv[2], argc == 4 ? atol(argv[3]) : -1);
  if (rc == 2) {
    fprintf(stderr, "probe: bad usage: %s\n", c);
    return 2;
  }
  printf("done    %s escapes=%d\n", c, escapes);
  return escapes ? 3 : 0;
}
