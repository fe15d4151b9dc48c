#include "gpusizer/check/check.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "gpusizer/admission/review.h"
#include "gpusizer/check/check_inputs.h"
#include "gpusizer/check/explain.h"
#include "gpusizer/check/manifests.h"
#include "gpusizer/check/osmo_workflow.h"
#include "gpusizer/json/json_access.h"
#include "gpusizer/json/json_view.h"
#include "gpusizer/util/numbers.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

using nlohmann::json;

namespace {

// One pod of an object as explain prints it: the mutating pass's rules
// (what set each value, on the object as written), the validating pass's
// checks (on the object as mutated), and what each pass said.
struct PodExplanation {
  std::string pod;  // its description
  int64_t gpus = 0;
  std::string profile;
  std::string profile_reason;
  // Node shapes that hold the pod as written and as changed; nullopt: no
  // nodes known.
  std::optional<std::size_t> nodes_before;
  std::optional<std::size_t> nodes_after;
  std::vector<ExplainRow> rows;  // explain only
  std::vector<std::string> changes;
  std::vector<std::string> denials;
  std::vector<std::string> warnings;
};

struct ObjectReport {
  std::size_t document = 0;  // counted from 1
  int line = 1;
  std::string kind;
  std::string name;                   // namespace/name
  std::vector<std::string> changes;   // what /mutate would change, one per resource
  std::vector<std::string> denials;   // what /validate would deny after that
  std::vector<std::string> warnings;  // what /validate would warn about
  // GPU asks gpu-sizer finds no pod to size for: nothing GPU-bearing
  // passes silently (exit 2).
  std::vector<std::string> unsized;
  std::vector<std::string> notes;    // the warnings about the object as a whole (also in warnings)
  std::string mode;                  // the policy's mode for its namespace
  std::vector<PodExplanation> pods;  // one per pod decided
  bool changed() const { return !changes.empty(); }
  bool denied() const { return !denials.empty(); }
};

struct FileReport {
  std::string path;
  std::string error;  // unreadable or unparsable: the whole file
  std::vector<ObjectReport> objects;
  std::size_t skipped = 0;         // documents of kinds that hold no pods
  std::optional<OsmoReport> osmo;  // an OSMO workflow file instead of manifests
  std::string fixed_text;          // --fix: the file as it should be
};

std::string api_group(const std::string& api_version) {
  const auto slash = api_version.find('/');
  return slash == std::string::npos ? "" : api_version.substr(0, slash);
}

bool is_manifest_file(const std::filesystem::path& path) {
  const auto extension = path.extension();
  return extension == ".yaml" || extension == ".yml" || extension == ".json";
}

// Files named on the command line, and the manifest files under directories
// in name order, so reports are stable.
std::vector<std::string> expand(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const auto& path : paths) {
    std::error_code error;
    if (path != "-" && std::filesystem::is_directory(path, error)) {
      std::vector<std::string> found;
      for (const auto& entry : std::filesystem::recursive_directory_iterator(path, error)) {
        if (entry.is_regular_file() && is_manifest_file(entry.path())) found.push_back(entry.path().string());
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(path);
    }
  }
  return files;
}

json applied(const json& object, const PatchBuilder& patch) {
  return patch.empty() ? object : object.patch(patch.operations());
}

// What the cluster would do with one object: the mutating pass, then the
// validating pass over its result, as the API server calls them.
ObjectReport check_object(const Policy& policy, const ManifestDocument& document, const json& object,
                          const ObjectIdentity& id, const CheckOptions& options, const ClusterView& cluster) {
  const bool explain = options.explain;
  ObjectReport report;
  report.document = document.index + 1;
  report.line = document.line;
  report.kind = id.kind.empty() ? "(no kind)" : id.kind;
  report.name = id.namespace_name.empty() ? id.name : id.namespace_name + "/" + id.name;
  report.mode = std::string(to_string(policy.mode_for(id.namespace_name)));
  if (policy.exemption_for(id.namespace_name)) return report;
  JsonReader object_reader;
  const JsonView object_view = object_reader.view_of(object);
  PatchBuilder mutation(object_view);
  const auto mutated_pods =
      decide_object(policy, Endpoint::kMutate, id, object_view, mutation, {}, explain, cluster).pods;
  for (const auto& pod : mutated_pods) {
    report.changes.insert(report.changes.end(), pod.warnings.begin(), pod.warnings.end());
  }
  JsonReader mutated_reader;
  const JsonView mutated = mutated_reader.view_of(applied(object, mutation));
  PatchBuilder unused(mutated);
  ObjectDecision validated = decide_object(policy, Endpoint::kValidate, id, mutated, unused, {}, explain, cluster);
  const auto& validated_pods = validated.pods;
  report.notes = validated.warnings;
  report.warnings = std::move(validated.warnings);
  for (ObjectDecision::Unsized& unsized : validated.unsized) report.unsized.push_back(std::move(unsized.message));
  for (const auto& pod : validated_pods) {
    report.denials.insert(report.denials.end(), pod.denials.begin(), pod.denials.end());
    report.warnings.insert(report.warnings.end(), pod.warnings.begin(), pod.warnings.end());
  }
  // Both passes decide the same templates in the same order.
  for (std::size_t i = 0; i < mutated_pods.size() && i < validated_pods.size(); ++i) {
    const PodDecision& before = mutated_pods[i];
    const PodDecision& after = validated_pods[i];
    PodExplanation pod{before.description,    before.gpus,          before.profile,
                       before.profile_reason, before.nodes_holding, after.nodes_holding};
    if (explain) pod.rows = explain_rows(before.explanation, after.explanation);
    pod.changes = before.warnings;
    pod.denials = after.denials;
    pod.warnings = after.warnings;
    report.pods.push_back(std::move(pod));
  }
  return report;
}

ObjectIdentity identity_of(const json& object) {
  const json& metadata = member(object, "metadata");
  ObjectIdentity id{api_group(string_member(object, "apiVersion")), string_member(object, "kind"),
                    string_member(metadata, "namespace"), string_member(metadata, "name")};
  if (id.name.empty()) id.name = string_member(metadata, "generateName") + "*";
  // Namespaced kinds land in the default namespace when none is written;
  // ClusterWorkflowTemplate is the one cluster-scoped kind here.
  if (id.namespace_name.empty() && id.kind != "ClusterWorkflowTemplate") id.namespace_name = "default";
  return id;
}

// --fix: the webhook's own patch, as mutate mode would apply it.
// The object at `pointer` in document `index` (the document itself, or an
// item of a List).
Result<bool> fix_object(const Policy& mutate_policy, ManifestFile& file, std::size_t index, const std::string& pointer,
                        const ObjectIdentity& id, const ClusterView& cluster) {
  JsonReader reader;
  const JsonView object = reader.view_of(file.documents[index].object.at(json::json_pointer(pointer)));
  PatchBuilder patch(object);
  decide_object(mutate_policy, Endpoint::kMutate, id, object, patch, {}, false, cluster);
  if (patch.empty()) return false;
  json operations = patch.operations();
  for (auto& operation : operations) operation["path"] = pointer + operation["path"].get<std::string>();
  return apply_patch(file, index, operations);
}

// Writes through a temporary file and a rename, so a full disk or a crash
// never leaves a half-written manifest.
std::string replace_file(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".gpu-sizer-tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text;
    if (!out.flush()) return "cannot write " + temporary;
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  return error ? "cannot replace " + path + ": " + error.message() : "";
}

FileReport check_file(const Policy& policy, const Policy& mutate_policy, const CheckInput& input,
                      const CheckOptions& options, const ClusterView& cluster) {
  FileReport report;
  const std::string& path = input.path;
  report.path = shown_path(path);
  const Result<std::string> text = input.text(options.limits);
  if (!text) {
    report.error = text.error();
    return report;
  }
  // Until fixed, --fix to stdout passes the input through unchanged:
  // nothing the user piped in is lost, even from a file that fails.
  if (options.fix) report.fixed_text = text.value();
  // OSMO workflow files are templates rendered at submit time: they are
  // checked with the --set values, and fixed with the --set line, not edited.
  if (is_osmo_workflow(text.value())) {
    auto osmo =
        check_osmo_workflow(policy, text.value(), options.set_values, options.strict, options.limits.yaml_bounds());
    if (!osmo) {
      report.error = report.path + ": " + osmo.error();
    } else {
      report.osmo = std::move(osmo).value();
    }
    return report;
  }
  auto file = read_manifests(text.value(), report.path, options.limits);
  if (!file) {
    report.error = file.error();
    return report;
  }
  if (!input.dra_error.empty()) {
    report.error = input.dra_error;
    return report;
  }
  auto& documents = file.value().documents;
  bool fixed_any = false;
  for (std::size_t i = 0; i < documents.size(); ++i) {
    const ManifestDocument& document = documents[i];
    if (document.object.is_null()) continue;
    if (!document.object.is_object()) {
      report.error = report.path + ": document " + std::to_string(document.index + 1) + ", line " +
                     std::to_string(document.line) +
                     ": not a Kubernetes object (expected a mapping with apiVersion and kind)";
      return report;
    }
    for (const std::string& pointer : object_pointers(document.object)) {
      const json& object = documents[i].object.at(json::json_pointer(pointer));
      const ObjectIdentity id = identity_of(object);
      ObjectReport checked = check_object(policy, documents[i], object, id, options, cluster);
      // Kinds no table names are reported when they hold GPU pods or asks
      // (and a document without a kind when it asks for GPUs).
      const bool known = find_workload_kind(id.group, id.kind, policy.workloads) != nullptr;
      if (!known && checked.pods.empty() && checked.unsized.empty() && checked.notes.empty()) {
        ++report.skipped;
        continue;
      }
      report.objects.push_back(std::move(checked));
      if (!options.fix) continue;
      auto fixed = fix_object(mutate_policy, file.value(), i, pointer, id, cluster);
      if (!fixed) {
        report.error = report.path + ": document " + std::to_string(i + 1) + ": " + fixed.error();
        return report;
      }
      fixed_any = fixed_any || fixed.value();
    }
  }
  if (!options.fix) return report;
  report.fixed_text = write_manifests(file.value());
  if (options.in_place && path != "-" && fixed_any) report.error = replace_file(path, report.fixed_text);
  return report;
}

void print_text(const std::vector<FileReport>& files, std::ostream& out) {
  std::size_t checked = 0, changed = 0, denied = 0, unchanged = 0, unsized = 0, skipped = 0, manifest_files = 0;
  for (const auto& file : files) {
    if (!file.error.empty()) {
      out << "error    " << file.error << "\n";
      continue;
    }
    skipped += file.skipped;
    if (file.osmo) {
      out << osmo_report_text(file.path, *file.osmo);
      continue;
    }
    ++manifest_files;
    for (const auto& object : file.objects) {
      ++checked;
      unsized += !object.unsized.empty();
      changed += object.changed();
      denied += object.denied();
      // An UNSIZED object is admitted unchanged too, but said apart.
      unchanged += !object.changed() && !object.denied() && object.unsized.empty();
      const std::string where = file.path + ":" + std::to_string(object.line) + " (document " +
                                std::to_string(object.document) + ") " + object.kind + " " + object.name;
      const char* verdict = !object.unsized.empty() ? "UNSIZED  "
                            : object.denied()       ? "DENIED   "
                            : object.changed()      ? "CHANGED  "
                                                    : "ok       ";
      out << verdict << where << "\n";
      for (const auto& change : object.changes) out << "  change   " << change << "\n";
      for (const auto& denial : object.denials) out << "  deny     " << denial << "\n";
      for (const auto& warning : object.warnings) out << "  warning  " << warning << "\n";
      for (const auto& unsized : object.unsized) out << "  unsized  " << unsized << "\n";
    }
  }
  if (manifest_files == 0) return;
  out << checked << " objects with pods checked: " << changed << " would be changed, " << denied << " denied, "
      << unchanged << " admitted unchanged";
  if (unsized) out << "; " << unsized << " ask for GPUs gpu-sizer could not size";
  if (skipped) out << " (" << skipped << " other objects hold no pods)";
  out << "\n";
}

std::string padded(const std::string& text, std::size_t width) {
  return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}

// explain: every pod's rules as a table, then what the passes said.
void print_explanation(const std::vector<FileReport>& files, std::ostream& out) {
  for (const auto& file : files) {
    if (!file.error.empty()) {
      out << "error    " << file.error << "\n";
      continue;
    }
    if (file.osmo) {
      out << osmo_report_text(file.path, *file.osmo);
      continue;
    }
    for (const auto& object : file.objects) {
      const char* verdict = object.denied() ? "DENIED" : object.changed() ? "CHANGED" : "unchanged";
      out << file.path << ":" << object.line << " (document " << object.document << ") " << object.kind << " "
          << object.name << ": " << verdict << " (mode " << object.mode << ")\n";
      if (object.pods.empty()) out << "  no pod template holds GPUs, or its namespace is exempt\n";
      for (const auto& pod : object.pods) {
        out << "  " << pod.pod << ": " << pod.gpus << (pod.gpus == 1 ? " GPU" : " GPUs");
        if (!pod.profile.empty()) out << ", " << pod.profile << " profile (" << pod.profile_reason << ")";
        out << "\n";
        if (!pod.rows.empty()) out << "    " << padded("rule", 13) << padded("floor", 46) << "why\n";
        for (const auto& row : pod.rows) {
          out << "    " << padded(row.title, 13) << padded(row.floor, 46) << row.detail << "\n";
          for (const auto& part : row.parts) {
            out << "      " << padded(part.name, 19) << padded(part.value, 38) << part.formula << "\n";
          }
        }
        for (const auto& change : pod.changes) out << "    change   " << change << "\n";
        for (const auto& denial : pod.denials) out << "    deny     " << denial << "\n";
        for (const auto& warning : pod.warnings) out << "    warning  " << warning << "\n";
      }
      for (const auto& note : object.notes) out << "  warning  " << note << "\n";
      for (const auto& unsized : object.unsized) out << "  unsized  " << unsized << "\n";
    }
  }
}

// A rule's arithmetic as numbers: bytes (per GPU; "host": per pod), and GiB.
json parts_json(const ExplainRow& row) {
  json parts = json::array();
  for (const auto& part : row.parts) {
    parts.push_back({{"name", part.name},
                     {"kind", part.kind},
                     {"bytes", part.bytes},
                     {"gib", static_cast<double>(part.bytes) / static_cast<double>(kGiB)},
                     {"formula", part.formula}});
  }
  return parts;
}

// Each pod: its profile and the node shapes that hold it before and
// after (null: no nodes known); explain adds its rules and what each pass said.
json pods_json(const ObjectReport& object, bool explain) {
  json pods = json::array();
  auto count = [](const std::optional<std::size_t>& n) { return n ? json(*n) : json(nullptr); };
  for (const auto& pod : object.pods) {
    json entry = {{"pod", pod.pod},
                  {"gpus", pod.gpus},
                  {"profile", pod.profile},
                  {"profileReason", pod.profile_reason},
                  {"nodesBefore", count(pod.nodes_before)},
                  {"nodesAfter", count(pod.nodes_after)}};
    if (explain) {
      json rules = json::array();
      for (const auto& row : pod.rows)
        rules.push_back(
            {{"rule", row.title}, {"floor", row.floor}, {"detail", row.detail}, {"parts", parts_json(row)}});
      entry["rules"] = std::move(rules);
      entry["changes"] = pod.changes;
      entry["denials"] = pod.denials;
      entry["warnings"] = pod.warnings;
    }
    pods.push_back(std::move(entry));
  }
  return pods;
}

void print_json(const std::vector<FileReport>& files, std::ostream& out, bool explain) {
  json report = {{"files", json::array()}};
  for (const auto& file : files) {
    if (file.osmo) {
      report["files"].push_back(osmo_report_json(file.path, *file.osmo));
      continue;
    }
    json entry = {{"file", file.path}, {"objects", json::array()}};
    if (!file.error.empty()) entry["error"] = file.error;
    for (const auto& object : file.objects) {
      entry["objects"].push_back({{"document", object.document},
                                  {"line", object.line},
                                  {"kind", object.kind},
                                  {"name", object.name},
                                  {"result", object.denied()    ? "denied"
                                             : object.changed() ? "changed"
                                                                : "unchanged"},
                                  {"changes", object.changes},
                                  {"denials", object.denials},
                                  {"warnings", object.warnings},
                                  {"unsized", object.unsized}});
      entry["objects"].back()["pods"] = pods_json(object, explain);
      if (explain) entry["objects"].back()["mode"] = object.mode;
    }
    report["files"].push_back(std::move(entry));
  }
  // File names and parse errors can hold any bytes; invalid UTF-8 must not
  // abort the report (nlohmann throws on it by default).
  out << report.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
}

}  // namespace

int run_check(const Policy& policy, const CheckOptions& options, std::ostream& out, std::ostream& err) {
  Policy mutate_policy = policy;
  mutate_policy.mode = Mode::kMutate;
  mutate_policy.namespace_modes.clear();

  std::vector<CheckInput> inputs;
  for (const auto& path : expand(options.paths)) {
    inputs.push_back({path, path == "-" ? std::optional(read_input(path, options.limits)) : std::nullopt, ""});
  }
  const std::shared_ptr<const ClaimInventory> claims = read_claim_objects(inputs, options.limits, options.node_slices);
  const ClusterView cluster{options.nodes.get(), claims.get()};
  std::vector<FileReport> files;
  for (const CheckInput& input : inputs) files.push_back(check_file(policy, mutate_policy, input, options, cluster));
  // With --fix to stdout, stdout carries the manifests and the report moves
  // to stderr, so `gpu-sizer check --fix f.yaml > fixed.yaml` works.
  std::ostream& report_out = options.fix && !options.in_place ? err : out;
  if (options.json_output) {
    print_json(files, report_out, options.explain);
  } else if (options.explain) {
    print_explanation(files, report_out);
  } else {
    print_text(files, report_out);
  }
  if (options.fix && !options.in_place) {
    // One YAML stream on stdout: files are separated like documents.
    bool first = true;
    for (const auto& file : files) {
      if (file.fixed_text.empty()) continue;
      if (!first) out << "---\n";
      out << file.fixed_text;
      if (file.fixed_text.back() != '\n') out << "\n";
      first = false;
    }
  }

  int code = kCheckClean;
  for (const auto& file : files) {
    if (!file.error.empty()) return kCheckUnreadable;
    if (options.explain) continue;  // explain reports; check is the CI gate
    if (file.osmo && !file.osmo->fits()) code = kCheckFindings;
    for (const auto& object : file.objects) {
      if (object.changed() || object.denied()) code = kCheckFindings;
    }
  }
  // GPU asks nothing sized: an error however the rest went (explain too).
  for (const auto& file : files) {
    for (const auto& object : file.objects) {
      if (!object.unsized.empty()) return kCheckUnreadable;
    }
  }
  return code;
}

}  // namespace gpusizer
