# syntax=docker/dockerfile:1
#
# The applyset controller image.
#
#   docker build -t applyset:dev .
#
# Builder: Debian bookworm's Rust image already has what git2's vendored C
# dependencies need (gcc, make, perl for openssl-src, pkg-config): libgit2,
# libssh2 and OpenSSL are compiled from source by their -sys crates, and zlib
# is forced static (LIBZ_SYS_STATIC) so the binary needs nothing from the
# runtime image but glibc (2.34+) and libgcc_s.
#
# Runtime: distroless cc (glibc, libgcc, CA certificates, no shell), as the
# unprivileged user 65532. Nothing is written outside /tmp: the chart mounts an
# emptyDir there (git cache) and runs with a read-only root filesystem.

ARG RUST_IMAGE=rust:1.95.0-bookworm
ARG GO_IMAGE=golang:1.26.8-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

# kustomize v5.6.0 (the version kubectl 1.33 embeds), built from the pinned Go
# modules of tools/kustomize, static (no cgo): sources holding a kustomization
# are built with it.
FROM ${GO_IMAGE} AS kustomize
WORKDIR /src
COPY tools/kustomize/ ./
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -mod=mod -trimpath -buildvcs=false \
      -ldflags "-s -w -X sigs.k8s.io/kustomize/api/provenance.version=v5.6.0" \
      -o /out/kustomize sigs.k8s.io/kustomize/kustomize/v5

FROM ${RUST_IMAGE} AS builder
WORKDIR /src
ENV CARGO_TERM_COLOR=never \
    CARGO_INCREMENTAL=0 \
    LIBZ_SYS_STATIC=1
COPY . .
# The target directory is a cache mount, so the binary is copied out of it in
# the same step. The release profile keeps line tables (about 120 MB); the image
# gets the binary without them (about 14 MB, symbols kept for backtraces).
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/usr/local/cargo/git,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    cargo build --release --locked -p applyset \
 && mkdir -p /out \
 && objcopy --strip-debug target/release/applyset /out/applyset

FROM ${RUNTIME_IMAGE}
LABEL org.opencontainers.image.title="applyset" \
      org.opencontainers.image.description="GitOps controller that applies manifests from git exactly like kubectl apply" \
      org.opencontainers.image.licenses="Apache-2.0"
# OpenSSL is linked statically (built for /usr/local/ssl): point it at the
# image's CA bundle for HTTPS git remotes.
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    SSL_CERT_DIR=/etc/ssl/certs \
    APPLYSET_KUSTOMIZE_BINARY=/kustomize
COPY --from=builder /out/applyset /applyset
COPY --from=kustomize /out/kustomize /kustomize
USER 65532:65532
ENTRYPOINT ["/applyset"]
CMD ["controller"]
