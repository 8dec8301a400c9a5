# shellcheck shell=bash
# Sourced by scripts/services.sh, not run: the local 3-primary Redis Cluster on
# CLUSTER_PORTS, `cluster-up` (cmd_cluster_up) and `cluster-down` (cluster_stop_all).

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
