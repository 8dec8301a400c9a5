// What the MAX_JSON_DEPTH check (jsonDepthExceeds, src/hot/http/body.ts) costs against
// JSON.parse of the same body: a 42 KB body of records and the first 64 KiB of a larger one.
//
//   node dist/bench/json-depth.js [--rounds 200]
//
// Prints ms a call, the mean of the rounds.
import { numArg } from './args.js';
import { jsonDepthExceeds } from '../src/hot/http/body.js';

const rounds = numArg('--rounds', 200);
const rec = (n: number) => JSON.stringify({ a: Array.from({ length: n }, (_, i) => ({ k: 'x' + i, v: [1, 2, '[{'] })) });
const big = Buffer.from(rec(3000).slice(0, 65536));
const mid = Buffer.from(rec(1500));
const time = (f: () => unknown) => {
  const t = performance.now();
  for (let i = 0; i < rounds; i++) f();
  return (performance.now() - t) / rounds;
};
const ms = (x: number) => x.toFixed(3) + ' ms';
console.log(`scan 64 KiB ${ms(time(() => jsonDepthExceeds(big, 32)))}, scan 42 KB ${ms(time(() => jsonDepthExceeds(mid, 32)))}, parse 42 KB ${ms(time(() => JSON.parse(mid.toString())))}`);
