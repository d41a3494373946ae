/** Paths under /console/ with the History API; the server answers every such path with the app. */
import type { ComponentChildren } from 'preact';

export const BASE = '/console/';

export interface Route {
  page: string;
  id: string | undefined;
}

export function routeOf(pathname: string): Route {
  const rest = pathname.startsWith(BASE) ? pathname.slice(BASE.length) : '';
  const [page = '', ...id] = rest.split('/').filter(Boolean);
  return { page, id: id.length ? id.map(decodeURIComponent).join('/') : undefined };
}

let setRouteGlobal: ((r: Route) => void) | undefined;

export function onRoute(set: (r: Route) => void): void {
  setRouteGlobal = set;
}

export function navigate(to: string): void {
  history.pushState(null, '', BASE + to);
  setRouteGlobal?.(routeOf(location.pathname));
}

/** An in-app link: a real href (new tabs work), navigation without a reload. */
export function Link({ to, children, current, title }: { to: string; children: ComponentChildren; current?: boolean; title?: string }) {
  return (
    <a
      href={BASE + to}
      title={title}
      aria-current={current ? 'page' : undefined}
      onClick={(e) => {
        if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
        e.preventDefault();
        navigate(to);
      }}
    >
      {children}
    </a>
  );
}
