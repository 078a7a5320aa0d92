/**
 * One Kafka connection (docs/kafka.md#connection-layer): 4-byte big-endian framing, requests
 * handled one at a time and answered in request order (clients pipeline), the frame caps (64 KiB
 * before SASL authentication, `QUEEN_KAFKA_MAX_REQUEST_BYTES` always), each frame's size reserved
 * from the process-wide budget (`QUEEN_KAFKA_QUEUED_MAX_REQUEST_BYTES`) before its body is read, the version gate of the API table, and the SASL
 * state machine (pre-authentication allowlist, handshake v0 raw tokens, ILLEGAL_SASL_STATE,
 * periodic re-check of the credential so a revoked one closes the connection within 30 s), and
 * two deadlines: SASL authentication (`QUEEN_KAFKA_SASL_AUTH_TIMEOUT_MS`) and frame completion
 * (`QUEEN_KAFKA_FRAME_TIMEOUT_MS`).
 */
import type { Socket } from 'node:net';
import { ErrorCode } from './errors.js';
import type { ConnectionInfo, KafkaContext } from './context.js';
import { HANDLERS } from './handlers/index.js';
import { produceMany } from './handlers/produce.js';
import type { Body } from './handlers/types.js';
import type { KafkaMetrics } from './metrics.js';
import { API, APIS, type ApiSpec } from './protocol/apis.js';
import { frameResponse, readHeaderRest, readHeaderStart } from './protocol/header.js';
import { ProtocolError, Reader } from './protocol/reader.js';
import { readStruct, writeStruct } from './protocol/schema.js';
import { Writer } from './protocol/writer.js';
import { authenticatePlain, type HeldRoles, type TokenCheck } from './sasl.js';
import type { AccessLevel } from '../auth/access-levels.js';

/** Smallest request frame, bytes: the request header's api_key (2), api_version (2) and correlation_id (4). */
const MIN_FRAME_BYTES = 8;
/** Largest frame before SASL authentication, bytes. */
export const PRE_AUTH_FRAME_BYTES = 64 * 1024;
/** Frames buffered before reading pauses. */
const MAX_QUEUED = 64;

type SaslState = 'off' | 'start' | 'handshaken' | 'raw' | 'authenticated';

/** A request past the gate: its header fields, its API's shapes and its decoded body. */
interface Decoded {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  flexible: boolean;
  spec: ApiSpec;
  req: Body;
}

export class KafkaConnection {
  /** The length prefix being read (it may arrive split), and how many of its 4 bytes are in. */
  private readonly head = Buffer.alloc(4);
  private headFill = 0;
  /** Size of the frame whose body is being read, bytes; −1 while reading a length prefix. */
  private size = -1;
  /** The body bytes of that frame received so far, and their total. */
  private chunks: Buffer[] = [];
  private buffered = 0;
  private readonly frames: Buffer[] = [];
  private working = false;
  private closed = false;
  /** Shutting down: no new request is read; the one in hand is answered. */
  private stopping = false;
  /** Called when the request in hand has been answered (see {@link shutdown}). */
  private idle: (() => void)[] = [];
  private sasl: SaslState;
  private recheck: NodeJS.Timeout | undefined;
  /** Closes a connection not authenticated in time (SASL on). */
  private authDeadline: NodeJS.Timeout | undefined;
  /** Closes the connection when the frame being read is not complete in time; armed mid-frame. */
  private frameDeadline: NodeJS.Timeout | undefined;
  /** Reading paused by the broker: frames queued (backpressure) or the byte budget exhausted. */
  private heldQueue = false;
  private heldMemory = false;
  /** Bytes of the frame being read reserved from the budget (its whole size, once granted). */
  private reserved = 0;
  /** The rest of the data read while this connection waits for its frame's reservation. */
  private stash: Buffer | undefined;
  private readonly granted = (): void => this.onGranted();
  readonly info: ConnectionInfo;

  constructor(
    private readonly socket: Socket,
    private readonly ctx: KafkaContext,
    private readonly metrics: KafkaMetrics,
    private readonly check: TokenCheck | undefined,
    private readonly levels: (roles: HeldRoles, level: AccessLevel) => boolean,
    /** The roles of a connection without SASL (the process credential, `QUEEN_TOKEN`). */
    private roles: HeldRoles,
  ) {
    this.sasl = ctx.config.sasl ? 'start' : 'off';
    this.info = { clientId: null, clientHost: `/${socket.remoteAddress ?? ''}`, subject: null, may: (level) => this.levels(this.roles, level) };
    socket.setNoDelay(true);
    socket.setTimeout(ctx.config.idleTimeoutMs, () => this.close('idle'));
    if (ctx.config.sasl) {
      this.authDeadline = setTimeout(() => {
        ctx.log.info({ client: this.info.clientHost, timeout_ms: ctx.config.saslAuthTimeoutMs }, 'kafka: not authenticated in time; connection closed');
        this.close('authentication timeout');
      }, ctx.config.saslAuthTimeoutMs);
      this.authDeadline.unref();
    }
    socket.on('data', (c: Buffer) => this.onData(c));
    socket.on('error', () => this.close('socket error'));
    socket.on('close', () => this.close('closed'));
  }

  /** Closes the connection without answering anything pending. */
  close(_why: string): void {
    if (this.closed) return;
    this.closed = true;
    if (this.stash !== undefined) this.ctx.requestBytes.cancel(this.granted);
    this.stash = undefined;
    this.dropQueued();
    this.ctx.requestBytes.give(this.reserved);
    this.reserved = 0;
    clearInterval(this.recheck);
    clearTimeout(this.authDeadline);
    clearTimeout(this.frameDeadline);
    this.frames.length = 0;
    this.socket.destroy();
  }

  /**
   * Closes cleanly (broker shutdown): reads no further request, lets the request in hand finish
   * and its answer leave, then ends the socket (FIN). A socket still open after `graceMs` is destroyed.
   * @param graceMs how long to wait for the request in hand and the peer's close, ms
   */
  async shutdown(graceMs: number): Promise<void> {
    if (this.closed) return;
    this.stopping = true;
    this.dropQueued();
    this.socket.pause();
    const bounded = (p: Promise<void>) => new Promise<void>((resolve) => {
      const t = setTimeout(resolve, graceMs);
      void p.then(() => { clearTimeout(t); resolve(); });
    });
    if (this.working) await bounded(new Promise<void>((r) => this.idle.push(r)));
    const gone = new Promise<void>((r) => this.socket.once('close', () => r()));
    this.socket.end();
    await bounded(gone);
    this.close('shutdown');
  }

  /**
   * Reads frames off the socket in linear work: the length prefix into a 4-byte buffer (it may
   * arrive split), then the body's chunks collected and joined once, when the frame is complete.
   */
  private onData(chunk: Buffer): void {
    if (this.closed || this.stopping) return;
    if (this.stash !== undefined) {
      this.stash = Buffer.concat([this.stash, chunk]); // arrived as reading paused; replayed on grant
      return;
    }
    let at = 0;
    let completed = false;
    const midFrameBefore = this.headFill > 0 || this.size >= 0;
    while (at < chunk.length) {
      if (this.size < 0) {
        const n = Math.min(4 - this.headFill, chunk.length - at);
        chunk.copy(this.head, this.headFill, at, at + n);
        this.headFill += n;
        at += n;
        if (this.headFill < 4) break;
        this.headFill = 0;
        const size = this.head.readInt32BE(0);
        const cap = this.sasl === 'off' || this.sasl === 'authenticated' ? this.ctx.config.maxRequestBytes : PRE_AUTH_FRAME_BYTES;
        if (size < MIN_FRAME_BYTES) {
          // Not even api_key, api_version and correlation_id: nothing to answer (Kafka closes too).
          this.ctx.log.warn({ size, client: this.info.clientHost }, 'kafka: frame shorter than a request header; connection closed');
          this.close('frame too short');
          return;
        }
        if (size > cap) {
          this.ctx.log.warn({ size, cap, client: this.info.clientHost }, 'kafka: frame over the cap; connection closed');
          this.close('frame too large');
          return;
        }
        this.size = size;
        if (!this.ctx.requestBytes.reserve(size, this.granted)) {
          // The budget is spent: stop reading until it is given back (Kafka mutes the channel).
          this.stash = chunk.subarray(at);
          this.heldMemory = true;
          this.socket.pause();
          this.disarmFrameDeadline();
          break;
        }
        this.reserved = size;
      }
      const take = Math.min(this.size - this.buffered, chunk.length - at);
      if (take > 0) {
        this.chunks.push(chunk.subarray(at, at + take));
        this.buffered += take;
        at += take;
      }
      if (this.buffered === this.size) {
        this.frames.push(this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.size));
        this.reserved = 0; // the queued frame holds it until handled
        this.chunks = [];
        this.buffered = 0;
        this.size = -1;
        completed = true;
      }
    }
    if (this.frames.length >= MAX_QUEUED) this.hold();
    // The frame deadline runs from a frame's first byte: armed when this chunk leaves one partly
    // read and none was before (or the one before completed in it), disarmed when none is.
    const midFrame = this.headFill > 0 || this.size >= 0;
    if (!midFrame) this.disarmFrameDeadline();
    else if (!midFrameBefore || completed || this.frameDeadline === undefined) this.armFrameDeadline();
    void this.drain();
  }

  /** The frame's reservation was granted: reading resumes with the bytes read meanwhile. */
  private onGranted(): void {
    const rest = this.stash ?? Buffer.alloc(0);
    this.stash = undefined;
    this.reserved = this.size;
    if (this.closed) {
      this.ctx.requestBytes.give(this.reserved);
      this.reserved = 0;
      return;
    }
    this.heldMemory = false;
    if (!this.heldQueue && !this.stopping) this.socket.resume();
    this.armFrameDeadline();
    if (rest.length > 0) this.onData(rest);
  }

  /** Drops the frames read and not handled, giving their bytes back to the budget. */
  private dropQueued(): void {
    let bytes = 0;
    for (const f of this.frames) bytes += f.length;
    this.frames.length = 0;
    this.ctx.requestBytes.give(bytes);
  }

  private armFrameDeadline(): void {
    if (this.heldQueue || this.heldMemory || this.closed) return;
    if (this.frameDeadline) {
      this.frameDeadline.refresh();
      return;
    }
    this.frameDeadline = setTimeout(() => {
      this.ctx.log.info({ client: this.info.clientHost, timeout_ms: this.ctx.config.frameTimeoutMs, received: this.buffered, size: this.size }, 'kafka: frame not complete in time; connection closed');
      this.close('frame timeout');
    }, this.ctx.config.frameTimeoutMs);
    this.frameDeadline.unref();
  }

  private disarmFrameDeadline(): void {
    clearTimeout(this.frameDeadline);
    this.frameDeadline = undefined;
  }

  /** Pauses reading (backpressure); a frame partly read stops its deadline meanwhile. */
  private hold(): void {
    this.heldQueue = true;
    this.socket.pause();
    this.disarmFrameDeadline();
  }

  /** Resumes reading; a frame partly read gets its whole deadline again. */
  private release(): void {
    this.heldQueue = false;
    if (this.heldMemory) return;
    this.socket.resume();
    if (this.headFill > 0 || this.size >= 0) this.armFrameDeadline();
  }

  private async drain(): Promise<void> {
    if (this.working) return;
    this.working = true;
    try {
      while (this.frames.length > 0 && !this.closed && !this.stopping) {
        const frame = this.frames.shift()!;
        const run = this.produceRun(frame);
        if (this.frames.length < MAX_QUEUED / 2 && this.heldQueue && !this.stopping) this.release();
        let outs: (Buffer | undefined)[];
        try {
          outs = run.length > 0 ? await this.handleProduceRun([frame, ...run]) : [await this.handle(frame)];
        } finally {
          this.ctx.requestBytes.give(run.reduce((n, f) => n + f.length, frame.length));
        }
        // Backpressure: the next request is handled once this answer has left the process, so a
        // client that pipelines requests without reading cannot make the broker buffer an answer
        // per request; meanwhile its frames queue up to MAX_QUEUED and the socket is paused.
        let drained = true;
        for (const out of outs) if (out && !this.closed) drained = this.socket.write(out) && drained;
        if (!drained && !this.closed) await this.flushed();
      }
    } catch (e) {
      if (!(e instanceof ProtocolError)) this.ctx.log.error({ err: e }, 'kafka: request failed; connection closed');
      this.close('error');
    } finally {
      this.working = false;
      for (const r of this.idle.splice(0)) r();
    }
  }

  /** Resolves when the socket's write buffer has drained, or the connection is gone. */
  private flushed(): Promise<void> {
    return new Promise((resolve) => {
      if (this.socket.destroyed) return resolve();
      const done = (): void => {
        this.socket.off('drain', done);
        this.socket.off('close', done);
        resolve();
      };
      this.socket.on('drain', done);
      this.socket.on('close', done);
    });
  }

  /**
   * One frame's header and body, past the version gate and the SASL allowlist; or the bytes of an
   * answer given at the gate (ApiVersions above its window).
   * @throws ProtocolError to close the connection
   */
  private decode(frame: Buffer): Decoded | { answer: Buffer } {
    const r = new Reader(frame);
    const { apiKey, apiVersion, correlationId } = readHeaderStart(r);
    const spec = APIS.get(apiKey);
    if (!spec) throw new ProtocolError(`unknown API key ${apiKey}`);
    if (apiKey === API.ApiVersions && apiVersion > spec.max) {
      // Answered as v0 with ApiVersions' own window, so the client retries at a version it can read.
      const w = new Writer(32).int16(ErrorCode.UNSUPPORTED_VERSION).int32(1).int16(API.ApiVersions).int16(spec.min).int16(spec.max);
      this.metrics.request(spec.name, ErrorCode.UNSUPPORTED_VERSION);
      return { answer: frameResponse(apiKey, correlationId, false, w.finish()) };
    }
    if (apiVersion < spec.min || apiVersion > spec.max) throw new ProtocolError(`${spec.name} v${apiVersion} is outside ${spec.min}..${spec.max}`);
    const saslApi = apiKey === API.SaslHandshake || apiKey === API.SaslAuthenticate;
    if ((this.sasl === 'start' || this.sasl === 'handshaken') && !saslApi && apiKey !== API.ApiVersions) {
      throw new ProtocolError(`${spec.name} before SASL authentication`);
    }
    const flexible = apiVersion >= spec.flexibleFrom;
    this.info.clientId = readHeaderRest(r, flexible);
    return { apiKey, apiVersion, correlationId, flexible, spec, req: readStruct(spec.request, r, apiVersion, flexible) };
  }

  /** The framed answer to a decoded request (undefined: nothing to send). */
  private respond(d: Decoded, body: Body | null): Buffer | undefined {
    if (body === null || this.closed) return undefined;
    this.metrics.request(d.spec.name, typeof body.error_code === 'number' ? body.error_code : 0);
    this.metrics.nestedErrors(body);
    const w = new Writer(256);
    writeStruct(d.spec.response, w, body, d.apiVersion, d.flexible);
    return frameResponse(d.apiKey, d.correlationId, d.flexible, w.finish());
  }

  /** One frame → the bytes to send (undefined: nothing). Throws ProtocolError to close. */
  private async handle(frame: Buffer): Promise<Buffer | undefined> {
    if (this.sasl === 'raw') return this.rawToken(frame);
    const d = this.decode(frame);
    if ('answer' in d) return d.answer;
    let body: Body | null;
    if (d.apiKey === API.SaslHandshake) body = this.handshake(d.req, d.apiVersion);
    else if (d.apiKey === API.SaslAuthenticate) body = await this.authenticate(d.req);
    else body = await HANDLERS.get(d.apiKey)!(this.ctx, this.info, d.req, d.apiVersion);
    return this.respond(d, body);
  }

  /**
   * Produce frames read ahead of `first` (`QUEEN_KAFKA_COALESCE`), taken off the queue: the run of
   * Produce requests that follows it, up to the limit. Empty when coalescing is off or SASL is
   * mid-exchange.
   */
  private produceRun(first: Buffer): Buffer[] {
    const limit = this.ctx.config.coalesce;
    if (limit <= 1 || this.sasl === 'raw' || first.readInt16BE(0) !== API.Produce) return [];
    const run: Buffer[] = [];
    while (run.length < limit - 1 && this.frames.length > 0 && this.frames[0]!.length >= 2 && this.frames[0]!.readInt16BE(0) === API.Produce) run.push(this.frames.shift()!);
    return run;
  }

  /**
   * A run of Produce frames appended as one store unit (handlers/produce.ts produceMany), answered
   * in order. A frame the gate refuses closes the connection after the frames before it are answered.
   */
  private async handleProduceRun(frames: Buffer[]): Promise<Buffer[]> {
    const decoded: Decoded[] = [];
    let refusal: Error | undefined;
    for (const f of frames) {
      try {
        const d = this.decode(f);
        if ('answer' in d) throw new ProtocolError('unexpected gate answer'); // not for Produce; closes
        decoded.push(d);
      } catch (e) {
        refusal = e instanceof Error ? e : new ProtocolError(String(e));
        break;
      }
    }
    const bodies = await produceMany(this.ctx, this.info, decoded.map((d) => d.req));
    const out: Buffer[] = [];
    decoded.forEach((d, i) => {
      const b = this.respond(d, bodies[i]!);
      if (b) out.push(b);
    });
    if (refusal !== undefined) {
      for (const b of out) this.socket.write(b);
      throw refusal;
    }
    return out;
  }

  private handshake(req: Body, version: number): Body {
    if (this.sasl === 'off') return { error_code: ErrorCode.ILLEGAL_SASL_STATE, mechanisms: [] };
    if (this.sasl === 'authenticated') return { error_code: ErrorCode.ILLEGAL_SASL_STATE, mechanisms: ['PLAIN'] };
    if (req.mechanism !== 'PLAIN') return { error_code: ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms: ['PLAIN'] };
    this.sasl = version === 0 ? 'raw' : 'handshaken';
    return { error_code: 0, mechanisms: ['PLAIN'] };
  }

  private async authenticate(req: Body): Promise<Body | null> {
    const refuse = (message: string) => ({ error_code: ErrorCode.ILLEGAL_SASL_STATE, error_message: message, auth_bytes: Buffer.alloc(0), session_lifetime_ms: 0 });
    if (this.sasl === 'off') return refuse('this listener has no SASL (QUEEN_KAFKA_SASL is unset)');
    if (this.sasl === 'authenticated') return refuse('this connection has already authenticated');
    if (this.sasl !== 'handshaken') throw new ProtocolError('SaslAuthenticate without SaslHandshake');
    const outcome = await authenticatePlain(req.auth_bytes as Buffer, this.check!);
    if (outcome.kind === 'close') throw new ProtocolError('credential check unavailable');
    if (outcome.kind === 'refused') {
      this.ctx.log.info({ client: this.info.clientHost, code: outcome.code }, 'kafka: SASL authentication refused');
      setImmediate(() => this.socket.end());
      return { error_code: outcome.code, error_message: outcome.message, auth_bytes: Buffer.alloc(0), session_lifetime_ms: 0 };
    }
    this.admit(outcome.sub, outcome.roles, outcome.token);
    return { error_code: 0, error_message: null, auth_bytes: Buffer.alloc(0), session_lifetime_ms: 0 };
  }

  /** Handshake v0: the frame is the raw PLAIN message; success is an empty frame, failure closes. */
  private async rawToken(frame: Buffer): Promise<Buffer | undefined> {
    const outcome = await authenticatePlain(frame, this.check!);
    if (outcome.kind !== 'ok') throw new ProtocolError('SASL/PLAIN refused');
    this.admit(outcome.sub, outcome.roles, outcome.token);
    return Buffer.alloc(4);
  }

  private admit(sub: string | null, roles: HeldRoles, token: string): void {
    this.sasl = 'authenticated';
    clearTimeout(this.authDeadline);
    this.info.subject = sub;
    this.roles = roles;
    this.ctx.log.info({ client: this.info.clientHost, sub }, 'kafka: SASL authenticated');
    this.recheck = setInterval(() => {
      this.check!(token).catch(() => {
        this.ctx.log.info({ client: this.info.clientHost, sub }, 'kafka: credential no longer valid; connection closed');
        this.close('revoked');
      });
    }, this.ctx.config.saslRecheckMs);
    this.recheck.unref();
  }
}
