// The application shell: sign-in gate, navigation, and the page for the URL.
import { useEffect, useState } from 'preact/hooks';
import { credentials, onCredentials, setCredentials, type Credentials } from './api/client';
import { logout } from './api/auth';
import { Nav } from './components/Nav/Nav';
import { OneTimePassword } from './components/OneTimePassword/OneTimePassword';
import { useMe, type MeState } from './hooks/useMe';
import { match, navigate, useLocation } from './lib/router';
import { AccountPage } from './pages/Account';
import { AdminPage } from './pages/Admin/AdminPage';
import { DashboardListPage } from './pages/Dashboards/DashboardList';
import { DashboardPage } from './pages/Dashboards/DashboardPage';
import { EnrolPage } from './pages/Enrol';
import { LivePage } from './pages/Live';
import { LoginPage } from './pages/Login';
import { OperationsPage } from './pages/Operations';
import { SearchPage } from './pages/Search/SearchPage';

/** Whether to show the administration page: to whoever the navigation
 * offers it, and when there is no `/me` (a static token, a node without the
 * users API) — the server still decides every call. */
function adminAllowed(m: MeState): boolean {
  return !m.me || m.can('users:manage') || m.can('audit:read');
}

/** A page the signed-in user may not open (reached by its URL). */
function NoPermission() {
  return (
    <main id="main" class="no-permission">
      <h1>No permission</h1>
      <p>Your account may not open this page. Ask an administrator if you need it.</p>
    </main>
  );
}

/** The app. */
export function App() {
  const loc = useLocation();
  const [creds, setCreds] = useState<Credentials | null>(credentials);
  useEffect(() => onCredentials(setCreds), []);
  const credsKey = creds ? JSON.stringify(creds) : null;
  const meState = useMe(credsKey);
  // Set when these credentials finished the enrolment: until `/me` has been
  // loaded again it still says "totp_enrollment", and sending the user back
  // to /enrol on that stale answer made the first "continue" click do nothing.
  const [enrolled, setEnrolled] = useState<string | null>(null);
  const here = loc.path + (loc.params.toString() ? `?${loc.params.toString()}` : '');
  const next = loc.params.get('next') ?? '/search';

  useEffect(() => {
    if (creds && (loc.path === '/' || loc.path === '/login')) navigate(loc.path === '/login' ? next : '/search', true);
  }, [creds, loc.path, next]);

  useEffect(() => {
    const name = loc.path.split('/')[1] || 'search';
    document.title = `${name[0]?.toUpperCase() ?? ''}${name.slice(1)} · sluice`;
  }, [loc.path]);

  if (!creds) return <LoginPage next={loc.path === '/login' || loc.path === '/' ? next : here} />;
  if (meState.me?.session?.stage === 'totp_enrollment' && loc.path !== '/enrol' && enrolled !== credsKey) {
    navigate(`/enrol?next=${encodeURIComponent(here)}`, true);
  }

  const signOut = (): void => {
    const wasSession = creds.kind === 'session';
    const done = (): void => {
      setCredentials(null);
      navigate('/login', true);
    };
    if (wasSession) logout().then(done, done);
    else done();
  };

  const onEnrolled = (): void => {
    setEnrolled(credsKey);
    meState.reload();
  };

  const dash = match('/dashboards/:id', loc.path);
  let page;
  if (loc.path === '/enrol') page = <EnrolPage next={next} onDone={onEnrolled} />;
  else if (loc.path === '/search' || loc.path === '/') page = <SearchPage loc={loc} />;
  else if (loc.path === '/live') page = <LivePage loc={loc} />;
  else if (loc.path === '/operations') page = <OperationsPage />;
  else if (loc.path === '/dashboards') page = <DashboardListPage />;
  else if (dash && /^\d+$/.test(dash['id'] ?? '')) page = <DashboardPage key={dash['id']} id={Number(dash['id'])} edit={loc.params.get('edit') === '1'} />;
  else if (loc.path === '/admin')
    page = !meState.settled ? (
      <main id="main">
        <p class="muted">Loading…</p>
      </main>
    ) : adminAllowed(meState) ? (
      <AdminPage loc={loc} />
    ) : (
      <NoPermission />
    );
  else if (loc.path === '/account') page = <AccountPage me={meState.me} onChange={meState.reload} />;
  else
    page = (
      <main id="main">
        <h1>Not found</h1>
        <p>There is no page at {loc.path}.</p>
      </main>
    );

  return (
    <>
      <Nav path={loc.path} user={meState.me?.user.display_name || meState.me?.user.username || creds.name} can={meState.can} onSignOut={signOut} />
      <OneTimePassword oneTime={meState.me?.user.password_one_time ?? false} here={loc.path} />
      {page}
    </>
  );
}
