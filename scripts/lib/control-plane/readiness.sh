# shellcheck shell=bash
# Sourced by scripts/control-plane: waiting until the servers and the simulated nodes are
# ready, and creating those nodes. Uses its constants and helpers (STATE_DIR, PKI_DIR, LOG_DIR,
# READY_TIMEOUT, FAKE_NODES; say, fail, log_tail) and those of processes.sh.

# wait_until_healthy NAME URL HEALTHY_ANSWER [CURL_ARGS...]: polls URL until
# its body is HEALTHY_ANSWER, failing early when the server exits.
wait_until_healthy() {
  local name=$1 url=$2 healthy_answer=$3 deadline=$((SECONDS + READY_TIMEOUT))
  shift 3
  while true; do
    if [[ $(curl --silent --max-time 5 "$@" "$url" 2>/dev/null) == "$healthy_answer" ]]; then
      return
    fi
    if ! server_running "$name"; then
      log_tail "$LOG_DIR/$name.log"
      # Once more, as a kubelet would: on a loaded machine a server can exit at start (a
      # timeout reaching the apiserver) and come up at the second try.
      if [[ ${restarted_once[$name]:-} != yes && -f $PID_DIR/$name.args ]]; then
        restarted_once[$name]=yes
        say "$name exited during startup; starting it once more"
        local retry_args=()
        mapfile -d '' retry_args <"$PID_DIR/$name.args"
        start_server "$name" "${retry_args[@]}"
        continue
      fi
      stop_started_servers
      fail "$name exited during startup (full log: $LOG_DIR/$name.log)"
    fi
    if ((SECONDS >= deadline)); then
      log_tail "$LOG_DIR/$name.log"
      stop_started_servers
      fail "$name was not ready at $url within ${READY_TIMEOUT}s (full log: $LOG_DIR/$name.log)"
    fi
    sleep 0.5
  done
}

apiserver_url() { cat "$STATE_DIR/apiserver-url"; }

apiserver_ready() {
  [[ -f $STATE_DIR/apiserver-url ]] &&
    [[ $(curl --silent --max-time 5 --cacert "$PKI_DIR/ca.crt" "$(apiserver_url)/readyz" 2>/dev/null) == ok ]]
}

# A running apiserver on a busy machine may answer slowly for a while; that
# is not reason enough to call the control plane broken.
apiserver_ready_within() {
  local deadline=$((SECONDS + $1))
  until apiserver_ready; do
    ((SECONDS < deadline)) || return 1
    sleep 1
  done
}

# api METHOD PATH [CURL_ARGS...]: a request to the apiserver as the
# administrator. The user agent keeps the apiserver from pretty-printing its
# answer (it does for curl's) and counts as the control plane's own in
# scripts/count-requests.
api() {
  local method=$1 path=$2
  shift 2
  curl --silent --show-error --max-time 10 --user-agent k8s-control-plane/script \
    --cacert "$PKI_DIR/ca.crt" --cert "$PKI_DIR/admin.crt" --key "$PKI_DIR/admin.key" \
    -X "$method" "$@" "$(apiserver_url)$path"
}

# The simulated nodes, as kwok documents them (the annotation is what kwok
# manages them by), with room for every test's Pods. Without kwok's usual
# NoSchedule taint: every node of this cluster is fake, and the tests' Pods
# should not need a toleration.
create_fake_nodes() {
  local node response
  for node in "${FAKE_NODES[@]}"; do
    response=$(api POST /api/v1/nodes -H 'Content-Type: application/json' --data-binary @- <<EOF
{
  "apiVersion": "v1",
  "kind": "Node",
  "metadata": {
    "name": "$node",
    "labels": {
      "type": "kwok",
      "kubernetes.io/hostname": "$node",
      "kubernetes.io/os": "linux",
      "kubernetes.io/arch": "amd64",
      "node-role.kubernetes.io/agent": ""
    },
    "annotations": {
      "kwok.x-k8s.io/node": "fake",
      "node.alpha.kubernetes.io/ttl": "0"
    }
  },
  "status": {
    "allocatable": {"cpu": "32", "memory": "128Gi", "pods": "1000", "ephemeral-storage": "100Gi"},
    "capacity": {"cpu": "32", "memory": "128Gi", "pods": "1000", "ephemeral-storage": "100Gi"}
  }
}
EOF
    ) || { stop_started_servers; fail "creating node $node failed: $response"; }
    [[ $response == *'"kind":"Node"'* ]] || { stop_started_servers; fail "creating node $node failed: $response"; }
  done
}

# Ready (kwok's node-initialize Stage ran) and without taints (admission gave
# each new node node.kubernetes.io/not-ready, which kube-controller-manager's
# node lifecycle controller lifts once its caches have synced and the node is
# Ready), so Pods can be scheduled. The apiserver's JSON (compact, see api)
# keeps the field order of the Go types, so a substring test is enough.
wait_until_nodes_ready() {
  local node json deadline=$((SECONDS + READY_TIMEOUT))
  for node in "${FAKE_NODES[@]}"; do
    while true; do
      json=$(api GET "/api/v1/nodes/$node" 2>/dev/null) || json=
      if [[ $json == *'"type":"Ready","status":"True"'* && $json != *'"taints"'* ]]; then
        break
      fi
      if ! server_running kwok; then
        log_tail "$LOG_DIR/kwok.log"
        stop_started_servers
        fail "kwok exited while its nodes started (full log: $LOG_DIR/kwok.log)"
      fi
      if ((SECONDS >= deadline)); then
        log_tail "$LOG_DIR/kwok.log"
        stop_started_servers
        fail "node $node was not Ready and untainted within ${READY_TIMEOUT}s (kwok's log: $LOG_DIR/kwok.log)"
      fi
      sleep 0.2
    done
  done
}
