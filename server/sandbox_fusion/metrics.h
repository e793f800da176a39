// The operator's view of the SandboxFusion endpoint: GET /metrics in
// Prometheus's text exposition format (version 0.0.4): requests by
// endpoint, language and status, the queue's depth, sandboxes running,
// pool hits and misses, and a latency histogram.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace sbx::server::sandbox_fusion {

class Metrics {
 public:
  /// One answered request: `endpoint` run_code/run_jupyter, its language
  /// (kernel), its status (Success, Failed, SandboxError, or the HTTP code
  /// of a refusal: "422", "504"), and its wall time in seconds.
  void request(const std::string& endpoint, const std::string& language, const std::string& status, double seconds);
  /// A sandbox taken from a pool: `hit` when one was ready.
  void pool_take(bool hit);
  void queued(int delta);   ///< requests waiting for a slot
  void running(int delta);  ///< sandboxes running now
  /// The text of /metrics; `pool_ready`: sandboxes ready in the warm pools
  /// now (the caller owns the pools).
  std::string text(size_t pool_ready = 0) const;

 private:
  static constexpr std::array<double, 12> kBuckets{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> requests_;
  std::map<std::string, std::array<uint64_t, kBuckets.size() + 1>> buckets_;  ///< by endpoint; last: +Inf
  std::map<std::string, double> sum_;
  std::map<std::string, uint64_t> count_;
  uint64_t hits_ = 0, misses_ = 0;
  int64_t queued_ = 0, running_ = 0;
};

}  // namespace sbx::server::sandbox_fusion
