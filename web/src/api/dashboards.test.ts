import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiError } from './client';
import { createDashboard, getDashboard, listDashboards, refreshSeconds, resetBackend, saveDashboard, storedLocally, type DashboardBody } from './dashboards';

const body: DashboardBody = { title: 'Web', description: '', sharing: { everyone: false, groups: [] }, time: { from: 'now-1h', to: null }, refresh: null, panels: [] };

beforeEach(() => {
  resetBackend();
  localStorage.clear();
});
afterEach(() => vi.unstubAllGlobals());

describe('dashboards', () => {
  it('use the server when it has the API', async () => {
    const calls: string[] = [];
    vi.stubGlobal('fetch', async (url: string, init: RequestInit) => {
      calls.push(`${init.method} ${url}`);
      return new Response(JSON.stringify({ ...body, id: 7, version: 1, owner: 'alice', created_at: '', updated_at: '', can_edit: true }), { status: 201 });
    });
    const d = await createDashboard(body);
    expect(d.id).toBe(7);
    expect(storedLocally()).toBe(false);
    expect(calls).toEqual(['POST /api/v1/dashboards']);
  });

  it('fall back to this browser on a node without the API, with version checks', async () => {
    vi.stubGlobal('fetch', async (url: string, init: RequestInit) =>
      new Response(JSON.stringify({ error: { type: 'not_found', message: `no route for ${init.method} ${url}` } }), { status: 404 }),
    );
    const a = await createDashboard(body);
    const b = await createDashboard({ ...body, title: 'Api' });
    expect(storedLocally()).toBe(true);
    expect([a.id, b.id]).toEqual([1, 2]);
    expect((await listDashboards()).map((d) => d.title)).toEqual(['Api', 'Web']);
    const saved = await saveDashboard(a.id, { ...body, title: 'Web 2', version: 1 });
    expect(saved.version).toBe(2);
    expect((await getDashboard(a.id)).title).toBe('Web 2');
    await expect(saveDashboard(a.id, { ...body, version: 1 })).rejects.toMatchObject({ type: 'conflict', status: 409 });
    await expect(getDashboard(99)).rejects.toBeInstanceOf(ApiError);
  });

  it('do not fall back when a known route answers 404 for an id', async () => {
    vi.stubGlobal('fetch', async () => new Response(JSON.stringify({ error: { type: 'not_found', message: 'no dashboard 5' } }), { status: 404 }));
    await expect(getDashboard(5)).rejects.toMatchObject({ type: 'not_found' });
    expect(storedLocally()).toBe(false);
  });

  it('parse refresh periods', () => {
    expect(refreshSeconds('30s')).toBe(30);
    expect(refreshSeconds('5m')).toBe(300);
    expect(refreshSeconds(null)).toBe(0);
    expect(refreshSeconds('soon')).toBe(0);
  });
});
