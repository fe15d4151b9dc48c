// Structured logs: one JSON object per line (or key=value text for people at
// a terminal), written through spdlog to stderr. Request bodies and keys are
// never logged.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>
#include <spdlog/common.h>

#include "gpusizer/util/result.h"

namespace gpusizer {

enum class LogFormat { kJson, kText };

// Sets up the process logger. Call once, before other threads start.
void configure_logging(LogFormat format, spdlog::level::level_enum level);

// Logs message with fields: {"time":..,"level":..,"msg":..,<fields>} in
// JSON, "message k=v k=v" in text.
void log_event(spdlog::level::level_enum level, std::string_view message, const nlohmann::json& fields = {});

}  // namespace gpusizer
