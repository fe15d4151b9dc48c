#!/usr/bin/env bash
# `make run` installs only what the binary's build needs: its dry run names
# every build package (BUILD_PACKAGES) and none that only the tests, the
# benchmarks or the linters use, configures without the tests and builds
# only the binary; `make build` (so `make test`) still installs every
# package and configures the tests. Timed on a fresh machine in
# docs/testing.md.
#
# usage: make_run_packages.sh REPO_ROOT
set -euo pipefail
repo=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
# Run from a make recipe (make test -> ctest), the outer make's flags and
# jobserver are not this one's.
unset MAKEFLAGS MFLAGS MAKELEVEL

words() { tr -s '[:space:]' '\n' | sed '/^$/d'; }
# What a target's dry run does, one word a line, and the packages its
# install recipe checks for (the loop `for p in PACKAGES; do dpkg-query`).
dry_run() { make -n -C "$repo" "$1" 2>&1 | words; }
installs() { make -n -C "$repo" "$1" 2>&1 | sed -n 's/.*for p in \([^;]*\); do dpkg-query.*/\1/p' | words; }

build_packages=$(make -s -C "$repo" print-build-packages | words)
# The Makefile's TEST_PACKAGES and, should one move out of that list, the
# known test-only ones by name.
test_only=$( { make -s -C "$repo" print-test-packages
  echo chromium golang-go etcd-server prometheus kubernetes-client clang libclang-rt-14-dev \
    libgtest-dev libgmock-dev libbenchmark-dev clang-format clang-tidy shellcheck; } | words | sort -u)
[ -n "$build_packages" ] || fail "make print-build-packages printed nothing"

run=$(dry_run run)
run_installs=$(installs run)
for package in $build_packages; do
  grep -qxF -- "$package" <<<"$test_only" && fail "$package is in BUILD_PACKAGES, which make run installs, and is test-only"
  grep -qxF -- "$package" <<<"$run_installs" || fail "make -n run does not install $package (BUILD_PACKAGES): no install loop found"
done
for package in $test_only; do
  grep -qxF -- "$package" <<<"$run_installs" && fail "make run installs the test-only package $package (see make -n run)"
done
grep -qxF -- "-DBUILD_TESTING=OFF" <<<"$run" || fail "make run does not configure with -DBUILD_TESTING=OFF"
grep -qxF -- "-DBUILD_TESTING=ON" <<<"$run" && fail "make run configures the tests"
grep -qxF -- "--target" <<<"$run" || fail "make run does not build one target only"

# make test goes through make build: everything, tests configured.
build=$(dry_run build)
build_installs=$(installs build)
for package in $build_packages $(make -s -C "$repo" print-test-packages); do
  grep -qxF -- "$package" <<<"$build_installs" || fail "make build (and so make test) does not install $package"
done
grep -qxF -- "-DBUILD_TESTING=ON" <<<"$build" || fail "make build does not configure with -DBUILD_TESTING=ON"
echo "ok: make run installs the $(wc -w <<<"$build_packages") build packages and none of the $(wc -l <<<"$test_only") test-only ones; make test installs both"
