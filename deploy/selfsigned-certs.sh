#!/usr/bin/env bash
# Certificates for gpu-sizer on a cluster without cert-manager.
#
# Makes a self-signed CA and a server certificate for
# <service>.<namespace>.svc (openssl), stores the server pair as the
# kubernetes.io/tls Secret the Deployment mounts, and patches the CA into
# caBundle of every webhook of both webhook configurations. Run it after
# `kubectl apply -f deploy/` (the webhook configurations must exist), with
# kubectl pointing at the cluster.
#
# Usage: deploy/selfsigned-certs.sh [--namespace NS] [--service NAME]
#            [--secret NAME] [--webhook-config NAME] [--days N] [--dir DIR]
#            [--dry-run]
#   --namespace       namespace of the webhook (default gpu-sizer)
#   --service         its Service (default gpu-sizer)
#   --secret          the TLS Secret to write (default gpu-sizer-tls)
#   --webhook-config  name of the Mutating- and ValidatingWebhookConfiguration
#                     (default gpu-sizer)
#   --days            validity of the server certificate (default 365; the
#                     CA gets 10 years)
#   --dir             where the keys and certificates are written (default: a
#                     new temporary directory). Keep ca.key to sign a renewal
#                     with the same CA, or delete it.
#   --dry-run         print the commands it would run; change nothing
#
# Re-running it makes a new CA: the Secret is updated first (the pods pick it
# up within --policy-poll seconds after the kubelet syncs the volume), then
# caBundle; requests in between fail TLS and, with failurePolicy Ignore, are
# admitted unchanged. Renew before the server certificate expires:
# gpu_sizer_tls_certificate_expiry_timestamp_seconds and the
# GpuSizerCertificateExpiringSoon alert track it.
set -euo pipefail

namespace=gpu-sizer
service=gpu-sizer
secret=gpu-sizer-tls
webhook_config=gpu-sizer
days=365
dir=
dry_run=false

usage() { sed -n '/^# Usage:/,/^# Re-running/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "selfsigned-certs.sh: $*" >&2; exit 2; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --namespace) namespace=${2:?--namespace needs a value}; shift 2 ;;
    --service) service=${2:?--service needs a value}; shift 2 ;;
    --secret) secret=${2:?--secret needs a value}; shift 2 ;;
    --webhook-config) webhook_config=${2:?--webhook-config needs a value}; shift 2 ;;
    --days) days=${2:?--days needs a value}; shift 2 ;;
    --dir) dir=${2:?--dir needs a value}; shift 2 ;;
    --dry-run) dry_run=true; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
[[ $days =~ ^[1-9][0-9]*$ ]] || die "--days must be a positive integer, got '$days'"

# Print a command (quoted so it can be pasted), and run it unless --dry-run.
run() {
  printf '+'
  printf ' %q' "$@"
  printf '\n'
  if [[ $dry_run == false ]]; then
    "$@"
  fi
}

for tool in openssl kubectl base64; do
  command -v "$tool" >/dev/null || [[ $dry_run == true ]] || die "$tool not found"
done

if [[ -z $dir ]]; then
  if [[ $dry_run == true ]]; then
    dir=/tmp/gpu-sizer-certs.XXXXXX
  else
    dir=$(mktemp -d /tmp/gpu-sizer-certs.XXXXXX)
  fi
fi
run mkdir -p "$dir"
[[ $dry_run == true ]] || chmod 700 "$dir"

dns="$service.$namespace.svc"
dns_full="$dns.cluster.local"

# CA: ECDSA P-256, 10 years, only for signing certificates.
run openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
  -keyout "$dir/ca.key" -out "$dir/ca.crt" -days 3650 -subj "/CN=gpu-sizer-ca" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"

# Server key and certificate for the Service's DNS names (the API server
# checks the SAN, not the CN).
run openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
  -keyout "$dir/tls.key" -out "$dir/tls.csr" -subj "/CN=$dns"
extfile="$dir/tls.ext"
if [[ $dry_run == true ]]; then
  echo "+ write $extfile (subjectAltName=DNS:$dns,DNS:$dns_full; serverAuth)"
else
  cat >"$extfile" <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:$dns,DNS:$dns_full
EXT
fi
run openssl x509 -req -in "$dir/tls.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
  -CAcreateserial -out "$dir/tls.crt" -days "$days" -sha256 -extfile "$extfile"
run openssl verify -CAfile "$dir/ca.crt" "$dir/tls.crt"

# The Secret, created or replaced (apply keeps this idempotent). ca.crt is
# included as cert-manager does, for clients that want it.
if [[ $dry_run == true ]]; then
  echo "+ kubectl -n $namespace create secret generic $secret --type=kubernetes.io/tls" \
    "--from-file=tls.crt=$dir/tls.crt --from-file=tls.key=$dir/tls.key" \
    "--from-file=ca.crt=$dir/ca.crt --dry-run=client -o yaml | kubectl apply -f -"
else
  echo "+ kubectl -n $namespace apply secret $secret"
  kubectl -n "$namespace" create secret generic "$secret" --type=kubernetes.io/tls \
    --from-file=tls.crt="$dir/tls.crt" --from-file=tls.key="$dir/tls.key" \
    --from-file=ca.crt="$dir/ca.crt" --dry-run=client -o yaml | kubectl apply -f -
fi

# caBundle of every webhook in both configurations.
if [[ $dry_run == true ]]; then
  ca_bundle="<base64 of $dir/ca.crt>"
else
  ca_bundle=$(base64 -w0 <"$dir/ca.crt")
fi
for kind in mutatingwebhookconfiguration validatingwebhookconfiguration; do
  if [[ $dry_run == true ]]; then
    count=2
    echo "+ kubectl get $kind $webhook_config (count its webhooks; 2 in deploy/)"
  else
    names=$(kubectl get "$kind" "$webhook_config" -o jsonpath='{range .webhooks[*]}{.name}{"\n"}{end}') ||
      die "$kind $webhook_config not found: run kubectl apply -f deploy/ first"
    count=$(grep -c . <<<"$names" || true)
    [[ $count -gt 0 ]] || die "$kind $webhook_config has no webhooks"
  fi
  patch='['
  for ((i = 0; i < count; i++)); do
    [[ $i -gt 0 ]] && patch+=','
    patch+="{\"op\":\"add\",\"path\":\"/webhooks/$i/clientConfig/caBundle\",\"value\":\"$ca_bundle\"}"
  done
  patch+=']'
  run kubectl patch "$kind" "$webhook_config" --type=json -p "$patch"
done

rm -f "$dir/tls.csr" "$extfile" "$dir/ca.srl" 2>/dev/null || true
echo "certificates in $dir (keep or delete ca.key); Secret $namespace/$secret and caBundle of $webhook_config updated" \
  "$([[ $dry_run == true ]] && echo '(dry run: nothing changed)')"
