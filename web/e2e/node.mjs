// The backend the browser tests run against, shared by the Chromium
// (chromium.mjs) and Firefox (firefox.mjs) journeys: a real sluice binary
// (SLUICE_BIN) with a temp config — embedded store, the http source on the
// API port for group "acme" and on a port of its own for group "globex",
// static tokens, the users backend ([auth], admins must use TOTP) — seeded
// with 30 events of acme (10 errors) and 20 of globex. With
// E2E_BACKEND=opensearch (chromium-opensearch.mjs) the events go to a real
// OpenSearch node instead (scripts/opensearch.sh, an index of this run's
// own, deleted at the end) and the search API reads it (issue #20).
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { base32, totp } from './totp.mjs';

export const BIN = process.env.SLUICE_BIN ?? '../target/debug/sluice';
export const ART = process.env.ARTIFACTS ?? '../.cache/artifacts/browser';
export const ADMIN = 'admin-token-0123456789abcdef';
export const ACME = 'acme-token-0123456789abcdef';
/** Ingest tokens of the two http sources (their events get the token's group). */
export const INGEST = { acme: 'acme-ingest-token-0123456789', globex: 'globex-ingest-token-0123456' };
// The first admin's password, given to the node as SLUICE_ADMIN_PASSWORD,
// and the password of the operator the tests create.
export const ADMIN_PASSWORD = 'e2e-admin-password-0123';
export const BOB_PASSWORD = 'e2e-bob-password-0123456';
/** How long a browser wait may take, ms. */
export const WAIT_MS = 20_000;

const freePort = () =>
  new Promise((ok) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });

/** Polls `f` every 100 ms until it returns something truthy. */
/** Runs in the page (Playwright and Puppeteer serialise it): no search is
 * running and the hit count shown answers the search in the address bar
 * (its `data-request` carries the answered `q`, `from` and `to` as the
 * URL would), not the previous one still on screen. */
export function hitCountAnswered() {
  const n = document.querySelector('#hit-count');
  if (!n || document.querySelector('.summary-line')?.textContent?.includes('searching')) return false;
  const answered = new URL(n.getAttribute('data-request') || '/', location.origin).searchParams;
  const shown = new URLSearchParams(location.search);
  return ['q', 'from', 'to'].every((k) => (answered.get(k) ?? '') === (shown.get(k) ?? ''));
}

/** Runs in the page: the Operations page's Store card figures by label. */
export function storeCardFigures() {
  return Object.fromEntries([...document.querySelectorAll('section[aria-label="Store"] dl.kpis > div')].map((d) => [d.querySelector('dt').textContent, d.querySelector('dd').textContent]));
}

/** Runs in the page: the "last event" cell of the Operations row of component `id`. */
export function lastEventCell(id) {
  const table = document.querySelector('[data-pipeline="main"] table.components');
  const col = [...table.querySelectorAll('thead th')].findIndex((th) => th.textContent === 'last event');
  const row = [...table.querySelectorAll('tbody tr')].find((r) => r.querySelector('th')?.textContent === id);
  return row?.children[col]?.textContent ?? null;
}

export async function waitFor(what, f, ms = WAIT_MS) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The 30 acme and 20 globex events every journey starts with. */
export const SEED = {
  acme: Array.from({ length: 30 }, (_, i) => ({ message: `acme request ${i}`, level: i % 3 === 0 ? 'error' : 'info', service: i % 2 ? 'api' : 'web', ms: i })),
  globex: Array.from({ length: 20 }, (_, i) => ({ message: `globex secret ${i}`, level: 'error', service: 'vault' })),
};

/**
 * Where the node stores and what its search API reads: the embedded store,
 * or (E2E_BACKEND=opensearch) OpenSearch through the `elasticsearch` sink,
 * named `store` too so the Operations page lists the same components.
 * Returns the config text and a cleanup function.
 */
function storage(dir) {
  if ((process.env.E2E_BACKEND ?? 'embedded') === 'embedded') {
    return {
      toml: `[pipelines.main.sinks.store]\ntype = "store"\npath = "${join(dir, 'store')}"\ncommit_interval = "100ms"\n`,
      cleanup: async () => {},
    };
  }
  assert.equal(process.env.E2E_BACKEND, 'opensearch', 'E2E_BACKEND: embedded or opensearch');
  const script = new URL('../../scripts/opensearch.sh', import.meta.url).pathname;
  execFileSync('bash', [script, 'start', 'main'], { stdio: ['ignore', 'ignore', 'inherit'] });
  const url = execFileSync('bash', [script, 'url', 'main']).toString().trim();
  const index = `sluice-ui-e2e-${process.pid}-${Date.now()}`;
  return {
    toml: `[search]
backend = "opensearch"
endpoints = ["${url}"]
index = "${index}"
tail_poll_ms = 250
[pipelines.main.sinks.store]
type = "elasticsearch"
endpoint = "${url}"
index = "${index}"
template_name = "${index}"
`,
    cleanup: async () => {
      await fetch(`${url}/${index}`, { method: 'DELETE' }).catch(() => {});
      await fetch(`${url}/_index_template/${index}`, { method: 'DELETE' }).catch(() => {});
    },
  };
}

/**
 * Starts a node, seeds it and waits until the 50 events are searchable.
 * The returned object talks to it; `stop()` kills it and removes its files.
 *
 * `fresh: true` starts a node as an operator would the first time: no
 * preset admin password (sluice generates one, prints it once and marks it
 * one-time; `node.generatedPassword` reads it from the log), admins without
 * TOTP, no seed events.
 */
export async function startNode({ fresh = false } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-ui-e2e-'));
  const port = await freePort();
  const port2 = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const cfg = join(dir, 'node.toml');
  const store = storage(dir);
  writeFileSync(
    cfg,
    `[node]
data_dir = "${dir}"
[api]
address = "127.0.0.1:${port}"
[api.tokens.admin]
token = "${ADMIN}"
allowed = [{ group = "*" }]
[api.tokens.acme]
token = "${ACME}"
allowed = [{ group = "acme" }]
[pipelines.main]
batch_size = 64
batch_delay = "10ms"
[pipelines.main.sources.acme]
type = "http"
address = "api"
[pipelines.main.sources.acme.tokens.acme]
token = "${INGEST.acme}"
group = "acme"
subgroup = "web"
[pipelines.main.sources.globex]
type = "http"
address = "127.0.0.1:${port2}"
[pipelines.main.sources.globex.tokens.globex]
token = "${INGEST.globex}"
group = "globex"
${store.toml}[auth]
${fresh ? '' : '[auth.totp]\nrequire_types = ["admin"]\n'}`,
  );
  let log = '';
  const proc = spawn(BIN, ['run', cfg], { stdio: ['ignore', 'pipe', 'pipe'], env: fresh ? withoutPreset(process.env) : { ...process.env, SLUICE_ADMIN_PASSWORD: ADMIN_PASSWORD } });
  proc.stdout.on('data', (d) => (log += d));
  proc.stderr.on('data', (d) => (log += d));

  const node = {
    base,
    usersApi: false,
    /** Everything the node printed so far (and page errors the tests add). */
    get log() {
      return log;
    },
    note(s) {
      log += s;
    },
    /** The first admin's password as the node printed it (fresh nodes). */
    get generatedPassword() {
      return /password: (\S+)/.exec(log)?.[1] ?? null;
    },
    /** A JSON call with a bearer token (the admin static token by default). */
    async api(method, path, { token = ADMIN, body, to } = {}) {
      const r = await fetch(`${to ?? base}${path}`, {
        method,
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: typeof body === 'string' ? body : body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await r.text();
      return { status: r.status, json: text ? JSON.parse(text) : null, text };
    },
    /** Sends ndjson events to a group's http source; returns when accepted. */
    async ingest(group, events) {
      const to = group === 'acme' ? base : `http://127.0.0.1:${port2}`;
      const r = await fetch(`${to}/ndjson`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-ndjson', Authorization: `Bearer ${INGEST[group]}` },
        body: events.map((e) => JSON.stringify(e)).join('\n') + '\n',
      });
      assert.equal(r.status, 200, `ingest ${group}: ${await r.text()}`);
    },
    /** The number of stored events matching `query` for `token`, -1 on an error. */
    async total(query, token = ADMIN) {
      const r = await node.api('POST', '/api/v1/search', { token, body: { query, size: 1 } });
      return r.status === 200 ? r.json.total : -1;
    },
    /** Kills the node and removes its files; prints its log when a test failed (or with E2E_LOG=1). */
    async stop() {
      proc.kill('SIGTERM');
      await store.cleanup();
      if ((process.exitCode || process.env.E2E_LOG) && log) console.error(`--- sluice log ---\n${log.slice(-4000)}`);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await waitFor('the node', async () => (await fetch(`${base}/_node/stats`).catch(() => null))?.ok);
    if (fresh) {
      await waitFor('the generated password in the log', async () => node.generatedPassword);
      return node;
    }
    await node.ingest('acme', SEED.acme);
    await node.ingest('globex', SEED.globex);
    await waitFor('50 stored events', async () => (await node.total('')) === 50);
    node.usersApi = ((await (await fetch(`${base}/api/v1/auth/config`)).json()).methods ?? []).includes('password');
  } catch (e) {
    process.exitCode = 1;
    await node.stop();
    throw e;
  }
  return node;
}

/** A dashboard of the 30 "acme request" seed events by level (issue 22
 * drill-down and split-by steps): a bar and a table of the levels, and
 * the requests over time per level. */
export function drillDashboard(title) {
  const q = '"acme request"';
  const panel = (id, name, chart, aggs, x, y, options = {}) => ({ id, title: name, chart, query: q, aggs, options, layout: { x, y, w: 6, h: 3 } });
  return {
    title, description: '', sharing: { everyone: false, groups: [] }, time: { from: 'now-7d', to: null }, refresh: null,
    panels: [
      panel('bars', 'Levels bars', 'bar', { a: { type: 'terms', field: 'level', size: 5 } }, 0, 0),
      panel('rows', 'Levels table', 'table', { a: { type: 'terms', field: 'level', size: 5 } }, 6, 0),
      panel('split', 'Requests per level', 'timeseries', { a: { type: 'date_histogram', buckets: 60 } }, 0, 3, { metric: 'histogram', split: { field: 'level', size: 3 } }),
    ],
  };
}

/** The environment without a preset admin password. */
function withoutPreset(env) {
  const { SLUICE_ADMIN_PASSWORD: _preset, ...rest } = env;
  return rest;
}

/**
 * TOTP codes for sign-ins: the code of the next 30 s step (the server
 * accepts one step ahead, and the current step's code may already have been
 * used by the enrolment). A step once used is refused (no replays), so a
 * second sign-in within the same step waits for the next one.
 */
export function signInCodes() {
  let lastStep = 0;
  return async (secret) => {
    let step = Math.floor(Date.now() / 30000) + 1;
    while (step <= lastStep) {
      await new Promise((r) => setTimeout(r, 30000 - (Date.now() % 30000) + 200));
      step = Math.floor(Date.now() / 30000) + 1;
    }
    lastStep = step;
    return totp(base32(secret), step * 30);
  };
}
