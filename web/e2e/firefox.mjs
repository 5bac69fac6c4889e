// The core user journey in real headless Firefox: Debian's firefox-esr
// (/usr/bin/firefox-esr, or $FIREFOX) driven over WebDriver BiDi by
// puppeteer-core — no geckodriver, no browser download — against the same
// node as the Chromium tests (node.mjs). Sign in with password + TOTP,
// search (count, histogram), open an event, build a dashboard and find it
// after a reload (a panel resized with the mouse keeps its size), watch the
// live feed, and see nothing of another group; then the issue 22 steps, among
// them query suggestions, typed time ranges, oldest first and a 900 px window. Screenshots go to
// ARTIFACTS/firefox-*.png. chromium.mjs covers the rest of the UI.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import puppeteer from 'puppeteer-core';
import { ACME, ADMIN, ADMIN_PASSWORD, ART, BOB_PASSWORD, WAIT_MS, drillDashboard, hitCountAnswered, lastEventCell, signInCodes, startNode, storeCardFigures, waitFor } from './node.mjs';
import { base32, totp } from './totp.mjs';

const WAIT = { timeout: WAIT_MS };

let node, base, browser, page;

/** A test step that leaves a screenshot `firefox-failed-<n>.png` when it fails. */
let stepNo = 0;
function step(name, fn) {
  const n = ++stepNo;
  test(`firefox: ${name}`, async (t) => {
    try {
      await fn(t);
    } catch (e) {
      await page?.screenshot({ path: join(ART, `firefox-failed-${n}.png`), fullPage: true }).catch(() => {});
      throw e;
    }
  });
}

const shot = (name) => page.screenshot({ path: join(ART, `firefox-${name}.png`), fullPage: true });
/** An element with exactly this text (whitespace-normalised). */
const byText = (tag, text) => `::-p-xpath(//${tag}[normalize-space()=${JSON.stringify(text)}])`;
const el = (sel) => page.waitForSelector(sel, { visible: true, ...WAIT });
const click = async (sel) => (await el(sel)).click();
const count = (sel) => page.$$eval(sel, (es) => es.length);
const texts = (sel) => page.$$eval(sel, (es) => es.map((e) => e.textContent.trim()));
const attr = (sel, name) => page.$eval(sel, (e, name) => e.getAttribute(name), name);
const until = (fn, ...args) => page.waitForFunction(fn, WAIT, ...args);
const atPath = (re) => until((re) => new RegExp(re).test(location.pathname), re.source);

/** Types `text` into the field with real key presses, replacing what was there. */
async function fill(sel, text) {
  const h = await el(sel);
  await h.click();
  await h.evaluate((e) => e.select());
  await page.keyboard.press('Backspace');
  await h.type(text);
}

async function search(q) {
  await fill('input[name="query"]', q);
  await page.keyboard.press('Enter');
}

/** The count of the search answered for the query in the URL. */
async function hitCount() {
  await until(hitCountAnswered);
  return Number(await attr('#hit-count', 'data-count'));
}

/** Waits until the count shows `n` (a search may still be answering), then reads it. */
async function hitCountBecomes(n) {
  await until((n) => document.querySelector('#hit-count')?.getAttribute('data-count') === String(n), n).catch(() => {});
  return hitCount();
}

const nextCode = signInCodes();

/** Signs in through the login form; with `secret` also enters the TOTP code. */
async function passwordSignIn(user, password, secret) {
  await fill('input[name="username"]', user);
  await fill('input[name="password"]', password);
  await click(byText('button', 'Sign in'));
  if (secret) {
    await fill('input[name="code"]', await nextCode(secret));
    await click(byText('button', 'Verify'));
  }
}

async function signOut() {
  await click(byText('button', 'Sign out'));
  await el('form[aria-label="Sign in"]');
}

/** A JSON call with the browser's session cookie and CSRF token. */
function sessionCall(method, path, body) {
  return page.evaluate(
    async (method, path, body) => {
      const csrf = /(?:^|; )sluice_csrf=([^;]*)/.exec(document.cookie)?.[1] ?? '';
      const r = await fetch(path, { method, headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': decodeURIComponent(csrf) }, body: body && JSON.stringify(body) });
      return { status: r.status, text: await r.text() };
    },
    method,
    path,
    body,
  );
}

/** A panel's place on the grid as the page shows it: `x/w | y/h` (1-based grid lines). */
const gridPlace = (title) => page.$eval(`section.panel[aria-label="${title}"]`, (e) => `${e.style.gridColumn} | ${e.style.gridRow}`);

/** Headless Firefox ESR over WebDriver BiDi, with `prefs` added. */
function launchFirefox(prefs = {}) {
  return puppeteer.launch({
    browser: 'firefox',
    protocol: 'webDriverBiDi',
    executablePath: process.env.FIREFOX ?? '/usr/bin/firefox-esr',
    headless: true,
    // No update checks, telemetry or first-run pages: nothing here reaches the internet.
    extraPrefsFirefox: { 'app.update.enabled': false, 'browser.shell.checkDefaultBrowser': false, 'datareporting.policy.dataSubmissionEnabled': false, 'toolkit.telemetry.enabled': false, ...prefs },
  });
}

before(async () => {
  node = await startNode();
  base = node.base;
  assert.ok(node.usersApi, 'the node has the users API');
  browser = await launchFirefox();
  page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  page.on('pageerror', (e) => node.note(`\n[firefox page error] ${e.message}`));
  page.on('console', (m) => m.type() === 'error' && node.note(`\n[firefox console] ${m.text()}`));
});

after(async () => {
  await browser?.close();
  await node?.stop();
});

let totpSecret = null;

step('sign in with password + TOTP', async () => {
  assert.match(await browser.version(), /^firefox\//);
  await page.goto(`${base}/`);
  await el('form[aria-label="Sign in"]');
  await shot('login');
  // The first admin must use TOTP: the first sign-in enrols it (QR code + key).
  await passwordSignIn('admin', ADMIN_PASSWORD);
  await atPath(/^\/enrol/);
  await el('img.qr');
  assert.ok(await page.$eval('img.qr', (i) => i.complete && i.naturalWidth > 0), 'the QR code image loaded');
  totpSecret = (await page.$eval('#totp-secret', (e) => e.textContent)).trim();
  await shot('enrol');
  await fill('input[name="code"]', totp(base32(totpSecret)));
  await click(byText('button', 'Turn on'));
  await el('#recovery-codes li');
  assert.equal(await count('#recovery-codes li'), 10);
  await click(byText('button', 'I have saved them — continue'));
  // An operator who may read group acme only.
  assert.equal((await sessionCall('POST', '/api/v1/users', { username: 'bob', type: 'operator', password: BOB_PASSWORD })).status, 201);
  const a = await sessionCall('POST', '/api/v1/assignments', { subject: { kind: 'user', name: 'bob' }, pattern: { group: 'acme', subgroup: '*', host: '*' } });
  assert.equal(a.status, 201, a.text);
  await signOut();
  // A wrong password is refused without saying which part was wrong.
  await passwordSignIn('admin', 'wrong password');
  await el(byText('p', 'Wrong user name or password.'));
  // Password + the TOTP code computed from the enrolment secret: the admin sees both groups.
  await passwordSignIn('admin', ADMIN_PASSWORD, totpSecret);
  await atPath(/^\/search/);
  assert.equal(await hitCount(), 50);
  await signOut();
  await passwordSignIn('bob', BOB_PASSWORD);
  await atPath(/^\/search/);
});

step('search shows the count, the histogram and the results of the signed-in group only', async () => {
  assert.equal(await hitCount(), 30);
  await el('.histogram[data-total="30"] canvas');
  assert.equal(await count('tr.hit'), 30);
  const first = await page.$eval('tr.hit .summary', (e) => e.textContent);
  assert.match(first, /acme request 29$/);
  await search('level:error');
  assert.equal(await hitCountBecomes(10), 10);
  assert.match(page.url(), /q=level%3Aerror/);
  await el('.histogram[data-total="10"] canvas');
  await shot('search');
});

step('an event opens with all its fields; a value becomes a filter', async () => {
  await search('');
  assert.equal(await hitCountBecomes(30), 30);
  await click('tr.hit button.expand');
  await el('[data-field="message"]');
  const message = await page.$eval('[data-field="message"] .value', (e) => e.textContent.trim());
  assert.equal(message, 'acme request 29');
  assert.equal(await page.$eval('[data-field="ms"] .value', (e) => e.textContent.trim()), '29');
  await shot('event');
  await click('[data-field="service"] .value-link');
  await until(() => new URLSearchParams(location.search).get('q')?.startsWith('service:'));
  assert.equal(await hitCountBecomes(15), 15);
});

step("another group's data cannot be seen", async () => {
  await search('globex');
  assert.equal(await hitCountBecomes(0), 0);
  await search('@group:globex');
  assert.equal(await hitCountBecomes(0), 0);
  await search('');
  assert.equal(await hitCountBecomes(30), 30);
  await click(`::-p-xpath(//button[contains(@class, "field-name")][text()[normalize-space()="@group"]])`);
  await el('.top-values .v');
  assert.deepEqual(await texts('.top-values .v'), ['acme']);
  assert.equal(await node.total('globex', ACME), 0);
  assert.equal(await node.total('globex', ADMIN), 20);
});

step('a dashboard with a resized panel is saved and found again after a reload', async () => {
  await click(byText('a', 'Dashboards'));
  await fill('form input[name="title"][placeholder="Title"]', 'Firefox board');
  await click(byText('button', 'Create'));
  await until(() => /^\/dashboards\/\d+$/.test(location.pathname) && location.search === '?edit=1');
  await click(byText('button', '+ Add panel'));
  await fill('.panel-editor input[name="title"]', 'Events over time');
  await click(byText('button', 'Apply'));
  await click(byText('button', '+ Add panel'));
  await fill('.panel-editor input[name="title"]', 'Levels');
  await page.select('.panel-editor select[name="metric"]', 'terms');
  await fill('.panel-editor input[name="field"]', 'level');
  await click('.panel-editor input[name="chart"][value="pie"]');
  await click(byText('button', 'Apply'));
  await el('section.panel[aria-label="Levels"] .pie path');
  // Issue 22: the new panel takes the free half beside the first.
  assert.equal(await gridPlace('Levels'), '7 / span 6 | 1 / span 3');
  // Resize the pie with the mouse: three columns narrower, one row taller.
  const h = await (await el('section.panel[aria-label="Levels"] .resize-handle')).boundingBox();
  const grid = await (await el('.dashboard-grid')).boundingBox();
  const col = (grid.width + 12) / 12;
  await page.mouse.move(h.x + h.width / 2, h.y + h.height / 2);
  await page.mouse.down();
  await page.mouse.move(h.x + h.width / 2 - 3 * col, h.y + h.height / 2 + 92, { steps: 8 });
  await page.mouse.up();
  assert.equal(await gridPlace('Levels'), '7 / span 3 | 1 / span 4');
  await click(byText('button', 'Save'));
  await el(byText('button', 'Edit'));
  const url = page.url();
  assert.doesNotMatch(url, /edit=1/);
  await page.reload();
  await el('section.panel[aria-label="Levels"] .pie path');
  assert.equal(page.url(), url);
  assert.deepEqual(await texts('section.panel h3'), ['Events over time', 'Levels']);
  assert.equal(await gridPlace('Levels'), '7 / span 3 | 1 / span 4');
  assert.equal(await count('section.panel[aria-label="Levels"] .pie path'), 2);
  assert.deepEqual(await texts('section.panel[aria-label="Levels"] .legend li'), ['info 20 (67%)', 'error 10 (33%)']);
  await el('section.panel[aria-label="Events over time"] .panel-body[data-total="30"]');
  await shot('dashboard');
});

step('the live feed receives events sent during the test, and only its group', async () => {
  await click(byText('a', 'Live'));
  await el(byText('span', 'connected'));
  await node.ingest('globex', [{ message: 'globex live secret' }, { message: 'globex live secret 2' }]);
  await node.ingest('acme', Array.from({ length: 5 }, (_, i) => ({ message: `acme live ${i}`, level: 'info' })));
  await el('#live-received[data-count="5"]');
  await until(() => document.querySelectorAll('.live-event').length === 5);
  await waitFor('all 57 stored', async () => (await node.total('')) === 57);
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(await attr('#live-received', 'data-count'), '5');
  const shown = await texts('.live-event');
  assert.equal(shown.filter((t) => t.includes('globex')).length, 0);
  assert.match(shown[0], /acme live 4/);
  await shot('live');
});

step('issue 22 missing 1: a saved search is saved, found after a reload and opened with its query, range and columns', async () => {
  await page.goto(`${base}/search?q=${encodeURIComponent('level:error')}&from=now-7d&cols=service`);
  assert.equal(await hitCount(), await node.total('level:error', ACME));
  await click(byText('button', 'Saved searches ▾'));
  await fill('input[name="saved-name"]', 'firefox errors');
  await click(byText('button', 'Save search'));
  await el(byText('p', 'Saved “firefox errors”.'));
  await page.goto(`${base}/search`);
  await until(hitCountAnswered);
  await page.reload();
  await click(byText('button', 'Saved searches ▾'));
  await click('.saved-list li[data-saved="firefox errors"] .saved-open');
  await until(() => new URLSearchParams(location.search).get('q') === 'level:error');
  const params = new URL(page.url()).searchParams;
  assert.equal(params.get('from'), 'now-7d');
  assert.equal(params.get('cols'), 'service');
  assert.equal(await hitCount(), await node.total('level:error', ACME));
  assert.equal(await count('thead button[aria-label="Remove column service"]'), 1);
  await shot('saved-search');
});

step('issue 22 missing 2: the export links download the results of the signed-in group only, CSV with the chosen columns', async () => {
  // bob (acme): 10 errors with the column service.
  await page.goto(`${base}/search?q=${encodeURIComponent('level:error')}&from=now-7d&cols=service`);
  assert.equal(await hitCount(), await node.total('level:error', ACME));
  const get = (sel) =>
    page.evaluate(async (sel) => {
      const r = await fetch(document.querySelector(sel).getAttribute('href'));
      return { status: r.status, type: r.headers.get('content-type'), text: await r.text() };
    }, sel);
  assert.equal(await attr('a.export-csv', 'download'), 'sluice-export.csv');
  const csv = await get('a.export-csv');
  assert.equal(csv.status, 200);
  assert.equal(csv.type, 'text/csv; charset=utf-8');
  const rows = csv.text.trimEnd().split('\n');
  assert.equal(rows[0], '@timestamp,service');
  assert.equal(rows.length, 1 + 10);
  assert.equal(await node.total('level:error', ACME), 10);
  const nd = await get('a.export-ndjson');
  const events = nd.text.trimEnd().split('\n').map((l) => JSON.parse(l));
  assert.equal(events.length, 10);
  assert.deepEqual([...new Set(events.map((e) => `${e['@group']} ${e.level}`))], ['acme error']);
  assert.deepEqual(
    events.map((e) => e.message).sort(),
    Array.from({ length: 10 }, (_, i) => `acme request ${i * 3}`).sort(),
  );
});

step('issue 22 missing 3: an event shows the events around it from its host and source', async () => {
  await node.ingest('acme', Array.from({ length: 11 }, (_, i) => ({ message: `ff context ${i}` })));
  await waitFor('the context lines stored', async () => (await node.total('"ff context"')) === 11);
  await page.goto(`${base}/search?q=${encodeURIComponent('"ff context 5"')}`);
  assert.equal(await hitCount(), 1);
  await click('tr.hit button.expand');
  await click(byText('button', 'Show surrounding events'));
  await el('table[aria-label="Surrounding events"] tr[aria-current="true"]');
  assert.deepEqual(await texts('table[aria-label="Surrounding events"] tr td:nth-child(2)'), Array.from({ length: 11 }, (_, i) => `ff context ${i}`));
  assert.equal(await page.$eval('table[aria-label="Surrounding events"] tr[aria-current="true"] td:nth-child(2)', (e) => e.textContent.trim()), 'ff context 5');
  await shot('context');
});

step('issue 22 confusing: the exact hit count, zero-hit hints, "No data" on an empty histogram', async () => {
  await node.ingest('acme', Array.from({ length: 1000 }, (_, i) => ({ message: `ff bulk ${i}` })));
  await waitFor('the bulk events stored', async () => (await node.total('"ff bulk"')) === 1000);
  const n = await node.total('', ACME);
  await page.goto(`${base}/search?from=now-7d`);
  assert.equal(await hitCount(), n);
  assert.equal(await page.$eval('#hit-count', (e) => e.textContent.trim()), `${n.toLocaleString('en-US')} hits`);
  await search('levle:error');
  assert.equal(await hitCountBecomes(0), 0);
  await el(byText('li', 'No event in this time range has the field “levle” — did you mean “level”?'));
  await el('.histogram .no-data');
  await search('acme or request');
  assert.equal(await hitCountBecomes(0), 0);
  await el(byText('li', '“or” is searched as a word: operators are upper-case (OR).'));
  await search('web');
  assert.equal(await hitCountBecomes(0), 0);
  assert.equal(await node.total('service:web', ACME), 15);
  await el(byText('li', 'Words without a field (“web”) are searched in message only; to search another field, write field:word.'));
  // One click searches every string field of the events in range instead.
  const everywhere = await attr('.query-hints-action button', 'title');
  assert.match(everywhere, /^\(message:web OR .*service:web.*\)$/);
  await click(byText('button', 'Search all fields'));
  await until((q) => new URLSearchParams(location.search).get('q') === q, everywhere);
  const web = await node.total(everywhere, ACME);
  assert.ok(web >= 15, `${web}`);
  assert.equal(await hitCountBecomes(web), web);
  await search('level:error');
  assert.equal(await hitCountBecomes(10), 10);
  assert.equal(await count('.query-hints'), 0);
  assert.equal(await count('.histogram .no-data'), 0);
  const over = await (await el('.histogram .u-over')).boundingBox();
  await page.mouse.move(over.x + over.width - 2, over.y + over.height / 2);
  const tip = await el('.histogram .chart-tip');
  assert.match(await tip.evaluate((e) => e.textContent), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} (UTC|[+-]\d\d:\d\d) — [\d,]+ hits?$/);
  await shot('hints');
});

step('issue 22 confusing: one 24-hour time format with its zone everywhere, local or UTC as the user chooses', async () => {
  const q = '"ff context 5"';
  const r = await sessionCall('GET', `/api/v1/search?query=${encodeURIComponent(q)}`);
  const ts = JSON.parse(r.text).hits[0].event['@timestamp'];
  const utc = `${ts.slice(0, 10)} ${ts.slice(11, 23)} UTC`;
  await page.goto(`${base}/account`);
  await page.select('select[name="time-zone"]', 'utc');
  await page.goto(`${base}/search?q=${encodeURIComponent(q)}`);
  assert.equal(await hitCount(), 1);
  assert.equal((await page.$eval('tr.hit button.expand', (e) => e.textContent)).replace('▸', '').trim(), utc);
  await click('tr.hit button.expand');
  assert.equal(await page.$eval('[data-field="@timestamp"] .value', (e) => e.textContent.trim()), utc);
  await page.goto(`${base}/account`);
  await page.select('select[name="time-zone"]', 'local');
  await page.goto(`${base}/search?q=${encodeURIComponent(q)}`);
  assert.equal(await hitCount(), 1);
  assert.match((await page.$eval('tr.hit button.expand', (e) => e.textContent)).replace('▸', '').trim(), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} [+-]\d\d:\d\d$/);
});

step('issue 22 confusing: top-value bars are shares of the hits that have the field', async () => {
  // Most of bob's events (the bulk ones) have no level: the bars compare the
  // levels among the events that have one.
  const [withLevel, info, all] = [await node.total('_exists_:level', ACME), await node.total('level:info', ACME), await node.total('', ACME)];
  assert.ok(all > 2 * withLevel, `${all} ${withLevel}`);
  await page.goto(`${base}/search?from=now-7d`);
  assert.equal(await hitCount(), all);
  await click(`::-p-xpath(//button[contains(@class, "field-name")][text()[normalize-space()="level"]])`);
  await el('.top-values[data-with-field] .v');
  assert.equal(await attr('.top-values', 'data-with-field'), String(withLevel));
  assert.equal(await page.$eval('.top-values .coverage', (e) => e.textContent.trim()), `in ${withLevel.toLocaleString('en-US')} of ${all.toLocaleString('en-US')} hits (${Math.round((withLevel / all) * 100)}%)`);
  const infoBar = await page.$eval(byText('span', 'info'), (e) => e.parentElement.querySelector('.bar').style.width);
  assert.equal(infoBar, `${Math.round((info / withLevel) * 100)}%`);
});

step('issue 22 confusing: a new tab is signed in with the same session; signing out there signs out both', async () => {
  const tab = await browser.newPage();
  try {
    await tab.goto(`${base}/search?from=now-7d`);
    await tab.waitForFunction(hitCountAnswered, WAIT);
    assert.equal(await tab.$$eval('form[aria-label="Sign in"]', (f) => f.length), 0);
    assert.equal(Number(await tab.$eval('#hit-count', (e) => e.getAttribute('data-count'))), await node.total('', ACME));
    await (await tab.waitForSelector(byText('button', 'Sign out'), WAIT)).click();
    await tab.waitForSelector('form[aria-label="Sign in"]', WAIT);
    await el('form[aria-label="Sign in"]');
  } finally {
    await tab.close();
  }
});

const queryOptions = () => texts('.query-suggestions [role="option"] .v');

step('issue 22 missing 4: the query bar suggests field names and the top values of the caller\'s events', async () => {
  await passwordSignIn('bob', BOB_PASSWORD);
  await el(byText('button', 'Sign out'));
  await page.goto(`${base}/search?from=now-7d`);
  await hitCount();
  await fill('input[name="query"]', 'servi');
  await el('.query-suggestions[aria-label="Fields"] [role="option"]');
  assert.deepEqual(await queryOptions(), ['service']);
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  assert.equal(await page.$eval('input[name="query"]', (e) => e.value), 'service:');
  await el('.query-suggestions[aria-label="Top values"] [role="option"]');
  assert.deepEqual((await queryOptions()).sort(), ['api', 'web']);
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Tab');
  const picked = await page.$eval('input[name="query"]', (e) => e.value.trim());
  assert.match(picked, /^service:(api|web)$/);
  await page.keyboard.press('Enter');
  await until((q) => new URLSearchParams(location.search).get('q') === q, picked);
  assert.equal(await hitCount(), await node.total(picked, ACME));
  await click('button[aria-label="Query syntax help"]');
  await el('[role="dialog"][aria-label="Query syntax"]');
  await shot('query-help');
});

step('issue 22 missing 5: a typed relative range, zoom out and earlier', async () => {
  const all = await node.total('', ACME);
  await page.goto(`${base}/search`);
  await hitCount();
  await click('.time-picker button[aria-haspopup="dialog"]');
  await fill('input[name="typed"]', 'now-2h');
  await click('.typed-form button[type="submit"]');
  await until(() => new URLSearchParams(location.search).get('from') === 'now-2h');
  assert.equal(await hitCount(), all);
  await click('button[aria-label="Zoom out"]');
  await until(() => new URLSearchParams(location.search).get('from') === 'now-4h');
  assert.equal(await hitCount(), all);
  await click('button[aria-label="Earlier"]');
  await until(() => /^\d{4}-/.test(new URLSearchParams(location.search).get('to') ?? ''));
  assert.equal(await hitCount(), 0);
});

step('issue 22 missing 6 and 10: oldest first; a 900 px window', async () => {
  for (let i = 0; i < 3; i++) {
    await node.ingest('acme', [{ message: `order probe ${i}`, seq: i }]);
    await waitFor(`order probe ${i} stored`, async () => (await node.total('"order probe"', ACME)) === i + 1);
  }
  await page.goto(`${base}/search?q=${encodeURIComponent('"order probe"')}&cols=seq`);
  assert.equal(await hitCount(), 3);
  assert.deepEqual(await texts('tr.hit td:nth-child(2)'), ['2', '1', '0']);
  await page.select('select[aria-label="Sort"]', 'oldest');
  await until(() => new URLSearchParams(location.search).get('order') === 'oldest' && document.querySelector('tr.hit td:nth-child(2)')?.textContent === '0');
  assert.deepEqual(await texts('tr.hit td:nth-child(2)'), ['0', '1', '2']);
  // At 900 px nothing scrolls sideways, and the field list folds away.
  // (Dark mode: the last step, in a Firefox whose pages prefer dark.)
  await page.setViewport({ width: 900, height: 700 });
  try {
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 900), 'no sideways scroll at 900 px');
    const width = () => page.$eval('main.results', (e) => e.getBoundingClientRect().width);
    const before = await width();
    await click('.sidebar-toggle');
    await until(() => document.querySelector('#field-sidebar')?.getBoundingClientRect().width === 0);
    assert.ok((await width()) > before + 150, `${before} → ${await width()}`);
    await shot('narrow');
    await click('.sidebar-toggle');
  } finally {
    await page.setViewport({ width: 1280, height: 800 });
  }
});

step('issue 22 missing 6: columns move; a click on a column name sorts by it, in the URL; auto-refresh shows new events by itself', async () => {
  // The three "order probe" events of the previous step (seq 0–2) and one without seq.
  await node.ingest('acme', [{ message: 'order probe without seq' }]);
  await waitFor('the probe without seq stored', async () => (await node.total('"order probe"', ACME)) === 4);
  await page.goto(`${base}/search?q=${encodeURIComponent('"order probe"')}&from=now-7d&cols=seq,message`);
  assert.equal(await hitCount(), 4);
  // Move message before seq: the URL and the header follow.
  await click('button[aria-label="Move column message left"]');
  await until(() => new URLSearchParams(location.search).get('cols') === 'message,seq');
  assert.deepEqual((await texts('thead th')).map((t) => t.replace(/[‹›×▲▼]/g, '').trim()), ['Time', 'message', 'seq']);
  const seqs = () => texts('tr.hit td:nth-child(3)');
  assert.deepEqual(await seqs(), ['', '2', '1', '0']);
  // seq ascending, then descending; the one without seq last both times.
  await click('::-p-xpath(//thead//button[normalize-space()="seq"])');
  await until(() => new URLSearchParams(location.search).get('sort') === 'seq:asc' && document.querySelector('tr.hit td:nth-child(3)')?.textContent === '0');
  assert.deepEqual(await seqs(), ['0', '1', '2', '']);
  await click('::-p-xpath(//thead//button[normalize-space()="seq ▲"])');
  await until(() => new URLSearchParams(location.search).get('sort') === 'seq:desc' && document.querySelector('tr.hit td:nth-child(3)')?.textContent === '2');
  assert.deepEqual(await seqs(), ['2', '1', '0', '']);
  await shot('sort-by-field');
  // Every 5 s: an event sent now shows up in its place without touching the page.
  await page.select('select[aria-label="Auto-refresh"]', '5s');
  await until(() => new URLSearchParams(location.search).get('refresh') === '5s');
  await node.ingest('acme', [{ message: 'order probe 3', seq: 3 }]);
  await until(() => document.querySelector('#hit-count')?.getAttribute('data-count') === '5');
  assert.deepEqual(await seqs(), ['3', '2', '1', '0', '']);
  await page.select('select[aria-label="Auto-refresh"]', '');
  await until(() => !new URLSearchParams(location.search).has('refresh'));
});

step('issue 22 missing 8: a panel is duplicated, the dashboard exported as JSON and imported again', async () => {
  const panel = { id: 'p1', title: 'Probe count', chart: 'number', query: '"order probe"', size: 1, options: { metric: 'count' }, layout: { x: 0, y: 0, w: 6, h: 3 } };
  const created = await sessionCall('POST', '/api/v1/dashboards', { title: 'Fox board', description: 'probes', sharing: { everyone: true, groups: [] }, time: { from: 'now-7d', to: null }, refresh: null, panels: [panel] });
  assert.equal(created.status, 201, created.text);
  const id = JSON.parse(created.text).id;
  await page.goto(`${base}/dashboards/${id}`);
  await click(byText('button', 'Edit'));
  await click('button[aria-label="Duplicate panel Probe count"]');
  await el('section.panel[aria-label="Probe count (copy)"] .big-number[data-value="5"]');
  await click(byText('button', 'Save'));
  await el(byText('button', 'Edit'));
  const saved = JSON.parse((await sessionCall('GET', `/api/v1/dashboards/${id}`)).text);
  assert.deepEqual(saved.panels.map((p) => [p.title, p.layout.x, p.layout.y]), [['Probe count', 0, 0], ['Probe count (copy)', 6, 0]]);
  // The export link carries the dashboard as JSON, named after its title.
  assert.equal(await attr('a.export-json', 'download'), 'fox-board.json');
  const href = await attr('a.export-json', 'href');
  const exported = JSON.parse(decodeURIComponent(href.slice(href.indexOf(',') + 1)));
  assert.deepEqual(exported.panels.map((p) => p.title), ['Probe count', 'Probe count (copy)']);
  // Imported from that file: a new private dashboard with both panels.
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const file = join(mkdtempSync(join(tmpdir(), 'sluice-fox-')), 'fox-board.json');
  writeFileSync(file, JSON.stringify(exported));
  await click(byText('a', 'Dashboards'));
  const input = await page.waitForSelector('input[type="file"][name="import"]', WAIT);
  await input.uploadFile(file);
  await until((old) => /^\/dashboards\/\d+$/.test(location.pathname) && location.pathname !== `/dashboards/${old}`, id);
  await el('section.panel[aria-label="Probe count (copy)"]');
  const newId = Number(new URL(page.url()).pathname.split('/').pop());
  const imported = JSON.parse((await sessionCall('GET', `/api/v1/dashboards/${newId}`)).text);
  assert.deepEqual(imported.sharing, { everyone: false, groups: [] });
  assert.deepEqual(imported.panels.map((p) => p.title), ['Probe count', 'Probe count (copy)']);
  await shot('dashboard-import');
});

step('issue 22 missing 8: drill-down from a table row, a bar and a split-by legend to Search', async () => {
  const q = '"acme request"';
  const created = await sessionCall('POST', '/api/v1/dashboards', drillDashboard('Fox drill'));
  assert.equal(created.status, 201, created.text);
  const board = `${base}/dashboards/${JSON.parse(created.text).id}`;
  const openBoard = async () => {
    await page.goto(board);
    await el('section.panel[aria-label="Levels table"] th button.drill');
    await el('section.panel[aria-label="Requests per level"] .split-legend li');
  };
  const landed = async () => {
    await atPath(/^\/search$/);
    return [new URL(page.url()).searchParams.get('q'), await hitCount()];
  };
  await openBoard();
  assert.deepEqual(await texts('section.panel[aria-label="Requests per level"] .split-legend li'), ['info', 'error']);
  await shot('dashboard-split-by');
  await click(`::-p-xpath(//section[@aria-label="Requests per level"]//button[normalize-space()="error"])`);
  assert.deepEqual(await landed(), [`${q} AND level:"error"`, 10]);
  await openBoard();
  await click(`::-p-xpath(//section[@aria-label="Levels table"]//th/button[normalize-space()="info"])`);
  assert.deepEqual(await landed(), [`${q} AND level:"info"`, 20]);
  await openBoard();
  const over = await (await el('section.panel[aria-label="Levels bars"] .u-over')).boundingBox();
  await page.mouse.click(over.x + over.width * 0.75, over.y + over.height - 3);
  assert.deepEqual(await landed(), [`${q} AND level:"error"`, 10]);
});

/** Clicks the field list's entry for `name` (its text is an icon, a space, the name). */
async function clickField(name) {
  for (const h of await page.$$('.field-name')) {
    if ((await h.evaluate((e) => e.textContent.trim().split(' ').pop())) === name) return h.click();
  }
  throw new Error(`no field ${name} in the field list`);
}

step('issue 22 missing 7: the field list gives each field\'s share of the hits and lists only theirs; "Visualize" makes a panel of a field\'s top values', async () => {
  // The "order probe" events: seq on four of five, ms (the seed's) on none.
  await page.goto(`${base}/search?q=${encodeURIComponent('"order probe"')}&from=now-7d`);
  assert.equal(await hitCount(), 5);
  const pct = (name) =>
    page.$$eval('.field-row', (rows, name) => rows.find((r) => r.querySelector('.field-name')?.textContent.trim().split(' ').pop() === name)?.querySelector('.coverage-pct')?.textContent ?? null, name);
  await until(() => [...document.querySelectorAll('.field-name')].some((e) => e.textContent.trim().endsWith(' seq')));
  assert.equal(await pct('seq'), '80%');
  assert.equal(await pct('ms'), '0%', 'a field of other events in the range');
  assert.equal((await texts('.in-hits-only'))[0], 'Only fields in the 5 hits shown');
  await click('.in-hits-only input');
  const listed = (await texts('.field-name')).map((t) => t.split(' ').pop());
  assert.ok(listed.includes('seq') && listed.includes('message') && !listed.includes('pid'), listed.join(', '));
  await click('.in-hits-only input');
  // Visualize: a new dashboard in edit mode with one bar panel of the field's top values in this search.
  await page.goto(`${base}/search?q=${encodeURIComponent('level:error')}&from=now-7d`);
  await hitCount();
  await clickField('service');
  await click('button[aria-label="Visualize service"]');
  await until(() => /^\/dashboards\/\d+$/.test(location.pathname) && location.search === '?edit=1');
  await el('section.panel[aria-label="Top service"]');
  assert.equal(await count('section.panel[aria-label="Top service"] .no-data'), 0);
  await shot('visualize-field');
});

step('issue 22 missing 9: Operations shows the store (disk, events, partitions, retention) and each source\'s last event', async () => {
  await node.ingest('acme', [{ message: 'firefox operations probe' }]);
  await waitFor('the probe stored', async () => (await node.total('"firefox operations probe"')) === 1);
  await page.goto(`${base}/operations`);
  await el('section[aria-label="Store"]');
  const card = () => page.evaluate(storeCardFigures);
  await waitFor('the Store card counts every stored event', async () => {
    const shown = (await card())['events stored']?.replace(/\D/g, '');
    return shown === String(await node.total(''));
  });
  const c = await card();
  assert.match(c['on disk'], /^[0-9.]+ (B|KiB|MiB|GiB)$/);
  assert.ok(Number(c['partitions']) >= 1, c['partitions']);
  assert.equal(c['dropped by retention'], '0 events in 0 partitions');
  const lastEventOf = (id) => page.evaluate(lastEventCell, id);
  assert.match(await lastEventOf('acme'), /^(just now|\d+ s ago)$/);
  assert.equal(await lastEventOf('store'), '—');
  await shot('operations-store');
});

step('issue 22 missing 10: dark mode follows the system: a Firefox whose pages prefer dark gets the dark colours', async () => {
  // WebDriver BiDi cannot emulate prefers-color-scheme, so a second Firefox
  // starts with the preference Firefox's own setting writes (0 = dark).
  const rootBg = (p) => p.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
  const dark = await launchFirefox({ 'layout.css.prefers-color-scheme.content-override': 0 });
  try {
    const p = await dark.newPage();
    await p.goto(`${base}/search`);
    await p.waitForSelector('input[type="password"]', { visible: true, ...WAIT });
    assert.equal(await p.evaluate(() => matchMedia('(prefers-color-scheme: dark)').matches), true);
    assert.equal(await rootBg(p), 'rgb(11, 17, 32)');
    await p.screenshot({ path: join(ART, 'firefox-dark-sign-in.png'), fullPage: true });
  } finally {
    await dark.close();
  }
  // The journey's Firefox keeps the light colours.
  await page.goto(`${base}/search`);
  await el('#hit-count');
  assert.equal(await page.evaluate(() => matchMedia('(prefers-color-scheme: dark)').matches), false);
  assert.equal(await rootBg(page), 'rgb(248, 250, 252)');
});
