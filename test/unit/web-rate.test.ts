// The live chart's arithmetic (web/src/lib/rate.ts): buckets -> requests per minute, the
// cap at the limit, the window label, and the axis ticks the contract fixes.
import t from 'tap';
import { BUCKETS, bucketXs, chartSeries, perMinute, percentOfLimit, rateLabel, windowRate, X_RANGE, X_TICKS, yTicks } from '../../web/src/lib/rate.js';

t.test('a 5-second bucket count is a rate per minute times 12', async (t) => {
  t.equal(perMinute(0), 0);
  t.equal(perMinute(1), 12);
  t.equal(perMinute(5), 60);
  t.equal(perMinute(3, 10), 18, 'other bucket sizes scale with 60 / seconds');
});

t.test('the series has 72 values, oldest first, each capped at the limit', async (t) => {
  const buckets = Array.from({ length: 72 }, (_, i) => (i === 0 ? 2 : i === 70 ? 50 : i === 71 ? 3 : 0));
  const s = chartSeries(buckets, 60);
  t.equal(s.length, BUCKETS);
  t.equal(s[0], 24, 'oldest bucket first: 2 requests in 5 s = 24/min');
  t.equal(s[70], 60, '50 requests in 5 s = 600/min, capped at the limit 60');
  t.equal(s[71], 36, 'newest bucket last');
  t.ok(s.every((v) => v >= 0 && v <= 60), 'never above the limit');
});

t.test('short history is padded with zeros at the old end; long history keeps the newest', async (t) => {
  t.same(chartSeries([1, 2], 1000).slice(-3), [0, 12, 24]);
  t.equal(chartSeries([1, 2], 1000).length, 72);
  const long = Array.from({ length: 80 }, (_, i) => i);
  const s = chartSeries(long, 1e9);
  t.equal(s.length, 72);
  t.equal(s[0], 8 * 12, 'the 8 oldest buckets fell off');
  t.equal(s[71], 79 * 12);
});

t.test('a zero or negative limit plots nothing above zero, negative counts count as 0', async (t) => {
  t.same(chartSeries([5, 5], 0).slice(-2), [0, 0]);
  t.same(chartSeries([-3, 1], 100).slice(-2), [0, 12]);
});

t.test('the window rate is the sum of the last 12 buckets and is not capped', async (t) => {
  const b = [...new Array<number>(60).fill(100), ...new Array<number>(12).fill(10)];
  t.equal(windowRate(b), 120, 'only the last minute counts');
  t.equal(windowRate([1, 2, 3]), 6, 'fewer than 12 buckets: all of them');
  t.equal(percentOfLimit(120, 60), 200, 'may exceed 100 %');
  t.equal(percentOfLimit(30, 60), 50);
  t.equal(percentOfLimit(5, 0), 0, 'no limit: 0, not Infinity');
  t.equal(rateLabel(120, 60), '120 req/min in the current window · 200 % of 60');
});

t.test('axes: -6m / -3m / now, and 0 / 50 / 100 % of the limit', async (t) => {
  t.same(X_TICKS.map((x) => x.label), ['-6m', '-3m', 'now']);
  t.same(X_TICKS.map((x) => x.value), [-360, -180, 0]);
  t.same(X_RANGE, [-360, 0]);
  t.same(yTicks(600), [
    { value: 0, label: '0 %' },
    { value: 300, label: '50 %' },
    { value: 600, label: '100 %' },
  ]);
  const xs = bucketXs();
  t.equal(xs.length, 72);
  t.equal(xs[0], -357.5, 'the oldest bar starts at -6m');
  t.equal(xs[71], -2.5, 'the newest bar ends at now');
  t.ok(xs.every((x, i) => i === 0 || x - xs[i - 1]! === 5), 'one bar per 5 s');
});
