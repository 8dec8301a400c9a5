#!/usr/bin/env bash
# The shipped reverse proxy: renders deploy/nginx.conf and runs nginx in the foreground in
# front of the registry server (installs Debian's nginx first when it is missing).
#
#   scripts/proxy.sh run      render, check (nginx -t), then exec nginx in the foreground
#   scripts/proxy.sh render   render only; prints the path of the rendered nginx.conf
#
# Settings (environment):
#   PROXY_HOST         listen address of the proxy            (default 127.0.0.1)
#   PROXY_PORT         listen port of the proxy               (default 8081)
#   PROXY_SOCKET_DIR   the server's proxy sockets (its PROXY_SOCKET_DIR; `make proxy` and
#                      `make run` both use .local/run): nginx balances over every
#                      registry-<n>.sock there, one per uWS thread (those present, else
#                      WORKERS or the server's default count). The server believes
#                      X-Forwarded-For on these sockets only. Unset or empty: HOST:PORT
#   HOST, PORT         the registry server over TCP when PROXY_SOCKET_DIR is empty (default
#                      127.0.0.1, 8080; a wildcard HOST such as 0.0.0.0 is reached on
#                      127.0.0.1); its TRUSTED_PROXIES must then hold this proxy's address,
#                      for a proxy on another host only
#   PROXY_ADMIN_ALLOW  comma-separated addresses or CIDRs allowed to reach /admin/
#                      (default 127.0.0.1; "none" closes /admin/ to everyone, "all" opens it)
#   PROXY_CACHE_MB     size of the shared cache on disk, MiB  (default 64)
#   PROXY_PREFIX       nginx's directory: pid, temp files, cache (default .local/nginx)
#   PROXY_CONN_PER_ADDRESS    open requests per client address (default 128; 429 beyond)
#   PROXY_STREAMS_PER_ADDRESS open change-feed streams per client address (default 8)
#   WAIT_MAX_SECONDS   the server's longest held request (default 300): the proxy waits
#                      30 s more for the answer of a route that holds requests
# Open files: the soft limit is raised to the hard one (at most 65536) before nginx starts,
# and each worker gets half of that as connections (nginx.conf: worker_rlimit_nofile).
# nginx's workers run as the user running this script: over the sockets, the server's user
# (or one in the group of its socket directory).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
die() { printf 'proxy: error: %s\n' "$*" >&2; exit 1; }

PROXY_HOST=${PROXY_HOST:-127.0.0.1}
PROXY_PORT=${PROXY_PORT:-8081}
UP_HOST=${HOST:-127.0.0.1}
UP_PORT=${PORT:-8080}
ADMIN_ALLOW=${PROXY_ADMIN_ALLOW-127.0.0.1}
CACHE_MB=${PROXY_CACHE_MB:-64}
PREFIX=${PROXY_PREFIX:-$REPO/.local/nginx}
CONN_PER_ADDR=${PROXY_CONN_PER_ADDRESS:-128}
FEED_PER_ADDR=${PROXY_STREAMS_PER_ADDRESS:-8}
SOCKET_DIR=${PROXY_SOCKET_DIR:-}
WAIT_MAX=${WAIT_MAX_SECONDS:-300}
NOFILE=$(ulimit -Hn)
if [[ $NOFILE == unlimited ]] || (( NOFILE > 65536 )); then NOFILE=65536; fi

port_ok() { [[ $1 =~ ^[0-9]{1,5}$ ]] && (( $1 >= 1 && $1 <= 65535 )); }
host_ok() { [[ $1 =~ ^[0-9A-Za-z.:-]+$ ]]; }
addr() { if [[ $1 == *:* ]]; then printf '[%s]' "$1"; else printf '%s' "$1"; fi; }

port_ok "$PROXY_PORT" || die "PROXY_PORT must be a port number, got \"$PROXY_PORT\""
port_ok "$UP_PORT" || die "PORT must be a port number (the server's port), got \"$UP_PORT\""
host_ok "$PROXY_HOST" || die "PROXY_HOST is not an address: \"$PROXY_HOST\""
host_ok "$UP_HOST" || die "HOST is not an address: \"$UP_HOST\""
[[ $CACHE_MB =~ ^[0-9]{1,6}$ ]] && (( CACHE_MB >= 1 )) || die "PROXY_CACHE_MB must be a positive integer, got \"$CACHE_MB\""
[[ $CONN_PER_ADDR =~ ^[0-9]{1,6}$ ]] && (( CONN_PER_ADDR >= 1 )) || die "PROXY_CONN_PER_ADDRESS must be a positive integer, got \"$CONN_PER_ADDR\""
[[ $FEED_PER_ADDR =~ ^[0-9]{1,6}$ ]] && (( FEED_PER_ADDR >= 1 )) || die "PROXY_STREAMS_PER_ADDRESS must be a positive integer, got \"$FEED_PER_ADDR\""
[[ $WAIT_MAX =~ ^[0-9]{1,6}$ ]] && (( WAIT_MAX >= 1 )) || die "WAIT_MAX_SECONDS must be a positive integer, got \"$WAIT_MAX\""
(( NOFILE >= 1024 )) || die "the open-files hard limit ($NOFILE) is below 1024: raise it (ulimit -Hn) for the proxy"
case $UP_HOST in 0.0.0.0) UP_HOST=127.0.0.1 ;; ::|'[::]') UP_HOST=::1 ;; esac
if [[ -n $SOCKET_DIR ]]; then
  # (the server's own rule for PROXY_SOCKET_DIR: src/hot/config-env.ts socketDir)
  [[ $SOCKET_DIR =~ ^[A-Za-z0-9._/-]+$ ]] || die "PROXY_SOCKET_DIR may hold only letters, digits and . _ / -, got \"$SOCKET_DIR\""
  [[ $SOCKET_DIR == /* ]] || SOCKET_DIR=$PWD/$SOCKET_DIR
fi
mkdir -p "$PREFIX" || die "cannot create PROXY_PREFIX $PREFIX"
PREFIX=$(cd "$PREFIX" && pwd -P)

allow_lines() {
  local a
  case $ADMIN_ALLOW in
    none|'') return 0 ;;
    all) printf '      allow all;\n'; return 0 ;;
  esac
  local IFS=,
  for a in $ADMIN_ALLOW; do
    a=${a//[[:space:]]/}
    [[ -z $a ]] && continue
    [[ $a =~ ^[0-9A-Fa-f.:]+(/[0-9]{1,3})?$ ]] || die "PROXY_ADMIN_ALLOW entries must be addresses or CIDRs, got \"$a\""
    printf '      allow %s;\n' "$a"
  done
}

# The upstream's `server` lines: a socket per uWS thread of the server (the ones it made, or
# as many as it will make: WORKERS, else one per core less one, as the server counts), or
# HOST:PORT. A socket that is missing or refuses is skipped for a few seconds (nginx tries
# the next one: nothing was sent on it).
upstream_lines() {
  if [[ -z $SOCKET_DIR ]]; then
    printf '    server %s:%s;\n' "$(addr "$UP_HOST")" "$UP_PORT"
    return 0
  fi
  local n=0 f i
  for f in "$SOCKET_DIR"/registry-*.sock; do
    [[ -S $f ]] || continue
    i=${f##*/registry-}; i=${i%.sock}
    [[ $i =~ ^[0-9]+$ ]] && (( i + 1 > n )) && n=$((i + 1))
  done
  if (( n == 0 )); then
    n=${WORKERS:-$(( $(nproc) > 1 ? $(nproc) - 1 : 1 ))}
    [[ $n =~ ^[0-9]+$ ]] && (( n >= 1 && n <= 256 )) || die "WORKERS must be 1..256, got \"$n\""
  fi
  for ((i = 0; i < n; i++)); do printf '    server unix:%s/registry-%d.sock max_fails=1 fail_timeout=2s;\n' "$SOCKET_DIR" "$i"; done
}

# nginx's JavaScript module: in its --modules-path (Debian's when it names none, or when no
# nginx is installed yet and this only renders)
njs_module() {
  local n m
  n=${NGINX:-$(command -v nginx || { [[ -x /usr/sbin/nginx ]] && echo /usr/sbin/nginx; } || true)}
  [[ -n $n ]] && m=$("$n" -V 2>&1 | sed -n 's/.*--modules-path=\([^ ]*\).*/\1/p')
  printf '%s/ngx_http_js_module.so\n' "${m:-/usr/lib/nginx/modules}"
}

render() {
  local tpl=$REPO/deploy/nginx.conf out=$PREFIX/nginx.conf allow upstream njs
  allow=$(allow_lines)
  upstream=$(upstream_lines)
  njs=$(njs_module)
  mkdir -p "$PREFIX"/{cache,client_body,proxy,fastcgi,uwsgi,scgi,logs,_errors}
  # nginx's own refusals, with the API's error body (nginx.conf: error_page)
  local status code message
  while IFS='|' read -r status code message; do
    printf '{"error":{"code":"%s","message":"%s"}}' "$code" "$message" >"$PREFIX/_errors/$status.json"
  done <<'ERRORS'
400|BAD_REQUEST|malformed HTTP request
403|FORBIDDEN|not served to this address
408|REQUEST_TIMEOUT|the request was not sent in time
404|NOT_FOUND|not found
405|METHOD_NOT_ALLOWED|method not allowed
413|PAYLOAD_TOO_LARGE|the body is too large
414|URI_TOO_LONG|the URL is too long
429|RATE_LIMITED|too many open connections from this address; close some or try again later
431|HEADERS_TOO_LARGE|too many or too large request headers
503|UNAVAILABLE|the registry server is not reachable; try again shortly
ERRORS
  sed -e "s#@PREFIX@#$PREFIX#g" -e "s#@HELD_READ_TIMEOUT@#$((WAIT_MAX + 30))s#g" "$REPO/deploy/cache.conf" >"$PREFIX/cache.conf"
  cp "$REPO/deploy/headers.js" "$PREFIX/headers.js"
  # (awk, not sed, for the multi-line allow list)
  awk -v prefix="$PREFIX" -v listen="$(addr "$PROXY_HOST"):$PROXY_PORT" -v upstream="$upstream" \
      -v user="$(id -un)" -v cache_mb="$CACHE_MB" -v allow="$allow" -v njs="$njs" \
      -v nofile="$NOFILE" -v conns="$((NOFILE / 2))" -v per_addr="$CONN_PER_ADDR" -v feed_per_addr="$FEED_PER_ADDR" -v held_timeout="$((WAIT_MAX + 30))s" '
    /^@ADMIN_ALLOW@$/ { if (allow != "") print allow; next }
    /^@UPSTREAM@$/ { print upstream; next }
    { gsub(/@PREFIX@/, prefix); gsub(/@LISTEN@/, listen);
      gsub(/@USER@/, user); gsub(/@NJS_MODULE@/, njs); gsub(/@CACHE_MB@/, cache_mb); gsub(/@NOFILE@/, nofile);
      gsub(/@CONNECTIONS@/, conns); gsub(/@CONN_PER_ADDR@/, per_addr); gsub(/@FEED_PER_ADDR@/, feed_per_addr);
      gsub(/@HELD_READ_TIMEOUT@/, held_timeout); print }' "$tpl" >"$out"
  if grep -hv '^[[:space:]]*#' "$out" "$PREFIX/cache.conf" | grep -q '@[A-Z_]*@'; then die "unrendered placeholder left in $out or cache.conf"; fi
  printf '%s\n' "$out"
}

case ${1:-} in
  render) render ;;
  run)
    NGINX=$("$REPO/scripts/services.sh" nginx) # (first: the module's path is nginx's)
    conf=$(render)
    ulimit -n "$NOFILE" # the soft limit up to the hard one: thousands of sockets per worker
    "$NGINX" -t -q -p "$PREFIX" -e stderr -c "$conf" || die "nginx rejected $conf"
    if [[ -n $SOCKET_DIR ]]; then behind="the sockets $SOCKET_DIR/registry-*.sock"; else behind="http://$(addr "$UP_HOST"):$UP_PORT"; fi
    printf 'proxy: nginx on http://%s:%s in front of %s (config %s)\n' "$(addr "$PROXY_HOST")" "$PROXY_PORT" "$behind" "$conf" >&2
    exec "$NGINX" -p "$PREFIX" -e stderr -c "$conf"
    ;;
  *) sed -n '2,/^set /{/^#/p}' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
