/**
 * Checks on a request head shared by every HTTP listener (the broker's PORT, src/http/errors.ts,
 * and the proxy's, src/proxy/server.ts), so that both refuse the same framing.
 */
import type { IncomingMessage } from 'node:http';

/** How many `Host` lines `raw` (Node's `rawHeaders`: name, value, name, …) holds; Node keeps the first of several. */
function hostLines(raw: readonly string[]): number {
  let n = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 4 && name.toLowerCase() === 'host') n++;
  }
  return n;
}

/**
 * What is wrong with the request's `Host`, or undefined when nothing is: an HTTP/1.1 request
 * without one, or a request with several lines (RFC 9112 §3.2: a server answers 400 to both; Node
 * would keep the first of several). The server must be created with `requireHostHeader: false` for
 * a request without `Host` to reach this check.
 */
export function hostProblem(req: IncomingMessage): string | undefined {
  if (req.httpVersionMajor === 1 && req.httpVersionMinor === 1 && req.headers.host === undefined) return 'an HTTP/1.1 request needs a Host header';
  if (hostLines(req.rawHeaders) > 1) return 'a request must carry one Host header, not several (RFC 9112 §3.2)';
  return undefined;
}
