#!/usr/bin/env bash
# Local backing services for development and tests: Redis, PostgreSQL, a 3-node Redis
# Cluster and Chromium. Everything it starts lives under <repo>/.local (git-ignored) and
# is stopped by `down`; servers named by REDIS_URL / DATABASE_URL are used, never touched.
#
#   scripts/services.sh up            start (or reuse) Redis + PostgreSQL, write .local/env.sh
#   scripts/services.sh down          stop what `up` / `cluster-up` started from this repo
#   scripts/services.sh chromium      install Debian's chromium if missing, print its path
#   scripts/services.sh nginx         install Debian's nginx and its njs module if missing, print its path
#   scripts/services.sh wrk           install Debian's wrk if missing (the bench's load generator), print its path
#   scripts/services.sh dig           install Debian's dnsutils if missing (the DNS tests), print dig's path
#   scripts/services.sh prometheus    install Debian's prometheus if missing (the SD test), print its path
#   scripts/services.sh haproxy       install Debian's haproxy if missing (the DNS discovery test), print its path
#   scripts/services.sh python-consul install Debian's python3-consul if missing, print the python3 that has it
#   scripts/services.sh dnsperf       install Debian's dnsperf if missing (the DNS bench row), print its path
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

# The functions live in scripts/services/ (header comments there), sourced from where this
# file is, so it runs from any directory.
PARTS=$REPO/scripts/services
# shellcheck source=services/common.sh
source "$PARTS/common.sh"
# shellcheck source=services/redis.sh
source "$PARTS/redis.sh"
# shellcheck source=services/pg.sh
source "$PARTS/pg.sh"
# shellcheck source=services/cluster.sh
source "$PARTS/cluster.sh"
# shellcheck source=services/tools.sh
source "$PARTS/tools.sh"

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

usage() { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

case ${1:-} in
  up) cmd_up ;;
  down) cmd_down ;;
  chromium) cmd_chromium ;;
  nginx) cmd_nginx ;;
  wrk) cmd_wrk ;;
  dig) cmd_dig ;;
  prometheus) cmd_prometheus ;;
  haproxy) cmd_haproxy ;;
  python-consul) cmd_python_consul ;;
  dnsperf) cmd_dnsperf ;;
  cluster-up) cmd_cluster_up ;;
  cluster-down) cluster_stop_all ;;
  *) usage ;;
esac
