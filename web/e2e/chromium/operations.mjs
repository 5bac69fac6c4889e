// Issue 22 missing 9: the Operations page shows the store (size on disk,
// events stored, partitions, what retention removed) and when each source
// last handed in an event.
import assert from 'node:assert/strict';
import { WAIT, page, base, ingest, total, step, shot } from './harness.mjs';
import { lastEventCell, storeCardFigures, waitFor } from '../node.mjs';

const storeCard = () => page.evaluate(storeCardFigures);
const lastEventOf = (id) => page.evaluate(lastEventCell, id);

step('issue 22 missing 9: Operations shows the store (disk, events, partitions, retention) and each source\'s last event', async () => {
  await ingest('acme', [{ message: 'operations probe' }]);
  await waitFor('the probe stored', async () => (await total('"operations probe"')) === 1);
  await page.goto(`${base}/operations`);
  await page.locator('section[aria-label="Store"]').waitFor(WAIT);
  // The stats are polled every 2 s: wait until they have the committed
  // count, read again each time (an event of an earlier step may still be
  // committing).
  await waitFor('the Store card counts every stored event', async () => {
    const shown = (await storeCard())['events stored']?.replace(/\D/g, '');
    return shown === String(await total(''));
  });
  const card = await storeCard();
  assert.match(card['on disk'], /^[0-9.]+ (B|KiB|MiB|GiB)$/);
  assert.ok(Number(card['partitions']) >= 1, card['partitions']);
  assert.equal(card['dropped by retention'], '0 events in 0 partitions');
  // acme's source has just handed an event in; globex's too (earlier), a sink has no such time.
  assert.match(await lastEventOf('acme'), /^(just now|\d+ s ago)$/);
  assert.match(await lastEventOf('globex'), /^(just now|\d+ s ago|\d+ min ago)$/);
  assert.equal(await lastEventOf('store'), '—');
  await shot('operations-store');
});
