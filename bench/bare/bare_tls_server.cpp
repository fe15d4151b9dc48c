// The ceiling of the transport on this machine (docs/performance.md,
// `make bench`): gpu-sizer's own transport (transport.h), TLS set up as
// `gpu-sizer serve` sets it up, answering POST /mutate with a fixed body
// read from a file (the exact answer gpu-sizer gives for the benchmark
// workload, so the bytes on the wire match) and GET /healthz. No JSON
// parsing, no decision, no logging, no metrics.
//
//   gpu-sizer-bare-tls --listen HOST:PORT --cert C --key K --body F [--transport asio|httplib]
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "gpusizer/server/server.h"

namespace {

constexpr const char* kUsage =
    "usage: gpu-sizer-bare-tls --listen HOST:PORT --cert C --key K --body F [--transport asio|httplib]";

int usage(const std::string& message) {
  std::fprintf(stderr, "gpu-sizer-bare-tls: %s\n%s\n", message.c_str(), kUsage);
  return 2;
}

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

class FixedAnswer final : public gpusizer::HttpHandler {
 public:
  explicit FixedAnswer(std::string body) : body_(std::move(body)) {}
  gpusizer::HttpAnswer answer(const gpusizer::HttpRequestView& request) const override {
    if (request.method == "POST" && request.path == "/mutate") return {200, "application/json", body_};
    if (request.path == "/healthz") return {200, "text/plain", "ok\n"};
    return gpusizer::json_error(404, "no route");
  }
  gpusizer::HttpAnswer body_too_large() const override { return gpusizer::refusal(413, "too large"); }
  gpusizer::HttpAnswer length_required() const override { return gpusizer::refusal(411, "length required"); }

 private:
  std::string body_;
};

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags = {{"--listen", "127.0.0.1:8443"}, {"--transport", "asio"}};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::puts(kUsage);
      return 0;
    }
    if (!(arg == "--listen" || arg == "--cert" || arg == "--key" || arg == "--body" || arg == "--transport")) {
      return usage("unknown flag " + arg);
    }
    if (i + 1 == argc) return usage("missing value for " + arg);
    flags[arg] = argv[++i];
  }
  if (flags["--cert"].empty() || flags["--key"].empty() || flags["--body"].empty()) {
    return usage("--cert, --key and --body are required");
  }
  const std::string transport_name = flags["--transport"];
  auto listen = gpusizer::parse_listen_address(flags["--listen"]);
  if (!listen) return usage(listen.error());
  std::string body;
  if (!read_file(flags["--body"], body)) return usage("cannot read --body " + flags["--body"]);
  auto certificates = gpusizer::CertificateStore::open(flags["--cert"], flags["--key"]);
  if (!certificates) return usage(certificates.error());

  std::signal(SIGPIPE, SIG_IGN);
  const FixedAnswer handler(std::move(body));
  const gpusizer::TransportOptions options{listen.value(), gpusizer::default_threads(transport_name)};
  const gpusizer::TlsSetup tls = [&](SSL_CTX& context) {
    return gpusizer::configure_tls(context, *certificates.value(), "");
  };
  auto transport = gpusizer::open_transport(transport_name, options, tls, handler);
  if (!transport) return usage(transport.error());
  std::printf("listening on https://%s:%d\n", listen.value().host.c_str(), transport.value()->port());
  std::fflush(stdout);
  transport.value()->run();
  return 0;
}
