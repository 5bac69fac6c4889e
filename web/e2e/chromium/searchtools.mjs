// Issue #22, missing 4–8 and 10: query help (field names and top values
// under the caret, recent queries, syntax help), the time picker (typed
// ranges, zoom out, earlier / later, recently used, 90 days, today),
// oldest first, column reorder, auto-refresh, field coverage of the hits,
// dark mode and a 900 px window, dashboard JSON export / import and panel
// duplication.
// Starts signed out (the last step of issue22.mjs) and signs in as bob (acme).
import assert from 'node:assert/strict';
import { WAIT, base, page, ingest, total, step, shot, count, hitCount, passwordSignIn, sessionCall } from './harness.mjs';
import { ACME, BOB_PASSWORD, waitFor } from '../node.mjs';

const input = () => page.getByRole('searchbox', { name: 'Query' });
const options = () => page.locator('.query-suggestions [role="option"] .v').allTextContents();
const param = (k) => new URL(page.url()).searchParams.get(k);

step('issue 22 missing 4: the query bar suggests field names and the top values of the caller\'s events, remembers queries, explains the syntax', async () => {
  await passwordSignIn('bob', BOB_PASSWORD);
  // Signed in (the sign-in form was already at /search).
  await page.getByRole('button', { name: 'Sign out' }).waitFor(WAIT);
  await page.goto(`${base}/search?from=now-7d`);
  await hitCount();
  await input().click();
  await input().fill('');
  await page.keyboard.type('servi');
  await page.locator('.query-suggestions[aria-label="Fields"] [role="option"]', { hasText: 'service' }).waitFor(WAIT);
  assert.deepEqual(await options(), ['service']);
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  assert.equal(await input().inputValue(), 'service:');
  // Top values of bob's events only: acme's api and web, never globex's vault.
  await page.locator('.query-suggestions[aria-label="Top values"]').waitFor(WAIT);
  assert.deepEqual((await options()).sort(), ['api', 'web']);
  await page.locator('.query-suggestions [role="option"]', { hasText: 'web' }).click();
  assert.equal(await input().inputValue(), 'service:web ');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => new URLSearchParams(location.search).get('q') === 'service:web', null, WAIT);
  assert.equal(await hitCount(), await total('service:web', ACME));
  assert.equal(await total('service:web', ACME), 15);
  // The empty bar offers the recent queries, newest first; one runs on a click.
  await input().fill('');
  await page.locator('.query-suggestions[aria-label="Recent queries"]').waitFor(WAIT);
  assert.equal((await options())[0], 'service:web');
  await page.keyboard.type('level:error');
  await page.keyboard.press('Enter');
  assert.equal(await hitCount(), await total('level:error', ACME));
  await input().fill('');
  await page.locator('.query-suggestions[aria-label="Recent queries"] [role="option"]', { hasText: 'service:web' }).click();
  await page.waitForFunction(() => new URLSearchParams(location.search).get('q') === 'service:web', null, WAIT);
  assert.equal(await hitCount(), 15);
  // The syntax in short.
  await page.getByRole('button', { name: 'Query syntax help' }).click();
  const help = page.getByRole('dialog', { name: 'Query syntax' });
  await help.waitFor(WAIT);
  assert.match(await help.textContent(), /_exists_:trace_id/);
  await shot('query-help');
  await page.keyboard.press('Escape');
  assert.equal(await help.count(), 0);
});

step('issue 22 missing 5: typed relative ranges, zoom out, earlier / later, recently used, 90 days and today', async () => {
  const all = await total('', ACME);
  await page.goto(`${base}/search`);
  await hitCount();
  const picker = page.locator('.time-picker button[aria-haspopup="dialog"]');
  await picker.click();
  await page.getByLabel('Typed range').fill('now-2h');
  await page.locator('.typed-form button[type="submit"]').click();
  await page.waitForFunction(() => new URLSearchParams(location.search).get('from') === 'now-2h', null, WAIT);
  assert.equal(await hitCount(), all);
  assert.equal((await picker.textContent()).trim(), 'Since now-2h ▾');
  // A bad one is refused with the reason.
  await picker.click();
  await page.getByLabel('Typed range').fill('now-1h to now-2h');
  await page.locator('.typed-form button[type="submit"]').click();
  await page.getByText('Type now-2h, now-7d to now-1d, or two times around “to”.').waitFor(WAIT);
  await page.keyboard.press('Escape');
  await page.getByRole('button', { name: 'Zoom out' }).click();
  await page.waitForFunction(() => new URLSearchParams(location.search).get('from') === 'now-4h', null, WAIT);
  assert.equal(await hitCount(), all);
  // Four hours earlier: nothing was sent then; four hours later: everything again.
  assert.equal(await page.getByRole('button', { name: 'Later' }).isDisabled(), true);
  await page.getByRole('button', { name: 'Earlier' }).click();
  await page.waitForFunction(() => /^\d{4}-/.test(new URLSearchParams(location.search).get('to') ?? ''), null, WAIT);
  assert.equal(Date.parse(param('to')) - Date.parse(param('from')), 4 * 3600_000);
  assert.equal(await hitCount(), 0);
  await page.getByRole('button', { name: 'Later' }).click();
  await page.waitForFunction(() => Date.parse(new URLSearchParams(location.search).get('to') ?? '') > Date.now() - 3600_000, null, WAIT);
  assert.equal(await hitCount(), all);
  // The typed range is the one recently used; 90 days and today are offered.
  await picker.click();
  assert.deepEqual(await page.locator('[aria-label="Recently used ranges"] button').allTextContents(), ['Since now-2h']);
  await shot('time-picker');
  await page.getByRole('button', { name: 'Last 90 days' }).click();
  await page.waitForFunction(() => new URLSearchParams(location.search).get('from') === 'now-90d', null, WAIT);
  assert.equal(await hitCount(), all);
  await picker.click();
  await page.getByRole('button', { name: 'Today', exact: true }).click();
  await page.waitForFunction(() => (new URLSearchParams(location.search).get('from') ?? '').endsWith('Z'), null, WAIT);
  assert.equal((await picker.textContent()).trim(), 'Today ▾');
  const midnight = new Date(Date.parse(param('from')));
  assert.deepEqual([midnight.getHours(), midnight.getMinutes(), midnight.getSeconds()], [0, 0, 0]);
});

step('issue 22 missing 6: oldest first, columns moved, and auto-refresh shows new events by itself', async () => {
  for (let i = 0; i < 3; i++) {
    await ingest('acme', [{ message: `order probe ${i}`, seq: i }]);
    await waitFor(`order probe ${i} stored`, async () => (await total('"order probe"', ACME)) === i + 1);
  }
  await page.goto(`${base}/search?q=${encodeURIComponent('"order probe"')}&from=now-7d&cols=seq,message`);
  assert.equal(await hitCount(), 3);
  const seqs = () => page.locator('tr.hit td:nth-child(2)').allTextContents();
  assert.deepEqual(await seqs(), ['2', '1', '0']);
  await page.getByLabel('Sort').selectOption('oldest');
  await page.waitForFunction(() => new URLSearchParams(location.search).get('order') === 'oldest', null, WAIT);
  await page.waitForFunction(() => document.querySelector('tr.hit td:nth-child(2)')?.textContent === '0', null, WAIT);
  assert.deepEqual(await seqs(), ['0', '1', '2']);
  // Move message before seq: the URL and the table follow.
  await page.getByRole('button', { name: 'Move column message left' }).click();
  await page.waitForFunction(() => new URLSearchParams(location.search).get('cols') === 'message,seq', null, WAIT);
  assert.deepEqual((await page.locator('thead th').allTextContents()).map((t) => t.replace(/[‹›×]/g, '').trim()), ['Time', 'message', 'seq']);
  assert.deepEqual(await page.locator('tr.hit td:nth-child(3)').allTextContents(), ['0', '1', '2']);
  // Missing 7: the field list says which share of these hits has each field, and can list only those.
  const pct = (name) => page.locator('.field-row', { has: page.locator('.field-name', { hasText: new RegExp(`^. ${name}$`) }) }).locator('.coverage-pct').textContent();
  await page.locator('.field-name', { hasText: /^. seq$/ }).waitFor(WAIT);
  assert.equal(await pct('seq'), '100%');
  assert.equal(await pct('pid'), '0%');
  await page.getByLabel('Only fields in the 3 hits shown').check();
  const listed = (await page.locator('.field-name').allTextContents()).map((t) => t.trim().split(' ').pop());
  assert.ok(listed.includes('seq') && listed.includes('message') && !listed.includes('pid'), listed.join(', '));
  await page.getByLabel('Only fields in the 3 hits shown').uncheck();
  // Every 5 s: an event sent now shows up without touching the page.
  await page.getByLabel('Auto-refresh').selectOption('5s');
  await page.waitForFunction(() => new URLSearchParams(location.search).get('refresh') === '5s', null, WAIT);
  await ingest('acme', [{ message: 'order probe 3', seq: 3 }]);
  await page.waitForFunction(() => document.querySelector('#hit-count')?.getAttribute('data-count') === '4', null, WAIT);
  assert.deepEqual(await page.locator('tr.hit td:nth-child(3)').allTextContents(), ['0', '1', '2', '3']);
  await shot('oldest-first-refresh');
  await page.getByLabel('Auto-refresh').selectOption('');
  await page.waitForFunction(() => !new URLSearchParams(location.search).has('refresh'), null, WAIT);
});

step('issue 22 missing 10: dark mode follows the system; at 900 px nothing scrolls sideways and the field list folds away', async () => {
  const rootBg = () => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
  const tableBg = () => page.evaluate(() => getComputedStyle(document.querySelector('.result-list table')).backgroundColor);
  await page.goto(`${base}/search?from=now-7d&cols=service,level`);
  await hitCount();
  assert.equal(await rootBg(), 'rgb(248, 250, 252)');
  await page.emulateMedia({ colorScheme: 'dark' });
  try {
    assert.equal(await rootBg(), 'rgb(11, 17, 32)');
    assert.equal(await tableBg(), 'rgb(17, 24, 39)');
    assert.equal(await page.evaluate(() => getComputedStyle(document.querySelector('input[name="query"]')).color), 'rgb(229, 231, 235)');
    await shot('dark-search');
    // Checked at once after each resize, before the chart's ResizeObserver may have run:
    // a chart still at its old width must not make the page scroll sideways (CI saw it).
    const overflow = () => page.evaluate(() => {
      const wide = [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > 900);
      return { width: document.documentElement.scrollWidth, wide: wide.slice(0, 6).map((e) => `${e.tagName}.${e.className} ${Math.round(e.getBoundingClientRect().right)}`).join(' | ') };
    });
    for (let i = 0; i < 10; i++) {
      await page.setViewportSize({ width: 1280, height: 800 });
      await page.waitForFunction(() => document.querySelector('.chart .uplot')?.getBoundingClientRect().right > 1000, null, WAIT);
      await page.setViewportSize({ width: 900, height: 700 });
      const o = await overflow();
      assert.ok(o.width <= 900, `no sideways scroll at 900 px (resize ${i}): scrollWidth ${o.width}; wider than the window: ${o.wide}`);
    }
    // Once it has run, the chart fits the narrower window.
    await page.waitForFunction(() => document.querySelector('.chart .uplot')?.getBoundingClientRect().right <= 900, null, WAIT);
    const sidebar = page.locator('#field-sidebar');
    assert.equal(await sidebar.isVisible(), true);
    const before = (await page.locator('main.results').boundingBox()).width;
    await page.locator('.sidebar-toggle').click();
    assert.equal(await sidebar.isVisible(), false);
    assert.equal(await page.locator('.sidebar-toggle').getAttribute('aria-expanded'), 'false');
    const after = (await page.locator('main.results').boundingBox()).width;
    assert.ok(after > before + 150, `${before} → ${after}`);
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 900), 'no sideways scroll without the sidebar');
    await shot('dark-900');
    await page.locator('.sidebar-toggle').click();
    assert.equal(await sidebar.isVisible(), true);
    assert.ok((await count('#field-sidebar .field-name')) > 5);
  } finally {
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 1280, height: 800 });
  }
  assert.equal(await rootBg(), 'rgb(248, 250, 252)');
});

step('issue 22 missing 7: "Visualize" on a field makes a dashboard panel of its top values in the search', async () => {
  await page.goto(`${base}/search?q=${encodeURIComponent('level:error')}&from=now-7d`);
  assert.equal(await hitCount(), await total('level:error', ACME));
  await page.locator('.field-name', { hasText: /^. service$/ }).click();
  await page.getByRole('button', { name: 'Visualize service' }).click();
  await page.waitForFunction(() => /^\/dashboards\/\d+$/.test(location.pathname) && location.search === '?edit=1', null, WAIT);
  const id = new URL(page.url()).pathname.split('/').pop();
  await page.locator('section.panel[aria-label="Top service"]').waitFor(WAIT);
  const d = JSON.parse((await sessionCall('GET', `/api/v1/dashboards/${id}`)).text);
  assert.equal(d.title, 'service: top values');
  assert.deepEqual(d.time, { from: 'now-7d', to: null });
  assert.deepEqual(d.panels.map((p) => [p.title, p.chart, p.query, p.aggs.a]), [['Top service', 'bar', 'level:error', { type: 'terms', field: 'service', size: 10 }]]);
  // The panel's data, as the dashboard asks it: bob's error events by service.
  const data = JSON.parse((await sessionCall('POST', `/api/v1/dashboards/${id}/data`, {})).text);
  const buckets = Object.values(data.panels)[0].aggregate.aggs.a.buckets;
  assert.equal(buckets.reduce((n, b) => n + b.count, 0), await total('level:error AND _exists_:service', ACME));
  assert.equal(await count('section.panel[aria-label="Top service"] .no-data'), 0);
  await shot('visualize-field');
});

step('issue 22 missing 8: a panel is duplicated, the dashboard exported as JSON and imported again as a new private one', async () => {
  const panel = { id: 'p1', title: 'Probe count', chart: 'number', query: '"order probe"', size: 1, options: { metric: 'count' }, layout: { x: 0, y: 0, w: 6, h: 3 } };
  const created = await sessionCall('POST', '/api/v1/dashboards', { title: 'Bob board', description: 'probes', sharing: { everyone: true, groups: [] }, time: { from: 'now-7d', to: null }, refresh: null, panels: [panel] });
  assert.equal(created.status, 201, created.text);
  const id = JSON.parse(created.text).id;
  await page.goto(`${base}/dashboards/${id}`);
  await page.getByRole('button', { name: 'Edit', exact: true }).click();
  await page.getByRole('button', { name: 'Duplicate panel Probe count' }).click();
  await page.locator('section.panel[aria-label="Probe count (copy)"]').waitFor(WAIT);
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('button', { name: 'Edit', exact: true }).waitFor(WAIT);
  const saved = JSON.parse((await sessionCall('GET', `/api/v1/dashboards/${id}`)).text);
  assert.deepEqual(saved.panels.map((p) => [p.title, p.layout.x, p.layout.y, p.layout.w, p.layout.h]), [['Probe count', 0, 0, 6, 3], ['Probe count (copy)', 6, 0, 6, 3]]);
  // The copy counts the same four probe events.
  await page.locator('section.panel[aria-label="Probe count (copy)"]', { hasText: '4' }).waitFor(WAIT);
  const [download] = await Promise.all([page.waitForEvent('download', WAIT), page.getByRole('link', { name: 'Export JSON' }).click()]);
  assert.equal(download.suggestedFilename(), 'bob-board.json');
  const file = await download.path();
  const { readFileSync } = await import('node:fs');
  const exported = JSON.parse(readFileSync(file, 'utf8'));
  assert.deepEqual(Object.keys(exported), ['format', 'title', 'description', 'time', 'refresh', 'panels']);
  assert.equal(exported.panels.length, 2);
  // Imported: a new dashboard with both panels, private to its importer.
  await page.getByRole('link', { name: 'Dashboards' }).click();
  await page.getByLabel('Import JSON').setInputFiles(file);
  await page.waitForFunction((old) => /^\/dashboards\/\d+$/.test(location.pathname) && location.pathname !== `/dashboards/${old}`, id, WAIT);
  const newId = Number(new URL(page.url()).pathname.split('/').pop());
  await page.getByRole('heading', { name: 'Bob board' }).waitFor(WAIT);
  assert.equal(await count('section.panel'), 2);
  const imported = JSON.parse((await sessionCall('GET', `/api/v1/dashboards/${newId}`)).text);
  assert.equal(imported.owner, 'bob');
  assert.deepEqual(imported.sharing, { everyone: false, groups: [] });
  assert.deepEqual(imported.panels.map((p) => p.title), ['Probe count', 'Probe count (copy)']);
  // A file that is not a dashboard is refused with the reason.
  await page.getByRole('link', { name: 'Dashboards' }).click();
  await page.getByLabel('Import JSON').setInputFiles({ name: 'bad.json', mimeType: 'application/json', buffer: Buffer.from('{"panels": []}') });
  await page.getByText('bad.json: not a dashboard: "title" must be a non-empty string').waitFor(WAIT);
  await shot('dashboard-import');
});
