// A table with a row of column headings over the rows its caller renders:
// the one shape of the Admin tabs' lists and the Operations components.
import type { ComponentChildren, JSX } from 'preact';

/** Props of [`DataTable`]. */
export interface DataTableProps {
  /** The table's class (`admin-table`, `components`, …). */
  class: string;
  /** The column headings, in order; `''` for a column without one. */
  columns: string[];
  /** The `<tr>` rows of the body. */
  children: ComponentChildren;
}

/** `<table>` with one `<th scope="col">` per column and the rows as its body. */
export function DataTable({ class: cls, columns, children }: DataTableProps): JSX.Element {
  return (
    <table class={cls}>
      <thead>
        <tr>
          {columns.map((c, i) => (
            <th key={i} scope="col">
              {c}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  );
}
