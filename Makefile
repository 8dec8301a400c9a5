# Two commands on a fresh Debian machine:  `make run`  (server) and  `make test`.
# Everything else is reached through them: npm deps, the TypeScript and web builds, local
# Redis + PostgreSQL (scripts/services.sh, state in .local/), migrations and seed data.
#
#   make deps build services migrate seed run proxy test lint typecheck bench bench-quick mutate down clean
#
# `make proxy` runs the shipped nginx (deploy/nginx.conf) in the foreground on PROXY_PORT
# (8081) in front of `make run`, over its sockets in .local/run; see docs/operations.md,
# "Behind a reverse proxy".
#
# Servers named by REDIS_URL / DATABASE_URL in the environment are used instead of local ones.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := build

NPM_CI := npm ci --no-audit --no-fund
# Every target that talks to the servers runs with the URLs that `services` wrote.
WITH_ENV := source .local/env.sh &&

.PHONY: deps build web client services migrate seed run proxy test test-prep lint typecheck bench bench-quick \
	mutate down clean openapi-lint

# npm rewrites node_modules/.package-lock.json on every install: it is the stamp.
node_modules/.package-lock.json: package-lock.json package.json
	$(NPM_CI)
	touch $@

deps: node_modules/.package-lock.json

# The dashboard bundle is rebuilt only when something under web/ (or the lock file) changed.
WEB_STAMP := dist/.web-build-stamp
define WEB_BUILD
if [[ -f web/index.html ]]; then \
  if [[ ! -f $(WEB_STAMP) || ! -f web/dist/index.html \
        || -n "$$(find web package-lock.json -path web/dist -prune -o -type f -newer $(WEB_STAMP) -print -quit)" ]]; then \
    echo "npx vite build web"; npx vite build web; mkdir -p dist; touch $(WEB_STAMP); \
  fi; \
fi
endef

# The typed client (client/, README there): its types are generated from the OpenAPI document
# the server's build makes (client/scripts/gen-types.mjs reads dist/), then the package
# (client/dist) and its tests (dist/test/client) are compiled against them.
define CLIENT_BUILD
node client/scripts/gen-types.mjs
npx tsc -p client/tsconfig.json
npx tsc -p test/client/tsconfig.json
endef

build: deps
	npx tsc -p tsconfig.json
	$(CLIENT_BUILD)
	@$(WEB_BUILD)

client: build

web: deps
	@$(WEB_BUILD)

services:
	scripts/services.sh up

migrate: build services
	$(WITH_ENV) node dist/src/admin/tasks.js migrate

seed: migrate
	$(WITH_ENV) node dist/src/admin/tasks.js seed

# The proxy's sockets: `make run` listens there, `make proxy` connects there; X-Forwarded-For
# is believed on them only (README, "Behind a reverse proxy"). Empty: none, TCP only.
PROXY_SOCKETS := PROXY_SOCKET_DIR="$${PROXY_SOCKET_DIR-$(CURDIR)/.local/run}"

run: seed
	$(WITH_ENV) export COOKIE_SECURE="$${COOKIE_SECURE:-false}" NODE_ENV="$${NODE_ENV:-development}" \
	  $(PROXY_SOCKETS) && exec node dist/src/hot/main.js

# nginx in front of `make run` (installed from Debian's packages when missing); foreground
proxy:
	$(PROXY_SOCKETS) scripts/proxy.sh run

# Everything the test run needs; .ci/run calls it and then scripts/run-tests.sh itself so
# that the `N passed, N failed` line is the last thing printed even on failure.
test-prep: deps build services
	@if [[ -d test/web ]]; then scripts/services.sh chromium >/dev/null; fi
	@if [[ -d test/proxy ]]; then scripts/services.sh nginx >/dev/null; fi
	@if [[ -d test/discovery/dns ]]; then scripts/services.sh dig >/dev/null; fi
	@if [[ -d test/discovery ]]; then for t in prometheus haproxy python-consul; do scripts/services.sh $$t >/dev/null; done; fi

test: test-prep openapi-lint
	scripts/run-tests.sh

# The served /openapi.json under Redocly's recommended rules as errors (redocly.yaml: the
# recommended-strict set, so a warning fails too).
openapi-lint: build
	@mkdir -p .local
	node scripts/openapi-doc.mjs > .local/openapi.json
	npx redocly lint --config redocly.yaml .local/openapi.json

lint: deps
	npx eslint .
	node scripts/import-cycles.mjs src bench test

# The client is checked against types generated from the server's build: the root project
# is compiled (not --noEmit) so that dist/ holds the document's builder.
typecheck: deps
	npx tsc -p tsconfig.json
	node client/scripts/gen-types.mjs
	npx tsc -p client/tsconfig.json --noEmit
	npx tsc -p test/client/tsconfig.json --noEmit
	@if [[ -f web/tsconfig.json ]]; then echo "npx tsc -p web/tsconfig.json --noEmit"; npx tsc -p web/tsconfig.json --noEmit; fi

bench: build services
	scripts/services.sh wrk >/dev/null
	$(WITH_ENV) node dist/bench/run.js

bench-quick: build services
	scripts/services.sh wrk >/dev/null
	$(WITH_ENV) node dist/bench/run.js --quick

# Mutation testing (StrykerJS, stryker.config.mjs) of src/hot/domain, src/hot/sandboxes/keys.ts
# and src/admin/paging.ts against the unit tests; fails below a 90 % score. Not part of
# .ci/run: it takes far more than a few minutes (docs/decisions/mutation-testing.md;
# scores: docs/mutation.md).
mutate: deps
	npx stryker run

down:
	scripts/services.sh down

clean: down
	rm -rf dist web/dist client/dist client/src/generated client/openapi.json .stryker-tmp reports
