#include "gpusizer/server/file_reloader.h"

#include <utility>

#include <spdlog/spdlog.h>

#include "gpusizer/server/log.h"

namespace gpusizer {

FileReloader::FileReloader(PolicyStore& policy, CertificateStore& certificates, std::string cert_file, Metrics& metrics,
                           StatusCounters& status_counters, std::chrono::seconds poll)
    : policy_(policy),
      certificates_(certificates),
      cert_file_(std::move(cert_file)),
      metrics_(metrics),
      status_counters_(status_counters),
      poll_(poll),
      thread_([this] { run(); }) {}

FileReloader::~FileReloader() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void FileReloader::reload_now() {
  {
    std::lock_guard lock(mutex_);
    reload_now_ = true;
  }
  wake_.notify_all();
}

void FileReloader::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait_for(lock, poll_, [this] { return stopping_ || reload_now_; });
    if (stopping_) return;
    const bool asked = std::exchange(reload_now_, false);
    lock.unlock();
    const bool certificate_changed = reload_certificate();  // both reload, whatever the first returns
    const bool changed = reload_policy() || certificate_changed;
    if (asked && !changed) {
      log_event(
          spdlog::level::info, "SIGHUP: the policy and the certificate are unchanged",
          {{"policy", policy_.path().empty() ? "embedded default" : policy_.path()}, {"certificate", cert_file_}});
    }
    lock.lock();
  }
}

bool FileReloader::reload_certificate() {
  const CertificateReload rotated = certificates_.reload_if_changed();
  if (rotated.result == CertificateReload::Result::kUnchanged) return false;
  metrics_.count_certificate_reload(to_string(rotated.result));
  if (rotated.result == CertificateReload::Result::kReloaded) {
    metrics_.set_certificate_expiry(certificates_.not_after());
    log_event(spdlog::level::info, "TLS certificate reloaded",
              {{"file", cert_file_}, {"not_after", certificates_.not_after()}});
  } else if (!rotated.message.empty()) {
    log_event(spdlog::level::err, "TLS certificate reload rejected: " + rotated.message,
              {{"file", cert_file_}, {"result", to_string(rotated.result)}});
  }
  return true;
}

bool FileReloader::reload_policy() {
  const auto reloaded = policy_.reload_if_changed();
  const bool changed = !reloaded || reloaded.value();
  if (changed) {
    metrics_.count_reload(reloaded.ok());
    status_counters_.count_reload(reloaded.ok());
  }
  if (!reloaded) {
    log_event(spdlog::level::err, "policy reload rejected: " + reloaded.error(), {{"source", policy_.path()}});
  } else if (reloaded.value()) {
    metrics_.set_policy(*policy_.current());
    log_event(spdlog::level::info, "policy reloaded",
              {{"source", policy_.path()}, {"sha256", policy_.current()->sha256}});
  }
  return changed;
}

}  // namespace gpusizer
