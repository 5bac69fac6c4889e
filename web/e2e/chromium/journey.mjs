// The core journey: the UI served, sign-in with enrolment, search, zoom,
// isolation between groups, dashboards, live feed, operations.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WAIT, base, page, ingest, total, step, shot, count, search, hitCount, passwordSignIn, sessionCall, signOut, totpSecret, rememberEnrolment } from './harness.mjs';
import { ACME, ADMIN, ADMIN_PASSWORD, BOB_PASSWORD, INGEST, waitFor } from '../node.mjs';
import { base32, totp } from '../totp.mjs';

test('the TOTP helper matches RFC 6238', () => {
  const key = Buffer.from('12345678901234567890');
  assert.equal(totp(key, 59, 8), '94287082');
  assert.equal(totp(key, 1111111109, 8), '07081804');
  assert.equal(totp(key, 2000000000, 8), '69279037');
  assert.equal(base32('GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ').toString(), '12345678901234567890');
});

test('the UI is served at / with its assets and SPA fallback', async () => {
  const html = await fetch(`${base}/dashboards/42`, { headers: { Accept: 'text/html' } });
  assert.equal(html.status, 200);
  assert.match(html.headers.get('content-type'), /^text\/html/);
  const body = await html.text();
  const js = body.match(/src="(\/assets\/[^"]+\.js)"/)?.[1];
  assert.ok(js, body);
  const asset = await fetch(`${base}${js}`);
  assert.equal(asset.headers.get('cache-control'), 'public, max-age=31536000, immutable');
  assert.match(asset.headers.get('content-type'), /^text\/javascript/);
  // The Elasticsearch handshake still answers JSON clients at / — those
  // with an ingest token (issue #18: ingest is authenticated, as on
  // Elasticsearch with security on); without one it is a 401.
  const anon = await fetch(`${base}/`, { headers: { Accept: 'application/json' } });
  assert.equal(anon.status, 401);
  assert.equal((await anon.json()).error.type, 'security_exception');
  const es = await fetch(`${base}/`, {
    headers: { Accept: 'application/json', Authorization: `Bearer ${INGEST.acme}` },
  });
  assert.equal((await es.json()).tagline, 'You Know, for Search');
});

step('sign in', async () => {
  await page.goto(`${base}/`);
  await page.waitForSelector('form[aria-label="Sign in"]', WAIT);
  await shot('login');
  {
    // The first admin must use TOTP: the first sign-in enrols it.
    await passwordSignIn('admin', ADMIN_PASSWORD);
    await page.waitForURL(/\/enrol/, WAIT);
    const secret = (await page.textContent('#totp-secret')).trim();
    await shot('enrol');
    await page.getByLabel('Code').fill(totp(base32(secret)));
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.waitForSelector('#recovery-codes li', WAIT);
    assert.equal(await count('#recovery-codes li'), 10);
    rememberEnrolment(secret, await page.locator('#recovery-codes li code').allTextContents());
    // Issue 22 item 4: the first click on "continue" leaves the enrolment
    // page for the search (it used to bounce back to /enrol, showing the
    // codes again, until a second click).
    await page.getByRole('button', { name: /continue/ }).click();
    assert.equal(await hitCount(), 50);
    assert.equal(new URL(page.url()).pathname, '/search');
    assert.equal(await count('#recovery-codes'), 0);
    // An operator who may read group acme only.
    assert.equal((await sessionCall('POST', '/api/v1/users', { username: 'bob', type: 'operator', password: BOB_PASSWORD })).status, 201);
    const a = await sessionCall('POST', '/api/v1/assignments', { subject: { kind: 'user', name: 'bob' }, pattern: { group: 'acme', subgroup: '*', host: '*' } });
    assert.equal(a.status, 201, a.text);
    // Password + TOTP, the code computed from the enrolment secret.
    await signOut();
    await page.getByLabel('User name').fill('admin');
    await page.getByLabel('Password').fill('wrong password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Wrong user name or password.').waitFor(WAIT);
    await passwordSignIn('admin', ADMIN_PASSWORD, totpSecret);
    await page.waitForURL(/\/search/, WAIT);
    await signOut();
    await passwordSignIn('bob', BOB_PASSWORD);
  }
  await page.waitForURL(/\/search/, WAIT);
});

step('search shows the histogram and the results of the signed-in group only', async () => {
  assert.equal(await hitCount(), 30);
  await page.waitForSelector('.histogram[data-total="30"] canvas', WAIT);
  assert.equal(await count('tr.hit'), 30);
  // Newest first.
  const first = await page.locator('tr.hit .summary').first().textContent();
  assert.match(first, /acme request 29$/);
  await shot('search');
});

step('click-drag on the histogram zooms the time range; Back restores it', async () => {
  const over = await page.locator('.histogram .u-over').boundingBox();
  // The events are all in the last bucket: a drag over the older half selects none.
  await page.mouse.move(over.x + over.width * 0.05, over.y + over.height / 2);
  await page.mouse.down();
  await page.mouse.move(over.x + over.width * 0.45, over.y + over.height / 2, { steps: 6 });
  await page.mouse.up();
  await page.waitForFunction(() => /^\d{4}-/.test(new URLSearchParams(location.search).get('from') ?? ''), null, WAIT);
  assert.equal(await hitCount(), 0);
  const params = new URL(page.url()).searchParams;
  const minutes = (Date.parse(params.get('to')) - Date.parse(params.get('from'))) / 60_000;
  assert.ok(minutes > 3 && minutes < 9, `zoomed to ${minutes} min of the 15`);
  await shot('search-zoomed');
  await page.goBack();
  // Back restores the relative range; the count follows once the new search answered.
  await page.waitForFunction(() => !/^\d{4}-/.test(new URLSearchParams(location.search).get('from') ?? ''), null, WAIT);
  await page.waitForFunction(() => document.querySelector('#hit-count')?.getAttribute('data-count') === '30', null, WAIT).catch(() => {});
  assert.equal(await hitCount(), 30);
});

/** Drags across the histogram from `a` to `b` (fractions of its width). */
async function dragHistogram(a, b) {
  const over = await page.locator('.histogram .u-over').boundingBox();
  await page.mouse.move(over.x + over.width * a, over.y + over.height / 2);
  await page.mouse.down();
  await page.mouse.move(over.x + over.width * b, over.y + over.height / 2, { steps: 6 });
  await page.mouse.up();
}

step('issue 22 item 1: zoom keeps the query searched since the page opened and the added columns', async () => {
  await page.goto(`${base}/search?q=level:info&from=now-4h`);
  assert.equal(await hitCount(), 20);
  await page.waitForSelector('.histogram[data-total="20"] canvas', WAIT);
  await search('level:error');
  assert.equal(await hitCount(), 10);
  await page.waitForSelector('.histogram[data-total="10"] canvas', WAIT);
  await page.getByRole('button', { name: 'Add column service' }).click();
  await page.waitForFunction(() => new URLSearchParams(location.search).get('cols') === 'service', null, WAIT);
  // Over the whole width: every event of the 4 hours stays in range.
  await dragHistogram(0.01, 0.995);
  await page.waitForFunction(() => /^\d{4}-/.test(new URLSearchParams(location.search).get('from') ?? ''), null, WAIT);
  const params = new URL(page.url()).searchParams;
  assert.equal(params.get('q'), 'level:error');
  assert.equal(params.get('cols'), 'service');
  assert.equal(await page.getByRole('searchbox', { name: 'Query' }).inputValue(), 'level:error');
  assert.equal(await hitCount(), 10);
  await page.goto(`${base}/search`);
  assert.equal(await hitCount(), 30);
});

step('queries: Enter runs them, "/" focuses the bar, syntax errors point at their position', async () => {
  await page.locator('body').click({ position: { x: 5, y: 700 } });
  await page.keyboard.press('/');
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('name')), 'query');
  await search('level:error');
  assert.equal(await hitCount(), 10);
  assert.match(page.url(), /q=level%3Aerror/);
  await search('level:error AND "oops');
  await page.waitForSelector('#query-error', WAIT);
  assert.equal(await page.getAttribute('#query-error', 'data-position'), '16');
  await shot('search-syntax-error');
  // Expand an event and click a value: it becomes a filter.
  await search('');
  assert.equal(await hitCount(), 30);
  await page.locator('tr.hit button.expand').first().click();
  await page.locator('[data-field="service"] .value-link').first().click();
  await page.waitForFunction(() => new URLSearchParams(location.search).get('q')?.startsWith('service:'), null, WAIT);
  assert.equal(await hitCount(), 15);
  await shot('search-filtered');
});

step("another group's data cannot be seen", async () => {
  await search('globex');
  assert.equal(await hitCount(), 0);
  await search('@group:globex');
  assert.equal(await hitCount(), 0);
  await search('');
  assert.equal(await hitCount(), 30);
  // The field sidebar's top values of @group: acme only.
  await page.locator('.field-name', { hasText: '@group' }).click();
  await page.waitForSelector('.top-values', WAIT);
  const values = await page.locator('.top-values .v').allTextContents();
  assert.deepEqual(values, ['acme']);
  // The API agrees (the UI is not what enforces it).
  assert.equal(await total('globex', ACME), 0);
  assert.equal(await total('globex', ADMIN), 20);
});

/** A panel's place on the grid as the page shows it: `x/w/y/h` (cells, 1-based lines). */
const gridPlace = (title) =>
  page.locator(`section.panel[aria-label="${title}"]`).evaluate((e) => `${e.style.gridColumn} | ${e.style.gridRow}`);

step('a dashboard with two panels is saved and found again after a reload', async () => {
  await page.getByRole('link', { name: 'Dashboards' }).click();
  await page.getByLabel('New dashboard').fill('E2E board');
  await page.getByRole('button', { name: 'Create' }).click();
  await page.waitForURL(/\/dashboards\/\d+\?edit=1/, WAIT);
  await page.getByRole('button', { name: '+ Add panel' }).click();
  await page.getByLabel('Title', { exact: true }).fill('Events over time');
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.getByRole('button', { name: '+ Add panel' }).click();
  await page.getByLabel('Title', { exact: true }).fill('Levels');
  await page.getByLabel('Shows').selectOption('terms');
  await page.getByLabel('Field', { exact: true }).fill('level');
  await page.getByLabel('pie', { exact: true }).check();
  await page.getByRole('button', { name: 'Apply' }).click();
  // Issue 22: a new panel takes the free half beside the first, not a row below.
  assert.equal(await gridPlace('Events over time'), '1 / span 6 | 1 / span 3');
  assert.equal(await gridPlace('Levels'), '7 / span 6 | 1 / span 3');
  // Drag the pie to the top left: the other panel moves down.
  const header = page.locator('section.panel[aria-label="Levels"] header');
  const box = await header.boundingBox();
  await page.mouse.move(box.x + 20, box.y + 10);
  await page.mouse.down();
  await page.mouse.move(box.x + 20 - 700, box.y + 10 - 400, { steps: 8 });
  await page.mouse.up();
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('button', { name: 'Edit', exact: true }).waitFor(WAIT);
  const url = page.url();
  await page.reload();
  await page.waitForSelector('section.panel[aria-label="Levels"] .pie path', WAIT);
  assert.equal(page.url(), url);
  assert.deepEqual(await page.locator('section.panel h3').allTextContents(), ['Events over time', 'Levels']);
  assert.equal(await page.locator('section.panel[aria-label="Levels"] .pie path').count(), 2);
  const legend = (await page.locator('section.panel[aria-label="Levels"] .legend li').allTextContents()).map((s) => s.trim());
  assert.deepEqual(legend, ['info 20 (67%)', 'error 10 (33%)']);
  assert.equal(await page.getAttribute('section.panel[aria-label="Events over time"] .panel-body', 'data-total'), '30');
  const pie = await page.locator('section.panel[aria-label="Levels"]').evaluate((e) => e.style.gridRow);
  assert.equal(pie.split('/')[0].trim(), '1');
  await shot('dashboard');
});

/** Clicks Save, waits for the saved view, reloads and waits for both panels. */
async function saveAndReload() {
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('button', { name: 'Edit', exact: true }).waitFor(WAIT);
  await page.reload();
  await page.waitForSelector('section.panel[aria-label="Levels"] .pie path', WAIT);
  await page.waitForSelector('section.panel[aria-label="Events over time"] .panel-body[data-total="30"]', WAIT);
}

step('issue 5: a panel resized with the mouse keeps its size after a reload', async () => {
  // From the previous step: Levels 6×3 at the top left, Events over time 6×3 below it.
  assert.equal(await gridPlace('Levels'), '1 / span 6 | 1 / span 3');
  assert.equal(await gridPlace('Events over time'), '1 / span 6 | 4 / span 3');
  await page.getByRole('button', { name: 'Edit', exact: true }).click();
  const handle = page.locator('section.panel[aria-label="Levels"] .resize-handle');
  const h = await handle.boundingBox();
  const grid = await page.locator('.dashboard-grid').boundingBox();
  // One column is (grid width + gap) / 12, one row 80 px + 12 px gap: three columns wider, one row taller.
  const col = (grid.width + 12) / 12;
  await page.mouse.move(h.x + h.width / 2, h.y + h.height / 2);
  await page.mouse.down();
  await page.mouse.move(h.x + h.width / 2 + 3 * col, h.y + h.height / 2 + 92, { steps: 8 });
  // While dragging, the preview already has the new size and pushes the other panel down.
  assert.equal(await gridPlace('Levels'), '1 / span 9 | 1 / span 4');
  assert.equal(await gridPlace('Events over time'), '1 / span 6 | 5 / span 3');
  await page.mouse.up();
  const before = await page.locator('section.panel[aria-label="Levels"]').boundingBox();
  await saveAndReload();
  assert.equal(await gridPlace('Levels'), '1 / span 9 | 1 / span 4');
  assert.equal(await gridPlace('Events over time'), '1 / span 6 | 5 / span 3');
  const after = await page.locator('section.panel[aria-label="Levels"]').boundingBox();
  assert.equal(Math.round(after.width), Math.round(before.width));
  assert.equal(Math.round(after.height), 4 * 80 + 3 * 12);
  // The server has it too.
  const id = new URL(page.url()).pathname.split('/').pop();
  const saved = await sessionCall('GET', `/api/v1/dashboards/${id}`);
  assert.equal(saved.status, 200, saved.text);
  const levels = JSON.parse(saved.text).panels.find((p) => p.title === 'Levels');
  assert.deepEqual(levels.layout, { x: 0, y: 0, w: 9, h: 4 });
  await shot('dashboard-resized');
});

step('issue 5: a panel moves and resizes from the keyboard, and keeps it after a reload', async () => {
  await page.getByRole('button', { name: 'Edit', exact: true }).click();
  // The title bar is a tab stop in edit mode: arrows move it, Shift + arrows resize it.
  const header = page.getByRole('group', { name: 'Levels: arrows move, Shift+arrows resize' });
  assert.equal(await header.getAttribute('tabindex'), '0');
  await header.focus();
  await page.keyboard.press('Shift+ArrowLeft');
  await page.keyboard.press('Shift+ArrowLeft');
  await page.keyboard.press('Shift+ArrowUp');
  await page.keyboard.press('ArrowRight');
  assert.equal(await gridPlace('Levels'), '2 / span 7 | 1 / span 3');
  // Focus stays on the panel being arranged.
  assert.equal(await page.evaluate(() => document.activeElement?.closest('section.panel')?.getAttribute('aria-label')), 'Levels');
  // Down takes it past the panel below (which moves up), Up brings it back.
  await page.keyboard.press('ArrowDown');
  assert.equal(await gridPlace('Levels'), '2 / span 7 | 4 / span 3');
  assert.equal(await gridPlace('Events over time'), '1 / span 6 | 1 / span 3');
  await page.keyboard.press('ArrowUp');
  await saveAndReload();
  assert.equal(await gridPlace('Levels'), '2 / span 7 | 1 / span 3');
  assert.equal(await gridPlace('Events over time'), '1 / span 6 | 4 / span 3');
  await shot('dashboard-keyboard');
});

step('the live feed receives events sent during the test, and only its group', async () => {
  await page.getByRole('link', { name: 'Live' }).click();
  await page.waitForSelector('#live-connection:text("connected")', WAIT);
  await ingest('globex', [{ message: 'globex live secret' }, { message: 'globex live secret 2' }]);
  await ingest('acme', Array.from({ length: 5 }, (_, i) => ({ message: `acme live ${i}`, level: 'info' })));
  await page.waitForSelector('#live-received[data-count="5"]', WAIT);
  await page.waitForFunction(() => document.querySelectorAll('.live-event').length === 5, null, WAIT);
  // The globex events were committed together with these; give a straggler time to show.
  await waitFor('all 57 stored', async () => (await total('')) === 57);
  await page.waitForTimeout(500);
  assert.equal(await page.getAttribute('#live-received', 'data-count'), '5');
  const texts = await page.locator('.live-event').allTextContents();
  assert.equal(texts.filter((t) => t.includes('globex')).length, 0);
  assert.match(texts[0], /acme live 4/);
  await shot('live');
  await page.getByRole('button', { name: 'Pause' }).click();
  await ingest('acme', [{ message: 'while paused' }]);
  await page.waitForSelector('#live-received[data-count="6"]', WAIT);
  await page.waitForTimeout(400);
  assert.equal(await count('.live-event'), 5);
});

step('issue 22 item 2: the live feed drops old events when its filter changes, and stops on an invalid filter', async () => {
  await page.goto(`${base}/live`);
  await page.waitForSelector('#live-connection:text("connected")', WAIT);
  await ingest('acme', [{ message: 'live before the filter', level: 'info' }]);
  await page.waitForFunction(() => document.querySelectorAll('.live-event').length === 1, null, WAIT);
  await search('level:error');
  await page.waitForFunction(() => new URLSearchParams(location.search).get('q') === 'level:error', null, WAIT);
  await page.waitForSelector('#live-connection:text("connected")', WAIT);
  assert.equal(await count('.live-event'), 0, 'the unmatched event of the previous filter is gone');
  await ingest('acme', [{ message: 'live error 1', level: 'error' }, { message: 'live info 1', level: 'info' }]);
  await page.waitForSelector('#live-received[data-count="1"]', WAIT);
  await page.waitForFunction(() => document.querySelectorAll('.live-event').length === 1, null, WAIT);
  assert.match(await page.locator('.live-event').first().textContent(), /live error 1/);
  // An invalid filter: its error, no list of the previous filter's events, no "connecting…".
  await search('level:error AND "oops');
  await page.waitForSelector('.error-box[data-error-type="query_parse_error"]', WAIT);
  assert.equal(await count('.live-event'), 0);
  assert.equal(await page.textContent('#live-connection'), 'stopped: fix the filter');
  await shot('live-invalid-filter');
});

step('operations shows the pipeline, its rates and components', async () => {
  await page.getByRole('link', { name: 'Operations' }).click();
  await page.waitForSelector('[data-pipeline="main"]', WAIT);
  await page.waitForFunction(() => Number(document.querySelector('[data-events-in]')?.getAttribute('data-events-in')) >= 58, null, WAIT);
  const rows = await page.locator('[data-pipeline="main"] table.components tbody th').allTextContents();
  assert.deepEqual(rows.sort(), ['acme', 'globex', 'store']);
  await page.waitForSelector('[data-pipeline="main"] .sparks canvas', WAIT);
  // Rates (from the stats polled every 2 s): idle, the pipeline's "in" reads
  // 0/s; 40 events sent now show as a positive rate in the pipeline and in
  // the acme source's 1-minute rate; idle again, "in" returns to 0/s (a
  // rate taken from the running total instead of its change never would).
  const rates = () =>
    page.evaluate(() => {
      const card = document.querySelector('[data-pipeline="main"]');
      const kpi = [...card.querySelectorAll('dl.kpis > div')].find((d) => d.querySelector('dt')?.textContent === 'in');
      const acme = [...card.querySelectorAll('table.components tbody tr')].find((r) => r.querySelector('th')?.textContent === 'acme');
      return { in: kpi?.querySelector('dd')?.textContent ?? '', acme1m: Number(acme?.querySelectorAll('td')[4]?.textContent) };
    });
  await waitFor('an idle pipeline reads 0/s in', async () => (await rates()).in === '0/s');
  await ingest('acme', Array.from({ length: 40 }, (_, i) => ({ message: `acme rate ${i}` })));
  await waitFor('a positive in/s after 40 events', async () => {
    const r = await rates();
    return /^[0-9.]+[kM]?\/s$/.test(r.in) && parseFloat(r.in) > 0;
  });
  await waitFor("acme's 1-minute rate above 0", async () => (await rates()).acme1m > 0);
  await shot('operations-rates');
  await waitFor('in/s back to 0/s once idle', async () => (await rates()).in === '0/s');
  assert.ok(Number.isFinite((await rates()).acme1m), 'a number in the rate column');
});
