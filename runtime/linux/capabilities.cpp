#include "runtime/linux/capabilities.h"

#include <sys/capability.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cctype>

#include "common/error.h"

namespace sbx::runtime {

std::vector<int> parse_capabilities(const std::vector<std::string>& names) {
  std::vector<int> out;
  for (const auto& n : names) {
    std::string lower;
    for (char c : n) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "all" || lower == "cap_all") {
      for (int c = 0; c <= CAP_LAST_CAP; ++c) out.push_back(c);
      continue;
    }
    if (lower.rfind("cap_", 0) != 0) lower = "cap_" + lower;
    cap_value_t v;
    if (cap_from_name(lower.c_str(), &v) < 0) throw Error("unknown capability '" + n + "'");
    out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void drop_bounding(const std::vector<int>& keep) {
  int last = static_cast<int>(cap_max_bits()) - 1;
  for (int c = 0; c <= last; ++c) {
    if (std::binary_search(keep.begin(), keep.end(), c)) continue;
    if (cap_drop_bound(c) < 0 && errno != EINVAL) throw_errno("drop capability " + std::to_string(c));
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
    throw_errno("clear ambient capabilities");
  if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0) throw_errno("PR_SET_KEEPCAPS");
}

void apply_capabilities(const std::vector<int>& keep, bool root) {
  cap_t caps = cap_init();  // all clear
  if (!caps) throw_errno("cap_init");
  if (root && !keep.empty()) {
    std::vector<cap_value_t> v(keep.begin(), keep.end());
    int n = static_cast<int>(v.size());
    cap_set_flag(caps, CAP_EFFECTIVE, n, v.data(), CAP_SET);
    cap_set_flag(caps, CAP_PERMITTED, n, v.data(), CAP_SET);
    cap_set_flag(caps, CAP_INHERITABLE, n, v.data(), CAP_SET);
  }
  int rc = cap_set_proc(caps);
  int e = errno;
  cap_free(caps);
  if (rc < 0) throw_errno("set capabilities", e);
  prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
}

}  // namespace sbx::runtime
