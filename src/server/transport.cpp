// What both transports share: request framing rules and error answers.
#include "gpusizer/server/transport.h"

#include "gpusizer/json/json_text.h"

namespace gpusizer {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool needs_length(std::string_view method, bool has_content_length, bool has_transfer_encoding) {
  const bool reads_body =
      method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE" || method == "PRI";
  return has_transfer_encoding || (reads_body && !has_content_length);
}

HttpAnswer json_error(int status, const std::string& message) {
  // Messages may quote headers and paths, which need not be UTF-8: the
  // escaping replaces what is not.
  return {status, "application/json", json_error_text(message)};
}

HttpAnswer refusal(int status, const std::string& message) {
  HttpAnswer answer = json_error(status, message);
  answer.close = true;
  return answer;
}

Result<std::unique_ptr<Transport>> open_transport(std::string_view name, const TransportOptions& options,
                                                  const TlsSetup& tls, const HttpHandler& handler) {
  if (name == "asio") return open_asio_transport(options, tls, handler);
  if (name == "httplib") return open_httplib_transport(options, tls, handler);
  return Status::invalid_argument("--transport must be asio or httplib, not \"" + std::string(name) + "\"");
}

std::string decoded_path(std::string_view target) {
  const std::string_view path = target.substr(0, target.find('?'));
  std::string decoded;
  decoded.reserve(path.size());
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '%' && i + 2 < path.size() && hex_value(path[i + 1]) >= 0 && hex_value(path[i + 2]) >= 0) {
      decoded += static_cast<char>(hex_value(path[i + 1]) * 16 + hex_value(path[i + 2]));
      i += 2;
    } else {
      decoded += path[i];
    }
  }
  return decoded;
}

}  // namespace gpusizer
