// Browser end-to-end tests in real headless Chromium (Debian's
// /usr/bin/chromium via playwright-core) against the node of node.mjs, driven
// through the web UI. Screenshots of every page go to ARTIFACTS
// (.cache/artifacts/browser). firefox.mjs runs the core journey in Firefox.
//
// Signing in: the node has the users API (GET /api/v1/auth/config offers
// "password"; asserted, as firefox.mjs does: a node without it fails here
// instead of skipping the admin steps), so the tests sign in with a password
// and a TOTP code computed from the enrolment secret.
//
// One file per part of the journey under chromium/, run in this order in
// one browser page (each part starts where the previous one left off).
import './chromium/harness.mjs';
import './chromium/journey.mjs';
import './chromium/admin.mjs';
import './chromium/issue22.mjs';
import './chromium/searchtools.mjs';
import './chromium/operations.mjs';
import './chromium/sortdrill.mjs';
