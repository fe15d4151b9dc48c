// What Kubernetes accepts as a namespace, an object name, a kind and an
// admission operation, and how a review's values are shown where they
// become state (metric labels, /status, log lines, messages): as received
// when Kubernetes accepts them there, else quoted short (in_quotes), so a
// forged review cannot store megabytes or control characters.
#pragma once

#include <string>
#include <string_view>

namespace gpusizer {

// A DNS-1123 label: at most 63 of [a-z0-9-], starting and ending with a
// letter or digit. Namespaces are (apimachinery pkg/api/validation/generic.go:
// ValidateNamespaceName = NameIsDNSLabel; pkg/util/validation/validation.go:
// IsDNS1123Label).
bool is_dns1123_label(std::string_view text);

// A DNS-1123 subdomain: at most 253 bytes of dot-separated labels (as above,
// without the 63 limit on each). Pod names (pkg/apis/core/validation:
// ValidatePodName = NameIsDNSSubdomain), the workload kinds' names and every
// custom resource's (apiextensions-apiserver customresource validator:
// ValidateObjectMetaAccessor(..., NameIsDNSSubdomain, ...)) are.
bool is_dns1123_subdomain(std::string_view text);

// A kind: a DNS-1035 label once lowercased, at most 63 of [a-zA-Z0-9-],
// starting with a letter and not ending with '-' (apiextensions validation:
// IsDNS1035Label(strings.ToLower(names.Kind))); built-in kinds are too.
bool is_kind_name(std::string_view text);

// The namespace as received, or in_quotes(ns) when it is not a DNS-1123
// label; "" stays "" (cluster-scoped objects).
std::string shown_namespace(std::string_view ns);

// The object name as received, or in_quotes(name) when it is not a DNS-1123
// subdomain. A trailing '*' marks a generateName prefix (the review's
// handler names such objects "train-*", and "*" without either), which may
// end in one '-' (NameIsDNSSubdomain with prefix=true masks it).
std::string shown_name(std::string_view name);

// The kind as received, or in_quotes(kind).
std::string shown_kind(std::string_view kind);

// CREATE, UPDATE, DELETE or CONNECT (admission/v1 Operation), else in_quotes.
std::string shown_operation(std::string_view operation);

// "namespace/name" (or whichever of the two is set), each part shown as
// above.
std::string shown_object(std::string_view ns, std::string_view name);

}  // namespace gpusizer
