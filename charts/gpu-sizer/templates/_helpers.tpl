{{/* Chart name, truncated to the 63 characters of a DNS label. */}}
{{- define "gpu-sizer.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Object names: the release name when it contains the chart name
(`helm install gpu-sizer ...` gives gpu-sizer), else <release>-gpu-sizer. */}}
{{- define "gpu-sizer.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "gpu-sizer.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gpu-sizer.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "gpu-sizer.labels" -}}
{{ include "gpu-sizer.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The TLS Secret the pods mount. */}}
{{- define "gpu-sizer.tlsSecretName" -}}
{{- default (printf "%s-tls" (include "gpu-sizer.fullname" .)) .Values.certs.secretName -}}
{{- end -}}

{{/* The policy text: values.policy or the embedded default, with `mode:`
replaced (or added) when values.mode is set. */}}
{{- define "gpu-sizer.policy" -}}
{{- $policy := .Values.policy | default (.Files.Get "files/default-policy.yaml") -}}
{{- if .Values.mode -}}
{{- if regexMatch "(?m)^mode:" $policy -}}
{{- $policy = regexReplaceAll "(?m)^mode:.*$" $policy (printf "mode: %s" .Values.mode) -}}
{{- else -}}
{{- $policy = printf "mode: %s\n%s" .Values.mode $policy -}}
{{- end -}}
{{- end -}}
{{- $policy -}}
{{- end -}}

{{/* namespaceSelector of every webhook: never the excluded namespaces nor
the release's own (the webhook must be able to start while it is down). */}}
{{- define "gpu-sizer.namespaceSelector" -}}
{{- with .Values.webhook.namespaceSelector.matchLabels }}
matchLabels:
  {{- toYaml . | nindent 2 }}
{{- end }}
matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values:
      {{- range .Values.webhook.excludeNamespaces }}
      - {{ . | quote }}
      {{- end }}
      - {{ .Release.Namespace | quote }}
  {{- with .Values.webhook.namespaceSelector.matchExpressions }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end -}}

{{/* caBundle line for certs.source=secret (cert-manager injects its own). */}}
{{- define "gpu-sizer.caBundle" -}}
{{- if and (eq .Values.certs.source "secret") .Values.certs.caBundle -}}
caBundle: {{ .Values.certs.caBundle }}
{{- end -}}
{{- end -}}

{{/* Fails the render on values that would make a broken release. */}}
{{- define "gpu-sizer.validate" -}}
{{- if not (has .Values.mode (list "" "mutate" "enforce" "audit")) -}}
{{- fail (printf "mode must be mutate, enforce or audit (or empty), got %q" .Values.mode) -}}
{{- end -}}
{{- if not (has .Values.certs.source (list "cert-manager" "secret")) -}}
{{- fail (printf "certs.source must be cert-manager or secret, got %q" .Values.certs.source) -}}
{{- end -}}
{{- if and (eq .Values.certs.source "secret") (not .Values.certs.secretName) -}}
{{- fail "certs.source=secret needs certs.secretName (an existing kubernetes.io/tls Secret)" -}}
{{- end -}}
{{- range $w := list .Values.webhook.mutating .Values.webhook.validating -}}
{{- if not (has $w.failurePolicy (list "Ignore" "Fail")) -}}
{{- fail (printf "webhook failurePolicy must be Ignore or Fail, got %q" $w.failurePolicy) -}}
{{- end -}}
{{- end -}}
{{- if or (lt (int .Values.webhook.timeoutSeconds) 1) (gt (int .Values.webhook.timeoutSeconds) 30) -}}
{{- fail "webhook.timeoutSeconds must be between 1 and 30" -}}
{{- end -}}
{{- end -}}

{{/* webhook.extraRules as rules of both workload webhooks: CREATE and
UPDATE, apiVersions ["*"] unless given. Checked so that a typo cannot send
every object (a "*" group or resource) or a subresource to the webhook. */}}
{{- define "gpu-sizer.extraRules" -}}
{{- range $i, $rule := .Values.webhook.extraRules }}
{{- if not (and $rule.apiGroups $rule.resources) }}
{{- fail (printf "webhook.extraRules[%d] needs apiGroups and resources (lists)" $i) }}
{{- end }}
{{- range $rule.apiGroups }}
{{- if eq . "*" }}
{{- fail (printf "webhook.extraRules[%d]: apiGroups must name groups, not \"*\"" $i) }}
{{- end }}
{{- end }}
{{- range $rule.resources }}
{{- if or (eq . "*") (contains "/" .) }}
{{- fail (printf "webhook.extraRules[%d]: resources must name resources (plural, lower case), not %q" $i .) }}
{{- end }}
{{- end }}
- operations: ["CREATE", "UPDATE"]
  apiGroups: {{ toJson $rule.apiGroups }}
  apiVersions: {{ toJson (default (list "*") $rule.apiVersions) }}
  resources: {{ toJson $rule.resources }}
{{- end }}
{{- end -}}
