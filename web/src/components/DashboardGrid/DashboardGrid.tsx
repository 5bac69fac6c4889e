// Panels on a 12-column grid. In edit mode a panel's title bar drags it and
// its corner handle resizes it (pointer events: mouse, pen and touch); with
// the keyboard, the focused title bar moves with the arrow keys and resizes
// with Shift + arrows.
import type { ComponentChildren } from 'preact';
import { useRef, useState } from 'preact/hooks';
import { GRID_COLUMNS, type Panel } from '../../api/dashboards';
import { moveTo as moveBox, resizeTo as resizeBox, step as stepBox, type Box } from './layout';

/** Height of one grid row, px. */
export const ROW_PX = 80;
/** Gap between cells, px. */
export const GAP_PX = 12;

/** Props of [`DashboardGrid`]. */
export interface DashboardGridProps {
  panels: Panel[];
  editing: boolean;
  onChange: (panels: Panel[]) => void;
  /** The body of each panel. */
  render: (p: Panel) => ComponentChildren;
  /** Buttons in each panel's title bar (edit, remove). */
  actions?: (p: Panel) => ComponentChildren;
}

function boxes(panels: Panel[]): Box[] {
  return panels.map((p) => ({ id: p.id, ...p.layout }));
}

function withBoxes(panels: Panel[], bs: Box[]): Panel[] {
  const by = new Map(bs.map((b) => [b.id, b]));
  return panels.map((p) => {
    const b = by.get(p.id);
    return b ? { ...p, layout: { x: b.x, y: b.y, w: b.w, h: b.h } } : p;
  });
}

/** Moves panel `id` to cell `(x, y)`, pushing others down. */
export function movePanel(panels: Panel[], id: string, x: number, y: number): Panel[] {
  return withBoxes(panels, moveBox(boxes(panels), id, x, y));
}

/**
 * One arrow-key step of panel `id`: moves by `(dx, dy)` cells, or with
 * `resize` grows by `(dx, dy)`; a move goes past the neighbour in the way.
 */
export function stepPanel(panels: Panel[], id: string, dx: number, dy: number, resize: boolean): Panel[] {
  return withBoxes(panels, stepBox(boxes(panels), id, dx, dy, resize));
}

/** Resizes panel `id` to `w × h` cells, pushing others down. */
export function resizePanel(panels: Panel[], id: string, w: number, h: number): Panel[] {
  return withBoxes(panels, resizeBox(boxes(panels), id, w, h));
}

interface Drag {
  id: string;
  mode: 'move' | 'resize';
  startX: number;
  startY: number;
  orig: Panel;
  preview: Panel[];
}

/** The grid. */
export function DashboardGrid({ panels, editing, onChange, render, actions }: DashboardGridProps) {
  const grid = useRef<HTMLDivElement>(null);
  const [drag, setDrag] = useState<Drag | null>(null);
  const shown = drag?.preview ?? panels;

  const cell = (): { cw: number; rh: number } => {
    const w = grid.current?.clientWidth ?? 1200;
    return { cw: (w + GAP_PX) / GRID_COLUMNS, rh: ROW_PX + GAP_PX };
  };

  const start = (e: PointerEvent, p: Panel, mode: Drag['mode']): void => {
    if (!editing || e.button !== 0) return;
    if ((e.target as HTMLElement).closest('button') && mode === 'move') return;
    e.preventDefault();
    (e.currentTarget as HTMLElement).setPointerCapture?.(e.pointerId);
    setDrag({ id: p.id, mode, startX: e.clientX, startY: e.clientY, orig: p, preview: panels });
  };

  const move = (e: PointerEvent): void => {
    if (!drag) return;
    const { cw, rh } = cell();
    const dx = Math.round((e.clientX - drag.startX) / cw);
    const dy = Math.round((e.clientY - drag.startY) / rh);
    const o = drag.orig.layout;
    const id = drag.orig.id;
    const preview = drag.mode === 'move' ? movePanel(panels, id, o.x + dx, o.y + dy) : resizePanel(panels, id, o.w + dx, o.h + dy);
    setDrag({ ...drag, preview });
  };

  const end = (): void => {
    if (!drag) return;
    const changed = JSON.stringify(drag.preview) !== JSON.stringify(panels);
    setDrag(null);
    if (changed) onChange(drag.preview);
  };

  const key = (e: KeyboardEvent, p: Panel): void => {
    if (!editing) return;
    const d: Record<string, [number, number]> = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };
    const v = d[e.key];
    if (!v) return;
    e.preventDefault();
    const next = stepPanel(panels, p.id, v[0], v[1], e.shiftKey);
    if (JSON.stringify(next) !== JSON.stringify(panels)) onChange(next);
  };

  return (
    <div
      ref={grid}
      class={`dashboard-grid${editing ? ' editing' : ''}`}
      style={{ gridTemplateColumns: `repeat(${GRID_COLUMNS}, 1fr)`, gridAutoRows: `${ROW_PX}px`, gap: `${GAP_PX}px` }}
      onPointerMove={move}
      onPointerUp={end}
      onPointerCancel={end}
    >
      {shown.map((p) => (
        <section
          key={p.id}
          class={`panel${drag?.id === p.id ? ' dragging' : ''}`}
          data-panel-id={p.id}
          aria-label={p.title}
          style={{ gridColumn: `${p.layout.x + 1} / span ${p.layout.w}`, gridRow: `${p.layout.y + 1} / span ${p.layout.h}` }}
        >
          <header
            class="panel-header"
            tabIndex={editing ? 0 : -1}
            role={editing ? 'group' : undefined}
            aria-label={editing ? `${p.title}: arrows move, Shift+arrows resize` : undefined}
            onPointerDown={(e) => start(e, p, 'move')}
            onKeyDown={(e) => key(e, p)}
          >
            <h3>{p.title}</h3>
            <div class="panel-actions">{actions?.(p)}</div>
          </header>
          <div class="panel-content">{render(p)}</div>
          {editing ? <div class="resize-handle" aria-hidden="true" onPointerDown={(e) => start(e, p, 'resize')} /> : null}
        </section>
      ))}
    </div>
  );
}
