import { render } from 'preact';
import { describe, expect, it } from 'vitest';
import { PieChart, arcPath } from './PieChart';

describe('PieChart', () => {
  it('draws one slice per value with a legend of shares', () => {
    const el = document.createElement('div');
    render(<PieChart slices={[{ label: 'a', value: 3 }, { label: 'b', value: 1 }]} />, el);
    expect(el.querySelectorAll('path')).toHaveLength(2);
    expect([...el.querySelectorAll('.legend li')].map((l) => l.textContent?.trim())).toEqual(['a 3 (75%)', 'b 1 (25%)']);
    expect(el.querySelector('svg')?.getAttribute('aria-label')).toBe('Pie of 2 values, 4 in all');
  });

  it('draws nothing for an empty pie and splits a full circle', () => {
    const el = document.createElement('div');
    render(<PieChart slices={[]} />, el);
    expect(el.querySelectorAll('path')).toHaveLength(0);
    expect(el.textContent).toBe('No data');
    expect(arcPath(50, 50, 40, 20, 0, 2 * Math.PI).match(/M /g)).toHaveLength(2);
    expect(arcPath(50, 50, 40, 20, 0, Math.PI / 2)).toBe('M 50.00 10.00 A 40 40 0 0 1 90.00 50.00 L 70.00 50.00 A 20 20 0 0 0 50.00 30.00 Z');
  });
});
