#include "gpusizer/server/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "gpusizer/json/json_text.h"

namespace gpusizer {

namespace {
LogFormat g_format = LogFormat::kJson;

std::string dump(const nlohmann::json& value) { return to_json_text(value); }
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

void log_event(spdlog::level::level_enum level, std::string_view message, const nlohmann::json& fields) {
  if (!spdlog::default_logger_raw()->should_log(level)) return;
  std::string line;
  if (g_format == LogFormat::kJson) {
    // The fields' object written once, its braces dropped: one pass, where
    // writing each key and value apart cost a string per field per review.
    line = "\"msg\":" + dump(std::string(message));
    if (fields.is_object() && !fields.empty()) {
      const std::string object = dump(fields);
      line.append(",").append(object, 1, object.size() - 2);
    }
  } else {
    line = std::string(message);
    for (const auto& [key, value] : fields.items()) {
      line += " " + key + "=" + (value.is_string() ? value.get<std::string>() : dump(value));
    }
  }
  spdlog::log(level, "{}", line);
}

}  // namespace gpusizer
