# shellcheck shell=bash
# Sourced by scripts/services.sh, not run: PostgreSQL. Finding the server binaries
# (find_pg_bin), running them as the cluster owner (as_pg), where the cluster lives
# (pg_prepare_home, pg_socket_dir), initdb, pg_up (the PostgreSQL half of `up`) and pg_down.

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
