// The load test with faults (issue #6): the real binary gets a steady rate
// of mixed AdmissionReviews over TLS keep-alive connections while its policy
// file is replaced (valid, invalid, valid), its certificate is rotated and it
// gets SIGTERM. Every answer is compared with the one handle_review gives
// in-process for the same body, and the server's RSS is sampled every second.
//
// Exit 0 only when every request sent before SIGTERM was answered, no answer
// (before or after SIGTERM) was wrong, each fault shows in the server's log,
// the server exited 0 and its memory did not grow. Requests sent after
// SIGTERM may fail: the server stops accepting once --shutdown-delay ends.
//
// This file holds the command line and the run: the faults on their
// schedule, SIGTERM and the server sampled every second. The requests and
// their expected answers are in load_generator.cpp, the verdict in
// load_report.cpp.
#include "load/loadtest.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include "gpusizer/server/self_signed.h"
#include "gpusizer/sizing/policy.h"
#include "integration/volume_files.h"
#include "integration/webhook_process.h"

namespace gpusizer::testing {

// The policy texts written during the run. Both valid ones decide exactly
// as the default (only a comment differs), so every answer stays
// predictable; the invalid one has an unknown field, which the server must
// refuse while keeping the policy it has.
std::string valid_policy_text(int replacement) {
  return default_policy_yaml() + "\n# replaced by the load test (" + std::to_string(replacement) +
         "): the same policy, new text\n";
}

std::string invalid_policy_text() {
  std::string text = default_policy_yaml();
  const std::string field = "denyFromGpus: 2";
  const auto at = text.find(field);
  if (at == std::string::npos) throw std::runtime_error("the default policy has no \"" + field + "\" line");
  return text.replace(at, field.size(), "denyFromGPUs: 2");
}

namespace {

namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: gpu-sizer-loadtest [--duration SECONDS] [--rate PER_SECOND] [--connections N]\n"
    "                          [--reconnect-seconds S] [--shutdown-delay S] [--json FILE] [--server-log FILE]\n"
    "Runs gpu-sizer serve under a steady load of mixed reviews while its policy is replaced\n"
    "(valid, invalid, valid), its certificate rotated and SIGTERM sent; exits 0 when no\n"
    "request sent before SIGTERM failed, no answer was wrong and memory did not grow.\n";

std::optional<Options> parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (i + 1 >= argc) {
      std::cerr << flag << " needs a value\n" << kUsage;
      return std::nullopt;
    }
    const std::string value = argv[++i];
    try {
      if (flag == "--duration") {
        options.duration_seconds = std::stod(value);
      } else if (flag == "--rate") {
        options.rate = std::stod(value);
      } else if (flag == "--connections") {
        options.connections = std::stoi(value);
      } else if (flag == "--reconnect-seconds") {
        options.reconnect_seconds = std::stod(value);
      } else if (flag == "--shutdown-delay") {
        options.shutdown_delay_seconds = std::stoi(value);
      } else if (flag == "--json") {
        options.json_path = value;
      } else if (flag == "--server-log") {
        options.server_log_path = value;
      } else {
        std::cerr << "unknown flag " << flag << "\n" << kUsage;
        return std::nullopt;
      }
    } catch (const std::exception&) {
      std::cerr << flag << ": \"" << value << "\" is not a number\n";
      return std::nullopt;
    }
  }
  if (options.duration_seconds < 10 || options.rate <= 0 || options.connections < 1 || options.reconnect_seconds <= 0) {
    std::cerr << "--duration must be at least 10 s; --rate, --connections and --reconnect-seconds above 0\n";
    return std::nullopt;
  }
  if (options.shutdown_delay_seconds < 0) {
    options.shutdown_delay_seconds = std::max(1, static_cast<int>(std::lround(options.duration_seconds * 0.05)));
  }
  return options;
}

// CPU time (user and system) a process has used, or nothing once it is gone.
std::optional<double> cpu_seconds(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto name_end = text.rfind(')');  // the command name may hold spaces
  if (name_end == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(name_end + 2));
  std::vector<std::string> values;
  for (std::string value; fields >> value && values.size() < 13;) values.push_back(value);
  if (values.size() < 13) return std::nullopt;
  // Fields 14 and 15 of proc(5), counted from the state (field 3).
  return static_cast<double>(std::stoll(values[11]) + std::stoll(values[12])) /
         static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// /readyz on a fresh connection: its status, or -1 without an answer.
int readiness(int port, const std::string& ca_file) {
  httplib::SSLClient client("127.0.0.1", port);
  client.set_ca_cert_path(ca_file);
  client.enable_server_certificate_verification(true);
  client.set_connection_timeout(2);
  auto result = client.Get("/readyz");
  return result ? result->status : -1;
}

int run(const Options& options) {
  TempDir work;
  const fs::path root = work.path();
  auto first = write_self_signed((root / "gen-1").string(), {"127.0.0.1", "localhost"});
  auto second = write_self_signed((root / "gen-2").string(), {"127.0.0.1", "localhost"});
  if (!first || !second) {
    std::cerr << "cannot generate certificates: " << (first ? second.error() : first.error()) << "\n";
    return 2;
  }
  const fs::path secret = root / "secret";
  publish_secret(secret, first.value(), "..v1");
  // The API server's caBundle during a CA rotation holds both CAs.
  const std::string ca_bundle = (root / "both-ca.crt").string();
  {
    std::ofstream bundle(ca_bundle);
    bundle << std::ifstream(first.value().ca_file).rdbuf() << std::ifstream(second.value().ca_file).rdbuf();
  }
  const std::string policy_path = (root / "policy.yaml").string();
  replace_file(policy_path, valid_policy_text(0));

  std::vector<Case> cases = mixed_cases(std::string(GPU_SIZER_SOURCE_DIR) + "/tests/data/workloads/");
  if (auto problem = expect_answers(cases, policy_path)) {
    std::cerr << "the load cannot be predicted: " << *problem << "\n";
    return 2;
  }

  WebhookProcess webhook({"--tls-cert", (secret / "tls.crt").string(), "--tls-key", (secret / "tls.key").string(),
                          "--policy", policy_path, "--policy-poll", "1", "--shutdown-delay",
                          std::to_string(options.shutdown_delay_seconds)});
  const pid_t server_pid = webhook.pid();
  if (!answers_with_ca(webhook.port(), first.value().ca_file)) {
    std::cerr << "the server does not answer over TLS; its log:\n" << webhook.stderr_text();
    return 2;
  }

  Report report;
  report.options = options;
  report.cases = &cases;
  const auto duration =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.duration_seconds));
  const auto start = Clock::now() + std::chrono::milliseconds(100);
  const LoadPlan plan{&cases,
                      webhook.port(),
                      ca_bundle,
                      start,
                      start + duration,
                      options.connections / options.rate,
                      options.connections,
                      options.reconnect_seconds};
  auto at_fraction = [&](double fraction) {
    return start + std::chrono::duration_cast<Clock::duration>(duration * fraction);
  };

  std::vector<ConnectionLog> logs(options.connections);
  std::vector<std::thread> connections;
  for (int i = 0; i < options.connections; ++i)
    connections.emplace_back(run_connection, std::cref(plan), i, std::ref(logs[i]));

  std::atomic<bool> sigterm_sent{false};
  std::thread sampler([&] {
    for (auto next = start; !sigterm_sent; next += std::chrono::seconds(1)) {
      std::this_thread::sleep_until(next);
      if (sigterm_sent) break;
      const auto kib = resident_kib(server_pid);
      const auto cpu = cpu_seconds(server_pid);
      if (kib && cpu) report.samples.push_back({seconds_between(start, Clock::now()), *kib, *cpu});
    }
  });

  auto fault = [&](const std::string& what, json observed = json::object()) {
    const double at = seconds_between(start, Clock::now());
    std::printf("  %7.2f s  %s\n", at, what.c_str());
    std::fflush(stdout);
    observed["at_seconds"] = at;
    observed["fault"] = what;
    report.faults.push_back(std::move(observed));
  };
  std::printf(
      "load: %.0f s at %.0f requests/s over %d keep-alive TLS connections (each reconnecting every %.0f s), "
      "%zu kinds of review; shutdown delay %d s\n",
      options.duration_seconds, options.rate, options.connections, options.reconnect_seconds, cases.size(),
      options.shutdown_delay_seconds);

  std::this_thread::sleep_until(at_fraction(kValidPolicyAt));
  replace_file(policy_path, valid_policy_text(1));
  fault("policy replaced by a valid text (a comment added)");

  std::this_thread::sleep_until(at_fraction(kInvalidPolicyAt));
  replace_file(policy_path, invalid_policy_text());
  fault("policy replaced by an invalid text (unknown field denyFromGPUs)");

  std::this_thread::sleep_until(at_fraction(kValidAgainAt));
  replace_file(policy_path, valid_policy_text(2));
  fault("policy replaced by a valid text again");

  std::this_thread::sleep_until(at_fraction(kRotationAt));
  publish_secret(secret, second.value(), "..v2");
  const auto rotated = Clock::now();
  while (!report.new_certificate_served && Clock::now() - rotated < std::chrono::seconds(10)) {
    report.new_certificate_served = answers_with_ca(webhook.port(), second.value().ca_file);
    if (!report.new_certificate_served) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  report.rotation_seen_after = seconds_between(rotated, Clock::now());
  report.old_certificate_gone = !answers_with_ca(webhook.port(), first.value().ca_file);
  fault("certificate rotated (Secret ..data swapped to a certificate from a new CA)",
        {{"new_certificate_served", report.new_certificate_served},
         {"new_certificate_seen_after_seconds", report.rotation_seen_after},
         {"old_certificate_gone", report.old_certificate_gone}});

  std::this_thread::sleep_until(at_fraction(kSigtermAt));
  report.sigterm_seconds = seconds_between(start, Clock::now());
  sigterm_sent = true;
  webhook.terminate();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  report.readiness_after_sigterm = readiness(webhook.port(), ca_bundle);
  fault("SIGTERM sent", {{"readyz_status_after_300ms", report.readiness_after_sigterm}});

  for (auto& thread : connections) thread.join();
  sampler.join();
  report.exit_status = webhook.wait_for(std::chrono::seconds(options.shutdown_delay_seconds + 30));
  if (!report.exit_status) {
    ::kill(server_pid, SIGKILL);
    webhook.wait_for(std::chrono::seconds(5));
  }
  const std::string server_log = webhook.stderr_text();
  if (!options.server_log_path.empty()) std::ofstream(options.server_log_path) << server_log;

  tally_requests(logs, report);
  summarise_server(report);
  read_server_log(server_log, report);
  judge(report);
  print_summary(report);
  if (!options.json_path.empty()) std::ofstream(options.json_path) << to_json(report).dump(2) << "\n";
  return report.failures.empty() ? 0 : 1;
}

}  // namespace
}  // namespace gpusizer::testing

int main(int argc, char** argv) {
  const auto options = gpusizer::testing::parse_options(argc, argv);
  if (!options) return 2;
  try {
    return gpusizer::testing::run(*options);
  } catch (const std::exception& error) {
    std::cerr << "load test: " << error.what() << "\n";
    return 2;
  }
}
