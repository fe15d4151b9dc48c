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

std::string dump(const nlohmann::json& value) { return to_json_text(value); }

bool is_plain_word(std::string_view value) {
  return !value.empty() && value.find_first_of(" \"=\\") == std::string_view::npos &&
         printable(value, std::string::npos) == value;
}

std::string text_value(const nlohmann::json& value) {
  const std::string text = value.is_string() ? value.get<std::string>() : dump(value);
  return is_plain_word(text) ? text : in_quotes(text, std::string::npos);
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

namespace {

// The line is built only when the logger's level lets it through.
void log_to(spdlog::logger& logger, spdlog::level::level_enum level, std::string_view message,
            const nlohmann::json& fields) {
  if (!logger.should_log(level)) return;
  logger.log(level, "{}", log_line(g_format, message, fields));
}

}  // namespace

void log_event(spdlog::level::level_enum level, std::string_view message, const nlohmann::json& fields) {
  log_to(*spdlog::default_logger_raw(), level, message, fields);
}

void log_review_event(spdlog::level::level_enum level, const nlohmann::json& fields) {
  // Before configure_logging (tests that call the routes directly), to the
  // default logger as any other line.
  log_to(g_review_logger ? *g_review_logger : *spdlog::default_logger_raw(), level, "review", fields);
}

}  // namespace gpusizer
