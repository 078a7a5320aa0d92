/** Tiny JSON-over-HTTP client for tests (real fetch, real loopback). */

export interface Answer<T = any> {
  status: number;
  body: T;
  text: string;
  headers: Headers;
}

/** Sends `method path` with an optional JSON body; parses JSON answers. */
export async function call<T = any>(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer<T>> {
  const init: RequestInit = { method, headers: { 'content-type': 'application/json', ...headers } };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  const r = await fetch(base + path, init);
  const text = await r.text();
  let parsed: unknown = undefined;
  if (text !== '') {
    try { parsed = JSON.parse(text); } catch { parsed = undefined; }
  }
  return { status: r.status, body: parsed as T, text, headers: r.headers };
}

/** A queue name unique to one test. */
export function uniqueName(prefix = 'q'): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}
