#include "gpusizer/check/node_file.h"

#include "gpusizer/check/manifests.h"
#include "gpusizer/json/json_view.h"
#include "gpusizer/nodes/node_reader.h"
#include "gpusizer/util/files.h"

namespace gpusizer {

Result<std::shared_ptr<const NodeInventory>> read_node_file(const std::string& path, const InputLimits& limits) {
  auto text = read_file(path, limits.max_file_bytes, kMaxFileBytesFlag);
  if (!text) return text.status();
  auto file = read_manifests(text.value(), path, limits);
  if (!file) return file.status();
  InventoryBuilder builder(InventorySource::kFile, path);
  JsonReader reader;
  for (const ManifestDocument& document : file.value().documents) {
    if (document.object.is_null()) continue;
    const std::string where = path + ": document " + std::to_string(document.index + 1);
    if (Status status = add_nodes(reader.view_of(document.object), where, builder); !status.ok()) return status;
  }
  if (builder.size() == 0) {
    return Status::failure(ProblemCode::kMissingField, "",
                           path + ": holds no Node (write what `kubectl get nodes -o yaml` prints)");
  }
  return builder.build();
}

}  // namespace gpusizer
