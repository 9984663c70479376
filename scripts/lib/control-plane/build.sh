# shellcheck shell=bash
# Sourced by scripts/control-plane: building the control plane's multi-call binary and kwok
# when their sources changed. Uses its constants and helpers (MODULE_DIR, BIN_DIR, BINARY,
# BUILD_*, KWOK_*; say, fail, log_tail, require_command).

# Sets BUILD_FLAGS. -trimpath and stripping keep the binary small; GOCACHE is
# left at the machine's default so later builds (and CI on the same machine)
# reuse it. The version variables are what Kubernetes' own build stamps, so
# /version reports the release instead of v0.0.0-master.
set_build_flags() {
  local version
  version=$(awk '$1 == "k8s.io/kubernetes" { print $2; exit }' "$MODULE_DIR/go.mod")
  [[ $version =~ ^v([0-9]+)\.([0-9]+)\. ]] || fail "cannot find the k8s.io/kubernetes version in $MODULE_DIR/go.mod"
  local stamp=k8s.io/component-base/version
  BUILD_FLAGS=(-trimpath -buildvcs=false "-ldflags=-s -w -X $stamp.gitVersion=$version -X $stamp.gitMajor=${BASH_REMATCH[1]} -X $stamp.gitMinor=${BASH_REMATCH[2]} -X $stamp.gitTreeState=clean")
}

sources_hash() {
  (
    cd "$MODULE_DIR"
    printf '%s\n' "${BUILD_FLAGS[@]}"
    cat go.mod go.sum
    find . -path ./bin -prune -o -path ./state -prune -o -path ./kwok -prune -o -name '*.go' -print | LC_ALL=C sort | xargs cat
  ) | sha256sum | cut -d' ' -f1
}

# kwok is built from the module cache as its go.mod pins it; its version is
# the release's own (sigs.k8s.io/kwok/pkg/consts.Version).
readonly KWOK_BUILD_FLAGS=(-trimpath -buildvcs=false "-ldflags=-s -w")

kwok_sources_hash() {
  (
    cd "$KWOK_MODULE_DIR"
    printf '%s\n' "${KWOK_BUILD_FLAGS[@]}"
    cat go.mod go.sum
  ) | sha256sum | cut -d' ' -f1
}

build_kwok_if_needed() {
  local hash
  hash=$(kwok_sources_hash)
  if [[ -x $KWOK_BINARY && -f $KWOK_BUILD_STAMP && $(<"$KWOK_BUILD_STAMP") == "$hash" ]]; then
    return
  fi
  require_command go "(the Go toolchain, >= 1.24) to build kwok from $KWOK_MODULE_DIR"
  mkdir -p "$BIN_DIR"
  say "building kwok (the first build takes about 2 minutes, less once the control plane's is cached; log: $KWOK_BUILD_LOG)"
  local started=$SECONDS
  rm -f "$KWOK_BUILD_STAMP"
  if ! (cd "$KWOK_MODULE_DIR" && nice -n 10 go build "${KWOK_BUILD_FLAGS[@]}" -o "$KWOK_BINARY.partial" sigs.k8s.io/kwok/cmd/kwok) >"$KWOK_BUILD_LOG" 2>&1; then
    rm -f "$KWOK_BINARY.partial"
    log_tail "$KWOK_BUILD_LOG"
    fail "building kwok failed (full log: $KWOK_BUILD_LOG)"
  fi
  mv -f "$KWOK_BINARY.partial" "$KWOK_BINARY"
  printf '%s\n' "$hash" >"$KWOK_BUILD_STAMP"
  say "built $KWOK_BINARY in $((SECONDS - started))s"
}

build_if_needed() {
  local hash
  set_build_flags
  hash=$(sources_hash)
  if [[ -x $BINARY && -f $BUILD_STAMP && $(<"$BUILD_STAMP") == "$hash" ]]; then
    return
  fi
  require_command go "(the Go toolchain, >= 1.24) to build the control plane from $MODULE_DIR"
  mkdir -p "$BIN_DIR"
  say "building etcd, kube-apiserver, kube-controller-manager and kube-scheduler (the first build takes about 6 minutes on 2 idle cores, more on a busy machine; log: $BUILD_LOG)"
  local started=$SECONDS
  rm -f "$BUILD_STAMP"
  if ! (cd "$MODULE_DIR" && nice -n 10 go build "${BUILD_FLAGS[@]}" -o "$BINARY.partial" .) >"$BUILD_LOG" 2>&1; then
    rm -f "$BINARY.partial"
    log_tail "$BUILD_LOG"
    fail "building the control plane failed (full log: $BUILD_LOG)"
  fi
  mv -f "$BINARY.partial" "$BINARY"
  printf '%s\n' "$hash" >"$BUILD_STAMP"
  say "built $BINARY in $((SECONDS - started))s"
}
