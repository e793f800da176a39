// Prometheus text for the SandboxFusion endpoint (metrics.h).
#include "server/sandbox_fusion/metrics.h"

#include <sstream>

namespace sbx::server::sandbox_fusion {

namespace {

/// A label value with \, " and newline escaped (the exposition format).
std::string label(const std::string& v) {
  std::string o;
  for (char c : v) {
    if (c == '\\' || c == '"') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o;
}

}  // namespace

void Metrics::request(const std::string& endpoint, const std::string& language, const std::string& status,
                      double seconds) {
  std::lock_guard lk(mu_);
  ++requests_[{endpoint, language, status}];
  auto& b = buckets_[endpoint];
  size_t i = 0;
  while (i < kBuckets.size() && seconds > kBuckets[i]) ++i;
  ++b[i];
  sum_[endpoint] += seconds;
  ++count_[endpoint];
}

void Metrics::pool_take(bool hit) {
  std::lock_guard lk(mu_);
  ++(hit ? hits_ : misses_);
}

void Metrics::queued(int delta) {
  std::lock_guard lk(mu_);
  queued_ += delta;
}

void Metrics::running(int delta) {
  std::lock_guard lk(mu_);
  running_ += delta;
}

std::string Metrics::text(size_t pool_ready) const {
  std::lock_guard lk(mu_);
  std::ostringstream o;
  o << "# HELP sbx_sandbox_fusion_requests_total Requests answered, by endpoint, language and status.\n"
       "# TYPE sbx_sandbox_fusion_requests_total counter\n";
  for (const auto& [k, n] : requests_)
    o << "sbx_sandbox_fusion_requests_total{endpoint=\"" << label(std::get<0>(k)) << "\",language=\""
      << label(std::get<1>(k)) << "\",status=\"" << label(std::get<2>(k)) << "\"} " << n << "\n";
  o << "# HELP sbx_sandbox_fusion_queue_depth Requests waiting for a sandbox slot.\n"
       "# TYPE sbx_sandbox_fusion_queue_depth gauge\n"
       "sbx_sandbox_fusion_queue_depth " << queued_ << "\n"
    << "# HELP sbx_sandbox_fusion_running Sandboxes running requests now.\n"
       "# TYPE sbx_sandbox_fusion_running gauge\n"
       "sbx_sandbox_fusion_running " << running_ << "\n"
    << "# HELP sbx_sandbox_fusion_pool_takes_total Sandboxes taken from the warm pools: hit when one was ready.\n"
       "# TYPE sbx_sandbox_fusion_pool_takes_total counter\n"
       "sbx_sandbox_fusion_pool_takes_total{result=\"hit\"} " << hits_ << "\n"
       "sbx_sandbox_fusion_pool_takes_total{result=\"miss\"} " << misses_ << "\n"
    << "# HELP sbx_sandbox_fusion_pool_ready Sandboxes ready in the warm pools now.\n"
       "# TYPE sbx_sandbox_fusion_pool_ready gauge\n"
       "sbx_sandbox_fusion_pool_ready " << pool_ready << "\n"
    << "# HELP sbx_sandbox_fusion_request_seconds Wall time of requests, from the body read to the answer.\n"
       "# TYPE sbx_sandbox_fusion_request_seconds histogram\n";
  for (const auto& [ep, b] : buckets_) {
    uint64_t cum = 0;
    for (size_t i = 0; i < kBuckets.size(); ++i) {
      cum += b[i];
      o << "sbx_sandbox_fusion_request_seconds_bucket{endpoint=\"" << label(ep) << "\",le=\"" << kBuckets[i] << "\"} "
        << cum << "\n";
    }
    cum += b[kBuckets.size()];
    o << "sbx_sandbox_fusion_request_seconds_bucket{endpoint=\"" << label(ep) << "\",le=\"+Inf\"} " << cum << "\n";
    o << "sbx_sandbox_fusion_request_seconds_sum{endpoint=\"" << label(ep) << "\"} " << sum_.at(ep) << "\n";
    o << "sbx_sandbox_fusion_request_seconds_count{endpoint=\"" << label(ep) << "\"} " << count_.at(ep) << "\n";
  }
  return o.str();
}

}  // namespace sbx::server::sandbox_fusion
