// Reads the policy and the certificate again when their files change:
// every `poll`, and at once when asked (SIGHUP, signal_watcher.h). They are
// polled, not watched with inotify: ConfigMap and Secret volumes update by
// swapping a ..data symlink, which inotify on the files themselves does not
// see. A reload is counted in the metrics and the status page and logged; a
// rejected file keeps the one before.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "gpusizer/server/certificates.h"
#include "gpusizer/server/metrics.h"
#include "gpusizer/server/policy_store.h"
#include "gpusizer/server/status_page.h"

namespace gpusizer {

class FileReloader {
 public:
  // Starts polling at once; the references must outlive it.
  FileReloader(PolicyStore& policy, CertificateStore& certificates, std::string cert_file, Metrics& metrics,
               StatusCounters& status_counters, std::chrono::seconds poll);
  ~FileReloader();  // stops polling
  FileReloader(const FileReloader&) = delete;
  FileReloader& operator=(const FileReloader&) = delete;

  // Reads both files on the polling thread now, logging when neither changed.
  void reload_now();

 private:
  void run();
  // Each says whether its file had changed (reloaded, or rejected with the
  // old one kept).
  bool reload_certificate();
  bool reload_policy();

  PolicyStore& policy_;
  CertificateStore& certificates_;
  const std::string cert_file_;
  Metrics& metrics_;
  StatusCounters& status_counters_;
  const std::chrono::seconds poll_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool reload_now_ = false;
  std::thread thread_;  // last: it starts in the constructor and reads every member above
};

}  // namespace gpusizer
