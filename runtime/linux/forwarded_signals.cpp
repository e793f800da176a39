#include "runtime/linux/forwarded_signals.h"

#include <initializer_list>

namespace sbx::runtime {

const sigset_t& forwarded_signals() {
  static const sigset_t set = [] {
    sigset_t s;
    sigemptyset(&s);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT, SIGALRM, SIGPIPE})
      sigaddset(&s, sig);
    return s;
  }();
  return set;
}

}  // namespace sbx::runtime
