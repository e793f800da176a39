#include "runtime/linux/signals.h"

#include <signal.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace sbx::runtime {

namespace {

bool all_digits(const std::string& s) {
  if (s.empty() || s.size() > 3) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace

int parse_signal(const std::string& text) {
  const std::string what = "invalid signal '" + text + "' (a name such as TERM, KILL, HUP, or a number 1-" +
                           std::to_string(SIGRTMAX) + ")";
  if (all_digits(text)) {
    int n = std::stoi(text);
    if (n <= 0 || n > SIGRTMAX) throw Error(what, EINVAL);
    return n;
  }
  std::string t = text;
  for (auto& ch : t) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (t.rfind("SIG", 0) == 0) t = t.substr(3);
  if (t.empty()) throw Error(what, EINVAL);
  for (int n = 1; n < SIGRTMIN; ++n) {
    const char* abbrev = ::sigabbrev_np(n);
    if (abbrev && t == abbrev) return n;
  }
  if (t == "IOT") return SIGABRT;
  if (t == "CLD") return SIGCHLD;
  if (t == "POLL") return SIGIO;
  // RTMIN, RTMIN+N, RTMAX, RTMAX-N.
  for (const char* base : {"RTMIN", "RTMAX"}) {
    size_t len = std::strlen(base);
    if (t.compare(0, len, base) != 0) continue;
    bool min = base[3] == 'I';
    int n = min ? SIGRTMIN : SIGRTMAX;
    std::string rest = t.substr(len);
    if (!rest.empty()) {
      if (rest[0] != (min ? '+' : '-') || !all_digits(rest.substr(1))) throw Error(what, EINVAL);
      n += (min ? 1 : -1) * std::stoi(rest.substr(1));
    }
    if (n < SIGRTMIN || n > SIGRTMAX) throw Error(what, EINVAL);
    return n;
  }
  throw Error(what, EINVAL);
}

}  // namespace sbx::runtime
