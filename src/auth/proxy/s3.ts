/**
 * A cluster's S3 settings, managed through the control plane (`PUT|GET|DELETE
 * /api/cp/clusters/:slug/s3`, docs/proxy.md#s3-settings): bucket, region,
 * endpoint, prefix, access key id, path-style flag, and a secret access key that is stored only
 * sealed with the payload envelope (src/crypto/envelope.ts, AES-256-GCM under
 * `QUEEN_ENCRYPTION_KEY`) and never returned: a read says whether one is set.
 *
 * Refusals are QueenErrors: `cluster_unknown` (404), `invalid` (400, the field and the rule),
 * `encryption_required` (409: a secret to store and no `QUEEN_ENCRYPTION_KEY`). Every call is
 * idempotent: a PUT replaces the settings (a PUT without `secret_access_key` keeps the stored
 * secret, `null` removes it), a DELETE of nothing answers `deleted: false`.
 */
import { open, seal } from '../../crypto/envelope.js';
import type { KeyRing } from '../../crypto/keyring.js';
import { QueenError } from '../../errors.js';
import type { Clock } from '../../util/clock.js';
import type { ProxyState } from './state.js';

/** The non-secret fields, as stored and shown. */
export interface S3Fields {
  bucket: string;
  region: string | null;
  endpoint: string | null;
  prefix: string;
  access_key_id: string | null;
  force_path_style: boolean;
}

/** What a read shows: never the secret, only whether one is stored. */
export type S3View = { cluster_id: string; slug: string; configured: boolean; secret_access_key_set: boolean } & Partial<S3Fields> & { updated_at?: string };

const FIELDS = new Set(['bucket', 'region', 'endpoint', 'prefix', 'access_key_id', 'secret_access_key', 'force_path_style']);
/** S3 bucket names: 3 to 63 lowercase letters, digits, dots and hyphens, a letter or digit at each end. */
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const REGION = /^[a-z0-9-]{1,64}$/;
/** Printable ASCII without spaces (access key ids and secrets). */
const TOKEN = /^[\x21-\x7e]+$/;

function invalid(message: string): QueenError {
  return new QueenError('invalid', message);
}

/** An optional string field: undefined/null → null, else checked against `rule` and `max` characters. */
function optString(b: Record<string, unknown>, name: string, max: number, rule?: RegExp, ruleText?: string): string | null {
  const v = b[name];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string' || v.length === 0 || v.length > max) throw invalid(`${name} must be a non-empty string of at most ${max} characters`);
  if (rule && !rule.test(v)) throw invalid(`${name} ${ruleText}`);
  return v;
}

function endpointOf(b: Record<string, unknown>): string | null {
  const v = optString(b, 'endpoint', 2048);
  if (v === null) return null;
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw invalid('endpoint must be an http:// or https:// URL');
  }
  if ((u.protocol !== 'https:' && u.protocol !== 'http:') || u.username !== '' || u.password !== '' || u.search !== '' || u.hash !== '') {
    throw invalid('endpoint must be an http:// or https:// URL without credentials, query or fragment');
  }
  return v;
}

/**
 * Validates a PUT body.
 * @returns the non-secret fields and the secret: a string to store, `null` to remove, undefined to keep.
 * @throws QueenError `invalid`
 */
export function parseS3Body(body: unknown): { fields: S3Fields; secret: string | null | undefined } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('body must be a JSON object');
  const b = body as Record<string, unknown>;
  for (const k of Object.keys(b)) if (!FIELDS.has(k)) throw invalid(`unknown field ${k} (known: ${[...FIELDS].join(', ')})`);
  if (typeof b.bucket !== 'string') throw invalid('bucket is required');
  if (!BUCKET.test(b.bucket)) throw invalid('bucket must be 3 to 63 lowercase letters, digits, dots or hyphens, starting and ending with a letter or digit');
  const prefix = optString(b, 'prefix', 1024) ?? '';
  if ([...prefix].some((ch) => ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f)) throw invalid('prefix must not hold control characters');
  if (b.force_path_style !== undefined && typeof b.force_path_style !== 'boolean') throw invalid('force_path_style must be a boolean');
  const fields: S3Fields = {
    bucket: b.bucket,
    region: optString(b, 'region', 64, REGION, 'must be lowercase letters, digits and hyphens (e.g. eu-west-1)'),
    endpoint: endpointOf(b),
    prefix,
    access_key_id: optString(b, 'access_key_id', 128, TOKEN, 'must be printable ASCII without spaces'),
    force_path_style: b.force_path_style === true,
  };
  const secret = b.secret_access_key === undefined ? undefined : optString(b, 'secret_access_key', 1024, TOKEN, 'must be printable ASCII without spaces');
  return { fields, secret };
}

/** The S3 settings of clusters over the proxy state, sealing secrets with `ring` (null: no key configured). */
export class S3Settings {
  constructor(private readonly state: ProxyState, private readonly ring: KeyRing | null, private readonly clock: Clock) {}

  /** The settings of cluster `idOrSlug` as shown. @throws QueenError `cluster_unknown` */
  get(idOrSlug: string): S3View {
    const c = this.state.cluster(idOrSlug);
    const row = this.state.store.s3Settings(c.id);
    if (!row) return { cluster_id: c.id, slug: c.slug, configured: false, secret_access_key_set: false };
    return {
      cluster_id: c.id, slug: c.slug, configured: true, ...(JSON.parse(row.settings) as S3Fields),
      secret_access_key_set: row.sealedSecret !== null, updated_at: new Date(row.updatedAt).toISOString(),
    };
  }

  /**
   * Replaces the settings of cluster `idOrSlug` with `body` (see {@link parseS3Body}).
   * @throws QueenError `cluster_unknown`, `invalid`, `encryption_required`
   */
  put(idOrSlug: string, body: unknown): S3View {
    const c = this.state.cluster(idOrSlug);
    const { fields, secret } = parseS3Body(body);
    let sealed: Buffer | null;
    if (secret === undefined) sealed = this.state.store.s3Settings(c.id)?.sealedSecret ?? null;
    else if (secret === null) sealed = null;
    else {
      if (!this.ring) throw new QueenError('encryption_required', 'storing secret_access_key needs QUEEN_ENCRYPTION_KEY on the broker (the secret is stored sealed with it)');
      sealed = seal(this.ring.current, JSON.stringify(secret));
    }
    if (sealed !== null && fields.access_key_id === null) throw invalid('secret_access_key needs access_key_id');
    const now = this.clock.now();
    this.state.store.putS3Settings({ clusterId: c.id, settings: JSON.stringify(fields), sealedSecret: sealed, updatedAt: now });
    this.state.store.logOperation('cluster.s3.put', JSON.stringify({ cluster: c.slug, secret_set: sealed !== null }), now);
    return this.get(c.id);
  }

  /** Removes the settings of cluster `idOrSlug`. @throws QueenError `cluster_unknown` */
  delete(idOrSlug: string): { cluster_id: string; slug: string; deleted: boolean } {
    const c = this.state.cluster(idOrSlug);
    const deleted = this.state.store.deleteS3Settings(c.id);
    if (deleted) this.state.store.logOperation('cluster.s3.delete', JSON.stringify({ cluster: c.slug }), this.clock.now());
    return { cluster_id: c.id, slug: c.slug, deleted };
  }

  /**
   * The clear secret access key of cluster `clusterId` for the S3 client that will use it, or
   * undefined when none is stored. Never log or answer it.
   * @throws PayloadIntegrityError when the sealed secret does not open with the configured keys
   */
  secret(clusterId: string): string | undefined {
    const row = this.state.store.s3Settings(clusterId);
    if (!row?.sealedSecret || !this.ring) return undefined;
    return JSON.parse(open(this.ring, row.sealedSecret)) as string;
  }
}
