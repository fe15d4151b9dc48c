// The sizing policy: which resources are GPUs, the profiles and their tables,
// how a pod's profile is chosen, and what the webhook does (mode). Loaded
// from one YAML file; the embedded default equals the seed tables.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/workload_kinds.h"
#include "gpusizer/util/result.h"

namespace gpusizer {

struct NodeInventory;  // sizing/nodes.h

enum class Mode {
  kMutate,   // raise undersized values; deny what no patch can fix
  kEnforce,  // never patch; deny undersized memory
  kAudit,    // never patch or deny; warn and count only
};
std::string_view to_string(Mode mode);

// One exact row of a profile table: a pod with `gpus` GPUs needs this much.
struct TableRow {
  int64_t gpus = 0;
  Quantity cpu;
  Quantity memory;
};

struct Profile {
  std::string name;
  // Prefix of the OSMO workflow values in hints: "train" -> train_gpu=...
  std::string set_prefix;
  // Ascending by gpus. Empty: the profile sizes no CPU or memory.
  std::vector<TableRow> table;
  // Added per GPU above the nearest row below (between rows and past the last).
  Quantity extra_gpu_cpu;
  Quantity extra_gpu_memory;
  // Ephemeral storage per pod; does not scale with GPUs.
  std::optional<Quantity> storage;
  // More GPUs than this is denied (single-GPU stages).
  std::optional<int64_t> max_gpus;
};

// A profile selection rule: when the subject matches, the profile applies.
struct ProfileRule {
  // kKind: the reviewed object's kind (Deployment, PyTorchJob, Pod);
  // kOwnerKind: a Pod's controller (ownerReferences, controller: true).
  enum class Subject { kLabel, kAnnotation, kName, kTemplate, kReplicaType, kKind, kOwnerKind };
  enum class Match { kEquals, kContains, kGlob, kIn };
  Subject subject = Subject::kLabel;
  std::string key;  // label or annotation key; empty for the other subjects
  Match match = Match::kEquals;
  std::string value;                // kEquals, kContains, kGlob
  std::vector<std::string> values;  // kIn
  std::string profile;
  std::string text;  // as a person reads it: label osmo.group_name equals "finetune-job"
};

// Who may skip sizing (policy `exemptions`): objects in these namespaces,
// or sent to the API server by these users or members of these groups
// (the review's userInfo), are admitted unchanged.
struct Exemptions {
  std::vector<std::string> namespaces;
  std::vector<std::string> users;
  std::vector<std::string> groups;
};

// Why one review skips sizing: reason "namespace", "user" or "group", and
// the name that matched.
struct Exemption {
  std::string reason;
  std::string name;
};

// What a check that no patch can fix does when it fails: warn and admit, or
// deny (at the validating endpoint; audit mode only warns).
enum class CheckAction { kWarn, kDeny };

// Decimal coefficients (safety margin, overhead factor, adapter share) are held in
// thousandths so every computation stays in exact integers: 0.85 -> 850.
using Milli = int64_t;

// /dev/shm for torchrun and DataLoader workers: a memory-backed emptyDir on
// the GPU containers of these profiles (seed 000, docs/sources.md).
struct ShmSizes {
  Quantity minimum;         // below it: enforce denies, mutate enlarges to `size`
  Quantity size;            // what mutate adds, or enlarges a too-small one to
  Quantity table_includes;  // /dev/shm the table's memory already holds
  bool serving = false;     // the serving sizes (sharedMemory.serving)
};

// Inference servers: only tensor-parallel pods (fromGpus GPUs or more),
// whose NCCL moves data between GPUs through /dev/shm, need it, and less
// than training does (docs/rules.md "/dev/shm").
struct ShmServingPolicy {
  std::vector<std::string> profiles;
  int64_t from_gpus = 2;
  ShmSizes sizes;
};

struct SharedMemoryPolicy {
  std::vector<std::string> profiles;
  Quantity minimum;         // below it: enforce denies, mutate enlarges to `size`
  Quantity size;            // what mutate adds, or enlarges a too-small one to
  Quantity table_includes;  // /dev/shm the table's memory already holds
  std::string volume_name;  // the volume mutate adds
  ShmServingPolicy serving;

  // The sizes for a pod of `profile` with `gpus` GPUs; nullopt: its
  // /dev/shm is not checked.
  std::optional<ShmSizes> sizes_for(std::string_view profile, int64_t gpus) const;
};

// Host RAM of DataLoader prefetch buffers (seed 001), from the annotation
// gpu-sizer.io/dataloader.
struct DataLoaderPolicy {
  Milli overhead_factor = 0;  // on each prefetched batch
  Quantity per_gpu_base;      // per rank: the process and its copy of the weights
  Quantity pod_base;          // per pod: OS and base
  int64_t default_prefetch = 2;
  Quantity round_up_to;  // the floor is a whole multiple of this
  std::map<std::string, int64_t, std::less<>> dtype_bytes;
};

// One GPU model: the product label values it matches (globs) and its memory.
struct GpuModel {
  std::string name;
  Quantity memory;
  std::vector<std::string> match;
};

// A model's shape, as its config.json gives it (docs/gpu-memory.md "Model
// shapes"): what the KV cache, a LoRA adapter of a given rank, activations
// from batch and sequence, and DeepSpeed's ZeRO-3 gathered layer are
// worked out from.
struct ModelShape {
  std::string name;
  int64_t params = 0;  // the published count
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  int64_t intermediate = 0;  // the MLP's inner size (per expert)
  int64_t vocab = 0;
  int64_t experts = 1;        // MoE experts per layer; 1: dense
  int64_t largest_layer = 0;  // parameters of the largest single module (DeepSpeed's largest layer)
};

// What an optimizer keeps per trainable parameter on the GPU, and how much
// of it may page out to host memory (bitsandbytes' paged optimizers).
struct OptimizerCost {
  Milli bytes = 0;
  Milli pageable = 0;
};

// GPU memory (VRAM) fit, from the annotation gpu-sizer.io/model (seeds 002-004).
struct GpuMemoryPolicy {
  CheckAction action = CheckAction::kDeny;
  Milli safety_margin = 0;                  // usable share of a GPU's memory
  std::string product_label;                // node label naming the GPU model
  std::vector<std::string> infer_profiles;  // mode=infer by default for these
  int64_t max_suggested_gpus = 8;
  std::map<std::string, Milli, std::less<>> precision_bytes;  // per parameter
  Quantity context_bytes_per_token;                           // inference: the KV cache per token of context
  Quantity overhead;                                          // per GPU: CUDA context and framework kernels
  // Training (docs/gpu-memory.md): per trainable parameter, each
  // optimizer's state (mixed-precision Adam: fp32 master weights and two moments);
  // per parameter, QLoRA's 4-bit base weights with their quantization
  // constants; the share of the parameters an adapter trains when its rank
  // and the model's shape are not given; per parameter, the activation
  // allowance of each method (full, lora, qlora).
  std::map<std::string, OptimizerCost, std::less<>> optimizers;  // "adamw" is the default
  Milli quantized_bytes = 0;
  Milli adapter_share = 0;
  std::map<std::string, Milli, std::less<>> activation_bytes;
  std::vector<GpuModel> gpus;      // first match wins
  std::vector<ModelShape> models;  // model=NAME; names are unique

  // The entry named `name` exactly, else the first whose glob matches it;
  // nullptr when none does.
  const GpuModel* find_gpu(std::string_view name_or_product) const;
  // The model named `name`, or nullptr.
  const ModelShape* find_model(std::string_view name) const;
};

// One node shape of a pool: its allocatable resources.
struct NodeShape {
  std::string name;
  int64_t gpus = 0;
  Quantity cpu;
  Quantity memory;
  Quantity ephemeral_storage;
};

struct NodePool {
  std::string name;
  std::map<std::string, std::string, std::less<>> node_selector;
  std::string gpu_product;  // the GPU model of pods in this pool; may be empty
  std::vector<NodeShape> nodes;
};

// Whether a sized pod fits any node of its pool. No pools: not checked.
struct NodeFitPolicy {
  CheckAction action = CheckAction::kWarn;
  std::string pool_label;  // a pod label naming its pool
  std::vector<NodePool> pools;
  // The API server runs the ExtendedResourceToleration admission plugin
  // (GKE does; upstream it is off by default): a pod asking for a GPU
  // resource tolerates that resource's NoSchedule taint (candidates.h).
  bool extended_resource_toleration = true;
};

// Node caps (docs/rules.md "Node caps"): what the node's own DaemonSets
// (device plugin, GPU Feature Discovery, DCGM exporter, node exporter, a
// log agent) take of a node's allocatable, left to them when a floor is
// capped to a node.
struct NodeCapsPolicy {
  Quantity reserve_cpu;
  Quantity reserve_memory;
  Quantity reserve_ephemeral_storage;
};

// Long-lived controllers (Deployment, StatefulSet, serving CRDs): GitOps
// tools (Argo CD, Flux) compare their templates with git, so a patched
// template is drift they report or revert. Unless patchTemplates, their
// templates are only warned about (denied in enforce mode) and their Pods
// are sized when created, as the Vertical Pod Autoscaler does.
struct LongLivedPolicy {
  std::vector<std::string> kinds;
  bool patch_templates = false;
};

struct Policy {
  Mode mode = Mode::kMutate;
  std::map<std::string, Mode, std::less<>> namespace_modes;
  Exemptions exemptions;
  std::vector<std::string> gpu_resources;
  int64_t deny_from_gpus = 2;
  std::vector<ProfileRule> profile_rules;
  std::string default_profile;
  std::map<std::string, Profile, std::less<>> profiles;
  SharedMemoryPolicy shared_memory;
  DataLoaderPolicy data_loader;
  GpuMemoryPolicy gpu_memory;
  NodeFitPolicy node_fit;
  NodeCapsPolicy node_caps;
  LongLivedPolicy long_lived;
  // Kinds the cluster adds, or corrects, beyond the built-in table
  // (workloads/workloads.h); looked up before it.
  std::vector<WorkloadKind> workloads;
  // nodeFit.pools as node classes (sizing/nodes.h pool_inventory), made by
  // parse_policy; nullptr: no pools. Decisions use it when no nodes are known.
  std::shared_ptr<const NodeInventory> pool_nodes;

  std::string source;  // the file it came from, or "embedded default"
  std::string sha256;  // of the YAML text, to tell which policy is active

  // The mode for objects in this namespace.
  Mode mode_for(std::string_view ns) const;
  // The exemption of an object in `ns` sent by `user` with `groups`
  // (namespace, then user, then group); nullopt when it is sized.
  std::optional<Exemption> exemption_for(std::string_view ns, std::string_view user = {},
                                         const std::vector<std::string>& groups = {}) const;
  bool is_gpu_resource(std::string_view resource) const;
  // nullptr when there is no such profile.
  const Profile* find_profile(std::string_view name) const;
};

// Parses and validates a policy. On failure the error names the source, the
// field path (profiles.train.table[2].memory) or YAML line, and the problem.
Result<Policy> parse_policy(std::string_view yaml_text, std::string_view source);

// The embedded default policy's YAML text (src/sizing/default_policy.yaml).
const std::string& default_policy_yaml();
// The embedded default, parsed. It is validated by the unit tests.
const Policy& default_policy();

}  // namespace gpusizer
