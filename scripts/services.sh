#!/usr/bin/env bash
# Local backing services for development and tests: Redis, PostgreSQL, a 3-node Redis
# Cluster and Chromium. Everything it starts lives under <repo>/.local (git-ignored) and
# is stopped by `down`; servers named by REDIS_URL / DATABASE_URL are used, never touched.
#
#   scripts/services.sh up            start (or reuse) Redis + PostgreSQL, write .local/env.sh
#   scripts/services.sh down          stop what `up` / `cluster-up` started from this repo
#   scripts/services.sh chromium      install Debian's chromium if missing, print its path
#   scripts/services.sh nginx         install Debian's nginx if missing, print its path
#   scripts/services.sh wrk           install Debian's wrk if missing (the bench's load generator), print its path
#   scripts/services.sh cluster-up    start (or reuse) a 3-primary Redis Cluster
#   scripts/services.sh cluster-down  stop it
#
# Ports: SERVICES_REDIS_PORT (6390), SERVICES_PG_PORT (5440), SERVICES_CLUSTER_PORT (7101,
# the first of three consecutive ports). Logs go to stderr; stdout carries only results.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
LOCAL=$REPO/.local
REDIS_PORT=${SERVICES_REDIS_PORT:-6390}
PG_PORT=${SERVICES_PG_PORT:-5440}
CLUSTER_PORT=${SERVICES_CLUSTER_PORT:-7101}
CLUSTER_PORTS=("$CLUSTER_PORT" "$((CLUSTER_PORT + 1))" "$((CLUSTER_PORT + 2))")
PG_DB=registry

log() { printf 'services: %s\n' "$*" >&2; }
die() { printf 'services: error: %s\n' "$*" >&2; exit 1; }
# Hide the password of a URL in logs.
redact() { sed -E 's#(//[^:/@]*:)[^@/]*@#\1***@#' <<<"$1"; }

# ---------------------------------------------------------------- packages

if [[ $EUID -eq 0 ]]; then SUDO=(); else SUDO=(sudo -n); fi

# apt_install HINT PKG...: install Debian packages; `apt-get update` only when needed.
apt_install() {
  local hint=$1; shift
  command -v apt-get >/dev/null || die "apt-get not found: install $* yourself$hint"
  if [[ $EUID -ne 0 ]] && ! { command -v sudo >/dev/null && sudo -n true 2>/dev/null; }; then
    die "$* missing and not root (no password-less sudo): install $* yourself$hint"
  fi
  mkdir -p "$LOCAL"
  local aptlog=$LOCAL/apt.log
  local -a apt=("${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -y -q
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
  log "installing $* (apt-get, log in .local/apt.log)"
  if ! "${apt[@]}" install "$@" >>"$aptlog" 2>&1; then
    log "install failed, running apt-get update and retrying"
    "${apt[@]}" update >>"$aptlog" 2>&1 || { tail -n 20 "$aptlog" >&2; die "apt-get update failed$hint"; }
    "${apt[@]}" install "$@" >>"$aptlog" 2>&1 || { tail -n 20 "$aptlog" >&2; die "apt-get install $* failed$hint"; }
  fi
}

# ---------------------------------------------------------------- helpers

# A killed daemon may linger as a zombie until init reaps it: that is not alive.
pid_alive() {
  [[ -n ${1:-} ]] && kill -0 "$1" 2>/dev/null || return 1
  [[ $(sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' "/proc/$1/status" 2>/dev/null) != Z ]]
}
pid_gone() { ! pid_alive "$1"; }
read_pid() { if [[ -f $1 ]]; then head -n 1 "$1" | tr -dc '0-9'; fi; }

# Does something answer PING with +PONG on 127.0.0.1:$1? Plain bash, no redis-cli needed.
redis_port_pings() {
  local reply=''
  { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
  printf 'PING\r\n' >&3
  IFS= read -r -t 2 reply <&3 || true
  exec 3>&- 3<&-
  [[ $reply == +PONG* ]]
}

tcp_port_open() { { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1; exec 3>&- 3<&-; }

# Run CMD (which starts a daemon) with only stdin/stdout/stderr open, stdin from /dev/null:
# a server must never keep a pipe of whoever called us open (a CI runner would wait on it).
detached() {
  (
    for fd in "/proc/$BASHPID/fd/"*; do
      fd=${fd##*/}
      if ((fd > 2)); then eval "exec $fd>&-"; fi
    done
    "$@" </dev/null
  )
}

# wait_for SECONDS CMD...: retry CMD every 0.2 s.
wait_for() {
  local tries=$(($1 * 5)); shift
  while ((tries-- > 0)); do "$@" && return 0; sleep 0.2; done
  return 1
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

# ---------------------------------------------------------------- Redis

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

# ---------------------------------------------------------------- PostgreSQL

PG_BIN=''
find_pg_bin() {
  local want=${1:-} d
  if [[ -n $want && -x /usr/lib/postgresql/$want/bin/initdb ]]; then PG_BIN=/usr/lib/postgresql/$want/bin; return 0; fi
  d=$(printf '%s\n' /usr/lib/postgresql/*/bin | grep -v '\*' | sort -V | tail -n 1 || true)
  if [[ -n $d && -x $d/initdb ]]; then PG_BIN=$d; return 0; fi
  if command -v pg_config >/dev/null && [[ -x $(pg_config --bindir)/initdb ]]; then PG_BIN=$(pg_config --bindir); return 0; fi
  d=$(command -v initdb || true)
  if [[ -n $d ]]; then PG_BIN=$(dirname "$(readlink -f "$d")"); return 0; fi
  return 1
}

# Run a PostgreSQL server tool as the cluster owner. Debian's initdb/pg_ctl refuse root, so
# root runs them as `postgres`; any other user owns its cluster itself. `cd /` because the
# caller's directory may not be readable by postgres.
as_pg() {
  if [[ $EUID -eq 0 ]]; then
    (cd / && runuser -u postgres -- "$@")
  else
    "$@"
  fi
}

pg_answers() {
  if [[ -x ${PG_BIN:-/nonexistent}/pg_isready ]]; then
    "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$1" -U postgres -d postgres
  elif command -v pg_isready >/dev/null; then
    pg_isready -q -h 127.0.0.1 -p "$1" -U postgres -d postgres
  else
    tcp_port_open "$1"
  fi
}

short_hash() { printf '%s' "$1" | sha256sum | cut -c1-12; }

# Decide where the cluster lives. Normally .local/pg; when root and postgres cannot
# traverse the checkout (e.g. it is under /root), a postgres-owned /tmp directory that
# .local/pg links to. Sets PG_HOME (data/, run/ and postgres.log inside).
pg_prepare_home() {
  mkdir -p "$LOCAL"
  local link=$LOCAL/pg
  if [[ $EUID -ne 0 ]]; then
    [[ -L $link ]] && rm -f "$link"
    mkdir -p "$link"; chmod 700 "$link"; PG_HOME=$link; return
  fi
  id postgres >/dev/null 2>&1 || die "user postgres does not exist (is the postgresql package installed?)"
  if [[ ! -L $link ]] && runuser -u postgres -- test -x "$LOCAL" 2>/dev/null; then
    mkdir -p "$link"
    chown postgres:postgres "$link"; chmod 700 "$link"
    runuser -u postgres -- test -w "$link" 2>/dev/null && { PG_HOME=$link; return; }
  fi
  local tmp; tmp=/tmp/registry-pg-$(short_hash "$REPO")
  if [[ -e $tmp || -L $tmp ]]; then
    [[ -d $tmp && ! -L $tmp && $(stat -c %U "$tmp") == postgres ]] \
      || die "$tmp exists but is not a directory owned by postgres; remove it"
  else
    install -d -o postgres -g postgres -m 700 "$tmp"
  fi
  chmod 700 "$tmp"
  if [[ -L $link ]]; then
    [[ $(readlink "$link") == "$tmp" ]] || { rm -f "$link"; ln -s "$tmp" "$link"; }
  else
    if [[ -d $link ]]; then
      rmdir "$link" 2>/dev/null || die "$link is a directory postgres cannot reach; move it away"
    fi
    ln -s "$tmp" "$link"
    log "postgres: $REPO is not reachable by user postgres, cluster lives in $tmp (.local/pg links there)"
  fi
  PG_HOME=$tmp
}

# Unix sockets are limited to ~107 bytes; fall back to a short postgres-owned directory.
pg_socket_dir() {
  local dir=$PG_HOME/run
  if (( ${#dir} + 20 > 100 )); then dir=/tmp/registry-pg-$(short_hash "$REPO").run; fi
  if [[ $EUID -eq 0 ]]; then
    [[ -d $dir ]] || install -d -o postgres -g postgres -m 700 "$dir"
    chown postgres:postgres "$dir"
  else
    mkdir -p "$dir"
  fi
  chmod 700 "$dir"
  printf '%s' "$dir"
}

pg_initdb() {
  local data=$1 locale=C.UTF-8
  locale -a 2>/dev/null | grep -qiE '^c\.utf-?8$' || locale=C
  log "postgres: initdb $data (locale $locale)"
  if ! as_pg "$PG_BIN/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale="$locale" >"$PG_HOME/initdb.log" 2>&1; then
    if [[ $locale != C ]]; then
      log "postgres: initdb with $locale failed, retrying with locale C"
      as_pg rm -rf "$data"
      as_pg "$PG_BIN/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C >"$PG_HOME/initdb.log" 2>&1 \
        || { tail -n 20 "$PG_HOME/initdb.log" >&2; die "initdb failed"; }
    else
      tail -n 20 "$PG_HOME/initdb.log" >&2; die "initdb failed"
    fi
  fi
}

pg_psql() { "${PG_BIN:+$PG_BIN/}psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres "$@"; }

pg_ensure_db() {
  if [[ $(pg_psql -tAc "SELECT 1 FROM pg_database WHERE datname='$PG_DB'") != 1 ]]; then
    log "postgres: creating database $PG_DB"
    pg_psql -c "CREATE DATABASE $PG_DB" >/dev/null
  fi
}

pg_up() {
  local own="postgres://postgres@127.0.0.1:$PG_PORT/$PG_DB"
  if [[ -n ${DATABASE_URL:-} && $DATABASE_URL != "$own" ]]; then
    if command -v pg_isready >/dev/null; then
      pg_isready -q -d "$DATABASE_URL" || die "DATABASE_URL=$(redact "$DATABASE_URL") is not accepting connections"
    fi
    log "postgres: using DATABASE_URL=$(redact "$DATABASE_URL")"
    DATABASE_URL_OUT=$DATABASE_URL
    return
  fi
  DATABASE_URL_OUT=$own
  find_pg_bin || true
  if pg_answers "$PG_PORT"; then
    log "postgres: reusing the server on 127.0.0.1:$PG_PORT"
    if [[ -n $PG_BIN ]] || command -v psql >/dev/null; then pg_ensure_db; fi
    return
  fi
  if [[ -z $PG_BIN ]]; then
    apt_install ' (or set DATABASE_URL to a running PostgreSQL)' postgresql
    find_pg_bin || die "postgresql installed but no initdb found under /usr/lib/postgresql"
  fi
  pg_prepare_home
  local data=$PG_HOME/data
  if [[ -f $data/PG_VERSION ]]; then
    find_pg_bin "$(cat "$data/PG_VERSION")"   # the server must match the cluster's version
  else
    as_pg rm -rf "$data"   # no PG_VERSION: nothing, or what a failed initdb left behind
    pg_initdb "$data"
  fi
  # Our postmaster is running when postmaster.pid names a live process (not pg_ctl status:
  # it takes a zombie left by a killed server for a live one).
  local pid running_port
  pid=$(read_pid "$data/postmaster.pid")
  if pid_alive "$pid"; then
    running_port=$(sed -n 4p "$data/postmaster.pid")
    if [[ $running_port != "$PG_PORT" ]]; then
      log "postgres: cluster runs on port $running_port, restarting on $PG_PORT"
      as_pg "$PG_BIN/pg_ctl" -D "$data" -m fast -w stop >/dev/null
      pid=''
    fi
  fi
  if ! pid_alive "$pid"; then
    local sock; sock=$(pg_socket_dir)
    # Lock files left by a server that died without cleaning up would block the start.
    as_pg rm -f "$data/postmaster.pid" "$sock/.s.PGSQL.$PG_PORT" "$sock/.s.PGSQL.$PG_PORT.lock"
    log "postgres: starting on 127.0.0.1:$PG_PORT ($data)"
    # per-statement times for the writes bench (bench/writes.ts, issue 22), when installed
    local pgss=''
    [[ -f $PG_BIN/../lib/pg_stat_statements.so ]] && pgss=' -c shared_preload_libraries=pg_stat_statements'
    local try
    for try in 1 2 3; do
      detached as_pg "$PG_BIN/pg_ctl" -D "$data" -l "$PG_HOME/postgres.log" -w -t 60 \
        -o "-p $PG_PORT -c listen_addresses=127.0.0.1 -k '$sock' -c fsync=on -c max_connections=200$pgss" \
        start >/dev/null 2>&1 && break
      # Backends of a killed postmaster can hold its shared memory for a moment.
      ((try < 3)) || { tail -n 20 "$PG_HOME/postgres.log" >&2 || true; die "postgres failed to start, see $PG_HOME/postgres.log"; }
      log "postgres: start failed, retrying"
      sleep 2
    done
  fi
  wait_for 30 pg_answers "$PG_PORT" || die "postgres on port $PG_PORT does not accept connections, see $PG_HOME/postgres.log"
  pg_ensure_db
}

pg_down() {
  local data pid
  # Resolve the .local/pg link: postgres may not be able to traverse the checkout.
  data=$(readlink -f "$LOCAL/pg" 2>/dev/null || true)/data
  [[ -f $data/postmaster.pid ]] || return 0
  pid=$(read_pid "$data/postmaster.pid")
  if pid_alive "$pid"; then
    find_pg_bin "$(cat "$data/PG_VERSION" 2>/dev/null || true)" || die "no pg_ctl found, cannot stop $data"
    log "postgres: stopping ($data)"
    as_pg "$PG_BIN/pg_ctl" -D "$data" -m fast -w stop >/dev/null
  else
    as_pg rm -f "$data/postmaster.pid"
  fi
}

# ---------------------------------------------------------------- commands

cmd_up() {
  mkdir -p "$LOCAL"
  redis_up
  pg_up
  local tmp=$LOCAL/env.sh.tmp
  {
    echo '# Written by scripts/services.sh up; source it before running the server or tests.'
    printf 'export REDIS_URL=%q\n' "$REDIS_URL_OUT"
    printf 'export DATABASE_URL=%q\n' "$DATABASE_URL_OUT"
  } >"$tmp"
  mv -f "$tmp" "$LOCAL/env.sh"
  log "ready: .local/env.sh (REDIS_URL=$(redact "$REDIS_URL_OUT") DATABASE_URL=$(redact "$DATABASE_URL_OUT"))"
}

cmd_down() {
  stop_redis "$LOCAL/redis"
  pg_down
  cluster_stop_all
}

cmd_chromium() {
  local p
  p=$(command -v chromium || true)
  if [[ -z $p ]]; then
    apt_install ' (needed by the browser tests)' chromium
    p=$(command -v chromium || true)
    [[ -n $p ]] || die "chromium installed but not on PATH"
  fi
  printf '%s\n' "$p"
}

cmd_wrk() {
  local p
  p=$(command -v wrk || true)
  if [[ -z $p ]]; then
    apt_install ' (the load generator of make bench; autocannon saturates first)' wrk
    p=$(command -v wrk || true)
    [[ -n $p ]] || die "wrk installed but not found"
  fi
  echo "$p"
}

cmd_nginx() {
  local p
  p=$(command -v nginx || true)
  [[ -n $p ]] || { [[ -x /usr/sbin/nginx ]] && p=/usr/sbin/nginx; }
  if [[ -z $p ]]; then
    # nginx-light would do, but plain nginx is in every Debian release
    apt_install ' (needed by make proxy and the proxy tests)' nginx
    p=$(command -v nginx || true)
    [[ -n $p ]] || { [[ -x /usr/sbin/nginx ]] && p=/usr/sbin/nginx; }
    [[ -n $p ]] || die "nginx installed but not found"
  fi
  printf '%s\n' "$p"
}

cluster_ok() { [[ $(redis-cli -h 127.0.0.1 -p "$1" cluster info 2>/dev/null | tr -d '\r' | grep '^cluster_state:') == cluster_state:ok ]]; }
cluster_all_ok() { local p; for p in "${CLUSTER_PORTS[@]}"; do cluster_ok "$p" || return 1; done; }

cluster_stop_all() {
  local p
  for p in "${CLUSTER_PORTS[@]}"; do
    [[ -d $LOCAL/cluster/$p ]] && stop_redis "$LOCAL/cluster/$p"
  done
  return 0
}

cmd_cluster_up() {
  ensure_redis_installed
  local p nodes=()
  for p in "${CLUSTER_PORTS[@]}"; do nodes+=("127.0.0.1:$p"); done
  if cluster_all_ok; then
    log "cluster: reusing the cluster on ports ${CLUSTER_PORTS[*]}"
  else
    # No persistence anyway: start from clean nodes and create the cluster anew.
    for p in "${CLUSTER_PORTS[@]}"; do
      local dir=$LOCAL/cluster/$p
      if [[ -f $dir/redis.pid ]]; then stop_redis "$dir"; fi
      if redis_port_pings "$p"; then die "port $p is used by a Redis this repo did not start (set SERVICES_CLUSTER_PORT)"; fi
      rm -rf "$dir"; mkdir -p "$dir"
    done
    log "cluster: starting redis nodes on ports ${CLUSTER_PORTS[*]}"
    for p in "${CLUSTER_PORTS[@]}"; do
      start_redis "$LOCAL/cluster/$p" "$p" --cluster-enabled yes --cluster-config-file nodes.conf
    done
    redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$LOCAL/cluster/create.log" 2>&1 \
      || { tail -n 20 "$LOCAL/cluster/create.log" >&2; die "redis-cli --cluster create failed"; }
    wait_for 30 cluster_all_ok || die "cluster did not reach cluster_state:ok"
    log "cluster: ready"
  fi
  local IFS=,
  printf 'REDIS_CLUSTER_NODES=%s\n' "${nodes[*]}"
}

usage() { sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

case ${1:-} in
  up) cmd_up ;;
  down) cmd_down ;;
  chromium) cmd_chromium ;;
  nginx) cmd_nginx ;;
  wrk) cmd_wrk ;;
  cluster-up) cmd_cluster_up ;;
  cluster-down) cluster_stop_all ;;
  *) usage ;;
esac
