// The core Chromium journey (chromium/journey.mjs: sign-in, search and its
// histogram, zoom, another group's data unseen, dashboards, the live feed,
// operations) against a node whose store is a real OpenSearch node: the
// `elasticsearch` sink writes it and `[search] backend = "opensearch"` reads
// it (issue #20: the UI works unchanged on it). node.mjs starts OpenSearch
// with scripts/opensearch.sh and gives the run an index of its own.
import './chromium/opensearch-backend.mjs';
import './chromium/harness.mjs';
import './chromium/journey.mjs';

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { node } from './chromium/harness.mjs';

test('the journey above ran on OpenSearch, not on an embedded store', () => {
  assert.match(node.log, /search API serves OpenSearch index=sluice-ui-e2e-/);
  assert.doesNotMatch(node.log, /search API serves the embedded store/);
});
