// Grid layout of dashboard panels: moving or resizing one panel pushes the
// panels it would overlap downwards, then everything floats up as far as it
// can, so the grid never has overlaps or holes above a panel.
import { GRID_COLUMNS } from '../../api/dashboards';

/** A box on the grid (cells). */
export interface Box {
  id: string;
  x: number;
  y: number;
  w: number;
  h: number;
}

/** Smallest panel. */
export const MIN_W = 2;
export const MIN_H = 2;

function overlaps(a: Box, b: Box): boolean {
  return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

function clamp<T extends Box>(b: T): T {
  const w = Math.min(GRID_COLUMNS, Math.max(MIN_W, Math.round(b.w)));
  const h = Math.max(MIN_H, Math.round(b.h));
  const x = Math.min(GRID_COLUMNS - w, Math.max(0, Math.round(b.x)));
  const y = Math.max(0, Math.round(b.y));
  return { ...b, x, y, w, h };
}

/**
 * Removes overlaps and holes: the box `fixedId` keeps its place, every other
 * box (in reading order) takes the highest free row in its columns, then the
 * fixed box floats up into any free space above it and the others follow it
 * up into the rows it left.
 */
export function settle<T extends Box>(boxes: T[], fixedId?: string): T[] {
  const fixed = boxes.find((b) => b.id === fixedId);
  const placed: T[] = fixed ? [{ ...fixed }] : [];
  for (const b0 of boxes.filter((b) => b.id !== fixedId).sort((a, b) => a.y - b.y || a.x - b.x)) {
    const b = { ...b0, y: 0 };
    while (placed.some((p) => overlaps(p, b))) b.y++;
    placed.push(b);
  }
  const f = placed[0];
  if (fixed && f) {
    const others = placed.slice(1);
    while (f.y > 0 && !others.some((p) => overlaps(p, { ...f, y: f.y - 1 }))) f.y--;
    // The fixed box may have left rows the others were pushed below: they follow it up.
    for (const b of [...others].sort((a, c) => a.y - c.y || a.x - c.x)) {
      while (b.y > 0 && !placed.some((p) => p !== b && overlaps(p, { ...b, y: b.y - 1 }))) b.y--;
    }
  }
  return placed;
}

/** Moves box `id` to `(x, y)`. */
export function moveTo<T extends Box>(boxes: T[], id: string, x: number, y: number): T[] {
  return settle(
    boxes.map((b) => (b.id === id ? clamp({ ...b, x, y }) : b)),
    id,
  );
}

/** Resizes box `id` to `w × h`. */
export function resizeTo<T extends Box>(boxes: T[], id: string, w: number, h: number): T[] {
  return settle(
    boxes.map((b) => (b.id === id ? clamp({ ...b, w, h, x: Math.min(b.x, GRID_COLUMNS - Math.max(MIN_W, Math.round(w))) }) : b)),
    id,
  );
}

/**
 * One keyboard step of box `id`: moves it by `(dx, dy)` cells (or resizes it
 * by `(dw, dh)` with `resize`). A move that `settle` would undo — a box
 * stepped down onto the box below floats straight back up — is repeated
 * until the box actually lands somewhere else, so the arrow keys can take a
 * box past its neighbours. Returns `boxes` unchanged at the grid's edges.
 */
export function step<T extends Box>(boxes: T[], id: string, dx: number, dy: number, resize = false): T[] {
  const b = boxes.find((x) => x.id === id);
  if (!b) return boxes;
  const limit = Math.max(GRID_COLUMNS, bottomOf(boxes) + 1);
  for (let k = 1; k <= limit; k++) {
    const r = resize ? resizeTo(boxes, id, b.w + k * dx, b.h + k * dy) : moveTo(boxes, id, b.x + k * dx, b.y + k * dy);
    const n = r.find((x) => x.id === id);
    if (n && (n.x !== b.x || n.y !== b.y || n.w !== b.w || n.h !== b.h)) return r;
    // Resizing never needs more than one step: a box at its minimum or at the edge stays.
    if (resize) break;
  }
  return boxes;
}

/** Where a new box of `w × h` goes: the first free row at the bottom. */
export function bottomOf(boxes: Box[]): number {
  return boxes.reduce((m, b) => Math.max(m, b.y + b.h), 0);
}

/**
 * Where a new `w`×`h` panel goes: the first free place in reading order
 * (top row first, left to right), so new panels sit side by side and fill
 * the right half before starting a row below.
 */
export function firstFreeSlot(boxes: Box[], w: number, h: number): { x: number; y: number } {
  const width = Math.min(GRID_COLUMNS, Math.max(MIN_W, w));
  const bottom = bottomOf(boxes);
  for (let y = 0; y <= bottom; y++) {
    for (let x = 0; x + width <= GRID_COLUMNS; x++) {
      const b = { id: '', x, y, w: width, h };
      if (!boxes.some((o) => overlaps(o, b))) return { x, y };
    }
  }
  return { x: 0, y: bottom };
}

/** Whether any two boxes overlap (for tests and assertions). */
export function hasOverlap(boxes: Box[]): boolean {
  return boxes.some((a, i) => boxes.some((b, j) => i < j && overlaps(a, b)));
}
