// Administration (docs/specs/ui-api.md §4, §7, §11): users, groups,
// assignments, audit log, auth policy and LDAP settings.
import { request } from './client';
import type { SourcePattern, UserType } from './auth';
import type { components, operations } from './schema';

type Schemas = components['schemas'];

/** `User`. */
export type User = Schemas['User'];

/** `Group`. */
export type Group = Schemas['Group'];

/** Who an assignment is for. */
export type Subject = Schemas['Subject'];

/** `Assignment`. */
export type Assignment = Schemas['Assignment'];

/** One audit record (`actor_kind` spelt out: the document says "a string"). */
export type AuditRecord = Omit<Schemas['AuditRecord'], 'actor_kind'> & { actor_kind: 'user' | 'token' | 'cli' | 'system' | 'anonymous' };

/** `GET /api/v1/settings/auth`. */
export type AuthPolicy = Schemas['AuthPolicy'];

/** LDAP settings. */
export interface LdapSettings {
  url: string;
  tls: 'none' | 'starttls' | 'ldaps';
  ca_file: string | null;
  bind_dn: string | null;
  search_base: string | null;
  search_filter: string | null;
  search_bind_dn: string | null;
  search_bind_password_set?: boolean;
  search_bind_password?: string;
  /** Omitted: the server's default (`memberOf`). */
  group_attribute?: string;
  group_search_base: string | null;
  /** Omitted: the server's default (`(member={dn})`). */
  group_search_filter?: string;
  /** Omitted: the server's default (`cn`). */
  group_name_attribute?: string;
  default_type: UserType;
  group_map: { ldap: string; groups: string[]; type: UserType | null }[];
  timeout: string;
}

/** `GET /api/v1/settings/ldap`. */
export interface LdapState {
  source: 'config' | 'database' | 'none';
  settings: LdapSettings | null;
}

/** `POST /api/v1/settings/ldap/test` answer. */
export type LdapTest = { ok: true; dn: string; ldap_groups: string[]; groups: string[]; type: UserType } | { ok: false; error: string };

const enc = encodeURIComponent;

/** `GET /api/v1/users`. */
export async function listUsers(signal?: AbortSignal): Promise<User[]> {
  return (await request<{ users: User[] }>('GET', '/api/v1/users', undefined, signal)).users;
}
/** `POST /api/v1/users`. */
export function createUser(body: { username: string; display_name?: string; type: UserType; password: string; groups?: string[] }): Promise<User> {
  return request<User>('POST', '/api/v1/users', body);
}
/** `PATCH /api/v1/users/{username}`. */
export function updateUser(username: string, body: Partial<{ display_name: string; type: UserType; disabled: boolean; password: string; groups: string[] }>): Promise<User> {
  return request<User>('PATCH', `/api/v1/users/${enc(username)}`, body);
}
/** `DELETE /api/v1/users/{username}`. */
export function deleteUser(username: string): Promise<void> {
  return request<void>('DELETE', `/api/v1/users/${enc(username)}`);
}
/** `POST /api/v1/users/{username}/unlock`. */
export function unlockUser(username: string): Promise<void> {
  return request<void>('POST', `/api/v1/users/${enc(username)}/unlock`);
}
/** `DELETE /api/v1/users/{username}/totp`. */
export function resetTotp(username: string): Promise<void> {
  return request<void>('DELETE', `/api/v1/users/${enc(username)}/totp`);
}

/** `GET /api/v1/groups`. */
export async function listGroups(signal?: AbortSignal): Promise<Group[]> {
  return (await request<{ groups: Group[] }>('GET', '/api/v1/groups', undefined, signal)).groups;
}
/** `POST /api/v1/groups`. */
export function createGroup(body: { name: string; description?: string; require_totp?: boolean }): Promise<Group> {
  return request<Group>('POST', '/api/v1/groups', body);
}
/** `PATCH /api/v1/groups/{name}`. */
export function updateGroup(name: string, body: Partial<{ description: string; require_totp: boolean }>): Promise<Group> {
  return request<Group>('PATCH', `/api/v1/groups/${enc(name)}`, body);
}
/** `DELETE /api/v1/groups/{name}`. */
export function deleteGroup(name: string): Promise<void> {
  return request<void>('DELETE', `/api/v1/groups/${enc(name)}`);
}
/** `PUT /api/v1/groups/{name}/members/{username}`. */
export function addMember(group: string, username: string): Promise<void> {
  return request<void>('PUT', `/api/v1/groups/${enc(group)}/members/${enc(username)}`);
}
/** `DELETE /api/v1/groups/{name}/members/{username}`. */
export function removeMember(group: string, username: string): Promise<void> {
  return request<void>('DELETE', `/api/v1/groups/${enc(group)}/members/${enc(username)}`);
}

/** `GET /api/v1/assignments`. */
export async function listAssignments(signal?: AbortSignal): Promise<Assignment[]> {
  return (await request<{ assignments: Assignment[] }>('GET', '/api/v1/assignments', undefined, signal)).assignments;
}
/** `POST /api/v1/assignments`. */
export function createAssignment(subject: Subject, pattern: SourcePattern): Promise<Assignment> {
  return request<Assignment>('POST', '/api/v1/assignments', { subject, pattern });
}
/** `DELETE /api/v1/assignments/{id}`. */
export function deleteAssignment(id: number): Promise<void> {
  return request<void>('DELETE', `/api/v1/assignments/${id}`);
}

/** Filters of `GET /api/v1/audit` (the generated `audit` query parameters). */
export type AuditQuery = NonNullable<operations['audit']['parameters']['query']>;

/** `GET /api/v1/audit`. */
export function audit(q: AuditQuery, signal?: AbortSignal): Promise<{ records: AuditRecord[]; next: string | null }> {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== '') p.set(k, String(v));
  const qs = p.toString();
  return request('GET', `/api/v1/audit${qs ? `?${qs}` : ''}`, undefined, signal);
}

/** `GET /api/v1/settings/auth`. */
export function authPolicy(signal?: AbortSignal): Promise<AuthPolicy> {
  return request<AuthPolicy>('GET', '/api/v1/settings/auth', undefined, signal);
}
/** `GET /api/v1/settings/ldap`. */
export function ldapSettings(signal?: AbortSignal): Promise<LdapState> {
  return request<LdapState>('GET', '/api/v1/settings/ldap', undefined, signal);
}
/** `PUT /api/v1/settings/ldap`. */
export function saveLdapSettings(settings: LdapSettings): Promise<LdapState> {
  return request<LdapState>('PUT', '/api/v1/settings/ldap', { settings });
}
/** `POST /api/v1/settings/ldap/test`. */
export function testLdap(username: string, password: string, settings?: LdapSettings): Promise<LdapTest> {
  return request<LdapTest>('POST', '/api/v1/settings/ldap/test', settings ? { username, password, settings } : { username, password });
}
