#include "unproven_connections.h"

namespace gpusizer::asio_transport {

void UnprovenConnections::add(const std::shared_ptr<Unproven>& connection) {
  const std::lock_guard lock(mutex_);
  connection->list_ = &silent_;
  connection->at_ = silent_.insert(silent_.end(), connection);
}

void UnprovenConnections::spoke(Unproven& connection) {
  const std::lock_guard lock(mutex_);
  if (connection.list_ != &silent_) return;
  spoken_.splice(spoken_.end(), silent_, connection.at_);
  connection.list_ = &spoken_;
}

void UnprovenConnections::remove(Unproven& connection) {
  const std::lock_guard lock(mutex_);
  if (!connection.list_) return;
  connection.list_->erase(connection.at_);
  connection.list_ = nullptr;
}

std::shared_ptr<Unproven> UnprovenConnections::take_oldest() {
  const std::lock_guard lock(mutex_);
  for (Unproven::List* list : {&silent_, &spoken_}) {
    // One whose last owner is gone is being destroyed on its loop, and
    // remove() takes it off there.
    for (auto at = list->begin(); at != list->end(); ++at) {
      if (std::shared_ptr<Unproven> oldest = at->lock()) {
        list->erase(at);
        oldest->list_ = nullptr;
        return oldest;
      }
    }
  }
  return nullptr;
}

std::size_t UnprovenConnections::size() const {
  const std::lock_guard lock(mutex_);
  return silent_.size() + spoken_.size();
}

}  // namespace gpusizer::asio_transport
