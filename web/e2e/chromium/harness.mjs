// The harness of the Chromium journey: the node (node.mjs) and the browser
// page shared by every step file, in order, and the helpers the steps use.
// Steps read `page`, `base`, `node` … as live bindings (set in before()).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { chromium } from 'playwright-core';
import { ART, WAIT_MS, hitCountAnswered, signInCodes, startNode } from '../node.mjs';

export const WAIT = { timeout: WAIT_MS };

export let node, base, browser, page;

export const ingest = (group, events) => node.ingest(group, events);
export const total = (query, token) => node.total(query, token);

/** A test step that leaves a screenshot `failed-<n>.png` when it fails. */
let stepNo = 0;
export function step(name, fn) {
  const n = ++stepNo;
  test(name, async (t) => {
    try {
      await fn(t);
    } catch (e) {
      await page?.screenshot({ path: join(ART, `failed-${n}.png`), fullPage: true }).catch(() => {});
      throw e;
    }
  });
}

export const shot = (name) => page.screenshot({ path: join(ART, `${name}.png`), fullPage: true });
export const count = (sel) => page.locator(sel).count();

export async function search(q) {
  const input = page.getByRole('searchbox', { name: 'Query' });
  await input.fill(q);
  await input.press('Enter');
}

/** The count of the search answered for the query in the URL (a count
 * still showing the previous query's answer is waited out). */
export async function hitCount() {
  await page.waitForFunction(hitCountAnswered, null, WAIT);
  return Number(await page.getAttribute('#hit-count', 'data-count'));
}

before(async () => {
  node = await startNode();
  base = node.base;
  assert.ok(node.usersApi, 'the node has the users API (GET /api/v1/auth/config offers password)');
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-default-apps', '--metrics-recording-only', '--mute-audio'],
  });
  // A context of its own, so a test can open a second tab in it (same cookies and storage).
  page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  page.on('pageerror', (e) => node.note(`\n[page error] ${e.message}`));
});

after(async () => {
  await browser?.close();
  await node?.stop();
});


export const nextCode = signInCodes();

/** Signs in through the login form; returns when the next page shows. */
export async function passwordSignIn(user, password, secret) {
  await page.getByLabel('User name').fill(user);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  if (secret) {
    await page.getByLabel('Code').fill(await nextCode(secret));
    await page.getByRole('button', { name: 'Verify' }).click();
  }
}

/** A JSON call with the browser's session cookie and CSRF token. */
export function sessionCall(method, path, body) {
  return page.evaluate(
    async ([method, path, body]) => {
      const csrf = /(?:^|; )sluice_csrf=([^;]*)/.exec(document.cookie)?.[1] ?? '';
      const r = await fetch(path, { method, headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': decodeURIComponent(csrf) }, body: body && JSON.stringify(body) });
      return { status: r.status, text: await r.text() };
    },
    [method, path, body],
  );
}

export async function signOut() {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForSelector('form[aria-label="Sign in"]', WAIT);
}

export let totpSecret = null;
export let recoveryCodes = [];


/** Keeps what the enrolment showed (the TOTP secret, the recovery codes) for later steps. */
export function rememberEnrolment(secret, codes) {
  totpSecret = secret;
  recoveryCodes = codes;
}

