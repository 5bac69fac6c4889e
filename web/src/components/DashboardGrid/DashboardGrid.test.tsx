import { render } from 'preact';
import { act } from 'preact/test-utils';
import { describe, expect, it, vi } from 'vitest';
import type { Panel } from '../../api/dashboards';
import { DashboardGrid } from './DashboardGrid';

const panels: Panel[] = [
  { id: 'a', title: 'A', query: '', chart: 'number', options: {}, layout: { x: 0, y: 0, w: 6, h: 2 } },
  { id: 'b', title: 'B', query: '', chart: 'number', options: {}, layout: { x: 6, y: 0, w: 6, h: 2 } },
];

describe('DashboardGrid', () => {
  it('places panels on the grid', () => {
    const el = document.createElement('div');
    render(<DashboardGrid panels={panels} editing={false} onChange={() => {}} render={(p) => p.title.toLowerCase()} />, el);
    const b = el.querySelector('[data-panel-id=b]') as HTMLElement;
    expect(b.style.gridColumn).toBe('7 / span 6');
    expect(b.querySelector('.panel-content')?.textContent).toBe('b');
    expect(el.querySelector('.resize-handle')).toBeNull();
  });

  it('moves and resizes with the keyboard in edit mode', () => {
    const el = document.createElement('div');
    const onChange = vi.fn();
    act(() => render(<DashboardGrid panels={panels} editing onChange={onChange} render={() => null} />, el));
    const header = el.querySelector('[data-panel-id=b] header') as HTMLElement;
    act(() => {
      header.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowLeft', bubbles: true }));
    });
    const moved = onChange.mock.calls[0]?.[0] as Panel[];
    expect(moved.find((p) => p.id === 'b')?.layout).toEqual({ x: 5, y: 0, w: 6, h: 2 });
    expect(moved.find((p) => p.id === 'a')?.layout).toEqual({ x: 0, y: 2, w: 6, h: 2 });
    act(() => {
      header.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowDown', shiftKey: true, bubbles: true }));
    });
    expect((onChange.mock.calls[1]?.[0] as Panel[]).find((p) => p.id === 'b')?.layout).toEqual({ x: 6, y: 0, w: 6, h: 3 });
  });

  it('takes a panel past the one below with ArrowDown, and ignores steps off the grid', () => {
    const stacked: Panel[] = panels.map((p, i) => ({ ...p, layout: { x: 0, y: 2 * i, w: 6, h: 2 } }));
    const el = document.createElement('div');
    const onChange = vi.fn();
    act(() => render(<DashboardGrid panels={stacked} editing onChange={onChange} render={() => null} />, el));
    const header = el.querySelector('[data-panel-id=a] header') as HTMLElement;
    act(() => {
      header.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowLeft', bubbles: true }));
    });
    expect(onChange).not.toHaveBeenCalled();
    act(() => {
      header.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowDown', bubbles: true }));
    });
    const moved = onChange.mock.calls[0]?.[0] as Panel[];
    expect(moved.map((p) => [p.id, p.layout.y])).toEqual([
      ['a', 2],
      ['b', 0],
    ]);
  });
});
