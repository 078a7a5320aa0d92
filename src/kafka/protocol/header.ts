/**
 * Request and response headers (docs/kafka.md#connection-layer): request header v1 (api_key,
 * api_version, correlation_id, client_id) or v2 (v1 + tagged fields) for flexible versions;
 * response header v0 (correlation_id) or v1 (+ tagged fields), except ApiVersions, always v0.
 */
import { API } from './apis.js';
import type { Reader } from './reader.js';
import { Writer } from './writer.js';

export interface RequestHeader {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  clientId: string | null;
}

/** Reads api_key, api_version and correlation_id (enough to route or refuse). */
export function readHeaderStart(r: Reader): Omit<RequestHeader, 'clientId'> {
  return { apiKey: r.int16(), apiVersion: r.int16(), correlationId: r.int32() };
}

/** Reads the rest of the header: client_id, and the tagged fields when `flexible`. */
export function readHeaderRest(r: Reader, flexible: boolean): string | null {
  const clientId = r.nullableString();
  if (flexible) r.skipTaggedFields();
  return clientId;
}

/** A response frame: length, correlation id, (tagged fields), body. */
export function frameResponse(apiKey: number, correlationId: number, flexible: boolean, body: Buffer): Buffer {
  const headerV1 = flexible && apiKey !== API.ApiVersions;
  const w = new Writer(body.length + 9);
  w.int32(4 + (headerV1 ? 1 : 0) + body.length).int32(correlationId);
  if (headerV1) w.uvarint(0);
  w.raw(body);
  return w.finish();
}
