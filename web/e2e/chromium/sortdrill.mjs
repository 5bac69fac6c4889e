// Issue 22, the last parts: sorting by a column, dashboard drill-down and
// split-by series, and the one-time password notice of a node's first
// administrator. Runs after searchtools.mjs (signed in as bob, group acme,
// with four "order probe" events seq 0–3).
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { WAIT, base, page, ingest, total, step, shot, hitCount, sessionCall } from './harness.mjs';
import { ACME, drillDashboard, hitCountAnswered, startNode, waitFor } from '../node.mjs';

step('issue 22 missing 6: a click on a column name sorts by it (ascending, descending, back to time), in the URL; events without it last', async () => {
  await ingest('acme', [{ message: 'order probe without seq' }]);
  await waitFor('the probe without seq stored', async () => (await total('"order probe"', ACME)) === 5);
  await page.goto(`${base}/search?q=${encodeURIComponent('"order probe"')}&from=now-7d&cols=seq`);
  assert.equal(await hitCount(), 5);
  const seqs = () => page.locator('tr.hit td:nth-child(2)').allTextContents();
  const sortParam = (v) => page.waitForFunction((v) => new URLSearchParams(location.search).get('sort') === v, v, WAIT);
  const firstSeq = (v) => page.waitForFunction((v) => document.querySelector('tr.hit td:nth-child(2)')?.textContent === v, v, WAIT);
  // Time order: the newest first (the one without seq).
  assert.deepEqual(await seqs(), ['', '3', '2', '1', '0']);
  await page.locator('thead').getByRole('button', { name: 'seq', exact: true }).click();
  await sortParam('seq:asc');
  await firstSeq('0');
  assert.deepEqual(await seqs(), ['0', '1', '2', '3', '']);
  assert.equal(await page.locator('th[aria-sort="ascending"]').count(), 1);
  assert.equal(await page.getByLabel('Sort').inputValue(), 'field');
  await page.locator('thead').getByRole('button', { name: 'seq ▲' }).click();
  await sortParam('seq:desc');
  await firstSeq('3');
  assert.deepEqual(await seqs(), ['3', '2', '1', '0', '']);
  await shot('sort-by-field');
  // The URL alone brings it back after a reload.
  await page.reload();
  await page.waitForFunction(hitCountAnswered, null, WAIT);
  await firstSeq('3');
  assert.deepEqual(await seqs(), ['3', '2', '1', '0', '']);
  // A third click goes back to time order.
  await page.locator('thead').getByRole('button', { name: 'seq ▼' }).click();
  await page.waitForFunction(() => !new URLSearchParams(location.search).has('sort'), null, WAIT);
  await firstSeq('');
  assert.deepEqual(await seqs(), ['', '3', '2', '1', '0']);
});

step('issue 22 missing 8: a bar, a table row and a time bucket of a panel drill down to Search; a split-by histogram has a series and legend entry per value', async () => {
  const q = '"acme request"';
  const [errors, infos] = [await total(`${q} AND level:error`, ACME), await total(`${q} AND level:info`, ACME)];
  assert.deepEqual([errors, infos], [10, 20]);
  const created = await sessionCall('POST', '/api/v1/dashboards', drillDashboard('Drill board'));
  assert.equal(created.status, 201, created.text);
  const board = `${base}/dashboards/${JSON.parse(created.text).id}`;
  const openBoard = async () => {
    await page.goto(board);
    await page.locator('section.panel[aria-label="Levels table"] th button.drill').first().waitFor(WAIT);
  };
  const landed = async (want) => {
    await page.waitForURL(/\/search\?/, WAIT);
    const p = new URL(page.url()).searchParams;
    return { q: p.get('q'), from: p.get('from'), n: await hitCount(), want };
  };
  // Split by level: one series per value, a legend of both.
  await openBoard();
  const split = page.locator('section.panel[aria-label="Requests per level"]');
  await split.locator('.split-legend li').nth(1).waitFor(WAIT);
  assert.deepEqual((await split.locator('.split-legend li').allTextContents()).map((t) => t.trim()), ['info', 'error']);
  assert.equal(await split.locator('.chart').getAttribute('aria-label'), '2 series: info, error');
  await shot('dashboard-split-by');
  // The legend entry opens that value's events.
  await split.getByRole('button', { name: 'error' }).click();
  let r = await landed(errors);
  assert.deepEqual([r.q, r.from, r.n], [`${q} AND level:"error"`, 'now-7d', errors]);
  // A table row.
  await openBoard();
  await page.locator('section.panel[aria-label="Levels table"] th button.drill', { hasText: 'info' }).click();
  r = await landed(infos);
  assert.deepEqual([r.q, r.from, r.n], [`${q} AND level:"info"`, 'now-7d', infos]);
  // A bar: info first (most events), error second; click the second.
  await openBoard();
  const over = await page.locator('section.panel[aria-label="Levels bars"] .u-over').boundingBox();
  await page.mouse.click(over.x + over.width * 0.75, over.y + over.height - 3);
  r = await landed(errors);
  assert.deepEqual([r.q, r.from, r.n], [`${q} AND level:"error"`, 'now-7d', errors]);
  // A time bucket of the split chart: the panel's query over that bucket's range.
  await openBoard();
  const plot = await split.locator('.u-over').boundingBox();
  await page.mouse.click(plot.x + plot.width - 2, plot.y + plot.height / 2);
  await page.waitForURL(/\/search\?/, WAIT);
  const p = new URL(page.url()).searchParams;
  assert.equal(p.get('q'), q);
  assert.match(p.get('from'), /^\d{4}-\d\d-\d\dT/);
  const inBucket = JSON.parse((await sessionCall('POST', '/api/v1/search', { query: q, from: p.get('from'), to: p.get('to'), size: 1 })).text).total;
  assert.equal(await hitCount(), inBucket);
  assert.ok(Date.parse(p.get('to')) - Date.parse(p.get('from')) <= 3 * 3600_000, `${p.get('from')} … ${p.get('to')}`);
});

step('issue 22 confusing: the first admin of a fresh node sees the one-time password notice until the password is changed', async () => {
  const fresh = await startNode({ fresh: true });
  const b = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  try {
    const tab = await (await b.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    const generated = fresh.generatedPassword;
    assert.ok(generated && generated.length >= 16, 'the node printed a generated password');
    await tab.goto(`${fresh.base}/`);
    await tab.getByLabel('User name').fill('admin');
    await tab.getByLabel('Password').fill(generated);
    await tab.getByRole('button', { name: 'Sign in' }).click();
    await tab.waitForURL(/\/search/, WAIT);
    const notice = tab.locator('.one-time-password');
    await notice.waitFor(WAIT);
    const before = await tab.evaluate(async () => (await fetch('/api/v1/me')).json());
    assert.equal(before.user.password_one_time, true);
    assert.match(await notice.textContent(), /one-time password printed when sluice first started/);
    await tab.screenshot({ path: `${process.env.ARTIFACTS ?? '../.cache/artifacts/browser'}/one-time-password.png`, fullPage: true });
    // On every page until replaced: the link leads to the form.
    await tab.getByRole('link', { name: 'Replace it now' }).click();
    await tab.waitForURL(/\/account/, WAIT);
    await tab.getByLabel('Current password').fill(generated);
    await tab.getByLabel('New password').fill('a-chosen-password-0123456789');
    await tab.getByRole('button', { name: 'Change password' }).click();
    await tab.locator('.one-time-password').waitFor({ state: 'detached', ...WAIT });
    await tab.goto(`${fresh.base}/search`);
    await tab.locator('#hit-count').waitFor(WAIT);
    assert.equal(await tab.locator('.one-time-password').count(), 0);
    const me = await tab.evaluate(async () => (await fetch('/api/v1/me')).json());
    assert.equal(me.user.password_one_time, false);
  } finally {
    await b.close();
    await fresh.stop();
  }
});
