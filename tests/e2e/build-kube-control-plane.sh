#!/usr/bin/env bash
# Build (once) a real Kubernetes v1.20 control plane for the end-to-end
# tests: kube-apiserver, kube-scheduler and kube-controller-manager, from
# Debian bookworm's `kubernetes` source package, with Debian's Go 1.19, in
# one build so the three share one compilation of their packages.
#
# Output: prints the directory of the cached binaries ($CACHE).
# Idempotent: every phase is skipped when its result is already present.
#
#   CACHE=${GPU_SIZER_CACHE:-$HOME/.cache/gpu-sizer}
#   $CACHE/apt/        private apt config (deb-src only); /etc/apt untouched
#   $CACHE/src/        apt-get source output (kubernetes-<ver>/ with vendor/)
#   $CACHE/gopath/     GOPATH; src/k8s.io/kubernetes -> the unpacked source
#   $CACHE/kube-apiserver, kube-scheduler, kube-controller-manager  the binaries
#
# The vendored github.com/modern-go/reflect2 is v1.0.1, whose
# reflect.mapiterinit linkname has the pre-Go-1.18 signature; built with
# Go >= 1.18 the apiserver crashes in json-iterator (e.g. when a mutating
# webhook returns a patch). The v1.0.2 fix is applied to the vendored copy.
set -euo pipefail

CACHE=${GPU_SIZER_CACHE:-$HOME/.cache/gpu-sizer}
COMMANDS=(kube-apiserver kube-scheduler kube-controller-manager)
MIRROR=${GPU_SIZER_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=${GPU_SIZER_DEBIAN_SUITE:-bookworm}
# The niceness of the compile alone (make test: 19, beside the C++ build).
# Fetching and unpacking the source takes a few CPU seconds, and niced
# behind a busy build it took three minutes of the run before the compile
# could start (docs/make-test-time.md).
BUILD_NICE=${GPU_SIZER_KUBE_BUILD_NICE:-0}

log() { printf '[build-kube-control-plane %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

phase_start=0
phase() { phase_start=$SECONDS; log "phase: $*"; }
phase_done() { log "phase done: $* ($((SECONDS - phase_start))s)"; }

built_already() {
  local command
  for command in "${COMMANDS[@]}"; do
    [[ -x "$CACHE/$command" ]] && "$CACHE/$command" --version >/dev/null 2>&1 || return 1
  done
}
if built_already; then
  echo "$CACHE"
  exit 0
fi

mkdir -p "$CACHE"

# --- 1. packages -------------------------------------------------------------
phase "packages"
missing=()
command -v go >/dev/null 2>&1 || missing+=(golang-go)
command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
# On bookworm kubectl is shipped by the `kubernetes-client` package.
command -v kubectl >/dev/null 2>&1 || missing+=(kubernetes-client)
command -v dpkg-source >/dev/null 2>&1 || missing+=(dpkg-dev)
# make, rsync and jq: the kubernetes build (hack/) needs them; rsync and jq
# are in the source package's Build-Depends.
command -v make >/dev/null 2>&1 || missing+=(make)
command -v rsync >/dev/null 2>&1 || missing+=(rsync)
command -v jq >/dev/null 2>&1 || missing+=(jq)
if ((${#missing[@]})); then
  SUDO=()
  [[ $(id -u) -eq 0 ]] || SUDO=(sudo)
  log "installing: ${missing[*]}"
  "${SUDO[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >&2
fi
log "go: $(go version)"
phase_done "packages"

# --- 2. source (private apt config, never /etc/apt) --------------------------
phase "source"
APTDIR="$CACHE/apt"
mkdir -p "$APTDIR/lists/partial" "$APTDIR/cache/archives/partial" "$CACHE/src"
printf 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n' \
  "$MIRROR" "$SUITE" >"$APTDIR/sources.list"
APT_OPTS=(
  -o "Dir::Etc::sourcelist=$APTDIR/sources.list"
  -o "Dir::Etc::sourceparts=-"
  -o "Dir::State::Lists=$APTDIR/lists"
  -o "Dir::Cache=$APTDIR/cache"
  -o "APT::Sandbox::User=root"
)
find_src() {
  find "$CACHE/src" -mindepth 1 -maxdepth 1 -type d -name 'kubernetes-*' | sort | tail -n1
}
SRC=$(find_src)
if [[ -z "$SRC" || ! -f "$SRC/cmd/kube-scheduler/scheduler.go" || ! -d "$SRC/vendor" ]]; then
  [[ -z "$SRC" ]] || rm -rf "$SRC"
  apt-get "${APT_OPTS[@]}" update -qq
  # apt-get source unpacks with dpkg-source -x (applies debian/patches).
  (cd "$CACHE/src" && apt-get "${APT_OPTS[@]}" source -qq kubernetes >&2)
  SRC=$(find_src)
fi
[[ -n "$SRC" && -d "$SRC/vendor" ]] || { log "no unpacked kubernetes source"; exit 1; }
log "source: $SRC"
phase_done "source"

# --- 3. reflect2 v1.0.2 fix (Go >= 1.18 mapiterinit signature) -----------------
phase "reflect2 fix"
R2="$SRC/vendor/github.com/modern-go/reflect2"
if [[ ! -f "$R2/go_above_118.go" ]]; then
  # unsafe_link.go: drop the old mapiterinit linkname (returned *hiter) and
  # give hiter the full runtime.hiter layout, since with Go >= 1.18 the
  # caller allocates it and runtime.mapiterinit fills every field.
  perl -0pi -e '
    s{// m escapes into the return value, but the caller of mapiterinit\n// doesn.t let the return value escape\.\n//go:noescape\n//go:linkname mapiterinit reflect\.mapiterinit\nfunc mapiterinit\(rtype unsafe\.Pointer, m unsafe\.Pointer\) \*hiter\n\n}{}s or die "unsafe_link.go: mapiterinit not found\n";
    s{type hiter struct \{.*?\n\}\n}{type hiter struct {
\tkey         unsafe.Pointer
\tvalue       unsafe.Pointer
\tt           unsafe.Pointer
\th           unsafe.Pointer
\tbuckets     unsafe.Pointer
\tbptr        unsafe.Pointer
\toverflow    *[]unsafe.Pointer
\toldoverflow *[]unsafe.Pointer
\tstartBucket uintptr
\toffset      uint8
\twrapped     bool
\tB           uint8
\ti           uint8
\tbucket      uintptr
\tcheckBucket uintptr
}
}s or die "unsafe_link.go: hiter not found\n";
  ' "$R2/unsafe_link.go"
  # unsafe_map.go: UnsafeIterate moves to the version-specific files.
  perl -0pi -e '
    s{func \(type2 \*UnsafeMapType\) UnsafeIterate\(obj unsafe\.Pointer\) MapIterator \{\n.*?\n\}\n\n}{}s or die "unsafe_map.go: UnsafeIterate not found\n";
  ' "$R2/unsafe_map.go"
  cat >"$R2/go_below_118.go" <<'EOF'
//+build !go1.18

package reflect2

import (
	"unsafe"
)

// m escapes into the return value, but the caller of mapiterinit
// doesn't let the return value escape.
//go:noescape
//go:linkname mapiterinit reflect.mapiterinit
func mapiterinit(rtype unsafe.Pointer, m unsafe.Pointer) (val *hiter)

func (type2 *UnsafeMapType) UnsafeIterate(obj unsafe.Pointer) MapIterator {
	return &UnsafeMapIterator{
		hiter:      mapiterinit(type2.rtype, *(*unsafe.Pointer)(obj)),
		pKeyRType:  type2.pKeyRType,
		pElemRType: type2.pElemRType,
	}
}
EOF
  cat >"$R2/go_above_118.go" <<'EOF'
//+build go1.18

package reflect2

import (
	"unsafe"
)

// m escapes into the return value, but the caller of mapiterinit
// doesn't let the return value escape.
//go:noescape
//go:linkname mapiterinit reflect.mapiterinit
func mapiterinit(rtype unsafe.Pointer, m unsafe.Pointer, it *hiter)

func (type2 *UnsafeMapType) UnsafeIterate(obj unsafe.Pointer) MapIterator {
	var it hiter
	mapiterinit(type2.rtype, *(*unsafe.Pointer)(obj), &it)
	return &UnsafeMapIterator{
		hiter:      &it,
		pKeyRType:  type2.pKeyRType,
		pElemRType: type2.pElemRType,
	}
}
EOF
  log "reflect2 fix applied to $R2"
else
  log "reflect2 fix already present"
fi
phase_done "reflect2 fix"

# --- 4. GOPATH layout + build --------------------------------------------------
phase "build"
export GOPATH="$CACHE/gopath"
KDIR="$GOPATH/src/k8s.io/kubernetes"
mkdir -p "$GOPATH/src/k8s.io"
ln -sfn "$SRC" "$KDIR"
export CGO_ENABLED=0
export GOCACHE="$CACHE/gocache"
# An interrupted earlier run can leave 0-byte generator stubs in _output that
# make then treats as up to date ("_output/bin/...-gen: Permission denied").
if [[ -d "$SRC/_output/local/bin" ]]; then
  find "$SRC/_output/local/bin" -type f -size 0 -print -delete >&2
fi
# providerless leaves out the in-tree cloud providers (the AWS, Azure, GCE,
# OpenStack and vSphere SDKs), which no control plane of the tests uses:
# the three commands compile in about 420 CPU s instead of 690
# (docs/make-test-time.md).
export GOFLAGS=-tags=providerless
# No DWARF in the objects: the link strips it anyway (hack/lib/golang.sh
# links with -s -w), and stack traces and pprof read the pclntab instead.
# kube-scheduler alone from a cold cache: 205 and 213 CPU s (user + system)
# instead of 254 and 259 (2026-11-29, docs/make-test-time.md).
export GOGCFLAGS="all=-dwarf=false"
# The Go compiler collects its garbage 4 times less often: kube-scheduler
# alone took 160 CPU s instead of 204 (22% less), each compile holding more
# memory (under 0.8 GB at the most; 800 saved nothing more).
export GOGC=400
# Of the generated files, only the OpenAPI definitions are not in the
# source package (deepcopy, conversion, defaults, bindata... are), so only
# their generator runs; `make WHAT=...`, Debian's debian/rules invocation,
# would run all six first (119 CPU s), and is the first fallback.
what=("${COMMANDS[@]/#/cmd/}")
niced() { nice -n "$BUILD_NICE" "$@"; }
if (cd "$KDIR" && niced make gen_openapi >&2 && niced hack/make-rules/build.sh "${what[@]}" >&2); then
  built="$SRC/_output/bin"
  log "built with: make gen_openapi; hack/make-rules/build.sh ${what[*]}"
elif (cd "$KDIR" && niced make WHAT="${what[*]}" >&2); then
  built="$SRC/_output/bin"
  log "built with: make WHAT=\"${what[*]}\""
else
  # GOPATH mode, as hack/ builds 1.20: vendor/k8s.io/* link to staging/.
  log "make failed; falling back to GOPATH-mode go build"
  built="$SRC/_output/gobuild"
  mkdir -p "$built"
  (cd "$KDIR" && GO111MODULE=off niced go build -gcflags="$GOGCFLAGS" -o "$built/" "${what[@]/#/./}" >&2)
  log "built with: GO111MODULE=off go build ${what[*]/#/./}"
fi
phase_done "build"

for command in "${COMMANDS[@]}"; do
  install -m 0755 "$built/$command" "$CACHE/$command.tmp"
  mv -f "$CACHE/$command.tmp" "$CACHE/$command"
  log "$("$CACHE/$command" --version)"
done
echo "$CACHE"
