// Relays between the user's terminal and a sandbox's pseudo-terminal (the
// master side), for `run -t` / `exec -t` on every backend: the user's
// terminal goes to raw mode for the relay (the sandbox's pty does the line
// editing and signals, as with docker/podman -t), its window size follows
// (SIGWINCH), and end of input becomes the pty's EOF character.
// Driven from the caller's own poll loop, so that the caller can watch its
// process, signals and deadlines in the same loop.
#pragma once
#include <poll.h>
#include <termios.h>

namespace sbx::runtime {

class PtyRelay {
 public:
  /// Starts relaying between `in_fd`/`out_fd` (the user's side; usually 0 and
  /// 1) and `master` (not owned). If `in_fd` is a terminal it is put in raw
  /// mode until restore() or destruction, and its window size is copied to the
  /// pty. No throw.
  PtyRelay(int master, int in_fd, int out_fd) noexcept;
  ~PtyRelay() { restore(); }
  PtyRelay(const PtyRelay&) = delete;
  PtyRelay& operator=(const PtyRelay&) = delete;

  /// Appends the descriptors the relay waits on to `fds` (room for 2 more
  /// at fds[n]) and returns the new count: the master while it is open, the
  /// user's input while it is open and `forward_input` (false once the
  /// sandbox's process has ended: then only its last output is drained).
  int add_pollfds(struct pollfd* fds, int n, bool forward_input) noexcept;
  /// Moves data for the entries add_pollfds added (same array, after poll).
  /// The master's EOF/EIO (every slave end closed) closes the relay's output
  /// side; the user's EOF sends the pty's VEOF (^D). No throw.
  void handle(const struct pollfd* fds) noexcept;
  /// Whether the master can still give output (until EOF/EIO).
  bool master_open() const { return master_open_; }
  /// Copies the user's window size to the pty (call on SIGWINCH). No throw.
  void resize() noexcept;
  /// Restores the user's terminal mode (idempotent; the destructor calls it).
  void restore() noexcept;

 private:
  int master_, in_, out_;
  bool master_open_ = true, input_open_ = true;
  int i_master_ = -1, i_input_ = -1;
  int raw_fd_ = -1;
  struct termios saved_ {};
};

}  // namespace sbx::runtime
