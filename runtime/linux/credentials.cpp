#include "runtime/linux/credentials.h"

#include <grp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "common/error.h"
#include "runtime/linux/capabilities.h"
#include "runtime/linux/rlimits.h"
#include "runtime/linux/seccomp.h"

namespace sbx::runtime {

void apply_credentials(const Process& p, const ResolvedUser& user, const std::vector<gid_t>& groups,
                       const std::vector<int>& caps) {
  apply_rlimits(p.rlimits);
  // Bounding set first: dropping needs CAP_SETPCAP, which setuid may take away.
  drop_bounding(caps);
  // Raw system calls (this thread only): this runs in a process made by a raw
  // clone(2) of sbx, where glibc's wrappers would ask the parent's other
  // threads (which the child does not have) to change their ids too and wait
  // for them forever (nptl setxid): a multithreaded sbx (`sbx serve`, the
  // warm pool's refill threads) hung here.
  if (::syscall(SYS_setgroups, groups.size(), groups.data()) < 0) throw_errno("setgroups");
  if (::syscall(SYS_setresgid, user.gid, user.gid, user.gid) < 0) throw_errno("setgid " + std::to_string(user.gid));
  if (::syscall(SYS_setresuid, user.uid, user.uid, user.uid) < 0) throw_errno("setuid " + std::to_string(user.uid));
  // Seccomp must come after setuid/capset (it may deny what they need) and
  // needs no_new_privs unless we still hold CAP_SYS_ADMIN; see runc's
  // standard_init_linux.go.
  if (!p.no_new_privileges) install_default_seccomp();
  apply_capabilities(caps, user.uid == 0);
}

}  // namespace sbx::runtime
