// nftables (https://wiki.nftables.org, nft(8)): sbx's one table, `inet sbx`,
// is written as nft script text and applied as one transaction — through
// libnftables (nft_run_cmd_from_buffer, loaded with dlopen on first use so
// that it costs nothing at sbx's start) when sbx is built with it and
// libnftables.so.1 is installed, else through the `nft -f -` command (static
// builds: Debian has no libnftables.a).
#pragma once
#include <string>

namespace sbx::runtime {

/// Applies `script` (nft(8) syntax, several commands) atomically: all or
/// nothing. Returns nft's output (with `echo`/`list` commands). Throws
/// sbx::Error with nft's message and `what` when nft refuses it, and a hint
/// to install nftables when it is missing.
std::string nft_apply(const std::string& script, const std::string& what);

/// Whether nftables works here: "" when it does, else why not (no nf_tables
/// in the kernel, no permission, no nft). No throw.
std::string nft_problem() noexcept;

/// How sbx reaches nftables: "libnftables" or "nft command".
const char* nft_backend() noexcept;

}  // namespace sbx::runtime
