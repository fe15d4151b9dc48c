#!/usr/bin/env bash
# The image's runtime tree, checked without a Docker engine: every library
# the binary loads resolves inside the tree, and (as root) the binary runs
# chrooted into it, with nothing from the host, and answers over TLS.
#
# usage: image_rootfs.sh GPU_SIZER_BINARY REPO_ROOT
set -euo pipefail
binary=$1
repo=$2
work=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The Dockerfile's build stage installs what the Makefile builds with.
for package in $(make -s -C "$repo" print-build-packages); do
  grep -qwF -- "$package" "$repo/Dockerfile" || fail "the Dockerfile does not install $package (Makefile BUILD_PACKAGES)"
done

rootfs=$work/rootfs
"$repo/deploy/image/assemble-rootfs.sh" "$binary" "$rootfs" >/dev/null

# Resolution through the tree's own loader, from the tree only.
loader=$(find "$rootfs" -name 'ld-linux*.so*' | head -1)
[ -n "$loader" ] || fail "no dynamic loader in the tree"
libdirs=$(find "$rootfs" -name '*.so*' -printf '%h\n' | sort -u | paste -sd:)
trace=$(LD_TRACE_LOADED_OBJECTS=1 "$loader" --inhibit-cache --library-path "$libdirs" "$rootfs/usr/local/bin/gpu-sizer")
outside=$(echo "$trace" | awk '/=> \// { print $3 }' | grep -v "^$rootfs/" || true)
[ -z "$outside" ] || fail "libraries resolved outside the tree: $outside"
echo "$trace" | grep -q "not found" && fail "unresolved libraries: $trace"

grep -q '^gpu-sizer:x:65532:65532:' "$rootfs/etc/passwd" || fail "no non-root user 65532"
if [ -e "$rootfs/bin/sh" ] || [ -e "$rootfs/usr/bin/sh" ]; then fail "a shell is in the runtime tree"; fi

if [ "$(id -u)" != 0 ]; then
  echo "ok: the tree resolves every library (run as root to also chroot into it)"
  exit 0
fi
version=$(chroot "$rootfs" /usr/local/bin/gpu-sizer --version) || fail "the binary does not run in the tree"
[[ $version == "gpu-sizer "* ]] || fail "unexpected --version output: $version"
chroot "$rootfs" /usr/local/bin/gpu-sizer table --profile train --gpus 4 | grep -q "train_cpu=32 train_memory=192Gi" \
  || fail "table does not run in the tree"

# serve as the non-root user: certificates go to /tmp, the only writable path.
chroot --userspec=65532:65532 "$rootfs" /usr/local/bin/gpu-sizer serve --listen 127.0.0.1:0 --cert-dir /tmp/certs \
  >"$work/out" 2>"$work/err" &
server=$!
for _ in $(seq 100); do grep -q "listening on" "$work/out" && break; sleep 0.1; done
address=$(grep -o 'https://[0-9.:]*' "$work/out") || fail "serve did not start in the tree: $(cat "$work/err")"
answer=$(curl -s --cacert "$rootfs/tmp/certs/ca.crt" "$address/healthz") || fail "no TLS answer from $address"
[ "$answer" = "ok" ] || fail "healthz answered: $answer"
echo "ok: the binary runs from the image tree alone, as user 65532, and answers over TLS"
