/**
 * The request path the auth layer judges. It must be the same string the router dispatches on
 * (docs/security.md#path-hygiene), or a request could be classified as one route and served by another.
 *
 * Fastify's router (find-my-way) matches on the path before the first `?` or `#`, with
 * percent-encodings decoded the way `decodeURI` does, except that reserved characters
 * (`# $ & + , / : ; = ? @`) and `%25` stay encoded. So `/api/v1/resources/%71ueues/x` is routed
 * as `/api/v1/resources/queues/x` (and must be classified so, i.e. `admin` for a DELETE), while
 * `/api/v1/resources/queues%2Fx` stays one segment for both. For a path without `%` this is the
 * path exactly as received, as docs/security.md#path-hygiene says. Case-sensitive; no slash or dot-segment folding (the
 * router does none with its default options).
 *
 * Source: docs/security.md#path-hygiene; find-my-way url-sanitizer.
 */

/**
 * The router-equivalent path of a raw request target.
 * @param url the raw request target (`request.url`), path and query
 * @returns the path the router matches on; the raw path when its percent-encoding is malformed
 *   (the router refuses such a request anyway)
 */
export function routerPath(url: string): string {
  let end = url.length;
  const q = url.indexOf('?');
  if (q !== -1) end = q;
  const h = url.indexOf('#');
  if (h !== -1 && h < end) end = h;
  const raw = end === url.length ? url : url.slice(0, end);
  if (!raw.includes('%')) return raw;
  try {
    return decodeURI(raw.replace(/%25/g, '%2525'));
  } catch {
    return raw;
  }
}
