#include "gpusizer/server/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "gpusizer/json/json_text.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {
LogFormat g_format = LogFormat::kJson;

std::string dump(const nlohmann::json& value) { return to_json_text(value); }

bool is_plain_word(std::string_view value) {
  return !value.empty() && value.find_first_of(" \"=\\") == std::string_view::npos &&
         printable(value, std::string::npos) == value;
}

std::string text_value(const nlohmann::json& value) {
  const std::string text = value.is_string() ? value.get<std::string>() : dump(value);
  return is_plain_word(text) ? text : in_quotes(text, std::string::npos);
}

}  // namespace

void configure_logging(LogFormat format, spdlog::level::level_enum level) {
  g_format = format;
  auto logger = spdlog::stderr_logger_mt("gpu-sizer");
  // The JSON pattern opens the object; log_event writes the rest of it.
  logger->set_pattern(format == LogFormat::kJson ? R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l",%v})"
                                                 : "[%Y-%m-%d %H:%M:%S.%e] [%l] %v",
                      spdlog::pattern_time_type::utc);
  logger->set_level(level);
  spdlog::set_default_logger(logger);
}

std::string log_line(LogFormat format, std::string_view message, const nlohmann::json& fields) {
  std::string line;
  if (format == LogFormat::kJson) {
    // The fields' object written once, its braces dropped: one pass, where
    // writing each key and value apart cost a string per field per review.
    line = "\"msg\":" + dump(std::string(message));
    if (fields.is_object() && !fields.empty()) {
      const std::string object = dump(fields);
      line.append(",").append(object, 1, object.size() - 2);
    }
    return line;
  }
  line = printable(message, std::string::npos);
  for (const auto& [key, value] : fields.items()) line += " " + key + "=" + text_value(value);
  return line;
}

void log_event(spdlog::level::level_enum level, std::string_view message, const nlohmann::json& fields) {
  if (!spdlog::default_logger_raw()->should_log(level)) return;
  spdlog::log(level, "{}", log_line(g_format, message, fields));
}

}  // namespace gpusizer
