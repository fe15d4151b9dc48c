#include "gpusizer/server/log.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <mutex>

#include <pthread.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "gpusizer/json/json_text.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {
LogFormat g_format = LogFormat::kJson;

bool is_plain_word(std::string_view value) {
  return !value.empty() && value.find_first_of(" \"=\\") == std::string_view::npos &&
         printable(value, std::string::npos) == value;
}

void append_text_value(std::string& out, std::string_view value) {
  if (is_plain_word(value)) {
    out += value;
  } else {
    out += in_quotes(value, std::string::npos);
  }
}

// Lines gathered in memory and written to stderr with one write(2) when a
// logger flushes, when they pass kFlushBytes, or on flush_every's timer.
// spdlog's own stderr sink writes and flushes every line: a syscall per
// review.
class BufferedStderrSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  static constexpr std::size_t kFlushBytes = std::size_t{64} * 1024;

  ~BufferedStderrSink() override { write_out(); }
  BufferedStderrSink() = default;
  BufferedStderrSink(const BufferedStderrSink&) = delete;
  BufferedStderrSink& operator=(const BufferedStderrSink&) = delete;
  BufferedStderrSink(BufferedStderrSink&&) = delete;
  BufferedStderrSink& operator=(BufferedStderrSink&&) = delete;

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    formatter_->format(message, lines_);  // appends
    if (lines_.size() >= kFlushBytes) write_out();
  }
  void flush_() override { write_out(); }

 private:
  // What cannot be written (stderr closed, a full disk) is dropped: the
  // log never holds up a review.
  void write_out() {
    const char* at = lines_.data();
    std::size_t left = lines_.size();
    while (left > 0) {
      const ssize_t written = ::write(STDERR_FILENO, at, left);
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) break;
      at += written;
      left -= static_cast<std::size_t>(written);
    }
    lines_.clear();
  }

  spdlog::memory_buf_t lines_;
};

// Review lines, one per review, go through this logger: written in
// batches (every second, when 64 KiB have gathered, and at exit) where
// every other line is written at once, after the batch before it, since
// both share one sink. A review that failed (a warning) is written at once.
std::shared_ptr<spdlog::logger> g_review_logger;

void flush_logs_at_exit() {
  if (g_review_logger) g_review_logger->flush();
}

}  // namespace

void configure_logging(LogFormat format, spdlog::level::level_enum level, std::chrono::seconds review_flush_interval) {
  g_format = format;
  auto sink = std::make_shared<BufferedStderrSink>();
  // The JSON pattern opens the object; log_event writes the rest of it.
  sink->set_formatter(std::make_unique<spdlog::pattern_formatter>(
      format == LogFormat::kJson ? R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l",%v})"
                                 : "[%Y-%m-%d %H:%M:%S.%e] [%l] %v",
      spdlog::pattern_time_type::utc));
  auto logger = std::make_shared<spdlog::logger>("gpu-sizer", sink);
  logger->set_level(level);
  logger->flush_on(spdlog::level::trace);
  spdlog::drop("gpu-sizer.reviews");  // a second call replaces it, as set_default_logger does
  g_review_logger = std::make_shared<spdlog::logger>("gpu-sizer.reviews", sink);
  g_review_logger->set_level(level);
  g_review_logger->flush_on(spdlog::level::warn);
  spdlog::register_logger(g_review_logger);
  spdlog::set_default_logger(logger);
  // The timer's thread takes no signal: serve's signal watcher waits for
  // SIGTERM, SIGINT and SIGHUP, and a thread without them blocked would end
  // the process at SIGTERM by its default action.
  sigset_t all_signals;
  sigset_t previous;
  sigfillset(&all_signals);
  pthread_sigmask(SIG_BLOCK, &all_signals, &previous);
  spdlog::flush_every(review_flush_interval);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  // serve returns from main on SIGTERM and SIGINT, so the lines gathered
  // since the last flush are written before the process ends.
  std::atexit(flush_logs_at_exit);
}

LogLine::LogLine(LogFormat format, std::string_view message) : format_(format) {
  text_.reserve(512);  // a review's line, but for its changes, in one allocation
  if (format_ == LogFormat::kJson) {
    text_ += "\"msg\":";
    append_json_string(text_, message);
  } else {
    text_ += printable(message, std::string::npos);
  }
}

void LogLine::start_field(std::string_view key) {
  if (format_ == LogFormat::kJson) {
    text_ += ',';
    append_json_string(text_, key);
    text_ += ':';
  } else {
    text_ += ' ';
    text_ += key;
    text_ += '=';
  }
}

void LogLine::add_string(std::string_view key, std::string_view value) {
  start_field(key);
  if (format_ == LogFormat::kJson) {
    append_json_string(text_, value);
  } else {
    append_text_value(text_, value);
  }
}

void LogLine::add_strings(std::string_view key, std::span<const std::string> values) {
  std::string array = "[";
  for (const std::string& value : values) {
    if (array.size() > 1) array += ',';
    append_json_string(array, value);
  }
  array += ']';
  add_json(key, array);
}

void LogLine::add_bool(std::string_view key, bool value) { add_json(key, value ? "true" : "false"); }

void LogLine::add_int(std::string_view key, std::int64_t value) { add_json(key, std::to_string(value)); }

void LogLine::add_json(std::string_view key, std::string_view json_text) {
  start_field(key);
  if (format_ == LogFormat::kJson) {
    text_ += json_text;
  } else {
    append_text_value(text_, json_text);
  }
}

LogFormat log_format() { return g_format; }

std::string log_line(LogFormat format, std::string_view message, const nlohmann::json& fields) {
  LogLine line(format, message);
  if (fields.is_object()) {
    for (const auto& [key, value] : fields.items()) {
      if (value.is_string()) {
        line.add_string(key, value.get_ref<const std::string&>());
      } else {
        line.add_json(key, to_json_text(value));
      }
    }
  }
  return line.text();
}

void log_event(spdlog::level::level_enum level, std::string_view message, const nlohmann::json& fields) {
  spdlog::logger& logger = *spdlog::default_logger_raw();
  if (!logger.should_log(level)) return;  // the line is built only when it is written
  logger.log(level, spdlog::string_view_t(log_line(g_format, message, fields)));
}

namespace {
// Before configure_logging (tests that call the routes directly), review
// lines go to the default logger as any other line.
spdlog::logger& review_logger() { return g_review_logger ? *g_review_logger : *spdlog::default_logger_raw(); }
}  // namespace

bool review_line_wanted(spdlog::level::level_enum level) { return review_logger().should_log(level); }

void log_review_line(spdlog::level::level_enum level, const LogLine& line) {
  review_logger().log(level, spdlog::string_view_t(line.text()));
}

}  // namespace gpusizer
