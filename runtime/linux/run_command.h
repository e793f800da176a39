// Running a helper program (runsc, criu) to completion, its output on a file
// descriptor: fork + execv with stdin on /dev/null, made safe for the child
// of a multi-threaded parent (only async-signal-safe calls after fork).
#pragma once
#include <string>
#include <vector>

namespace sbx::runtime {

/// Runs `argv` (argv[0]: a path) to completion with stdin on /dev/null and
/// stdout+stderr on `out_fd` (-1: /dev/null); returns its wait status. When
/// argv[0] cannot be executed, says why on `out_fd` and the status is exit
/// 127. Throws sbx::Error only when fork fails.
int run_with_output(const std::vector<std::string>& argv, int out_fd);

/// run_with_output(argv, -1): commands whose output nobody reads.
int run_quiet(const std::vector<std::string>& argv);

/// Runs `argv` to completion with stdout+stderr appended to `out_file`
/// (created 0600), e.g. runsc's or criu's log; returns its exit code (128+N
/// for signal N). Throws sbx::Error when the file cannot be opened or fork fails.
int run_logged(const std::vector<std::string>& argv, const std::string& out_file);

}  // namespace sbx::runtime
