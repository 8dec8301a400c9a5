#!/usr/bin/env node
// Write docs/errors.md, the error reference, from the registry (src/hot/domain/errors.ts,
// built into dist/: run `make build` first). test/unit/errors.test.ts fails when the file and
// the registry disagree: `node scripts/gen-errors-doc.mjs` after changing the registry.
import { writeFileSync } from 'node:fs';
import { ERRORS, REGISTRY, RETIRED } from '../dist/src/hot/domain/errors.js';

const cell = (s) => String(s).replace(/\|/g, '\\|').replace(/</g, '&lt;');
const lines = [
  '# Errors',
  '',
  'Generated from `src/hot/domain/errors.ts` by `node scripts/gen-errors-doc.mjs`; do not edit by hand.',
  '',
  'Every error answer has the body `{"error": {"code", "message"}}`. `code` is one of the public',
  'codes below (the OpenAPI `Error.code` enum); clients branch on it, never on the message. The',
  'message comes from the template of the error\'s key, each `%s` filled by the server.',
  '',
  '## Public codes',
  '',
  '| code | HTTP status |',
  '|---|---|',
  ...Object.entries(ERRORS).map(([c, s]) => `| \`${c}\` | ${s} |`),
  '',
  '## Errors by key',
  '',
  '| key | code | status | message template |',
  '|---|---|---|---|',
  ...Object.entries(REGISTRY).map(([k, e]) => `| \`${k}\` | \`${e.code}\` | ${ERRORS[e.code]} | ${cell(e.message)} |`),
  '',
  '## Retired',
  '',
  'Codes and keys shipped once and retired; never used again for another meaning.',
  '',
  ...(Object.keys(RETIRED).length ? ['| code or key | why |', '|---|---|', ...Object.entries(RETIRED).map(([k, why]) => `| \`${k}\` | ${cell(why)} |`)] : ['(none)']),
  '',
];
writeFileSync(new URL('../docs/errors.md', import.meta.url), lines.join('\n'));
