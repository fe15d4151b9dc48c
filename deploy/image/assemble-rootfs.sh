#!/usr/bin/env bash
# Assembles the runtime file tree of the gpu-sizer image: the binary, the
# shared libraries it loads (from this Debian bookworm system, as ldd finds
# them) and a non-root user. The Dockerfile copies exactly this tree into
# its runtime stage; `make image-rootfs` builds it without a Docker engine so
# the tests can run the binary from it.
#
# usage: assemble-rootfs.sh BINARY ROOTFS
set -euo pipefail
binary=$1
rootfs=$2

rm -rf "$rootfs"
mkdir -p "$rootfs/usr/local/bin" "$rootfs/etc" "$rootfs/tmp"
chmod 1777 "$rootfs/tmp"
install -m 0755 "$binary" "$rootfs/usr/local/bin/gpu-sizer"

# Every library the dynamic loader resolves, and the loader itself, copied to
# the same path (symlinks followed: the image needs the files).
ldd "$binary" | awk '/=> \// { print $3 } /^\t\/lib/ { print $1 }' | while read -r library; do
  mkdir -p "$rootfs$(dirname "$library")"
  cp -L "$library" "$rootfs$library"
done

# The user the pod runs as (runAsNonRoot); no shell, no home.
cat >"$rootfs/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/sbin/nologin
gpu-sizer:x:65532:65532:gpu-sizer:/nonexistent:/sbin/nologin
PASSWD
cat >"$rootfs/etc/group" <<'GROUP'
root:x:0:
gpu-sizer:x:65532:
GROUP
echo "assembled $rootfs: $(find "$rootfs" -type f | wc -l) files, $(du -sh "$rootfs" | cut -f1)"
