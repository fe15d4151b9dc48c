#include "gpusizer/server/list_watch.h"

#include <algorithm>
#include <ctime>
#include <random>

#include "gpusizer/server/log.h"
#include "gpusizer/server/stop_thread.h"

namespace gpusizer {

std::string clock_text(std::chrono::system_clock::time_point time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%H:%M:%S UTC", &utc);
  return text;
}

std::string_view to_string(WatchStatus::State state) {
  switch (state) {
    case WatchStatus::State::kStarting: return "starting";
    case WatchStatus::State::kSynced: return "synced";
    case WatchStatus::State::kLost: return "lost";
  }
  return "starting";
}

ListWatch::ListWatch(ApiServerConfig config, std::string path, std::string what, ListWatchOptions options, Sink& sink)
    : client_(std::move(config)),
      path_(std::move(path)),
      what_(std::move(what)),
      options_(std::move(options)),
      sink_(sink),
      last_sync_steady_(std::chrono::steady_clock::now()) {
  client_.set_before_send(options_.before_send);
  status_.api_server = client_.config().description;
}

ListWatch::~ListWatch() { stop(); }

void ListWatch::start() {
  thread_ = std::thread([this] {
    run();
    {
      std::lock_guard lock(mutex_);
      finished_ = true;
    }
    wake_.notify_all();
  });
}

void ListWatch::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_.exchange(true)) return;
  }
  wake_.notify_all();
  stop_until_finished(mutex_, wake_, finished_, thread_, [this] { client_.stop(); });
}

WatchStatus ListWatch::status() const {
  std::lock_guard lock(mutex_);
  return status_;
}

double ListWatch::seconds_since_sync() const {
  std::lock_guard lock(mutex_);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - last_sync_steady_).count();
}

void ListWatch::log_failure(const std::string& what_failed, const std::string& error) {
  const bool repeated = error == last_logged_;
  last_logged_ = error;
  log_event(repeated ? spdlog::level::debug : spdlog::level::warn, what_ + " " + what_failed + " failed: " + error,
            {{"api_server", status_.api_server}});
}

void ListWatch::run() {
  int attempt = 0;
  while (!stopping_) {
    std::string resource_version;
    if (Status listed = list(resource_version); !listed.ok()) {
      if (stopping_) return;
      log_failure("list", listed.message());
      publish(
          status().state == WatchStatus::State::kStarting ? WatchStatus::State::kStarting : WatchStatus::State::kLost,
          listed.message());
      if (!back_off(attempt)) return;
      continue;
    }
    attempt = 0;
    last_logged_.clear();
    mark_synced();
    publish(WatchStatus::State::kSynced, "");
    log_event(spdlog::level::info, what_ + " list completed", {{"resource_version", resource_version}});
    // Watch from the list's resourceVersion until it is too old (410).
    while (!stopping_) {
      heard_ = false;
      const WatchEnd end = watch(resource_version);
      if (end == WatchEnd::kStopped) return;
      // A watch that delivered something was a recovery: the next failure
      // backs off from the start again.
      if (heard_) attempt = 0;
      if (end == WatchEnd::kTimeout) {
        count_restart("timeout");
        continue;
      }
      if (end == WatchEnd::kGone) {
        count_restart("gone");
        // A server that refuses even a fresh resourceVersion is not listed
        // again in a tight loop.
        if (!heard_ && !back_off(attempt)) return;
        break;
      }
      count_restart("error");
      if (!back_off(attempt)) return;
    }
  }
}

Status ListWatch::list(std::string& resource_version) {
  sink_.list_started();
  std::string continue_token;
  JsonReader reader;
  do {
    std::string target = path_ + "?limit=" + std::to_string(options_.list_page_size);
    if (!continue_token.empty()) target += "&continue=" + continue_token;
    auto body = client_.get(target, 60);
    if (!body) return body.status();
    auto page = reader.parse(body.value());
    if (!page) return Status::io_error("GET " + target + ": the answer is not JSON: " + page.error());
    const JsonView list = page.value();
    resource_version = string_member(list["metadata"], "resourceVersion");
    continue_token = string_member(list["metadata"], "continue");
    list["items"].for_each_element([&](JsonView item) { sink_.listed(item); });
  } while (!continue_token.empty());
  sink_.list_completed();
  return {};
}

ListWatch::WatchEnd ListWatch::watch(std::string& resource_version) {
  const std::string target = path_ + "?watch=1&allowWatchBookmarks=true&resourceVersion=" + resource_version +
                             "&timeoutSeconds=" + std::to_string(options_.watch_seconds);
  auto started = std::chrono::steady_clock::now();
  // What the watch was before the API server answered it, to go back to if
  // that answer turns out to be no sync after all.
  struct BeforeOpen {
    SyncTime sync;
    WatchStatus::State state;
    std::string error;
  };
  std::optional<BeforeOpen> before_open;
  std::optional<WatchEnd> ended;
  std::string error;
  // The API server answering 200 is in sync from the resourceVersion on:
  // a cluster where nothing changes sends no event for minutes, and must
  // not read as lost after a reconnect meanwhile.
  const auto on_open = [&] {
    started = std::chrono::steady_clock::now();
    const WatchStatus was = status();
    before_open = BeforeOpen{mark_synced(), was.state, was.last_error};
    if (was.state != WatchStatus::State::kSynced) publish(WatchStatus::State::kSynced, "");
  };
  // The server sends a bookmark or an event at least every few minutes; a
  // silent connection past the watch's own timeout is a dead one.
  const Status streamed =
      client_.stream_lines(target, options_.watch_seconds + 30, on_open, [&](std::string_view line) {
        ended = apply_event(line, resource_version, error);
        heard_ = heard_ || !ended;
        return !ended && !stopping_;
      });
  // A watch taken back at once without an event (a proxy that closes
  // watches, an API server failing them) is no sync: the age goes on from
  // the last real one, and the watch is a failure to back off from, not a
  // timeout to resume from at once.
  const auto lasted = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  const bool at_once = !heard_ && lasted < options_.shortest_watch;
  if (stopping_) return WatchEnd::kStopped;
  if (ended == WatchEnd::kGone) {
    // Answered 200 and then refused with a 410 event before any object:
    // the resourceVersion was too old, so nothing was in sync; the backoff
    // before the next list reads as what the watch was before.
    if (!heard_ && before_open) {
      restore_sync(before_open->sync);
      if (before_open->state != WatchStatus::State::kSynced) publish(before_open->state, before_open->error);
    }
    return WatchEnd::kGone;
  }
  // Lost, published below, in every case but a 410 answer (no on_open).
  if (at_once && before_open) restore_sync(before_open->sync);
  if (!ended) {
    if (!streamed.ok()) {
      // A watch refused with 410 (its resourceVersion too old) lists again.
      if (streamed.message().find(": 410") != std::string::npos) return WatchEnd::kGone;
      error = streamed.message();
    } else if (at_once) {
      error = "the watch ended after " + std::to_string(lasted.count()) + " ms without an event";
    } else {
      // Ended by the server after timeoutSeconds: in sync until then.
      mark_synced();
      heard_ = true;
      if (status().state != WatchStatus::State::kSynced) publish(WatchStatus::State::kSynced, "");
      return WatchEnd::kTimeout;
    }
  }
  log_failure("watch", error);
  publish(WatchStatus::State::kLost, error);
  return WatchEnd::kError;
}

std::optional<ListWatch::WatchEnd> ListWatch::apply_event(std::string_view line, std::string& resource_version,
                                                          std::string& error) {
  thread_local JsonReader reader;
  auto event = reader.parse(line);
  if (!event) {
    error = "a watch event is not JSON: " + event.error();
    return WatchEnd::kError;
  }
  const std::string_view type = event.value()["type"].string();
  const JsonView object = event.value()["object"];
  if (type == "ERROR") {
    if (object["code"].text() == "410") return WatchEnd::kGone;
    error = "watch error: " + string_member(object, "message");
    return WatchEnd::kError;
  }
  const std::string version = string_member(object["metadata"], "resourceVersion");
  if (!version.empty()) resource_version = version;
  const bool changed = (type == "ADDED" || type == "MODIFIED" || type == "DELETED") && sink_.changed_by(type, object);
  mark_synced();
  // A new snapshot costs every decision what it keeps per snapshot: none
  // for a bookmark or a heartbeat, which leave everything as it was.
  if (changed || status().state != WatchStatus::State::kSynced) publish(WatchStatus::State::kSynced, "");
  return std::nullopt;
}

ListWatch::SyncTime ListWatch::mark_synced() {
  std::lock_guard lock(mutex_);
  SyncTime replaced{status_.last_sync, last_sync_steady_};
  status_.last_sync = std::chrono::system_clock::now();
  last_sync_steady_ = std::chrono::steady_clock::now();
  return replaced;
}

void ListWatch::restore_sync(const SyncTime& time) {
  std::lock_guard lock(mutex_);
  status_.last_sync = time.wall;
  last_sync_steady_ = time.steady;
}

void ListWatch::publish(WatchStatus::State state, const std::string& error) {
  WatchStatus next = status();
  next.state = state;
  next.last_error = error;
  // What is known before the state: whoever reads the state and then the
  // snapshot (/status, the tests) sees this snapshot or a newer one.
  sink_.publish(next);
  std::lock_guard lock(mutex_);
  status_.state = state;
  status_.last_error = error;
}

void ListWatch::count_restart(const char* reason) {
  {
    std::lock_guard lock(mutex_);
    ++status_.restarts;
  }
  sink_.count_restart(reason);
}

bool ListWatch::back_off(int& attempt) {
  // Capped exponential backoff with jitter, so webhook replicas that lost
  // the API server together do not come back in step.
  thread_local std::mt19937 random(std::random_device{}());
  const auto ceiling =
      std::min<int64_t>(options_.backoff_max.count(), options_.backoff_min.count() << std::min(attempt, 20));
  ++attempt;
  const auto delay = std::chrono::milliseconds(std::uniform_int_distribution<int64_t>(ceiling / 2, ceiling)(random));
  std::unique_lock lock(mutex_);
  return !wake_.wait_for(lock, delay, [&] { return stopping_.load(); });
}

}  // namespace gpusizer
