// Administration: users, groups, assignments, LDAP settings, audit.
import assert from 'node:assert/strict';
import { WAIT, base, page, step, shot, passwordSignIn, sessionCall, signOut, recoveryCodes } from './harness.mjs';
import { ADMIN_PASSWORD, BOB_PASSWORD } from '../node.mjs';

step('administration (users, groups, assignments, LDAP, audit)', async () => {
  // bob (an operator) has no Administration page.
  assert.equal(await page.getByRole('link', { name: 'Administration' }).count(), 0);
  await signOut();
  // A recovery code instead of the authenticator: no wait for the next TOTP
  // step (the sign-in step used this one), and the recovery path is covered.
  await passwordSignIn('admin', ADMIN_PASSWORD);
  await page.getByRole('button', { name: 'Use a recovery code' }).click();
  await page.getByLabel('Recovery code').fill(recoveryCodes[0]);
  await page.getByRole('button', { name: 'Verify' }).click();
  await page.getByRole('link', { name: 'Administration' }).click();
  await page.waitForSelector('[aria-label="Users"] tr[data-user="bob"]', WAIT);
  await shot('admin-users');
  await page.getByRole('tab', { name: 'Assignments' }).click();
  await page.getByText('acme/*/*').first().waitFor(WAIT);
  await page.getByRole('tab', { name: 'Audit' }).click();
  await page.getByText('user.create').first().waitFor(WAIT);
  await shot('admin-audit');
});

step('issue 22 item 8: an add form is emptied after a successful add', async () => {
  await page.getByRole('tab', { name: 'Groups' }).click();
  await page.getByLabel('Group name').fill('ops-e2e');
  await page.getByLabel('Description').fill('added by the browser test');
  await page.getByRole('button', { name: 'Add group' }).click();
  await page.getByText('ops-e2e', { exact: true }).first().waitFor(WAIT);
  await page.waitForFunction(() => document.querySelector('input[aria-label="Group name"]')?.value === '', null, WAIT);
  assert.equal(await page.getByLabel('Description').inputValue(), '');
});

step('issue 22 item 8: "set password" asks in a form with a hidden input, not prompt()', async () => {
  const dialogs = [];
  const onDialog = (d) => {
    dialogs.push(d.type());
    void d.dismiss();
  };
  page.on('dialog', onDialog);
  await page.getByRole('tab', { name: 'Users' }).click();
  await page.locator('[aria-label="Users"] tr[data-user="bob"] button', { hasText: 'set password' }).click();
  const form = page.getByRole('form', { name: 'Set the password of bob' });
  const input = form.getByLabel('New password');
  await input.waitFor(WAIT);
  page.off('dialog', onDialog);
  assert.deepEqual(dialogs, []);
  assert.equal(await input.getAttribute('type'), 'password');
  await input.fill(`${BOB_PASSWORD}-new`);
  await form.getByRole('button', { name: 'Set password', exact: true }).click();
  await page.getByText('Password of bob set.').waitFor(WAIT);
  // The new password signs bob in (checked on the API); then the old one is put back.
  const login = await fetch(`${base}/api/v1/auth/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ username: 'bob', password: `${BOB_PASSWORD}-new` }) });
  assert.equal(login.status, 200, await login.text());
  const back = await sessionCall('PATCH', '/api/v1/users/bob', { password: BOB_PASSWORD });
  assert.equal(back.status, 200, back.text);
});

step('issue 22 item 8: LDAP settings are a form (examples as placeholders); an empty one gets a clear error, a filled one is saved', async () => {
  await page.getByRole('tab', { name: 'LDAP & policy' }).click();
  const url = page.getByLabel('LDAP URL', { exact: true });
  await url.waitFor(WAIT);
  assert.equal(await url.getAttribute('placeholder'), 'ldaps://ldap.example.com');
  assert.equal(await page.locator('textarea').count(), 0, 'no JSON text box');
  await page.getByRole('button', { name: 'Save LDAP settings' }).click();
  await page.getByText('Fill in the LDAP URL (for example ldaps://ldap.example.com).').waitFor(WAIT);
  assert.equal(await page.getByText('Unexpected end of JSON input').count(), 0);
  // Local users still sign in locally: an LDAP server that is not there
  // only matters to LDAP users, so the later steps are unaffected.
  await url.fill('ldap://127.0.0.1:9');
  await page.getByLabel('TLS', { exact: true }).selectOption('none');
  await page.getByLabel('Bind DN template', { exact: true }).fill('uid={username},ou=people,dc=example,dc=com');
  await page.getByRole('button', { name: 'Add group mapping' }).click();
  await page.getByLabel('LDAP group 1').fill('admins');
  await page.getByLabel('Type of mapping 1').selectOption('admin');
  await page.getByRole('button', { name: 'Save LDAP settings' }).click();
  await page.getByText('LDAP settings saved.').waitFor(WAIT);
  const got = await sessionCall('GET', '/api/v1/settings/ldap');
  assert.equal(got.status, 200, got.text);
  const { source, settings } = JSON.parse(got.text);
  assert.deepEqual(
    [source, settings.url, settings.tls, settings.bind_dn, settings.group_map],
    ['database', 'ldap://127.0.0.1:9', 'none', 'uid={username},ou=people,dc=example,dc=com', [{ ldap: 'admins', groups: [], type: 'admin' }]],
  );
  assert.equal((await sessionCall('DELETE', '/api/v1/settings/ldap')).status, 204);
});
