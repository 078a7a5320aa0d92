/**
 * The proxy listener's response class (docs/proxy.md#forwarding): every answer it writes carries
 * the listener's security headers, also the answers the broker router writes in process.
 *
 * They are added when the status line is written rather than set on each response beforehand:
 * a response with headers already set makes Node's `writeHead(status, headers)` copy every header
 * the broker passes one by one (`setHeader` each) before writing them, which cost a forwarded push
 * measurably more CPU and garbage (bench/proxy-cpu.ts) than writing the broker's header object as
 * it is.
 */
import type http from 'node:http';
import { ClosingResponse } from '../util/http-head.js';

type Headers = http.OutgoingHttpHeaders | http.OutgoingHttpHeader[];

/**
 * A `ServerResponse` class (the `ServerResponse` option of `http.createServer` and
 * `https.createServer`) whose answers carry `extra` (lowercase name, value), except a header the
 * answer sets itself, which wins; an answer written before its request's body arrived closes the
 * connection ({@link ClosingResponse}).
 */
export function responseWithHeaders(extra: readonly (readonly [string, string])[]): typeof http.ServerResponse {
  const names = extra.map(([n]) => n);
  const values = extra.map(([, v]) => v);
  class SecuredResponse extends ClosingResponse {
    override writeHead(statusCode: number, reason?: string | Headers, headers?: Headers): this {
      const given = typeof reason === 'string' ? headers : reason;
      if (given !== undefined && !Array.isArray(given)) {
        for (let i = 0; i < names.length; i++) if (given[names[i]!] === undefined && !this.hasHeader(names[i]!)) given[names[i]!] = values[i];
      } else {
        // No header object (the status alone), or a raw array: set on the response, where the array's own win.
        for (let i = 0; i < names.length; i++) if (!this.hasHeader(names[i]!)) this.setHeader(names[i]!, values[i]!);
      }
      return typeof reason === 'string' ? super.writeHead(statusCode, reason, headers) : super.writeHead(statusCode, reason);
    }
  }
  return SecuredResponse as typeof http.ServerResponse;
}
