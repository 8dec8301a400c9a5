# shellcheck shell=bash
# Sourced by scripts/services.sh, not run: logging (log, die, redact), Debian packages
# (apt_install and the sudo it needs), pid helpers (pid_alive, pid_gone, read_pid) and the
# small tools the parts share (tcp_port_open, detached, wait_for).

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
