// Structured logs: one JSON object per line (or key=value text for people at
// a terminal), written through spdlog to stderr. Request bodies and keys are
// never logged.
#pragma once

#include <chrono>
#include <string_view>

#include <nlohmann/json.hpp>
#include <spdlog/common.h>

#include "gpusizer/util/result.h"

namespace gpusizer {

enum class LogFormat { kJson, kText };

// Sets up the process logger. Call once, before other threads start.
// Review lines are written at least every `review_flush_interval`.
void configure_logging(LogFormat format, spdlog::level::level_enum level,
                       std::chrono::seconds review_flush_interval = std::chrono::seconds(1));

// Logs message with fields: {"time":..,"level":..,"msg":..,<fields>} in
// JSON, "message k=v k=v" in text.
void log_event(spdlog::level::level_enum level, std::string_view message, const nlohmann::json& fields = {});

// log_event's "review" line, one per review: these are written to stderr
// in batches (every review_flush_interval, past 64 KiB, and at exit), not
// a write per line; a review logged as a warning is written at once, as
// every other line is, after the batch before it.
void log_review_event(spdlog::level::level_enum level, const nlohmann::json& fields);

// What log_event writes after the time and level, always one line: in
// JSON, `"msg":"...",<fields>` (the members of a valid JSON object, for any
// bytes: what is not UTF-8 becomes U+FFFD); in text, the message with
// control and bidirectional characters escaped, then ` key=value` per
// field, a value that is not a plain word (spaces, '=', '"', '\', control
// or bidirectional characters, bytes that are not UTF-8, empty) quoted and
// escaped by in_quotes, arrays and objects as JSON text quoted the same
// way, so no value can end the line or forge another key.
std::string log_line(LogFormat format, std::string_view message, const nlohmann::json& fields);

}  // namespace gpusizer
