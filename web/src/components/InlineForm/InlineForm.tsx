// A one-line form (the Admin tabs' add and filter forms, the Account token
// form): its submit runs the caller's action instead of navigating.
import type { ComponentChildren, JSX } from 'preact';

/** Props of [`InlineForm`]. */
export interface InlineFormProps {
  /** The form's accessible name, when it has one. */
  label?: string;
  /** Runs on submit (the browser's own submit is prevented). */
  onSubmit: () => void;
  /** The inputs and buttons. */
  children: ComponentChildren;
}

/** A one-line `inline-form` whose submit runs `onSubmit` instead of navigating. */
export function InlineForm({ label, onSubmit, children }: InlineFormProps): JSX.Element {
  return (
    <form
      class="inline-form"
      aria-label={label}
      onSubmit={(e) => {
        e.preventDefault();
        onSubmit();
      }}
    >
      {children}
    </form>
  );
}
