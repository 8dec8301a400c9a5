#!/usr/bin/env node
// Print the OpenAPI document the server serves (built from dist/, so run `make build` first),
// with the configured tiers of this environment (TIERS), for linters: `make openapi-lint`.
import { openApiDocument } from '../dist/src/hot/openapi/document.js';
import { loadConfig } from '../dist/src/hot/config.js';

const cfg = loadConfig({ ...process.env, NODE_ENV: process.env.NODE_ENV ?? 'development', ADMIN_API_KEY: process.env.ADMIN_API_KEY ?? 'lint-only-not-a-key-0123456789' });
process.stdout.write(JSON.stringify(openApiDocument(process.env.npm_package_version ?? '0.0.0', { tiers: Object.keys(cfg.tiers) }), null, 1) + '\n');
