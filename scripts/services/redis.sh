# shellcheck shell=bash
# Sourced by scripts/services.sh, not run: Redis. redis_port_pings, installing
# redis-server, start_redis / stop_redis of one daemon in a directory (also the cluster's
# nodes), and redis_up, the Redis half of `up`.

# Does something answer PING with +PONG on 127.0.0.1:$1? Plain bash, no redis-cli needed.
redis_port_pings() {
  local reply=''
  { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
  printf 'PING\r\n' >&3
  IFS= read -r -t 2 reply <&3 || true
  exec 3>&- 3<&-
  [[ $reply == +PONG* ]]
}

ensure_redis_installed() {
  if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
    apt_install ' (or set REDIS_URL to a running Redis)' redis-server redis-tools
  fi
}

# start_redis DIR PORT [EXTRA ARGS...]: daemonized, no persistence, loopback only.
start_redis() {
  local dir=$1 port=$2; shift 2
  mkdir -p "$dir"
  local pid; pid=$(read_pid "$dir/redis.pid")
  if pid_alive "$pid" && [[ $(cat "/proc/$pid/comm" 2>/dev/null) == redis* ]]; then
    log "redis on port $port: pid $pid is running but does not answer yet, waiting"
  else
    rm -f "$dir/redis.pid"
    detached redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no \
      --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" "$@" >/dev/null \
      || die "redis-server failed to start on port $port, see $dir/redis.log"
  fi
  wait_for 15 redis_port_pings "$port" \
    || { tail -n 15 "$dir/redis.log" >&2 || true; die "redis on port $port does not answer PING, see $dir/redis.log"; }
  echo "$port" >"$dir/port"
}

# stop_redis DIR: stop the redis whose pid file is in DIR, if it is still ours and alive.
stop_redis() {
  local dir=$1 pid port
  pid=$(read_pid "$dir/redis.pid")
  port=$(cat "$dir/port" 2>/dev/null || true)
  if ! pid_alive "$pid" || [[ $(cat "/proc/$pid/comm" 2>/dev/null) != redis* ]]; then
    rm -f "$dir/redis.pid"; return 0
  fi
  log "stopping redis (pid $pid${port:+, port $port})"
  if [[ -n $port ]] && command -v redis-cli >/dev/null; then
    redis-cli -h 127.0.0.1 -p "$port" shutdown nosave >/dev/null 2>&1 || true
  fi
  if ! wait_for 5 pid_gone "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    wait_for 10 pid_gone "$pid" || kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$dir/redis.pid"
}

redis_up() {
  local own="redis://127.0.0.1:$REDIS_PORT"
  # A REDIS_URL equal to what `up` writes itself (e.g. a sourced env.sh) is not a
  # user-provided server: fall through so a stopped local Redis is started again.
  if [[ -n ${REDIS_URL:-} && $REDIS_URL != "$own" ]]; then
    if command -v redis-cli >/dev/null; then
      [[ $(redis-cli -u "$REDIS_URL" ping 2>/dev/null) == PONG ]] \
        || die "REDIS_URL=$(redact "$REDIS_URL") does not answer PING"
    fi
    log "redis: using REDIS_URL=$(redact "$REDIS_URL")"
    REDIS_URL_OUT=$REDIS_URL
    return
  fi
  REDIS_URL_OUT=$own
  if redis_port_pings "$REDIS_PORT"; then
    log "redis: reusing the server on 127.0.0.1:$REDIS_PORT"
    return
  fi
  tcp_port_open "$REDIS_PORT" && die "port $REDIS_PORT is taken by something that is not a Redis without password (set REDIS_URL or SERVICES_REDIS_PORT)"
  ensure_redis_installed
  log "redis: starting on 127.0.0.1:$REDIS_PORT (.local/redis)"
  start_redis "$LOCAL/redis" "$REDIS_PORT"
}
