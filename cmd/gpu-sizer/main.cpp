// gpu-sizer: flags and wiring only; the work happens in the libraries.
#include <cstddef>
#include <cstdio>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "gpusizer/check/check.h"
#include "gpusizer/check/node_file.h"
#include "gpusizer/history/prometheus_history.h"
#include "gpusizer/history/report.h"
#include "gpusizer/server/log.h"
#include "gpusizer/server/policy_store.h"
#include "gpusizer/server/server.h"
#include "gpusizer/sizing/messages.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/sizing/sizing.h"
#include "gpusizer/util/numbers.h"
#include "gpusizer/workloads/workloads.h"

namespace {

using gpusizer::Policy;
using gpusizer::Profile;

// sysexits.h's EX_SOFTWARE: distinct from check's 0, 1 and 2.
constexpr int kInternalErrorExit = 70;

constexpr const char* kUsage = R"(gpu-sizer: size CPU, memory and ephemeral-storage of GPU pods to their GPU count.

Usage:
  gpu-sizer serve [--listen HOST:PORT] [--tls-cert FILE --tls-key FILE] [--client-ca FILE]
                  [--policy FILE] [--metrics-listen HOST:PORT] [--cert-dir DIR]
                  [--transport asio|httplib] [--threads N]
                  [--max-body-bytes N] [--large-body-bytes N] [--max-connections N]
                  [--read-timeout SECONDS] [--keep-alive-timeout SECONDS] [--tls-groups LIST]
                  [--policy-poll SECONDS] [--shutdown-delay SECONDS] [--metrics-namespace-cap N]
                  [--node-watch auto|on|off] [--dra-watch auto|off] [--pool-watch auto|off]
                  [--kubeconfig FILE] [--prometheus URL [--history-refresh SECONDS]]
                  [--log-level LEVEL] [--log-format json|text]
      Run the admission webhook over HTTPS: POST /mutate, POST /validate,
      GET /healthz, GET /readyz. Without --tls-cert it generates a
      self-signed CA and certificate in --cert-dir (default /tmp/gpu-sizer)
      and logs where the CA is. With --client-ca, /mutate and /validate
      answer only clients presenting a certificate signed by a CA in FILE
      (the API server's webhook client certificate). --transport asio (the
      default) serves any number of connections from --threads event loops
      (default: the CPUs the process may use, within its cgroup CPU limit);
      --transport httplib holds a thread per connection, --threads of them
      (default 32). Past --max-connections open at once, new connections
      are closed (asio) or wait in the kernel (httplib). Bodies over
      --large-body-bytes are read and answered one at a time, off the event
      loops. Defaults: --listen 127.0.0.1:8443, --max-body-bytes 8388608,
      --large-body-bytes 65536, --max-connections 1024, --read-timeout 10,
      --keep-alive-timeout 5, --tls-groups X25519:P-256:P-384:P-521,
      --policy-poll 2, --shutdown-delay 0 (seconds
      of failing /readyz while still serving after SIGTERM; set it to the
      time your cluster takes to update endpoints), --metrics-namespace-cap 100,
      --log-level info, --log-format json (one JSON object per line on stderr).
      The webhook watches the cluster's nodes (get, list and watch on
      nodes) to keep every pod it sizes schedulable: in a pod through its
      service account, elsewhere with --kubeconfig. --node-watch auto (the
      default) watches when it can, on refuses to start when it cannot,
      off never watches (the policy's nodeFit.pools stand in). With the
      nodes it watches the DRA objects (get, list and watch on
      resourceclaimtemplates, resourceclaims and deviceclasses of
      resource.k8s.io/v1), so a pod's claims are sized; --dra-watch off
      leaves them warned about. With the nodes it also watches the
      autoscalers' pools whose CRDs the cluster serves (Karpenter NodePools,
      EC2NodeClasses, AKSNodeClasses; GKE ComputeClasses: get, list and
      watch), so a pod of a pool scaled to zero is sized within the machines
      the pool may launch; --pool-watch off leaves them out. With
      --prometheus, while the policy's history.mode is not off, history
      (what each workload's earlier runs used, docs/history.md) is read
      every --history-refresh seconds (default 300) off the admission path;
      Prometheus down keeps the last read. SIGHUP
      reads the policy and the certificate again at once.

  gpu-sizer table [--profile NAME] [--gpus N] [--policy FILE]
      Print the effective sizing table, or what N GPUs need and the OSMO
      --set line for it.

  gpu-sizer check [--policy FILE] [--nodes FILE] [--output text|json] [--fix [--in-place]]
                  [--set KEY=VALUE ...] [--strict] [--max-file-bytes N] [--max-documents N]
                  [--max-yaml-nodes N] FILE|DIR|- ...
      Run the webhook's decisions offline on manifests (multi-document YAML
      or JSON; directories are searched for *.yaml, *.yml, *.json) and on
      OSMO workflow files (with --set values as osmo workflow submit takes
      them). Prints what would be changed or denied and why. In an OSMO
      file, a variable with no value that sizing does not read (a name, a
      URL) is a warning, and so is an {% if %} check cannot evaluate when no
      branch of it changes a task's resources; --strict makes both errors,
      as osmo workflow submit does. --fix writes the corrected manifests to
      stdout (the report then goes to stderr), or over the files with
      --in-place. Exit 0: all admitted unchanged;
      1: something would be changed or denied; 2: unreadable input, or
      GPUs asked where no pod gpu-sizer can size holds them (UNSIZED).
      --nodes FILE sizes against those nodes (what `kubectl get nodes -o
      yaml` prints, with any Karpenter NodePools, EC2NodeClasses,
      AKSNodeClasses and GKE ComputeClasses: the machines they may launch):
      floors are capped to what a node the pod may run on can hold, and
      node fit checks them (else the policy's nodeFit.pools).
      Each file (stdin and --nodes too) is unreadable past --max-file-bytes
      (default 67108864), --max-documents YAML documents (default 10000)
      or --max-yaml-nodes nodes, an alias counting as every node it
      repeats (default 2000000).

  gpu-sizer explain [--policy FILE] [--nodes FILE] [--output text|json] [--max-file-bytes N]
                    [--max-documents N] [--max-yaml-nodes N] FILE|DIR|- ...
      For every pod template, what check decides and why: its GPUs and
      profile, each rule's floor (table, /dev/shm, data loader), cap (node
      caps) and check (GPU memory, node fit), which rule binds memory, and
      the changes, denials and warnings. Exit 0, or 2 on unreadable input
      or UNSIZED GPUs (as check).

  gpu-sizer report --prometheus URL [--since WINDOW] [--output text|json|html] [--policy FILE]
                   [--timeout SECONDS]
      What the GPU workloads gpu-sizer stamped (policy history.mode
      recommend or raise) did, from Prometheus (cAdvisor, kube-state-metrics
      exporting the gpu-sizer.io/workload annotation and kube_pod_owner,
      the DCGM exporter where it runs): per workload and container its runs,
      OOM kills, peak memory against request, limit and the table, CPU p95,
      GPU memory peak, and what history recommends with its arithmetic.
      --since (default the policy's history.window) as PromQL writes it:
      90m, 36h, 14d, 2w. Exit 0: nothing to act on; 1: OOM kills or peaks
      near a limit; 2: Prometheus unreachable or its answer unreadable.

  gpu-sizer policy [--check FILE]
      Print the embedded default policy (a starting point for your own), or
      check FILE and report the first error with its field and line.

  gpu-sizer kinds [--output yaml|json]
      Print the built-in workload kinds: where each keeps its pods, its
      resource and API versions (the webhook rules in deploy/ and the chart
      are generated from it), its chart family, whether it serves or trains,
      and whether it is long-lived.

  gpu-sizer --help | --version
)";

// "--name value" and "--name=value" flags after the subcommand.
class Flags {
 public:
  Flags(int argc, char** argv, int first) {
    for (int i = first; i < argc; ++i) {
      std::string arg = argv[i];
      if (!arg.starts_with("--")) {
        error_ = "unexpected argument \"" + arg + "\"";
        return;
      }
      const auto equals = arg.find('=');
      if (equals != std::string::npos) {
        values_[arg.substr(2, equals - 2)] = arg.substr(equals + 1);
      } else if (i + 1 < argc) {
        values_[arg.substr(2)] = argv[++i];
      } else {
        error_ = "flag " + arg + " needs a value";
        return;
      }
    }
  }

  // Takes a flag's value; what is never taken is reported as unknown.
  std::optional<std::string> take(const std::string& name) {
    auto it = values_.find(name);
    if (it == values_.end()) return std::nullopt;
    std::string value = it->second;
    values_.erase(it);
    return value;
  }
  std::string take_or(const std::string& name, const std::string& fallback) { return take(name).value_or(fallback); }

  // Whole numbers in [minimum, maximum]; records an error naming the flag.
  int64_t take_number(const std::string& name, int64_t fallback, int64_t minimum, int64_t maximum) {
    auto text = take(name);
    if (!text) return fallback;
    auto value = gpusizer::read_whole(*text, minimum, maximum);
    if (value) return value.value();
    error_ = "--" + name + " " + value.error() + ", found \"" + *text + "\"";
    return fallback;
  }

  // The first problem: a malformed argument, a bad number, or an unknown flag.
  std::optional<std::string> problem() const {
    if (!error_.empty()) return error_;
    if (!values_.empty()) return "unknown flag --" + values_.begin()->first;
    return std::nullopt;
  }

 private:
  std::map<std::string, std::string> values_;
  std::string error_;
};

int usage_error(const std::string& message) {
  std::fprintf(stderr, "gpu-sizer: %s\nRun gpu-sizer --help for usage.\n", message.c_str());
  return 2;
}

std::optional<Policy> load_policy_or_report(const std::string& path) {
  auto store = gpusizer::PolicyStore::open(path);
  if (!store) {
    std::fprintf(stderr, "gpu-sizer: %s\n", store.error().c_str());
    return std::nullopt;
  }
  return *store.value()->current();
}

void print_profile_table(const Profile& profile) {
  std::printf("profile %s", profile.name.c_str());
  if (profile.storage) std::printf(" (ephemeral-storage %s)", profile.storage->to_string().c_str());
  if (profile.max_gpus) std::printf(" (at most %lld GPU)", static_cast<long long>(*profile.max_gpus));
  std::printf("\n");
  if (profile.table.empty()) {
    std::printf("  no table: CPU and memory are left as written\n\n");
    return;
  }
  std::printf("  %-6s %-8s %-10s\n", "GPUs", "CPU", "memory");
  const int64_t last = profile.table.back().gpus;
  for (int64_t gpus = 1; gpus <= last; ++gpus) {
    const auto need = gpusizer::required_resources(profile, gpus);
    bool exact = false;
    for (const auto& row : profile.table) exact = exact || row.gpus == gpus;
    std::printf("  %-6lld %-8s %-10s%s\n", static_cast<long long>(gpus), need->cpu.to_string().c_str(),
                need->memory.to_string().c_str(), exact ? "" : "  (per-GPU rule)");
  }
  std::printf("  past %lld GPUs: +%s CPU and +%s memory per GPU\n\n", static_cast<long long>(last),
              profile.extra_gpu_cpu.to_string().c_str(), profile.extra_gpu_memory.to_string().c_str());
}

int run_table(Flags& flags) {
  const std::string policy_path = flags.take_or("policy", "");
  const auto profile_name = flags.take("profile");
  const int64_t gpus = flags.take_number("gpus", 0, 1, 1 << 20);
  if (auto problem = flags.problem()) return usage_error(*problem);
  const auto policy = load_policy_or_report(policy_path);
  if (!policy) return 2;

  std::vector<const Profile*> profiles;
  if (profile_name) {
    const Profile* profile = policy->find_profile(*profile_name);
    if (!profile) return usage_error("no profile \"" + *profile_name + "\" in policy " + policy->source);
    profiles.push_back(profile);
  } else {
    for (const auto& [name, profile] : policy->profiles) profiles.push_back(&profile);
  }
  for (const Profile* profile : profiles) {
    if (gpus == 0) {
      print_profile_table(*profile);
      continue;
    }
    if (profile->max_gpus && gpus > *profile->max_gpus) {
      std::printf("%s: at most %lld GPU (single-pod stage); use --set %s\n", profile->name.c_str(),
                  static_cast<long long>(*profile->max_gpus), gpusizer::set_hint(*profile, *profile->max_gpus).c_str());
      continue;
    }
    const auto need = gpusizer::required_resources(*profile, gpus);
    if (need) {
      std::printf("%s, %lld GPU%s: cpu %s, memory %s", profile->name.c_str(), static_cast<long long>(gpus),
                  gpus == 1 ? "" : "s", need->cpu.to_string().c_str(), need->memory.to_string().c_str());
      if (need->storage) std::printf(", ephemeral-storage %s", need->storage->to_string().c_str());
      std::printf("\n");
    }
    std::printf("  --set %s\n", gpusizer::set_hint(*profile, gpus).c_str());
  }
  return 0;
}

int run_policy(Flags& flags) {
  const auto check = flags.take("check");
  if (auto problem = flags.problem()) return usage_error(*problem);
  if (!check) {
    std::fputs(gpusizer::default_policy_yaml().c_str(), stdout);
    return 0;
  }
  if (!load_policy_or_report(*check)) return 1;
  std::printf("policy %s is valid\n", check->c_str());
  return 0;
}

int run_kinds(Flags& flags) {
  const std::string output = flags.take_or("output", "yaml");
  if (auto problem = flags.problem()) return usage_error(*problem);
  if (output != "yaml" && output != "json")
    return usage_error("--output must be yaml or json, found \"" + output + "\"");
  std::fputs((output == "json" ? gpusizer::kind_table_json() : gpusizer::kind_table_yaml()).c_str(), stdout);
  return 0;
}

// The input limit a check flag sets (input_limits.h), or null.
std::size_t* input_limit(const std::string& flag, gpusizer::InputLimits& limits) {
  if (flag == gpusizer::kMaxFileBytesFlag) return &limits.max_file_bytes;
  if (flag == gpusizer::kMaxDocumentsFlag) return &limits.max_documents;
  if (flag == gpusizer::kMaxYamlNodesFlag) return &limits.max_yaml_nodes;
  return nullptr;
}

// check and explain take positional files and check a multi-value --set,
// unlike the other commands, so they parse their own arguments.
int run_check(int argc, char** argv) {
  gpusizer::CheckOptions options;
  options.explain = std::string(argv[1]) == "explain";
  std::string policy_path;
  std::string nodes_path;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= argc) return std::nullopt;
      return std::string(argv[++i]);
    };
    if (arg == "--policy" || arg == "--output" || arg == "--nodes") {
      const auto given = value();
      if (!given) return usage_error("flag " + arg + " needs a value");
      if (arg == "--policy") {
        policy_path = *given;
      } else if (arg == "--nodes") {
        nodes_path = *given;
      } else if (*given == "text" || *given == "json") {
        options.json_output = *given == "json";
      } else {
        return usage_error("--output must be text or json, found \"" + *given + "\"");
      }
    } else if (std::size_t* limit = input_limit(arg, options.limits)) {
      const auto given = value();
      if (!given) return usage_error("flag " + arg + " needs a value");
      // 2^40: a terabyte, a trillion nodes; a bound, never a reason to refuse.
      const auto number = gpusizer::read_whole(*given, 1, int64_t{1} << 40);
      if (!number) return usage_error(arg + " " + number.error() + ", found \"" + *given + "\"");
      *limit = static_cast<std::size_t>(number.value());
    } else if (arg == "--fix") {
      options.fix = true;
    } else if (arg == "--strict") {
      options.strict = true;
    } else if (arg == "--in-place") {
      options.in_place = true;
    } else if (arg == "--set") {
      // Like osmo workflow submit: --set a=1 b=2 ... until the next flag.
      bool any = false;
      while (i + 1 < argc && std::string(argv[i + 1]).find('=') != std::string::npos &&
             !std::string(argv[i + 1]).starts_with("--")) {
        const std::string pair = argv[++i];
        options.set_values[pair.substr(0, pair.find('='))] = pair.substr(pair.find('=') + 1);
        any = true;
      }
      if (!any) return usage_error("--set needs KEY=VALUE pairs");
    } else if (arg.starts_with("--")) {
      return usage_error("unknown flag " + arg);
    } else {
      options.paths.push_back(arg);
    }
  }
  const std::string command = argv[1];
  if (options.explain && (options.fix || options.strict || !options.set_values.empty())) {
    return usage_error("explain takes --policy, --nodes and --output; --fix, --set and --strict belong to check");
  }
  if (options.paths.empty()) return usage_error(command + " needs files, directories or - for standard input");
  if (options.in_place && !options.fix) return usage_error("--in-place goes with --fix");
  const auto policy = load_policy_or_report(policy_path);
  if (!policy) return gpusizer::kCheckUnreadable;
  if (!nodes_path.empty()) {
    auto nodes = gpusizer::read_node_file(nodes_path, options.limits, &options.node_slices);
    if (!nodes) {
      std::fprintf(stderr, "gpu-sizer: --nodes %s\n", nodes.error().c_str());
      return gpusizer::kCheckUnreadable;
    }
    options.nodes = std::move(nodes).value();
  }
  // Lines read in a terminal or a CI log: every warning whole.
  gpusizer::set_warning_width(std::numeric_limits<std::size_t>::max());
  return gpusizer::run_check(*policy, options, std::cout, std::cerr);
}

int run_serve(Flags& flags) {
  gpusizer::ServerOptions options;
  options.listen = flags.take_or("listen", options.listen);
  options.tls_cert = flags.take_or("tls-cert", "");
  options.tls_key = flags.take_or("tls-key", "");
  options.client_ca = flags.take_or("client-ca", "");
  options.cert_dir = flags.take_or("cert-dir", options.cert_dir);
  options.policy_path = flags.take_or("policy", "");
  options.metrics_listen = flags.take_or("metrics-listen", "");
  options.transport = flags.take_or("transport", options.transport);
  options.threads = static_cast<int>(flags.take_number("threads", options.threads, 1, 4096));
  options.max_body_bytes = static_cast<std::size_t>(
      flags.take_number("max-body-bytes", static_cast<int64_t>(options.max_body_bytes), 1024, int64_t{1} << 30));
  options.large_body_bytes = static_cast<std::size_t>(
      flags.take_number("large-body-bytes", static_cast<int64_t>(options.large_body_bytes), 0, int64_t{1} << 30));
  options.max_connections = static_cast<std::size_t>(
      flags.take_number("max-connections", static_cast<int64_t>(options.max_connections), 1, 1000000));
  options.tls_groups = flags.take_or("tls-groups", options.tls_groups);
  options.read_timeout_seconds =
      static_cast<int>(flags.take_number("read-timeout", options.read_timeout_seconds, 1, 300));
  options.keep_alive_timeout_seconds =
      static_cast<int>(flags.take_number("keep-alive-timeout", options.keep_alive_timeout_seconds, 1, 3600));
  options.policy_poll_seconds =
      static_cast<int>(flags.take_number("policy-poll", options.policy_poll_seconds, 1, 3600));
  options.shutdown_delay_seconds =
      static_cast<int>(flags.take_number("shutdown-delay", options.shutdown_delay_seconds, 0, 300));
  options.metrics_namespace_cap = static_cast<std::size_t>(flags.take_number("metrics-namespace-cap", 100, 1, 100000));
  options.node_watch = flags.take_or("node-watch", options.node_watch);
  options.dra_watch = flags.take_or("dra-watch", options.dra_watch);
  options.pool_watch = flags.take_or("pool-watch", options.pool_watch);
  options.kubeconfig = flags.take_or("kubeconfig", "");
  options.prometheus = flags.take_or("prometheus", "");
  options.history_refresh_seconds =
      static_cast<int>(flags.take_number("history-refresh", options.history_refresh_seconds, 1, 86400));
  options.version = GPU_SIZER_VERSION;
  const std::string level = flags.take_or("log-level", "info");
  const std::string format = flags.take_or("log-format", "json");
  if (auto problem = flags.problem()) return usage_error(*problem);
  const auto parsed_level = spdlog::level::from_str(level);
  if (parsed_level == spdlog::level::off && level != "off") {
    return usage_error("--log-level must be trace, debug, info, warn, error or off, found \"" + level + "\"");
  }
  if (format != "json" && format != "text")
    return usage_error("--log-format must be json or text, found \"" + format + "\"");
  if (options.transport != "asio" && options.transport != "httplib") {
    return usage_error("--transport must be asio or httplib, found \"" + options.transport + "\"");
  }
  gpusizer::configure_logging(format == "json" ? gpusizer::LogFormat::kJson : gpusizer::LogFormat::kText, parsed_level);
  return gpusizer::serve(options);
}

int run_report(Flags& flags) {
  const std::string policy_path = flags.take_or("policy", "");
  const auto url = flags.take("prometheus");
  const auto since = flags.take("since");
  const std::string output = flags.take_or("output", "text");
  gpusizer::PrometheusSource source;
  source.timeout_seconds = static_cast<int>(flags.take_number("timeout", source.timeout_seconds, 1, 3600));
  if (auto problem = flags.problem()) return usage_error(*problem);
  if (!url) return usage_error("report needs --prometheus URL (http://prometheus.monitoring:9090)");
  if (output != "text" && output != "json" && output != "html")
    return usage_error("--output must be text, json or html, found \"" + output + "\"");
  auto policy = load_policy_or_report(policy_path);
  if (!policy) return 2;
  auto& history = policy->rule_settings.edit<gpusizer::HistoryPolicy>();
  if (since) {
    const auto seconds = gpusizer::window_seconds(*since);
    if (!seconds) return usage_error("--since " + seconds.error());
    history.window = *since;
    history.window_seconds = seconds.value();
  }
  source.url = *url;
  const auto snapshot = gpusizer::read_history(source, history);
  if (!snapshot) {
    std::fprintf(stderr, "gpu-sizer report: %s\n", snapshot.error().c_str());
    return 2;
  }
  const gpusizer::HistoryReport report = gpusizer::build_report(*policy, snapshot.value());
  const std::string text = output == "json"   ? gpusizer::report_json(report)
                           : output == "html" ? gpusizer::report_html(report)
                                              : gpusizer::report_text(report);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return report.needs_action() ? 1 : 0;
}

int run_command(int argc, char** argv) {
  if (argc < 2) return usage_error("missing command");
  const std::string command = argv[1];
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (command == "--version") {
    std::printf("gpu-sizer %s\n", GPU_SIZER_VERSION);
    return 0;
  }
  if (command == "check" || command == "explain") return run_check(argc, argv);
  Flags flags(argc, argv, 2);
  if (command == "serve") return run_serve(flags);
  if (command == "table") return run_table(flags);
  if (command == "policy") return run_policy(flags);
  if (command == "kinds") return run_kinds(flags);
  if (command == "report") return run_report(flags);
  return usage_error("unknown command \"" + command + "\"");
}

}  // namespace

// Every command reports the errors it expects and returns 0, 1 or 2; an
// exception reaching here is a bug, reported as one with its own exit code
// (EX_SOFTWARE) instead of std::terminate's abort.
int main(int argc, char** argv) {
  try {
    return run_command(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu-sizer: internal error (please report it): %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "gpu-sizer: internal error (please report it): unknown exception\n");
  }
  return kInternalErrorExit;
}
