# gpu-sizer image: built on Debian bookworm, run on bookworm-slim with only
# the binary's runtime libraries added, as a non-root user. The runtime tree
# comes from deploy/image/assemble-rootfs.sh, which `make image-rootfs` also
# runs (and the tests check) where no Docker engine is available.
FROM debian:bookworm AS build
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      g++ cmake make pkg-config ca-certificates \
      libcpp-httplib-dev libssl-dev nlohmann-json3-dev libspdlog-dev prometheus-cpp-dev libyaml-cpp-dev \
      libsimdjson-dev libboost1.81-dev ninja-build \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY cmd cmd
COPY include include
COPY src src
COPY deploy/image deploy/image
RUN cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
    && cmake --build build -j"$(nproc)" --target gpu-sizer \
    && strip build/gpu-sizer \
    && deploy/image/assemble-rootfs.sh build/gpu-sizer /rootfs

FROM debian:bookworm-slim
COPY --from=build /rootfs/ /
# Numeric, so Kubernetes can verify runAsNonRoot without reading /etc/passwd.
USER 65532:65532
# Writable paths: only --cert-dir when no certificate is mounted (mount an
# emptyDir there under readOnlyRootFilesystem).
EXPOSE 8443 9090
ENTRYPOINT ["/usr/local/bin/gpu-sizer", "serve"]
CMD ["--listen", "0.0.0.0:8443", "--metrics-listen", "0.0.0.0:9090", \
     "--tls-cert", "/etc/gpu-sizer/tls/tls.crt", "--tls-key", "/etc/gpu-sizer/tls/tls.key", \
     "--policy", "/etc/gpu-sizer/policy/policy.yaml"]
