// Records of the admin API shared by the Admin tabs' unit tests.
import type { Assignment, Group, User } from '../../api/admin';

export const bob: User = {
  username: 'bob',
  display_name: 'Bob',
  type: 'viewer',
  source: 'local',
  disabled: false,
  groups: ['ops'],
  totp: { enabled: true, required: false, recovery_codes_left: 7 },
  locked_until: null,
  last_login: '2026-11-26T10:00:00Z',
  created_at: '2026-11-01T00:00:00Z',
  updated_at: '2026-11-01T00:00:00Z',
} as User;

export const ops: Group = {
  name: 'ops',
  description: 'operations',
  require_totp: false,
  members: ['bob'],
  ldap_members: [],
  created_at: '2026-11-01T00:00:00Z',
  updated_at: '2026-11-01T00:00:00Z',
};

export const opsReadsAcme: Assignment = {
  id: 3,
  subject: { kind: 'group', name: 'ops' },
  pattern: { group: 'acme', subgroup: '*', host: 'web-*' },
  created_at: '2026-11-02T00:00:00Z',
  created_by: 'admin',
};
