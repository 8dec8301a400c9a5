// The dashboard page rewrite (src/admin/static.ts): every local script and stylesheet URL
// gets ?v=<version>; other origins, data: URLs and already-versioned URLs are left alone.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { loadDist, versionUrls } from '../../src/admin/static.js';

t.test('versionUrls', async (t) => {
  const html = [
    '<script type="module" crossorigin src="/admin/assets/index-abc.js"></script>',
    "<link rel='stylesheet' href='/admin/assets/index-abc.css'>",
    '<link rel="modulepreload" href="/admin/assets/chunk.js?x=1">',
    '<link rel="icon" href="data:,">',
    '<script src="https://cdn.example/x.js"></script>',
    '<script src="/admin/a.js?v=9"></script>',
    '<a href="/admin/not-a-script">x</a>',
  ].join('\n');
  const out = versionUrls(html, '1.2.3');
  t.match(out, 'src="/admin/assets/index-abc.js?v=1.2.3"');
  t.match(out, "href='/admin/assets/index-abc.css?v=1.2.3'");
  t.match(out, 'href="/admin/assets/chunk.js?x=1&v=1.2.3"');
  t.match(out, 'href="data:,"');
  t.match(out, 'src="https://cdn.example/x.js"');
  t.match(out, 'src="/admin/a.js?v=9"');
  t.match(out, '<a href="/admin/not-a-script">', 'only script and link tags');
  t.match(versionUrls('<script src="/a.js"></script>', 'a b&c'), 'src="/a.js?v=a%20b%26c"', 'the version is URL-encoded');
});

t.test('loadDist: null without index.html; otherwise every file, index.html rewritten', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'dist-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  t.equal(loadDist(dir, '1'), null);
  mkdirSync(join(dir, 'assets'));
  writeFileSync(join(dir, 'assets', 'a.js'), 'export {}');
  writeFileSync(join(dir, 'index.html'), '<script type="module" src="/admin/assets/a.js"></script>');
  const files = loadDist(dir, '7')!;
  t.same([...files.keys()].sort(), ['assets/a.js', 'index.html']);
  t.equal(files.get('index.html')!.body.toString(), '<script type="module" src="/admin/assets/a.js?v=7"></script>');
  t.equal(files.get('assets/a.js')!.type, 'text/javascript; charset=utf-8');
  t.not(files.get('assets/a.js')!.etag, files.get('index.html')!.etag);
});
