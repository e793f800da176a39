#include "runtime/native/pooled_command.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/error.h"
#include "common/fd.h"
#include "common/fs.h"
#include "runtime/native/child_channel.h"

namespace sbx::runtime {

namespace {

void put_u32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
void put_str(std::string& out, const std::string& v) {
  put_u32(out, static_cast<uint32_t>(v.size()));
  out += v;
}

struct Decoder {
  const std::string& in;
  size_t at = 0;
  uint32_t u32() {
    uint32_t v;
    if (in.size() - at < sizeof v) throw Error("pooled command: truncated");
    std::memcpy(&v, in.data() + at, sizeof v);
    at += sizeof v;
    return v;
  }
  std::string str() {
    uint32_t n = u32();
    if (in.size() - at < n) throw Error("pooled command: truncated");
    std::string v = in.substr(at, n);
    at += n;
    return v;
  }
};

}  // namespace

std::string encode_command(const PooledCommand& cmd) {
  std::string out;
  put_u32(out, static_cast<uint32_t>(cmd.args.size()));
  for (const auto& a : cmd.args) put_str(out, a);
  put_u32(out, static_cast<uint32_t>(cmd.env.size()));
  for (const auto& e : cmd.env) put_str(out, e);
  put_u32(out, static_cast<uint32_t>(cmd.files.size()));
  for (const auto& [p, c] : cmd.files) {
    put_str(out, p);
    put_str(out, c);
  }
  return out;
}

PooledCommand decode_command(const std::string& in) {
  Decoder d{in};
  PooledCommand cmd;
  for (uint32_t n = d.u32(); n > 0; --n) cmd.args.push_back(d.str());
  for (uint32_t n = d.u32(); n > 0; --n) cmd.env.push_back(d.str());
  for (uint32_t n = d.u32(); n > 0; --n) {
    std::string path = d.str();
    cmd.files.emplace_back(std::move(path), d.str());
  }
  return cmd;
}

void send_command(int sock, const PooledCommand& cmd, const std::string& sandbox_id) {
  Fd payload(::memfd_create("sbx-pooled-command", MFD_CLOEXEC));
  if (payload.fd < 0) throw_errno("memfd for the pooled command");
  fs::write_all(payload.fd, encode_command(cmd), "the pooled command");
  try {
    send_fds(sock, 'C', {cmd.stdio[0], cmd.stdio[1], cmd.stdio[2], payload.fd});
  } catch (const Error& e) {
    throw_errno("send the command to the pooled sandbox " + sandbox_id, e.err());
  }
}

PooledCommand receive_command(int sock, int stdio[3]) {
  (void)!::send(sock, "R", 1, MSG_NOSIGNAL);
  char tag = 0;
  struct iovec iov {&tag, 1};
  alignas(struct cmsghdr) char cbuf[CMSG_SPACE(4 * sizeof(int))] = {};
  struct msghdr msg {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = cbuf;
  msg.msg_controllen = sizeof cbuf;
  ssize_t n;
  do {
    n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n != 1 || tag != 'C') ::_exit(kExitSbxFailed);
  struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (!c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(4 * sizeof(int)))
    throw Error("pooled command: expected 4 fds");
  int fds[4];
  std::memcpy(fds, CMSG_DATA(c), sizeof fds);
  for (int i = 0; i < 3; ++i) stdio[i] = fds[i];
  struct stat st {};
  if (::fstat(fds[3], &st) < 0) throw_errno("stat the pooled command");
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    ssize_t r = ::pread(fds[3], text.data() + got, text.size() - got, static_cast<off_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) throw_errno("read the pooled command");
    got += static_cast<size_t>(r);
  }
  ::close(fds[3]);
  return decode_command(text);
}

}  // namespace sbx::runtime
