/** History-API routing: the broker serves index.html for every dashboard path (SPA fallback). */
import { useEffect, useState } from 'preact/hooks';
import { store, useStore } from './store';

const loc = store({ path: location.pathname, search: location.search });

window.addEventListener('popstate', () => loc.set({ path: location.pathname, search: location.search }));

export function navigate(to: string, replace = false): void {
  const u = new URL(to, location.origin);
  if (u.pathname === location.pathname && u.search === location.search) return;
  if (replace) history.replaceState(null, '', u.pathname + u.search);
  else history.pushState(null, '', u.pathname + u.search);
  loc.set({ path: u.pathname, search: u.search });
  if (!replace) window.scrollTo(0, 0);
}

export function useLocation(): { path: string; query: URLSearchParams } {
  const l = useStore(loc);
  return { path: l.path, query: new URLSearchParams(l.search) };
}

/** Updates some query parameters in place (empty values are removed). */
export function setQuery(patch: Record<string, string | undefined>, replace = true): void {
  const q = new URLSearchParams(location.search);
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined || v === '') q.delete(k);
    else q.set(k, v);
  }
  const s = q.toString();
  navigate(`${location.pathname}${s ? `?${s}` : ''}`, replace);
}

/**
 * Matches `/queues/:name` style patterns; returns decoded params or null. A path that ends in `/`
 * where the pattern ends in a parameter gives that parameter `''`: `/queues/` is the detail page of
 * the queue named '' (a push may name it; the API serves it at `/api/v1/resources/queues/`).
 */
export function match(pattern: string, path: string): Record<string, string> | null {
  const a = pattern.split('/').filter(Boolean);
  const b = path.split('/').filter(Boolean);
  if (b.length === a.length - 1 && path.endsWith('/') && a[a.length - 1]!.startsWith(':')) b.push('');
  if (a.length !== b.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < a.length; i++) {
    const seg = a[i]!;
    if (seg.startsWith(':')) {
      try {
        out[seg.slice(1)] = decodeURIComponent(b[i]!);
      } catch {
        out[seg.slice(1)] = b[i]!;
      }
    } else if (seg !== b[i]) return null;
  }
  return out;
}

/** A debounced copy of `value` (for search boxes). */
export function useDebounced<T>(value: T, ms = 200): T {
  const [v, setV] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setV(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return v;
}
