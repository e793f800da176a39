#include "runtime/sandbox_log.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>  // renameat
#include <cstring>

namespace sbx::runtime {

namespace {

// Days since 1970-01-01 -> civil date (H. Hinnant's days_from_civil inverse,
// public domain): no gmtime_r, which takes glibc's time-zone lock.
void civil_from_days(int64_t z, int64_t& y, unsigned& m, unsigned& d) noexcept {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  if (m <= 2) ++y;
}

int64_t days_from_civil(int64_t y, unsigned m, unsigned d) noexcept {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void put_digits(char* p, uint64_t v, int n) noexcept {
  for (int i = n - 1; i >= 0; --i) {
    p[i] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
}

bool digits(std::string_view s, size_t pos, size_t n, int64_t& v) noexcept {
  if (pos + n > s.size()) return false;
  v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  return true;
}

constexpr size_t kTimeLen = 30;  // "YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ"

}  // namespace

size_t format_rfc3339_ns(int64_t ns, char* out) noexcept {
  if (ns < 0) ns = 0;
  int64_t secs = ns / 1000000000;
  const int64_t frac = ns % 1000000000;
  int64_t y;
  unsigned m, d;
  civil_from_days(secs / 86400, y, m, d);
  const int64_t sod = secs % 86400;
  put_digits(out, static_cast<uint64_t>(y), 4);
  out[4] = '-';
  put_digits(out + 5, m, 2);
  out[7] = '-';
  put_digits(out + 8, d, 2);
  out[10] = 'T';
  put_digits(out + 11, static_cast<uint64_t>(sod / 3600), 2);
  out[13] = ':';
  put_digits(out + 14, static_cast<uint64_t>(sod / 60 % 60), 2);
  out[16] = ':';
  put_digits(out + 17, static_cast<uint64_t>(sod % 60), 2);
  out[19] = '.';
  put_digits(out + 20, static_cast<uint64_t>(frac), 9);
  out[29] = 'Z';
  out[30] = 0;
  return kTimeLen;
}

bool parse_time_ns(std::string_view s, int64_t& ns) noexcept {
  int64_t y, mo, d, h, mi, sec;
  if (s.size() >= 20 && s[4] == '-' && s[7] == '-' && (s[10] == 'T' || s[10] == 't') && digits(s, 0, 4, y) &&
      digits(s, 5, 2, mo) && digits(s, 8, 2, d) && digits(s, 11, 2, h) && s[13] == ':' && digits(s, 14, 2, mi) &&
      s[16] == ':' && digits(s, 17, 2, sec)) {
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return false;
    size_t i = 19;
    int64_t frac = 0;
    if (i < s.size() && s[i] == '.') {
      int n = 0;
      for (++i; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, ++n)
        if (n < 9) frac = frac * 10 + (s[i] - '0');
      if (n == 0) return false;
      for (; n < 9; ++n) frac *= 10;
    }
    int64_t off = 0;
    if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) {
      ++i;
    } else if (i + 6 == s.size() && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':') {
      int64_t oh, om;
      if (!digits(s, i + 1, 2, oh) || !digits(s, i + 4, 2, om)) return false;
      off = (oh * 60 + om) * 60 * (s[i] == '-' ? -1 : 1);
      i += 6;
    } else {
      return false;
    }
    if (i != s.size()) return false;
    const int64_t days = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
    ns = ((days * 86400 + h * 3600 + mi * 60 + sec) - off) * 1000000000 + frac;
    return true;
  }
  // Docker's since/until: unix seconds, optionally ".nanoseconds".
  size_t dot = s.find('.');
  std::string_view whole = s.substr(0, dot);
  int64_t w;
  if (whole.empty() || whole.size() > 12 || !digits(whole, 0, whole.size(), w)) return false;
  int64_t frac = 0;
  if (dot != std::string_view::npos) {
    std::string_view f = s.substr(dot + 1);
    if (f.empty() || f.size() > 9 || !digits(f, 0, f.size(), frac)) return false;
    for (size_t n = f.size(); n < 9; ++n) frac *= 10;
  }
  ns = w * 1000000000 + frac;
  return true;
}

bool parse_log_record(std::string_view line, LogRecord& out) noexcept {
  // "<time> stdout F text\n": the fixed-width head, then the text.
  if (line.size() < kTimeLen + 11 || line.back() != '\n' || line[kTimeLen] != ' ') return false;
  if (!parse_time_ns(line.substr(0, kTimeLen), out.time_ns)) return false;
  std::string_view rest = line.substr(kTimeLen + 1);
  if (rest.substr(0, 7) == "stdout ") out.stream = kStdout;
  else if (rest.substr(0, 7) == "stderr ") out.stream = kStderr;
  else return false;
  if ((rest[7] != 'F' && rest[7] != 'P') || rest[8] != ' ') return false;
  out.partial = rest[7] == 'P';
  out.text = rest.substr(9);
  if (out.partial) out.text.remove_suffix(1);
  return true;
}

SandboxLog::~SandboxLog() {
  if (fd_ >= 0) ::close(fd_);
}

void SandboxLog::open() noexcept {
  if (fd_ >= 0) ::close(fd_);
  // No symlink is followed (RESOLVE_NO_SYMLINKS, not O_NOFOLLOW): the file's
  // flags then hold no O_NOFOLLOW, which CRIU would reuse to reopen the fd
  // it is given at restore (--inherit-fd, through /proc/self/fd: ELOOP).
  struct open_how how {};
  how.flags = O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC;
  how.mode = 0600;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH;
  fd_ = static_cast<int>(::syscall(SYS_openat2, dirfd_, kRecordLog, &how, sizeof how));
  if (fd_ < 0 && errno == ENOSYS)  // kernel < 5.6
    fd_ = ::openat(dirfd_, kRecordLog, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  struct stat st;
  size_ = (fd_ >= 0 && ::fstat(fd_, &st) == 0) ? st.st_size : 0;
}

void SandboxLog::flush(const char* p, size_t n) noexcept {
  if (fd_ < 0 || n == 0) return;
  if (size_ > 0 && size_ + static_cast<int64_t>(n) > kLogRotateBytes) {
    ::close(fd_);
    fd_ = -1;
    ::renameat(dirfd_, kRecordLog, dirfd_, kRecordLogOld);
    open();
    if (fd_ < 0) return;
  }
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;
    }
    p += w;
    n -= static_cast<size_t>(w);
    size_ += w;
  }
}

void SandboxLog::write(int stream, const char* p, size_t n) noexcept {
  if (fd_ < 0 || n == 0) return;
  struct timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  char head[48];
  format_rfc3339_ns(int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec, head);
  std::memcpy(head + kTimeLen, stream == kStderr ? " stderr F " : " stdout F ", 10);
  const size_t head_len = kTimeLen + 10;
  // Whole records batched into one write (a reader never sees half a batch
  // across a rotation); a line longer than the buffer becomes P pieces.
  char buf[32768];
  size_t used = 0;
  while (n > 0) {
    const size_t room = sizeof buf - used - head_len - 1;
    if (room < 256) {
      flush(buf, used);
      used = 0;
      continue;
    }
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', n));
    size_t take = nl ? static_cast<size_t>(nl - p) : n;
    bool full = nl != nullptr;
    if (take > room) {
      if (used > 0) {  // a fresh buffer may hold all of it
        flush(buf, used);
        used = 0;
        continue;
      }
      take = room;
      full = false;
    }
    head[kTimeLen + 8] = full ? 'F' : 'P';
    std::memcpy(buf + used, head, head_len);
    std::memcpy(buf + used + head_len, p, take);
    buf[used + head_len + take] = '\n';
    used += head_len + take + 1;
    p += take + (full ? 1 : 0);
    n -= take + (full ? 1 : 0);
  }
  flush(buf, used);
}

bool SandboxLog::pump_from(int fd, int stream) noexcept {
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      write(stream, buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;
  }
}

}  // namespace sbx::runtime
