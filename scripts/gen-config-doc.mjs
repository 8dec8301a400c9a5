#!/usr/bin/env node
// Write docs/configuration.md, the reference of every environment variable, from the settings
// table (src/hot/config-settings.ts, built into dist/: run `make build` first), the very rows
// config.ts reads its defaults and ranges from. test/unit/config-doc.test.ts fails when the
// file and the table disagree: `node scripts/gen-config-doc.mjs` after changing a setting.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const cell = (s) => String(s).replace(/\|/g, '\\|');
const code = (s) => `\`${s}\``;

function shownDefault(s) {
  if (s.shown) return s.shown;
  if (s.def === null || s.def === '') return '—';
  return code(s.def);
}

function accepts(s) {
  if (s.min !== undefined) return `${s.min}–${s.max}`;
  if (s.schemes) return s.schemes.map(code).join(', ');
  if (typeof s.def === 'boolean') return '`true`, `false`';
  return '';
}

/** The whole document for a settings table (`SETTINGS` of config-settings.ts). */
export function render(settings) {
  const topics = new Map();
  for (const [name, s] of Object.entries(settings)) {
    if (!topics.has(s.topic)) topics.set(s.topic, []);
    topics.get(s.topic).push([name, s]);
  }
  const lines = [
    '# Configuration',
    '',
    'Generated from `src/hot/config-settings.ts` by `node scripts/gen-config-doc.mjs`; do not edit by hand.',
    '',
    'Environment variables, read and validated at start-up by `src/hot/config.ts` (the only reader',
    'of `process.env`): a bad value stops the server and `bin/registry` with',
    '`configuration error: <VARIABLE> …` and exit code 2. An empty value means the default.',
    'Integers are checked against the range given; `…_MB` values are MiB.',
    '',
  ];
  for (const [topic, rows] of topics) {
    lines.push(`## ${topic}`, '', '| variable | default | accepts | meaning |', '|---|---|---|---|');
    for (const [name, s] of rows) lines.push(`| ${code(name)} | ${cell(shownDefault(s))} | ${cell(accepts(s))} | ${cell(s.doc)} |`);
    lines.push('');
  }
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { SETTINGS } = await import('../dist/src/hot/config-settings.js');
  writeFileSync(new URL('../docs/configuration.md', import.meta.url), render(SETTINGS));
}
