// `GET /api/v1/me`: who is signed in and what they may do. A node without
// the users API (404) or a static config token (403) has no "me": the UI
// then offers search, dashboards, live feed and operations, and the server
// still decides every request.
import { ApiError } from '../api/client';
import { me, type Me, type Permission } from '../api/auth';
import { useRequest } from './useRequest';

/** The caller, and a permission test. */
export interface MeState {
  me: Me | null;
  loading: boolean;
  /** Whether `/me` has answered (with a caller, or with "no /me" on a node
   * without the users API or for a static token). */
  settled: boolean;
  /** Whether the UI should offer what needs `p`. */
  can: (p: Permission) => boolean;
  reload: () => void;
}

/** Loads the caller once per `key` (change it on sign-in). */
export function useMe(key: string | null): MeState {
  const { data, error, loading, reload } = useRequest(key, async (signal) => {
    try {
      return { me: await me(signal) };
    } catch (e) {
      if (e instanceof ApiError && (e.status === 404 || e.type === 'forbidden')) return { me: null };
      throw e;
    }
  });
  const m = data?.me ?? null;
  const can = (p: Permission): boolean => {
    if (m) return m.permissions.includes(p);
    // Without /me: what a static token or a pre-users node allows.
    return !error && (p === 'logs:read' || p === 'operations:read');
  };
  return { me: m, loading, settled: data !== null || error !== null, can, reload };
}
