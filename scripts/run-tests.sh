#!/usr/bin/env bash
# Run the compiled test suite (dist/test, built by `make build`) with tap against the
# servers named in .local/env.sh (written by `scripts/services.sh up`).
#
#   scripts/run-tests.sh                 every test/**/*.test.ts (run as dist/test/**/*.test.js)
#   scripts/run-tests.sh FILE...         only these (test/x.test.ts or dist/test/x.test.js)
#
# The TAP stream is shown as it runs and saved to test-artifacts/tap.log. The last line
# printed is always `N passed, N failed[, N skipped]`, counted from tap's own final
# summary (`# { total, pass, fail, todo, skip }`: assertions and childless subtests, each
# failing test file counted even when it died before asserting anything). Just before it,
# when anything failed, a "Failed:" list names each failing assertion with its subtests
# (CI may keep only the end of the output). Exit status is
# non-zero when anything failed, tap itself failed, or no test ran.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ART=test-artifacts
LOG=$ART/tap.log
mkdir -p "$ART"

note() { printf 'run-tests: %s\n' "$*" >&2; }
result() { # PASSED FAILED SKIPPED
  if (($3 > 0)); then printf '%d passed, %d failed, %d skipped\n' "$1" "$2" "$3"
  else printf '%d passed, %d failed\n' "$1" "$2"; fi
}

if [[ -f .local/env.sh ]]; then
  # shellcheck source=/dev/null
  source .local/env.sh
else
  note "no .local/env.sh: run 'scripts/services.sh up' (or 'make test') first; using REDIS_URL/DATABASE_URL from the environment"
fi
export NODE_ENV=test
# The Redis Cluster test (test/redis/cluster.test.ts) needs a 3-primary cluster: start (or
# reuse) the project-local one unless the caller named one. A failure to start it is a test
# failure, not a silent skip.
if [[ -z ${TEST_REDIS_CLUSTER_NODES:-}${REDIS_CLUSTER_NODES:-} ]]; then
  if nodes=$(scripts/services.sh cluster-up | sed -n 's/^REDIS_CLUSTER_NODES=//p') && [[ -n $nodes ]]; then
    export TEST_REDIS_CLUSTER_NODES=$nodes
  else
    note "scripts/services.sh cluster-up failed: the cluster test cannot run"
    export TEST_REDIS_CLUSTER_NODES=unavailable:1
  fi
fi
if [[ -z ${CHROMIUM_PATH:-} ]] && command -v chromium >/dev/null; then
  CHROMIUM_PATH=$(command -v chromium); export CHROMIUM_PATH
fi

# test/a/b.test.ts -> dist/test/a/b.test.js (tsc output); plain .js tests run in place.
to_dist() {
  case $1 in
    dist/*) printf '%s\n' "$1" ;;
    *.ts) printf 'dist/%s\n' "${1%.ts}.js" ;;
    *.mts) printf 'dist/%s\n' "${1%.mts}.mjs" ;;
    *) printf '%s\n' "$1" ;;
  esac
}

files=()
if (($# > 0)); then
  for f in "$@"; do files+=("$(to_dist "$f")"); done
elif [[ -d test ]]; then
  # From the sources, not dist/test: tsc never deletes the output of a removed test.
  while IFS= read -r -d '' f; do
    files+=("$(to_dist "${f#./}")")
  done < <(find test -type f \( -name '*.test.ts' -o -name '*.test.mts' -o -name '*.test.js' -o -name '*.test.mjs' \) -print0 | sort -z)
fi

if ((${#files[@]} == 0)); then
  note "no test files found under test/"
  : >"$LOG"
  result 0 0 0
  exit 1
fi
missing=()
for f in "${files[@]}"; do [[ -f $f ]] || missing+=("$f"); done
if ((${#missing[@]} > 0)); then
  note "not built: ${missing[*]} (run 'make build')"
  result 0 "${#missing[@]}" 0
  exit 1
fi

# tap builds its Test class and the loaders every test process gets from its plugins when it
# is installed, with the defaults: package.json's "!@tapjs/typescript" (the tests run as
# compiled JavaScript) takes effect only once `tap build` has run. Until then every test
# process loads the TypeScript loader too: ~0.9 s each, ~1.5 minutes of a whole run.
built=node_modules/@tapjs/test/test-built/dist/esm/index.js
if [[ -f $built ]] && grep -q 'Plugin_typescript' "$built"; then
  note "building tap's plugins as package.json lists them (without @tapjs/typescript)"
  npx --no-install tap build >/dev/null
fi

note "running ${#files[@]} test file(s) with NODE_ENV=test${REDIS_URL:+ REDIS_URL=$REDIS_URL}"
rc=0
npx --no-install tap --reporter=tap "${files[@]}" | tee "$LOG" || rc=$?

# (-a: test names may carry any byte, a NUL among them, and grep would call the log binary)
summary=$(grep -aE '^# \{ *total: *[0-9]+' "$LOG" | tail -n 1 || true)
field() { grep -oE "\\b$1: *[0-9]+" <<<"$summary" | grep -oE '[0-9]+$' || echo 0; }
top_failed=$(grep -acE '^not ok [0-9]+' "$LOG" || true)
top_passed=$(grep -aE '^ok [0-9]+' "$LOG" | grep -acvE '# (SKIP|TODO)' || true)

if [[ -n $summary ]]; then
  passed=$(field pass); failed=$(field fail); skipped=$(( $(field skip) + $(field todo) ))
else
  # No summary: tap bailed out or crashed. Fall back to the per-file results.
  note "tap printed no final summary (bail out or crash); counting test files instead"
  passed=$top_passed; failed=$top_failed; skipped=0
  ((failed > 0)) || failed=1
fi
if ((top_failed > failed)); then failed=$top_failed; fi
if ((rc != 0 && failed == 0)); then
  note "tap exited with status $rc although no test failed; counting that as a failure"
  failed=1
fi
# Where CI shows only the end of the output, the failures must be there too: each failing
# assertion with the subtests it sits in, and the first lines of its diagnostics (what was
# found and wanted, or the diff).
failures() {
  awk '
    function indent(l) { match(l, /^ */); return RLENGTH / 4 }
    # the last lines read, for a failure whose own lines the parse above misses
    { ring[NR % 12] = $0 }
    /not ok [0-9]+ / && !/^ *not ok [0-9]+/ { odd = $0 }
    /^ *# Subtest: / { d = indent($0); s = $0; sub(/^ *# Subtest: /, "", s); stack[d] = s; shown[d] = 0; diag = 0; if (d == 0) odd = ""; next }
    /^ *not ok [0-9]+/ {
      d = indent($0); t = $0; sub(/^ *not ok [0-9]+ - ?/, "", t); sub(/ # time=.*$/, "", t)
      # A subtest closing whose failing leaves were shown adds nothing; one that died
      # without a failing assertion (a timeout, a crash) is shown with its diagnostics.
      if ((d in stack) && stack[d] == t && shown[d]) { diag = 0; proc = (d == 0); next }
      path = ""; for (i = 0; i < d; i++) if (i in stack) { path = path stack[i] " > "; shown[i] = 1 }
      # a message may be a whole fast-check counterexample: its start says enough
      print "  not ok: " substr(path t, 1, 600); diag = 12; ki = -1; skip = 0
      # a subtest failing with no failing line under it (one written after output without
      # its newline, a crash): the lines before it, as they were
      if ($0 ~ / # time=/) {
        print "      (no failing assertion found under it; the lines before it:)"
        if (odd != "") print "      | " substr(odd, 1, 600)
        odd = ""
        for (j = NR - 11; j < NR; j++) if (j > 0 && (j % 12) in ring) print "      | " substr(ring[j % 12], 1, 300)
      }
      next
    }
    # a test file whose failures were shown: how its process ended, when not by itself
    # (a crash or a kill ends a subtest with no failing line under it)
    proc && /^ *signal: SIG/ { k = $0; sub(/^ */, "", k); print "      (its process: " k ")" }
    proc && /^ *\.\.\. *$/ { proc = 0 }
    diag > 0 && /^ *\.\.\. *$/ { diag = 0; next }
    diag > 0 && /^ *(---)? *$/ { next }
    # the YAML diagnostics without where (at, stack, source: the "not ok" line names the
    # test), so that found, wanted and the diff fit in the lines shown
    diag > 0 {
      match($0, /^ */); if (ki < 0) ki = RLENGTH
      if (RLENGTH <= ki) { k = $0; sub(/^ */, "", k); sub(/:.*/, "", k); skip = (k == "at" || k == "stack" || k == "source") }
      if (!skip) { print "      " substr($0, 1, 200); diag-- }
    }
  ' "$LOG"
}
if ((failed > 0 || top_failed > 0)); then
  printf '\nFailed:\n'
  failures | head -n 200
fi

status=0
if ((passed + failed == 0)); then
  note "no test ran"
  status=1
fi
((failed == 0)) || status=1
((rc == 0)) || status=1
result "$passed" "$failed" "$skipped"
exit "$status"
