#include "ocirt/seccomp_profile.h"

#include <seccomp.h>

#include <cerrno>
#include <cctype>
#include <memory>

#include "common/error.h"

namespace sbx::ocirt {

namespace {

uint32_t action_of(const std::string& a, std::optional<unsigned> errno_ret, const std::string& field) {
  if (a == "SCMP_ACT_ALLOW") return SCMP_ACT_ALLOW;
  if (a == "SCMP_ACT_ERRNO") return SCMP_ACT_ERRNO(errno_ret.value_or(EPERM));
  if (a == "SCMP_ACT_KILL" || a == "SCMP_ACT_KILL_THREAD") return SCMP_ACT_KILL_THREAD;
  if (a == "SCMP_ACT_KILL_PROCESS") return SCMP_ACT_KILL_PROCESS;
  if (a == "SCMP_ACT_TRAP") return SCMP_ACT_TRAP;
  if (a == "SCMP_ACT_TRACE") return SCMP_ACT_TRACE(errno_ret.value_or(EPERM));
  if (a == "SCMP_ACT_LOG") return SCMP_ACT_LOG;
  throw Error("config.json: " + field + ": action '" + a + "' is not supported by sbx-runc");
}

scmp_compare op_of(const std::string& op) {
  if (op == "SCMP_CMP_NE") return SCMP_CMP_NE;
  if (op == "SCMP_CMP_LT") return SCMP_CMP_LT;
  if (op == "SCMP_CMP_LE") return SCMP_CMP_LE;
  if (op == "SCMP_CMP_EQ") return SCMP_CMP_EQ;
  if (op == "SCMP_CMP_GE") return SCMP_CMP_GE;
  if (op == "SCMP_CMP_GT") return SCMP_CMP_GT;
  if (op == "SCMP_CMP_MASKED_EQ") return SCMP_CMP_MASKED_EQ;
  throw Error("config.json: linux.seccomp.syscalls.args.op: '" + op + "' is not a seccomp operator");
}

uint32_t arch_of(const std::string& a) {
  std::string n = a.rfind("SCMP_ARCH_", 0) == 0 ? a.substr(10) : a;
  for (auto& ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  uint32_t v = seccomp_arch_resolve_name(n.c_str());
  if (v == 0) throw Error("config.json: linux.seccomp.architectures: '" + a + "' is not known to libseccomp");
  return v;
}

scmp_arg_cmp cond_of(const SeccompArg& a) {
  if (a.index > 5) throw Error("config.json: linux.seccomp.syscalls.args.index: " + std::to_string(a.index) + " is not 0..5");
  scmp_arg_cmp c{};
  c.arg = a.index;
  c.op = op_of(a.op);
  c.datum_a = a.value;
  c.datum_b = a.value_two;
  return c;
}

}  // namespace

void check_seccomp(const Seccomp& p) {
  action_of(p.default_action, p.default_errno_ret, "linux.seccomp.defaultAction");
  for (const auto& a : p.architectures) arch_of(a);
  for (const auto& f : p.flags)
    if (f != "SECCOMP_FILTER_FLAG_TSYNC" && f != "SECCOMP_FILTER_FLAG_LOG" && f != "SECCOMP_FILTER_FLAG_SPEC_ALLOW")
      throw Error("config.json: linux.seccomp.flags: '" + f + "' is not supported by sbx-runc");
  for (const auto& r : p.syscalls) {
    action_of(r.action, r.errno_ret, "linux.seccomp.syscalls.action");
    for (const auto& a : r.args) cond_of(a);
  }
}

void load_seccomp(const Seccomp& p) {
  check_seccomp(p);
  uint32_t def = action_of(p.default_action, p.default_errno_ret, "linux.seccomp.defaultAction");
  std::unique_ptr<void, void (*)(scmp_filter_ctx)> ctx(seccomp_init(def), seccomp_release);
  if (!ctx) throw Error("seccomp_init failed for linux.seccomp.defaultAction " + p.default_action);
  // The profile decides about no_new_privs (process.noNewPrivileges), not libseccomp.
  seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0);
  for (const auto& f : p.flags) {
    if (f == "SECCOMP_FILTER_FLAG_LOG") seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_LOG, 1);
    if (f == "SECCOMP_FILTER_FLAG_SPEC_ALLOW") seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_SSB, 1);
  }
  for (const auto& a : p.architectures) {
    int rc = seccomp_arch_add(ctx.get(), arch_of(a));
    if (rc < 0 && rc != -EEXIST) throw_errno("seccomp: add architecture " + a, -rc);
  }
  for (const auto& r : p.syscalls) {
    uint32_t act = action_of(r.action, r.errno_ret, "linux.seccomp.syscalls.action");
    if (act == def) continue;  // libseccomp refuses a rule that repeats the default
    std::vector<scmp_arg_cmp> conds;
    bool same_index = false;
    for (const auto& a : r.args) {
      for (const auto& c : conds) same_index |= (c.arg == a.index);
      conds.push_back(cond_of(a));
    }
    for (const auto& name : r.names) {
      int nr = seccomp_syscall_resolve_name(name.c_str());
      if (nr == __NR_SCMP_ERROR) continue;  // unknown to this libseccomp: as runc
      auto add = [&](const std::vector<scmp_arg_cmp>& cs) {
        int rc = seccomp_rule_add_array(ctx.get(), act, nr, static_cast<unsigned>(cs.size()), cs.empty() ? nullptr : cs.data());
        if (rc < 0) throw_errno("seccomp: add rule for " + name + " (linux.seccomp.syscalls)", -rc);
      };
      if (!same_index) {
        add(conds);
      } else {
        for (const auto& c : conds) add({c});
      }
    }
  }
  int rc = seccomp_load(ctx.get());
  if (rc < 0) throw_errno("seccomp: load the linux.seccomp profile", -rc);
}

}  // namespace sbx::ocirt
