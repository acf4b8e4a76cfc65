import { forwardRef, useSyncExternalStore, type AnchorHTMLAttributes, type MouseEvent } from 'react';

/**
 * A small history router: the admin listener serves index.html for every console path, so
 * /invitations/12 can be reloaded, bookmarked and opened in a new tab.
 */
const listeners = new Set<() => void>();

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  window.addEventListener('popstate', listener);
  return () => {
    listeners.delete(listener);
    window.removeEventListener('popstate', listener);
  };
}

function snapshot(): string {
  return window.location.pathname + window.location.search;
}

export function navigate(to: string, { replace = false } = {}): void {
  if (to === snapshot()) return;
  if (replace) window.history.replaceState(null, '', to);
  else window.history.pushState(null, '', to);
  for (const listener of listeners) listener();
  if (!replace) window.scrollTo(0, 0);
}

export interface Location {
  pathname: string;
  search: string;
}

export function useLocation(): Location {
  const current = useSyncExternalStore(subscribe, snapshot);
  const index = current.indexOf('?');
  return index === -1 ? { pathname: current, search: '' } : { pathname: current.slice(0, index), search: current.slice(index) };
}

/** Matches `/invitations/:id`-style patterns; returns the named parts or null. */
export function matchPath(pattern: string, pathname: string): Record<string, string> | null {
  const names: string[] = [];
  const source = pattern
    .split('/')
    .map((part) => {
      if (part.startsWith(':')) {
        names.push(part.slice(1));
        return '([^/]+)';
      }
      return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('/');
  const match = new RegExp(`^${source}/?$`).exec(pathname);
  if (!match) return null;
  const params: Record<string, string> = {};
  names.forEach((name, i) => {
    params[name] = decodeURIComponent(match[i + 1]!);
  });
  return params;
}

export type LinkProps = AnchorHTMLAttributes<HTMLAnchorElement> & { to: string };

/** An <a> that navigates in the app on plain clicks and keeps ctrl/middle-click behaviour. */
export const Link = forwardRef<HTMLAnchorElement, LinkProps>(function Link({ to, onClick, ...rest }, ref) {
  const handle = (event: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(event);
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    if (rest.target && rest.target !== '_self') return;
    event.preventDefault();
    navigate(to);
  };
  return <a ref={ref} href={to} onClick={handle} {...rest} />;
});
