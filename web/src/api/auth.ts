// Login, second factor, the caller (docs/specs/ui-api.md §2–§3, §6).
import { request } from './client';
import type { components } from './schema';

type Schemas = components['schemas'];

/** `GET /api/v1/auth/config`. */
export interface AuthConfig {
  methods: ('password' | 'ldap')[];
  totp: boolean;
  version: string;
}

/** `totp` of a user. */
export type TotpState = Schemas['TotpStatus'];

/** User types. */
export type UserType = Schemas['UserType'];

/** A source pattern (`[api.tokens] allowed`, assignments). */
export type SourcePattern = Schemas['SourcePattern'];

/** Rights (`permissions`). */
export type Permission = 'logs:read' | 'operations:read' | 'users:manage' | 'settings:manage' | 'audit:read';

/** `GET /api/v1/me`. */
export interface Me {
  user: {
    username: string;
    display_name: string;
    type: UserType;
    source: 'local' | 'ldap';
    groups: string[];
    totp: TotpState;
    /** Still the generated password printed at the first start. */
    password_one_time: boolean;
  };
  permissions: Permission[];
  allowed: SourcePattern[];
  auth: 'session' | 'token';
  session: { created_at: string; expires_at: string; idle_expires_at: string; stage: 'full' | 'totp_enrollment' } | null;
  csrf_token: string | null;
  /** The token's scope; null for a session. */
  token_scope: Schemas['TokenScope'] | null;
}

/** `POST /api/v1/auth/login` and `/auth/totp` answers. */
export type LoginResult =
  | { status: 'authenticated'; csrf_token: string; me: Me }
  | { status: 'totp_required'; expires_in: number }
  | { status: 'totp_enrollment_required'; csrf_token: string; me: Me };

/** `POST /api/v1/me/totp/enroll`. */
export type Enrolment = Schemas['TotpEnrolment'];

/** `GET /api/v1/auth/config`. */
export function authConfig(signal?: AbortSignal): Promise<AuthConfig> {
  return request<AuthConfig>('GET', '/api/v1/auth/config', undefined, signal);
}

/** `POST /api/v1/auth/login`. */
export function login(username: string, password: string): Promise<LoginResult> {
  return request<LoginResult>('POST', '/api/v1/auth/login', { username, password });
}

/** `POST /api/v1/auth/totp` with a TOTP code or a recovery code. */
export function loginTotp(code: { code: string } | { recovery_code: string }): Promise<LoginResult> {
  return request<LoginResult>('POST', '/api/v1/auth/totp', code);
}

/** `POST /api/v1/auth/logout`. */
export function logout(): Promise<void> {
  return request<void>('POST', '/api/v1/auth/logout');
}

/** `GET /api/v1/me`. */
export function me(signal?: AbortSignal): Promise<Me> {
  return request<Me>('GET', '/api/v1/me', undefined, signal);
}

/** `POST /api/v1/me/password`. */
export function changePassword(current_password: string, new_password: string): Promise<void> {
  return request<void>('POST', '/api/v1/me/password', { current_password, new_password });
}

/** `POST /api/v1/me/totp/enroll`. */
export function totpEnroll(): Promise<Enrolment> {
  return request<Enrolment>('POST', '/api/v1/me/totp/enroll');
}

/** `POST /api/v1/me/totp/confirm` → the recovery codes, shown once. */
export async function totpConfirm(code: string): Promise<string[]> {
  return (await request<{ recovery_codes: string[] }>('POST', '/api/v1/me/totp/confirm', { code })).recovery_codes;
}

/** `POST /api/v1/me/totp/recovery-codes` → ten new codes. */
export async function totpNewRecoveryCodes(code: string): Promise<string[]> {
  return (await request<{ recovery_codes: string[] }>('POST', '/api/v1/me/totp/recovery-codes', { code })).recovery_codes;
}

/** `DELETE /api/v1/me/totp`. */
export function totpDisable(code: string): Promise<void> {
  return request<void>('DELETE', '/api/v1/me/totp', { code });
}

/** An API token (`GET /api/v1/tokens`). */
export type ApiToken = Schemas['ApiToken'];

/** `GET /api/v1/tokens[?all=true]`. */
export async function listTokens(all = false, signal?: AbortSignal): Promise<ApiToken[]> {
  return (await request<{ tokens: ApiToken[] }>('GET', `/api/v1/tokens${all ? '?all=true' : ''}`, undefined, signal)).tokens;
}

/** `POST /api/v1/tokens` → the token and its secret (shown once). */
export function createToken(body: { name: string; scope: 'search' | 'admin'; expires_in?: string | null; owner?: string }): Promise<{ token: ApiToken; secret: string }> {
  return request('POST', '/api/v1/tokens', body);
}

/** `DELETE /api/v1/tokens/{id}`. */
export function revokeToken(id: number): Promise<void> {
  return request<void>('DELETE', `/api/v1/tokens/${id}`);
}
