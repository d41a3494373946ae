/** The console shell: the session, the router (paths under /console/) and the navigation. */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { can, currentSession, signOut, type Session } from './session.ts';
import { RESOURCES, resourceById } from './resources.ts';
import { SignIn } from './pages/signin.tsx';
import { Overview } from './pages/overview.tsx';
import { Logs } from './pages/logs.tsx';
import { ApiKeys } from './pages/api-keys.tsx';
import { Configs } from './pages/configs.tsx';
import { ResourcePage } from './pages/resource.tsx';
import { Pricing } from './pages/pricing.tsx';
import { ErrorNote } from './ui.tsx';
import { SESSION_ENDED } from './api.ts';
import { BASE, Link, onRoute, routeOf, type Route } from './router.tsx';

interface NavItem {
  id: string;
  title: string;
  scope: string;
  group: string;
}

const CORE_PAGES: NavItem[] = [
  { id: 'overview', title: 'Overview', scope: 'analytics.view', group: 'Observe' },
  { id: 'logs', title: 'Logs', scope: 'logs.list', group: 'Observe' },
  { id: 'api-keys', title: 'API keys', scope: 'api_keys.list', group: 'Access' },
  { id: 'configs', title: 'Configs', scope: 'configs.list', group: 'Routing' },
];

export const navItems = (s: Session): NavItem[] =>
  [...CORE_PAGES, ...RESOURCES.map((r) => ({ id: r.id, title: r.title, scope: r.list, group: r.group }))].filter((i) => can(s, i.scope));

function Page({ route, session }: { route: Route; session: Session }) {
  const items = navItems(session);
  const allowed = items.find((i) => i.id === route.page);
  if (!allowed) {
    const first = items[0];
    if (!route.page && first) return <Redirect to={first.id} />;
    return (
      <section>
        <h1>Not available</h1>
        <p>{items.length ? 'This page does not exist or your key may not see it.' : 'Your key has no scope that the console can show.'}</p>
      </section>
    );
  }
  switch (route.page) {
    case 'overview':
      return <Overview session={session} />;
    case 'logs':
      return <Logs session={session} id={route.id} />;
    case 'api-keys':
      return <ApiKeys session={session} />;
    case 'configs':
      return <Configs session={session} slug={route.id} />;
  }
  const def = resourceById(route.page);
  if (def?.id === 'pricing') return <Pricing def={def} session={session} />;
  return def ? <ResourcePage key={def.id} def={def} session={session} id={route.id} /> : null;
}

function Redirect({ to }: { to: string }) {
  useEffect(() => {
    history.replaceState(null, '', BASE + to);
    dispatchEvent(new PopStateEvent('popstate'));
  }, [to]);
  return null;
}

function Shell({ session, route, onSignOut }: { session: Session; route: Route; onSignOut: () => void }) {
  const items = navItems(session);
  const groups = [...new Set(items.map((i) => i.group))];
  const who = session.principal.name ?? session.principal.role ?? session.principal.type ?? 'signed in';
  // On a narrow screen the navigation folds behind a Menu button (CSS shows the button there only).
  const [menu, setMenu] = useState(false);
  useEffect(() => setMenu(false), [route.page, route.id]);
  return (
    <div class={menu ? 'shell menu-open' : 'shell'}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header>
        <button type="button" class="menu-button" aria-expanded={menu} aria-controls="console-nav" onClick={() => setMenu(!menu)}>
          Menu
        </button>
        <span class="brand">Gantry</span>
        <span class="who">{String(who)}</span>
        <button type="button" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <nav id="console-nav" aria-label="Console">
        {groups.map((g) => (
          <div key={g}>
            <h2>{g}</h2>
            <ul>
              {items
                .filter((i) => i.group === g)
                .map((i) => (
                  <li key={i.id}>
                    <Link to={i.id} current={route.page === i.id}>
                      {i.title}
                    </Link>
                  </li>
                ))}
            </ul>
          </div>
        ))}
      </nav>
      <main id="main">
        <Page route={route} session={session} />
      </main>
    </div>
  );
}

function App() {
  const [route, setRoute] = useState(routeOf(location.pathname));
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  onRoute(setRoute);
  useEffect(() => {
    currentSession().then(setSession, (e: unknown) => {
      setError(e);
      setSession(null);
    });
    const onPop = () => setRoute(routeOf(location.pathname));
    const onEnded = () => setSession(null);
    addEventListener('popstate', onPop);
    addEventListener(SESSION_ENDED, onEnded);
    return () => {
      removeEventListener('popstate', onPop);
      removeEventListener(SESSION_ENDED, onEnded);
    };
  }, []);
  if (session === undefined) return <main class="loading">Loading…</main>;
  if (!session)
    return (
      <main id="main" class="signin">
        <ErrorNote error={error} />
        <SignIn onSession={setSession} />
      </main>
    );
  const out = async () => {
    await signOut().catch(() => undefined);
    setSession(null);
    history.replaceState(null, '', BASE);
  };
  return <Shell session={session} route={route} onSignOut={out} />;
}

const root = document.getElementById('app');
if (root) render(<App />, root);
