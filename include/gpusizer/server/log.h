// Structured logs: one JSON object per line (or key=value text for people at
// a terminal), written through spdlog to stderr. Request bodies and keys are
// never logged.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
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

// One line after its time and level, written field by field as it is
// built: in JSON, `"msg":"...",` then `"key":value` per field (the members
// of a valid JSON object, for any bytes: what is not UTF-8 becomes
// U+FFFD); in text, the message with control and bidirectional characters
// escaped, then ` key=value` per field, a value that is not a plain word
// (spaces, '=', '"', '\', control or bidirectional characters, bytes that
// are not UTF-8, empty) quoted and escaped by in_quotes, arrays and
// objects as JSON text quoted the same way, so no value can end the line
// or forge another key. Fields appear in the order they are added.
class LogLine {
 public:
  LogLine(LogFormat format, std::string_view message);

  void add_string(std::string_view key, std::string_view value);
  void add_strings(std::string_view key, std::span<const std::string> values);  // a JSON array
  void add_bool(std::string_view key, bool value);
  void add_int(std::string_view key, std::int64_t value);
  // Any JSON value but a string (a number, array or object), as JSON text.
  void add_json(std::string_view key, std::string_view json_text);

  const std::string& text() const { return text_; }

 private:
  void start_field(std::string_view key);

  LogFormat format_;
  std::string text_;
};

// The format configure_logging set (JSON before it is called).
LogFormat log_format();

// The line log_event writes: `fields` (a JSON object) in nlohmann's order,
// its sorted keys, strings as add_string writes them, any other value as
// add_json does.
std::string log_line(LogFormat format, std::string_view message, const nlohmann::json& fields);

// The "review" line, one per review: these are written to stderr in
// batches (every review_flush_interval, past 64 KiB, and at exit), not a
// write per line; a review logged as a warning is written at once, as
// every other line is, after the batch before it. Build the line only when
// review_line_wanted says it is written.
bool review_line_wanted(spdlog::level::level_enum level);
void log_review_line(spdlog::level::level_enum level, const LogLine& line);

}  // namespace gpusizer
