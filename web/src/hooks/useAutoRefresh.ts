// Calls `tick` every `periodMs` while the tab is visible (issue 22,
// missing 6): a hidden tab asks nothing, and one tick runs as soon as it is
// shown again if a period passed meanwhile.
import { useEffect, useRef } from 'preact/hooks';

/** Ticks every `periodMs` (null: never) while `document` is visible. */
export function useAutoRefresh(periodMs: number | null, tick: () => void): void {
  const tickRef = useRef(tick);
  tickRef.current = tick;
  useEffect(() => {
    if (periodMs === null) return undefined;
    let missed = false;
    const t = setInterval(() => {
      if (document.visibilityState === 'hidden') missed = true;
      else tickRef.current();
    }, periodMs);
    const onVisible = (): void => {
      if (document.visibilityState !== 'hidden' && missed) {
        missed = false;
        tickRef.current();
      }
    };
    document.addEventListener('visibilitychange', onVisible);
    return () => {
      clearInterval(t);
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, [periodMs]);
}
