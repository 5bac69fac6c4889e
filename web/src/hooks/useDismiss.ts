// Closes a popover: Escape anywhere, or a mouse press outside its root
// element, while it is open (the time picker, saved searches).
import type { RefObject } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

/** Calls `close` on Escape or a press outside `root` while `open`. */
export function useDismiss(open: boolean, root: RefObject<HTMLElement | null>, close: () => void): void {
  const closeRef = useRef(close);
  closeRef.current = close;
  useEffect(() => {
    if (!open) return undefined;
    const onEvent = (e: Event): void => {
      if (e instanceof KeyboardEvent ? e.key === 'Escape' : !root.current?.contains(e.target as Node)) closeRef.current();
    };
    document.addEventListener('keydown', onEvent);
    document.addEventListener('mousedown', onEvent);
    return () => {
      document.removeEventListener('keydown', onEvent);
      document.removeEventListener('mousedown', onEvent);
    };
  }, [open, root]);
}
