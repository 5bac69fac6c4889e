// A "?" beside the query bar opening the query language in short
// (docs/query-semantics.md): free text, fields, phrases, operators,
// wildcards, ranges, existence.
import { useRef, useState } from 'preact/hooks';
import { useDismiss } from '../../hooks/useDismiss';

/** The examples shown, each with what it finds. */
export const SYNTAX: readonly [string, string][] = [
  ['timeout', 'the word in message (free text searches message only)'],
  ['"connection refused"', 'the phrase in message'],
  ['level:error', 'a field equal to a value'],
  ['@host:"web-1"', 'identity fields start with @'],
  ['status:>=500', 'a number compared'],
  ['status:[400 TO 499]', 'a range, both ends included'],
  ['user:adm*', 'a wildcard'],
  ['_exists_:trace_id', 'events that have the field'],
  ['a AND (b OR c)', 'operators are upper-case; AND binds first'],
  ['NOT level:debug', 'or -level:debug: leave out'],
];

/** The syntax help button and popover. */
export function QuerySyntaxHelp() {
  const [open, setOpen] = useState(false);
  const root = useRef<HTMLDivElement>(null);
  useDismiss(open, root, () => setOpen(false));
  return (
    <div class="syntax-help" ref={root}>
      <button type="button" aria-label="Query syntax help" aria-haspopup="dialog" aria-expanded={open} onClick={() => setOpen(!open)}>
        ?
      </button>
      {open ? (
        <div class="popover syntax-popover" role="dialog" aria-label="Query syntax">
          <table>
            <tbody>
              {SYNTAX.map(([q, what]) => (
                <tr key={q}>
                  <td>
                    <code>{q}</code>
                  </td>
                  <td>{what}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </div>
  );
}
