// A dashboard record shared by the Dashboards views' unit tests.
import type { Dashboard } from '../../api/dashboards';

export const board: Dashboard = {
  id: 7,
  title: 'Web errors',
  description: '',
  owner: 'admin',
  sharing: { everyone: true, groups: [] },
  time: { from: 'now-1h', to: null },
  refresh: null,
  panels: [],
  version: 3,
  created_at: '2026-11-26T00:00:00Z',
  updated_at: '2026-11-26T00:00:00Z',
  can_edit: true,
};
