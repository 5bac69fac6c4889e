// Compile-time checks that the API types the UI keeps by hand (narrower than
// the generated ./schema.d.ts, or kept for the localStorage fallback) still
// fit the shapes the server documents: `tsc` (npm run lint, typecheck) fails
// when a server type changes under them. Nothing here runs.
import type { ApiToken, AuthConfig, Enrolment, LoginResult, Me, TotpState } from './auth';
import type { AuditRecord, Group, LdapSettings, LdapTest, User } from './admin';
import type { Dashboard, DashboardBody, DashboardSummary, Panel, Sharing } from './dashboards';
import type { SavedSearch, SavedSearchBody } from './savedSearches';
import type { ContextResponse } from './search';
import type { components } from './schema';
import type { ErrorBody, SearchResponse } from './types';

type S = components['schemas'];

/** Compiles only when `A` is assignable to `B`. */
type Fits<A extends B, B> = [A, B];

/** Each hand-kept type against its generated schema. */
export type SchemaChecks = [
  Fits<Dashboard, S['Dashboard']>,
  Fits<DashboardSummary, S['DashboardSummary']>,
  Fits<DashboardBody, S['DashboardInput']>,
  Fits<Panel, S['Panel']>,
  Fits<Sharing, S['Sharing']>,
  Fits<SavedSearch, S['SavedSearch']>,
  Fits<SavedSearchBody, S['SavedSearchInput']>,
  Fits<ContextResponse, S['ContextResponse']>,
  Fits<SearchResponse, S['SearchResponse']>,
  Fits<LdapSettings, S['LdapSettings']>,
  Fits<AuditRecord, S['AuditRecord']>,
  Fits<LdapTest, S['LdapTestResult']>,
  Fits<AuthConfig, S['AuthConfigResponse']>,
  Fits<Me['user']['totp'], TotpState>,
  Fits<Me, S['Me']>,
  Fits<LoginResult, S['LoginResponse']>,
  Fits<ApiToken, S['ApiToken']>,
  Fits<Enrolment, S['TotpEnrolment']>,
  Fits<User, S['User']>,
  Fits<Group, S['Group']>,
  Fits<Omit<ErrorBody['error'], 'type'>, Omit<S['ErrorDetail'], 'type'>>,
];
