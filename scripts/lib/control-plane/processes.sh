# shellcheck shell=bash
# Sourced by scripts/control-plane: the servers' processes (start, find, stop) and free ports.
# Uses its constants, state and helpers (STATE_DIR, PID_DIR, LOG_DIR, BINARY, KWOK_BINARY,
# started_servers; say, fail).

pid_file() { printf '%s/%s.pid' "$PID_DIR" "$1"; }

# True when pid is alive and is one of our servers for this state directory,
# so a pid reused by an unrelated process is never mistaken for ours.
is_our_process() {
  local pid=$1 argv program
  [[ -r /proc/$pid/cmdline ]] || return 1
  argv=$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  program=$(head -n1 <<<"$argv")
  [[ $program == "$BINARY" || $program == "$KWOK_BINARY" ]] && grep -qF -- "$STATE_DIR/" <<<"$argv"
}

# The server name of a process of ours: the multi-call binary's first
# argument, or kwok.
server_name_of() {
  local argv
  argv=$(tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null)
  if [[ $(head -n1 <<<"$argv") == "$KWOK_BINARY" ]]; then
    printf 'kwok\n'
  else
    sed -n 2p <<<"$argv"
  fi
}

recorded_pid() {
  local file
  file=$(pid_file "$1")
  [[ -f $file ]] && cat "$file"
}

server_running() {
  local pid
  pid=$(recorded_pid "$1") && is_our_process "$pid"
}

control_plane_recorded() { [[ -d $PID_DIR ]] && compgen -G "$PID_DIR/*.pid" >/dev/null; }

# Says which servers are not running, and returns non-zero if any is not.
report_servers_not_running() {
  local name pid all_running=0
  for name in "${SERVERS[@]}"; do
    server_running "$name" && continue
    all_running=1
    if pid=$(recorded_pid "$name"); then
      say "$name is not running: its pid file $(pid_file "$name") names pid $pid, which is gone or not $name (was an earlier run killed?)"
    else
      say "$name is not running (it has no pid file)"
    fi
  done
  return "$all_running"
}

# A control plane an older scripts/control-plane started, before kube-scheduler
# and kwok were added: the others run, these two never did (no pid or args
# file). `up` leaves it running, `down` stops it.
started_without_nodes() {
  local name
  for name in kwok kube-scheduler; do
    [[ -f $(pid_file "$name") || -f $PID_DIR/$name.args ]] && return 1
  done
  for name in kube-controller-manager kube-apiserver etcd; do
    server_running "$name" || return 1
  done
}

start_server() {
  local name=$1
  shift
  mkdir -p "$LOG_DIR" "$PID_DIR"
  # setsid gives each server its own process group, so `down` can stop the
  # whole group; the server's pid is the group id.
  # 9>&- keeps the servers from holding the command lock after `up` returns.
  if [[ $name == kwok ]]; then
    # KWOK_WORKDIR: kwok would also read ~/.kwok/kwok.yaml if there was one.
    KWOK_WORKDIR=$STATE_DIR/kwok setsid "$KWOK_BINARY" "$@" >>"$LOG_DIR/$name.log" 2>&1 </dev/null 9>&- &
  else
    setsid "$BINARY" "$name" "$@" >>"$LOG_DIR/$name.log" 2>&1 </dev/null 9>&- &
  fi
  printf '%s\n' "$!" >"$(pid_file "$name")"
  # The flags, for a restart of this server alone (apiserver-outage).
  printf '%s\0' "$@" >"$PID_DIR/$name.args"
  started_servers+=("$name")
}

stop_process_group() {
  local name=$1 pid=$2
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + 20))
  while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
  if kill -0 "$pid" 2>/dev/null; then
    say "$name (pid $pid) did not stop within 20s; killing it"
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  # Reap it when it is our own child (a failed `up`), so no zombie is left.
  wait "$pid" 2>/dev/null || true
}

stop_server() {
  local name=$1 pid
  if pid=$(recorded_pid "$name") && is_our_process "$pid"; then
    stop_process_group "$name" "$pid"
    say "stopped $name (pid $pid)"
  fi
  rm -f "$(pid_file "$name")"
}

# Servers of this state directory that have no (or a wrong) pid file, e.g.
# when `up` was killed between starting a server and recording it.
stop_unrecorded_servers() {
  local cmdline pid
  for cmdline in /proc/[0-9]*/cmdline; do
    pid=${cmdline#/proc/}
    pid=${pid%/cmdline}
    if is_our_process "$pid"; then
      stop_process_group "$(server_name_of "$pid")" "$pid"
      say "stopped unrecorded server pid $pid"
    fi
  done
}

stop_started_servers() {
  local i
  for ((i = ${#started_servers[@]} - 1; i >= 0; i--)); do
    stop_server "${started_servers[i]}"
  done
  started_servers=()
}

# --------------------------------------------------------------- ports

port_in_use() {
  local port_hex
  port_hex=$(printf '%04X' "$1")
  # Listening sockets (state 0A) on any address, IPv4 or IPv6.
  awk -v port="$port_hex" 'NR > 1 { split($2, local, ":"); if (local[2] == port && $4 == "0A") found = 1 } END { exit !found }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# pick_free_port VAR: sets VAR to a port nothing listens on and that was not
# picked before. Below the kernel's ephemeral range (32768+), so outgoing
# connections do not take the port between choosing and binding it.
pick_free_port() {
  local -n picked=$1
  local port attempt
  for attempt in $(seq 1 200); do
    port=$((20000 + RANDOM % 12000))
    if ! port_in_use "$port" && [[ " ${chosen_ports[*]-} " != *" $port "* ]]; then
      chosen_ports+=("$port")
      picked=$port
      return
    fi
  done
  fail "found no free TCP port on 127.0.0.1"
}
chosen_ports=()
declare -A restarted_once=()
