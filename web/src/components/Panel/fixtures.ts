// A panel the Panel tests share: the top 5 levels of `svc:api`.
import type { Panel } from '../../api/dashboards';

export const levelsPanel: Panel = {
  id: 'p',
  title: 'Levels',
  chart: 'table',
  query: 'svc:api',
  aggs: { a: { type: 'terms', field: 'level', size: 5 } },
  options: { metric: 'terms' },
  layout: { x: 0, y: 0, w: 6, h: 3 },
};
