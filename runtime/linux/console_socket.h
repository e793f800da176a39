// The receiving end of an OCI runtime's console socket (runtime-spec
// config.json process.terminal: true, with `runsc|runc run|create|exec
// --console-socket PATH`): the runtime makes the pseudo-terminal, connects to
// PATH (an AF_UNIX stream socket) and sends the pty's master side as one
// SCM_RIGHTS file descriptor (runc docs/terminals.md; runsc console.NewWithSocket).
// The caller then relays between the user's terminal and that master
// (runtime/linux/pty_relay.h).
#pragma once
#include <string>

namespace sbx::runtime {

/// A listening console socket at a path. Not copyable; movable. The
/// destructor closes it and removes the socket file.
class ConsoleSocket {
 public:
  ConsoleSocket() = default;
  /// Creates and listens on `path` (an existing socket file there is removed
  /// first). The directory should be private (0700): whoever can connect may
  /// hand sbx a terminal. Throws sbx::Error when the path is longer than an
  /// AF_UNIX address allows (107 bytes: use a shorter --run-root) or socket,
  /// bind or listen fail (errno and path in the message).
  explicit ConsoleSocket(std::string path);
  ConsoleSocket(ConsoleSocket&& o) noexcept;
  ConsoleSocket& operator=(ConsoleSocket&& o) noexcept;
  ConsoleSocket(const ConsoleSocket&) = delete;
  ConsoleSocket& operator=(const ConsoleSocket&) = delete;
  ~ConsoleSocket();

  /// The path to give the runtime as --console-socket.
  const std::string& path() const { return path_; }

  /// Waits for the runtime to connect and send the pty master; returns it
  /// (close-on-exec, owned by the caller). Gives up and returns -1 when
  /// `abort_fd` (>= 0; e.g. a pidfd of the runtime, or the read end of a pipe
  /// the runtime holds) becomes readable or hangs up first — the runtime
  /// ended without sending a terminal — or after `timeout_ms` (< 0: none).
  /// Throws sbx::Error when accept/recvmsg fail or the message carries no
  /// file descriptor. Extra descriptors in the message are closed.
  int receive_master(int abort_fd, int timeout_ms);

  /// Closes the socket and removes its file now (the destructor does it too).
  /// No throw.
  void close() noexcept;

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace sbx::runtime
