# shellcheck shell=bash
# Sourced by scripts/services.sh, not run: the tools the tests and the bench need,
# installed from Debian's packages when missing; each command prints the tool's path.

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

# nginx with its JavaScript module (njs: deploy/headers.js counts request headers)
cmd_nginx() {
  local p
  p=$(command -v nginx || true)
  [[ -n $p ]] || { [[ -x /usr/sbin/nginx ]] && p=/usr/sbin/nginx; }
  if [[ -z $p || ! -f $(nginx_modules "$p")/ngx_http_js_module.so ]]; then
    # nginx-light would do, but plain nginx is in every Debian release
    apt_install ' (needed by make proxy and the proxy tests)' nginx libnginx-mod-http-js
    p=$(command -v nginx || true)
    [[ -n $p ]] || { [[ -x /usr/sbin/nginx ]] && p=/usr/sbin/nginx; }
    [[ -n $p ]] || die "nginx installed but not found"
    [[ -f $(nginx_modules "$p")/ngx_http_js_module.so ]] || die "libnginx-mod-http-js installed but ngx_http_js_module.so not found"
  fi
  printf '%s\n' "$p"
}

cmd_dig() {
  local p
  p=$(command -v dig || true)
  if [[ -z $p ]]; then
    # dnsutils is the package name in every Debian release (bind9-dnsutils behind it since 11)
    apt_install ' (needed by the DNS tests)' dnsutils
    p=$(command -v dig || true)
    [[ -n $p ]] || die "dig installed but not found"
  fi
  printf '%s\n' "$p"
}

# the directory of nginx's dynamic modules (its --modules-path; Debian's when it says none)
nginx_modules() {
  local m
  m=$("$1" -V 2>&1 | sed -n 's/.*--modules-path=\([^ ]*\).*/\1/p')
  printf '%s\n' "${m:-/usr/lib/nginx/modules}"
}

# tool_in PKG HINT BIN...: the first BIN found (on PATH or as an absolute path), installing
# Debian's PKG when none is; prints its path
tool_in() {
  local pkg=$1 hint=$2; shift 2
  local b p=''
  for b in "$@"; do p=$(command -v "$b" || true); [[ -n $p ]] && break; done
  if [[ -z $p ]]; then
    apt_install "$hint" "$pkg"
    for b in "$@"; do p=$(command -v "$b" || true); [[ -n $p ]] && break; done
    [[ -n $p ]] || die "$pkg installed but $1 not found"
  fi
  printf '%s\n' "$p"
}

# the discovery tests (test/discovery/): a real Prometheus (its http_sd_configs), a real
# HAProxy (server-template over SRV records), python-consul against the Consul-compatible
# catalog; dnsperf for the DNS bench row
cmd_prometheus() { tool_in prometheus ' (needed by the Prometheus SD test)' prometheus /usr/bin/prometheus; }
cmd_haproxy() { tool_in haproxy ' (needed by the HAProxy DNS discovery test)' haproxy /usr/sbin/haproxy; }
cmd_dnsperf() { tool_in dnsperf ' (the DNS bench row)' dnsperf; }
cmd_python_consul() {
  # Debian's python3 (a python3 earlier on PATH may not see Debian's packages)
  if ! /usr/bin/python3 -c 'import consul' 2>/dev/null; then
    apt_install ' (needed by the python-consul test)' python3-consul
    /usr/bin/python3 -c 'import consul' 2>/dev/null || die "python3-consul installed but /usr/bin/python3 cannot import consul"
  fi
  printf '%s\n' /usr/bin/python3
}
