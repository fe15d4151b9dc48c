// A small in-process Kubernetes API server for the watch tests: HTTPS on
// 127.0.0.1 (a throwaway CA, self_signed.h), GET /api/v1/nodes (and any
// other collection a test adds) as a list paged with limit/continue, and
// GET ...?watch=1 as a chunked stream of the events a test pushes, one JSON
// object a line; each collection has its own objects, events and stream. It
// records every request, and answers with a chosen HTTP status on demand,
// which a real API server cannot be made to do. Given a path prefix, it
// serves under it only, as Rancher's proxy serves a cluster's API under
// /k8s/clusters/<id>.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "gpusizer/server/kube_client.h"
#include "gpusizer/server/self_signed.h"
#include "gpusizer/util/files.h"

namespace gpusizer::testing {

// A v1 Node with what the inventory reads: labels and allocatable.
inline nlohmann::json fake_node(const std::string& name, const std::string& instance_type, int cpu, int gpus,
                                const std::string& resource_version = "1") {
  return {{"kind", "Node"},
          {"metadata",
           {{"name", name},
            {"labels", {{"kubernetes.io/hostname", name}, {"node.kubernetes.io/instance-type", instance_type}}},
            {"resourceVersion", resource_version}}},
          {"spec", nlohmann::json::object()},
          {"status",
           {{"allocatable",
             {{"cpu", std::to_string(cpu)},
              {"memory", "27Gi"},
              {"ephemeral-storage", "95Gi"},
              {"nvidia.com/gpu", std::to_string(gpus)}}}}}};
}

class FakeApiServer {
 public:
  struct Request {
    std::string path;
    bool watch = false;
    std::map<std::string, std::string> query;
    std::string authorization;
  };

  // Listens on an ephemeral port of 127.0.0.1 at once.
  explicit FakeApiServer(const std::string& dir, std::string path_prefix = "") : path_prefix_(std::move(path_prefix)) {
    auto files = write_self_signed(dir, {"localhost", "127.0.0.1"});
    if (!files) throw std::runtime_error("certificates: " + files.error());
    files_ = files.value();
    auto ca = read_file(files_.ca_file);
    if (!ca) throw std::runtime_error("CA: " + ca.error());
    ca_pem_ = ca.value();
    start();
  }
  ~FakeApiServer() { stop(); }
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  int port() const { return port_; }
  // What a client needs to reach it, without credentials.
  ApiServerConfig config() const {
    ApiServerConfig config;
    config.host = "127.0.0.1";
    config.port = port_;
    config.path_prefix = path_prefix_;
    config.ca_pem = ca_pem_;
    config.description = "fake API server";
    return config;
  }

  // Starts listening again, on the same port as before after a stop().
  void start() {
    {
      std::lock_guard lock(mutex_);
      down_ = false;
    }
    server_ = std::make_unique<httplib::SSLServer>(files_.cert_file.c_str(), files_.key_file.c_str());
    if (!server_->is_valid()) throw std::runtime_error("SSLServer setup failed");
    // Every path below the prefix; one no collection has is answered 404,
    // as an API server answers a kind it does not serve.
    server_->Get(path_prefix_ + "(/.*)", [this](const httplib::Request& req, httplib::Response& res) {
      answer(req.matches[1].str(), req, res);
    });
    if (port_ == 0) {
      port_ = server_->bind_to_any_port("127.0.0.1");
    } else if (!server_->bind_to_port("127.0.0.1", port_)) {
      throw std::runtime_error("cannot listen on port " + std::to_string(port_) + " again");
    }
    if (port_ <= 0) throw std::runtime_error("cannot listen");
    thread_ = std::thread([server = server_.get()] { server->listen_after_bind(); });
    // stop() does nothing to a server not yet running, so wait for it.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!server_->is_running()) {
      if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("the server did not start");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  // Goes away: ends the streams in flight (without their last chunk) and
  // stops listening.
  void stop() {
    {
      std::lock_guard lock(mutex_);
      down_ = true;
    }
    changed_.notify_all();
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
    server_.reset();
  }

  void set_nodes(const std::vector<nlohmann::json>& nodes, const std::string& resource_version) {
    set_items(kNodesPath, nodes, resource_version);
  }
  // The objects of the collection at `path` (below the prefix).
  void set_items(const std::string& path, const std::vector<nlohmann::json>& items,
                 const std::string& resource_version) {
    std::lock_guard lock(mutex_);
    Collection& collection = collections_[path];
    collection.items = items;
    collection.resource_version = resource_version;
  }
  // A fixed answer for GET `path` (below the prefix): an API group
  // version's resource list, as discovery reads it.
  void set_document(const std::string& path, const nlohmann::json& document) {
    std::lock_guard lock(mutex_);
    documents_[path] = document.dump();
  }
  // Answers the next `times` lists (or watches; -1: all) with this status
  // and body; status 0 answers them normally again.
  void fail_lists(int status, std::string body = {}, int times = -1) {
    std::lock_guard lock(mutex_);
    list_failure_ = {status, std::move(body), times};
  }
  void fail_watches(int status, std::string body = {}, int times = -1) {
    std::lock_guard lock(mutex_);
    watch_failure_ = {status, std::move(body), times};
  }

  // One event for the watch stream (the one open now, or the next).
  void push_event(const std::string& type, const nlohmann::json& object, const std::string& path = kNodesPath) {
    push_line(nlohmann::json{{"type", type}, {"object", object}}.dump(), path);
  }
  void push_line(const std::string& line, const std::string& path = kNodesPath) {
    {
      std::lock_guard lock(mutex_);
      collections_[path].lines.push_back(line + "\n");
    }
    changed_.notify_all();
  }
  // Pushed lines no watch stream has taken yet.
  std::size_t pending_lines(const std::string& path = kNodesPath) const {
    std::lock_guard lock(mutex_);
    return collections_.at(path).lines.size();
  }
  // Ends the watch stream open now as the API server does at its
  // timeoutSeconds: the last chunk, then the connection closes.
  void end_watch(const std::string& path = kNodesPath) {
    {
      std::lock_guard lock(mutex_);
      ++collections_[path].stream_generation;
    }
    changed_.notify_all();
  }

  std::vector<Request> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  std::size_t count(bool watch) const {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const Request& request : requests_) n += request.watch == watch ? 1 : 0;
    return n;
  }
  // The last request of the kind; empty when none.
  Request last(bool watch) const {
    std::lock_guard lock(mutex_);
    for (auto it = requests_.rbegin(); it != requests_.rend(); ++it) {
      if (it->watch == watch) return *it;
    }
    return {};
  }
  // Whether the newest watch stream is open (its client may have left).
  bool streaming(const std::string& path = kNodesPath) const {
    std::lock_guard lock(mutex_);
    return collections_.at(path).open_stream != 0;
  }

  static constexpr const char* kNodesPath = "/api/v1/nodes";

 private:
  // What one collection serves.
  struct Collection {
    std::vector<nlohmann::json> items;
    std::string resource_version = "1";
    std::string list_kind = "List";
    std::deque<std::string> lines;
    int stream_generation = 0;
    int last_stream = 0;  // the id of the newest watch stream
    int open_stream = 0;  // its id while it is open, else 0
  };

  void answer(const std::string& path, const httplib::Request& req, httplib::Response& res) {
    Request recorded{req.path, req.get_param_value("watch") == "1", {}, req.get_header_value("Authorization")};
    for (const auto& [key, value] : req.params) recorded.query[key] = value;
    std::unique_lock lock(mutex_);
    requests_.push_back(recorded);
    Failure& failure = recorded.watch ? watch_failure_ : list_failure_;
    if (failure.status != 0 && failure.times != 0) {
      if (failure.times > 0) --failure.times;
      res.status = failure.status;
      res.set_content(failure.body, "application/json");
      return;
    }
    if (const auto document = documents_.find(path); document != documents_.end() && !recorded.watch) {
      res.set_content(document->second, "application/json");
      return;
    }
    const auto found = collections_.find(path);
    if (found == collections_.end()) {
      res.status = 404;
      res.set_content(R"({"kind":"Status","status":"Failure","reason":"NotFound","code":404})", "application/json");
      return;
    }
    Collection& collection = found->second;
    if (!recorded.watch) {
      res.set_content(list_page(collection, recorded.query).dump(), "application/json");
      return;
    }
    // A watcher has one watch at a time: a new one means the last is over
    // (its client gone, which the provider cannot see until it writes).
    const int id = ++collection.last_stream;
    const int generation = collection.stream_generation;
    collection.open_stream = id;
    lock.unlock();
    res.set_chunked_content_provider(
        "application/json",
        [this, &collection, id, generation](std::size_t /*offset*/, httplib::DataSink& sink) {
          return stream(collection, id, generation, sink);
        },
        [this, &collection, id](bool /*success*/) {
          std::lock_guard lock(mutex_);
          if (collection.open_stream == id) collection.open_stream = 0;
        });
  }

  // One page of the list: `limit` objects from the index in `continue`.
  static nlohmann::json list_page(const Collection& collection, const std::map<std::string, std::string>& query) {
    const std::vector<nlohmann::json>& items = collection.items;
    std::size_t from = 0;
    std::size_t limit = items.size();
    if (auto it = query.find("continue"); it != query.end()) from = std::stoul(it->second.substr(5));  // "page-N"
    if (auto it = query.find("limit"); it != query.end()) limit = std::stoul(it->second);
    nlohmann::json list = {{"kind", collection.list_kind},
                           {"apiVersion", "v1"},
                           {"metadata", {{"resourceVersion", collection.resource_version}}},
                           {"items", nlohmann::json::array()}};
    for (std::size_t i = from; i < items.size() && i < from + limit; ++i) list["items"].push_back(items[i]);
    if (from + limit < items.size()) list["metadata"]["continue"] = "page-" + std::to_string(from + limit);
    return list;
  }

  // Writes the pushed lines until the stream's generation ends (the last
  // chunk), or a newer watch or the server going away ends it (no last chunk).
  bool stream(Collection& collection, int id, int generation, httplib::DataSink& sink) {
    std::string lines;
    bool ended = false;
    {
      std::unique_lock lock(mutex_);
      changed_.wait_for(lock, std::chrono::milliseconds(20), [&] {
        return down_ || collection.last_stream != id || !collection.lines.empty() ||
               collection.stream_generation != generation;
      });
      if (down_ || collection.last_stream != id) return false;
      for (; !collection.lines.empty(); collection.lines.pop_front()) lines += collection.lines.front();
      ended = collection.stream_generation != generation;
    }
    if (!lines.empty() && !sink.write(lines.data(), lines.size())) return false;
    if (ended) sink.done();
    return true;
  }

  struct Failure {
    int status = 0;
    std::string body;
    int times = -1;
  };

  std::string path_prefix_;
  GeneratedCertificates files_;
  std::string ca_pem_;
  int port_ = 0;
  std::unique_ptr<httplib::SSLServer> server_;
  std::thread thread_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  // By path; std::map keeps each where it is, for the streams that hold it.
  std::map<std::string, Collection> collections_{{kNodesPath, Collection{{}, "1", "NodeList"}}};
  std::map<std::string, std::string> documents_;  // path -> fixed answer
  Failure list_failure_;
  Failure watch_failure_;
  bool down_ = false;
  std::vector<Request> requests_;
};

// Polls `done` every 10 ms until it holds or `timeout` passes; whether it held.
inline bool eventually(const std::function<bool()>& done,
                       std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace gpusizer::testing
