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
# runtime image but glibc and libgcc.
#
# Runtime: distroless cc (glibc, libgcc, CA certificates, no shell), as the
# unprivileged user 65532. Nothing is written outside /tmp: the chart mounts an
# emptyDir there (git cache) and runs with a read-only root filesystem.

ARG RUST_IMAGE=rust:1.95.0-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

FROM ${RUST_IMAGE} AS builder
WORKDIR /src
ENV CARGO_TERM_COLOR=never \
    CARGO_INCREMENTAL=0 \
    LIBZ_SYS_STATIC=1
COPY . .
# The target directory is a cache mount, so the binary is copied out of it in
# the same step.
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/usr/local/cargo/git,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    cargo build --release --locked -p applyset \
 && install -D -m 0755 target/release/applyset /out/applyset

FROM ${RUNTIME_IMAGE}
LABEL org.opencontainers.image.title="applyset" \
      org.opencontainers.image.description="GitOps controller that applies manifests from git exactly like kubectl apply" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=builder /out/applyset /applyset
USER 65532:65532
ENTRYPOINT ["/applyset"]
CMD ["controller"]
