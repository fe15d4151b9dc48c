# gpu-sizer: two commands on a fresh Debian bookworm machine.
#   make run    install what is missing, build, start the webhook on the embedded default
#   make test   install what is missing, build, run every test
SHELL := /bin/bash
BUILD ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
LISTEN ?= 127.0.0.1:8443
CERT_DIR ?= /tmp/gpu-sizer

# Debian packages the build and the tests need.
PACKAGES := g++ cmake make pkg-config curl openssl \
	libcpp-httplib-dev libssl-dev nlohmann-json3-dev libspdlog-dev \
	prometheus-cpp-dev libyaml-cpp-dev libgtest-dev libgmock-dev \
	prometheus chromium python3 python3-yaml fonts-dejavu-core fonts-liberation libgl1-mesa-dri \
	golang-go etcd-server dpkg-dev rsync jq
# The end-to-end test needs a kubectl; Debian's (kubernetes-client, 1.20.2)
# only when none is on PATH, so a newer one already installed is kept.
KUBECTL_PACKAGE := $(shell command -v kubectl >/dev/null || echo kubernetes-client)

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps configure build run test e2e image-rootfs clean

# apt-get update once, and only when something is missing.
deps:
	@missing=$$(for p in $(PACKAGES) $(KUBECTL_PACKAGE); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

configure: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) >/dev/null

build: configure
	cmake --build $(BUILD) -j$(JOBS)

# Only the binary: the tests are not needed to run it.
run: configure
	cmake --build $(BUILD) -j$(JOBS) --target gpu-sizer
	@echo "Try it from another shell once it is listening:"
	@echo "  curl --cacert $(CERT_DIR)/ca.crt -H 'Content-Type: application/json' --data @tests/data/review-4gpu-64gi.json https://$(LISTEN)/mutate"
	$(BUILD)/gpu-sizer serve --listen $(LISTEN) --cert-dir $(CERT_DIR)

# The end-to-end test against a real kube-apiserver v1.20, built once from
# Debian's source package (about 10 minutes on 2 cores) and cached in
# $${GPU_SIZER_CACHE:-~/.cache/gpu-sizer} outside the repo.
E2E_APISERVER = apiserver=$$(tests/e2e/build-kube-apiserver.sh) && \
	python3 tests/e2e/apiserver_e2e.py "$$apiserver" $(BUILD)/gpu-sizer $(CURDIR)

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)
	$(E2E_APISERVER)

e2e: build
	$(E2E_APISERVER)

# The runtime file tree the Dockerfile's image holds, for environments
# without a Docker engine (tests/e2e/image_rootfs.sh runs the binary from it).
image-rootfs: configure
	cmake --build $(BUILD) -j$(JOBS) --target gpu-sizer
	deploy/image/assemble-rootfs.sh $(BUILD)/gpu-sizer $(BUILD)/image-rootfs

clean:
	rm -rf $(BUILD)
