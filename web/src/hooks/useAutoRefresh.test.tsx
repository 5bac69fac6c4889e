import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act } from 'preact/test-utils';
import { mount, unmountAll } from '../testing';
import { useAutoRefresh } from './useAutoRefresh';

function Probe({ period, tick }: { period: number | null; tick: () => void }) {
  useAutoRefresh(period, tick);
  return null;
}

let hidden = false;
beforeEach(() => {
  vi.useFakeTimers();
  hidden = false;
  Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => (hidden ? 'hidden' : 'visible') });
});
afterEach(() => {
  unmountAll();
  vi.useRealTimers();
  Reflect.deleteProperty(document, 'visibilityState');
});

describe('useAutoRefresh', () => {
  it('ticks every period while visible, pauses while hidden, catches up once when shown', () => {
    const tick = vi.fn();
    mount(<Probe period={5000} tick={tick} />);
    act(() => {
      vi.advanceTimersByTime(10_000);
    });
    expect(tick).toHaveBeenCalledTimes(2);
    hidden = true;
    act(() => {
      vi.advanceTimersByTime(30_000);
    });
    expect(tick).toHaveBeenCalledTimes(2);
    hidden = false;
    act(() => {
      document.dispatchEvent(new Event('visibilitychange'));
    });
    expect(tick).toHaveBeenCalledTimes(3);
  });

  it('never ticks when off, and stops on unmount', () => {
    const tick = vi.fn();
    mount(<Probe period={null} tick={tick} />);
    act(() => {
      vi.advanceTimersByTime(60_000);
    });
    expect(tick).not.toHaveBeenCalled();
    mount(<Probe period={1000} tick={tick} />);
    unmountAll();
    act(() => {
      vi.advanceTimersByTime(5000);
    });
    expect(tick).not.toHaveBeenCalled();
  });
});
