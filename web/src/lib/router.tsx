// A small router over the History API: the console's pages live under /console/, and the
// binary answers every such path with the page (the app picks the view).

import { useEffect, useState, type AnchorHTMLAttributes, type MouseEvent } from 'react';

export const BASE = '/console';

function current(): string {
  const path = window.location.pathname.startsWith(BASE) ? window.location.pathname.slice(BASE.length) : '/';
  return (path || '/') + window.location.search;
}

const listeners = new Set<() => void>();

export function navigate(to: string, replace = false) {
  const url = `${BASE}${to}`;
  if (replace) window.history.replaceState(null, '', url);
  else window.history.pushState(null, '', url);
  listeners.forEach((l) => l());
  window.scrollTo(0, 0);
}

/** The path after /console, with its query (`/runs?status=failed`). */
export function useRoute(): string {
  const [route, setRoute] = useState(current);
  useEffect(() => {
    const update = () => setRoute(current());
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return route;
}

export function queryOf(route: string): URLSearchParams {
  const i = route.indexOf('?');
  return new URLSearchParams(i < 0 ? '' : route.slice(i + 1));
}

export function pathOf(route: string): string {
  const i = route.indexOf('?');
  return i < 0 ? route : route.slice(0, i);
}

export function Link({ to, ...rest }: { to: string } & AnchorHTMLAttributes<HTMLAnchorElement>) {
  const onClick = (e: MouseEvent<HTMLAnchorElement>) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(to);
  };
  return <a href={`${BASE}${to}`} onClick={onClick} {...rest} />;
}
