// The top bar: the pages the caller may use, who they are, sign out.
import type { Permission } from '../../api/auth';
import { navigate } from '../../lib/router';

/** Props of [`Nav`]. */
export interface NavProps {
  path: string;
  user: string;
  can: (p: Permission) => boolean;
  onSignOut: () => void;
}

/** A link that navigates without reloading (and still opens in a new tab). */
export function Link({ href, children, class: cls }: { href: string; children: preact.ComponentChildren; class?: string }) {
  return (
    <a
      href={href}
      class={cls}
      onClick={(e) => {
        if (e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(href);
      }}
    >
      {children}
    </a>
  );
}

/** The pages, in menu order. */
export const PAGES: { path: string; label: string; needs: Permission }[] = [
  { path: '/search', label: 'Search', needs: 'logs:read' },
  { path: '/dashboards', label: 'Dashboards', needs: 'logs:read' },
  { path: '/live', label: 'Live', needs: 'logs:read' },
  { path: '/operations', label: 'Operations', needs: 'operations:read' },
  { path: '/admin', label: 'Administration', needs: 'users:manage' },
];

/** The navigation bar. */
export function Nav({ path, user, can, onSignOut }: NavProps) {
  return (
    <header class="topbar">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <span class="brand">sluice</span>
      <nav aria-label="Main">
        <ul>
          {PAGES.filter((p) => can(p.needs) || (p.path === '/admin' && can('audit:read'))).map((p) => (
            <li key={p.path}>
              <Link href={p.path} class={path.startsWith(p.path) ? 'active' : ''}>
                <span aria-current={path.startsWith(p.path) ? 'page' : undefined}>{p.label}</span>
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <span class="spacer" />
      <Link href="/account" class={path === '/account' ? 'active user' : 'user'}>
        {user}
      </Link>
      <button type="button" class="link" onClick={onSignOut}>
        Sign out
      </button>
    </header>
  );
}
