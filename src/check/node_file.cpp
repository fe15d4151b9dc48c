#include "gpusizer/check/node_file.h"

#include "gpusizer/check/manifests.h"
#include "gpusizer/json/json_view.h"
#include "gpusizer/nodes/autoscaler_reader.h"
#include "gpusizer/nodes/claim_reader.h"
#include "gpusizer/nodes/node_reader.h"
#include "gpusizer/util/files.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {

// The ResourceSlices of one document: itself, or a List's items.
Status add_slices(JsonView document, const std::string& where, std::vector<DraObject>& slices) {
  Status status;
  const auto add = [&](JsonView object, const std::string& at) {
    if (!status.ok() || object["kind"].string() != "ResourceSlice") return;
    auto read = read_dra_object(object);
    if (!read) {
      status = with_context(
          at + " (ResourceSlice " + in_quotes(printable(object["metadata"]["name"].string(), kQuotedBytes)) + "): ",
          read.problem());
    } else if (read.value()) {
      slices.push_back(std::move(*read.value()));
    }
  };
  add(document, where);
  std::size_t index = 0;
  document["items"].for_each_element(
      [&](JsonView item) { add(item, where + ": items[" + std::to_string(index++) + "]"); });
  return status;
}

// The autoscalers' objects of one document: itself, or a List's items.
Status add_pools(JsonView document, const std::string& where, AutoscalerObjects& objects) {
  Status status;
  const auto add = [&](JsonView object, const std::string& at) {
    if (!status.ok() || autoscaler_kind(object).empty()) return;
    if (Status read = add_autoscaler_object(object, objects); !read.ok()) {
      status = with_context(at + " (" + std::string(autoscaler_kind(object)) + " " +
                                in_quotes(printable(object["metadata"]["name"].string(), kQuotedBytes)) + "): ",
                            read.problem());
    }
  };
  add(document, where);
  std::size_t index = 0;
  document["items"].for_each_element(
      [&](JsonView item) { add(item, where + ": items[" + std::to_string(index++) + "]"); });
  return status;
}

}  // namespace

Result<std::shared_ptr<const NodeInventory>> read_node_file(const std::string& path, const InputLimits& limits,
                                                            std::vector<DraObject>* slices) {
  auto text = read_file(path, limits.max_file_bytes, kMaxFileBytesFlag);
  if (!text) return text.status();
  auto file = read_manifests(text.value(), path, limits);
  if (!file) return file.status();
  InventoryBuilder builder(InventorySource::kFile, path);
  AutoscalerObjects pools;
  JsonReader reader;
  bool described = false;  // some Node, NodePool, node class or ComputeClass
  for (const ManifestDocument& document : file.value().documents) {
    if (document.object.is_null()) continue;
    const std::string where = path + ": document " + std::to_string(document.index + 1);
    const JsonView object = reader.view_of(document.object);
    if (Status status = add_nodes(object, where, builder); !status.ok()) return status;
    if (Status status = add_pools(object, where, pools); !status.ok()) return status;
    described = described || builder.size() > 0 || !pools.empty() || object["kind"].string() == "List" ||
                object["kind"].string() == "NodeList";
    if (!slices) continue;
    if (Status status = add_slices(object, where, *slices); !status.ok()) return status;
  }
  // An empty List is a fleet scaled to zero, not a mistake.
  if (!described) {
    return Status::failure(ProblemCode::kMissingField, "",
                           path +
                               ": holds no Node, NodePool, EC2NodeClass, AKSNodeClass or ComputeClass (write what "
                               "`kubectl get nodes,nodepools,ec2nodeclasses -o yaml` prints)");
  }
  bool more = false;
  std::vector<NodeClass> machines = launchable_machines(pools, &more);
  if (more) {
    return Status::failure(ProblemCode::kTooLarge, "",
                           path + ": its NodePools and ComputeClasses may launch more than " +
                               std::to_string(kMaxLaunchableMachines) +
                               " machines in all; narrow their requirements or split the file");
  }
  builder.set_launchable(std::move(machines));
  return builder.build();
}

}  // namespace gpusizer
