// The ceiling of the transport on this machine (docs/performance.md,
// `make bench`): cpp-httplib's SSLServer configured like gpu-sizer's server
// (src/server/server.cpp: a thread pool of 32, keep-alive, TCP_NODELAY,
// TLS 1.2 minimum, the same TLS 1.2 ciphers), answering POST /mutate with a
// fixed body read from a file (the exact answer gpu-sizer gives for the
// benchmark workload, so the bytes on the wire match) and GET /healthz.
// No JSON parsing, no decision, no logging, no metrics.
//
//   gpu-sizer-bare-tls --listen HOST:PORT --cert C --key K --body F
#include <httplib.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

namespace {

constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

int usage(const char* message) {
  std::fprintf(stderr, "gpu-sizer-bare-tls: %s\nusage: gpu-sizer-bare-tls --listen HOST:PORT --cert C --key K --body F\n",
               message);
  return 2;
}

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

std::string openssl_error() {
  char buffer[256] = {0};
  ERR_error_string_n(ERR_get_error(), buffer, sizeof buffer);
  return buffer;
}

}  // namespace

int main(int argc, char** argv) {
  std::string listen = "127.0.0.1:8443";
  std::string cert;
  std::string key;
  std::string body_file;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    const auto eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (arg == "--help" || arg == "-h") {
      std::puts("usage: gpu-sizer-bare-tls --listen HOST:PORT --cert C --key K --body F");
      return 0;
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return usage(("missing value for " + arg).c_str());
    }
    if (arg == "--listen") {
      listen = value;
    } else if (arg == "--cert") {
      cert = value;
    } else if (arg == "--key") {
      key = value;
    } else if (arg == "--body") {
      body_file = value;
    } else {
      return usage(("unknown flag " + arg).c_str());
    }
  }
  if (cert.empty() || key.empty() || body_file.empty()) return usage("--cert, --key and --body are required");
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos) return usage("--listen needs HOST:PORT");
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "0.0.0.0";
  int port = 0;
  try {
    port = std::stoi(listen.substr(colon + 1));
  } catch (const std::exception&) {
    return usage("--listen: port must be a number");
  }

  std::string body;
  if (!read_file(body_file, body)) return usage(("cannot read --body " + body_file).c_str());

  std::signal(SIGPIPE, SIG_IGN);
  std::string tls_error;
  httplib::SSLServer server([&](SSL_CTX& context) {
    SSL_CTX_set_min_proto_version(&context, TLS1_2_VERSION);
    SSL_CTX_set_options(&context, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    if (SSL_CTX_set_cipher_list(&context, kTls12Ciphers) != 1 ||
        SSL_CTX_use_certificate_chain_file(&context, cert.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(&context, key.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(&context) != 1) {
      tls_error = openssl_error();
      return false;
    }
    return true;
  });
  if (!server.is_valid()) {
    std::fprintf(stderr, "gpu-sizer-bare-tls: TLS set-up failed: %s\n", tls_error.c_str());
    return 2;
  }
  server.new_task_queue = [] { return new httplib::ThreadPool(32); };
  server.set_keep_alive_max_count(1u << 20);
  server.set_keep_alive_timeout(5);
  server.set_read_timeout(10);
  server.set_write_timeout(10);
  server.set_tcp_nodelay(true);

  server.Post("/mutate", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(body, "application/json");
  });
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });

  if (port == 0) {
    port = server.bind_to_any_port(host);
  } else if (!server.bind_to_port(host, port)) {
    port = -1;
  }
  if (port < 0) {
    std::fprintf(stderr, "gpu-sizer-bare-tls: cannot listen on %s\n", listen.c_str());
    return 2;
  }
  std::printf("listening on https://%s:%d\n", host.c_str(), port);
  std::fflush(stdout);
  return server.listen_after_bind() ? 0 : 1;
}
