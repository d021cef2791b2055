import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { ROUTES, splitRoute } from '../../protocol/routes';
import type { Controller } from '../../server/controller';
import { registerApi } from '../../server/http/api';
import { acceptsGzip, Router } from '../../server/http/router';

function registered() {
  const router = new Router(null as never, () => {});
  registerApi(router, {} as Controller);
  return router.list();
}

test('the router registers every route of the table once, with its method, path and access', () => {
  const routes = registered();
  assert.deepEqual(routes.map((r) => r.name).sort(), Object.keys(ROUTES).sort());
  for (const r of routes) {
    assert.deepEqual({ method: r.method, path: r.path }, splitRoute(r.name));
    assert.equal(r.access, ROUTES[r.name]);
  }
});

test('docs/api.md has a section for every route, headed by its name', () => {
  const headings = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('### '))
    .map((l) => l.slice(4).split('?')[0]);
  for (const name of Object.keys(ROUTES)) assert.ok(headings.includes(name), `docs/api.md has no "### ${name}"`);
});

test('Accept-Encoding: gzip taken unless refused with q=0', () => {
  assert.deepEqual(
    ['gzip', 'gzip, deflate, br', 'br;q=1.0, gzip;q=0.8', '*', 'gzip;q=0', 'deflate', '', undefined].map((h) => acceptsGzip(h)),
    [true, true, true, true, false, false, false, false],
  );
  assert.equal(acceptsGzip(['deflate', 'gzip']), true);
});
