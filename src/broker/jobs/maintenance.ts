/**
 * Maintenance modes (docs/http-api.md#maintenance).
 *
 * Push maintenance: pushes are appended to a spool file in the data directory (`spool/push.jsonl`,
 * fsync'd before the 201 `buffered` answer) instead of the queues. Turning it off replays the spool
 * in order, in chunks, each chunk one unit of work followed by a durable checkpoint of the replay
 * position (`spool/push.pos`); pushes that arrive while the spool drains are spooled behind it, so
 * order holds. A crash mid-replay resumes from the checkpoint at boot; a chunk replayed twice is
 * deduplicated by its transaction ids (minted at spool time when the producer gave none).
 * Payloads are stored through the payload codec (encrypted when a key is loaded).
 *
 * Pop maintenance: the broker answers every pop 204 at once (Broker.setPopMaintenance).
 * Both flags persist in the settings table (`maintenance.push`, `maintenance.pop`). Several nodes on
 * one PostgreSQL database share that table: each node reads the flags back once per heartbeat
 * ({@link Maintenance.follow}), so a flag set through any node holds on every node within about one
 * heartbeat (docs/cluster.md#maintenance-modes). Each node spools to its own data directory and
 * replays its own spool once it sees push maintenance off.
 */
import fs from 'node:fs';
import path from 'node:path';
import { isQueenError, QueenError } from '../../errors.js';
import { newId } from '../../util/ids.js';
import { RawJson, stringifyClientJson } from '../../util/json.js';
import type { Activity } from '../admin/activity.js';
import type { Broker } from '../broker.js';
import { appendPush, dedupWindowMsOf, planPush, queueOptionsOf, repeatKey, type PushItem, type PushResult } from '../messaging/push.js';

/** Items per replay unit of work. */
const REPLAY_CHUNK = 500;
/** Bytes read from the spool per replay step. */
const READ_BYTES = 4 * 1024 * 1024;

/** One spooled item (short keys: the spool can be large). */
interface SpoolLine {
  q: string;
  p: string;
  t: string;
  tr: string | null;
  s: string | null;
  /** payload as stored: JSON text, or base64 of an encryption envelope when `e` */
  d: string;
  e: boolean;
  /** message id announced in the `buffered` answer (kept on replay) */
  m?: string;
}

export interface MaintenanceStatus {
  maintenanceMode: boolean;
  popMaintenanceMode: boolean;
  bufferedMessages: number;
  bufferHealthy: boolean;
  bufferStats: { pending: number; failed: number; replayed: number; draining: boolean; file: string };
}

/** Push and pop maintenance modes with the on-disk push spool (see the module comment). */
export class Maintenance {
  private pushMode = false;
  private draining = false;
  /** Items in the spool not replayed yet. */
  private pending = 0;
  private failed = 0;
  private replayed = 0;
  private healthy = true;
  /** Serialises spool appends and replay steps. */
  private chain: Promise<unknown> = Promise.resolve();
  private readonly dir: string;
  private readonly file: string;
  private readonly posFile: string;
  private drainRun: Promise<void> | undefined;
  /** The follow period (ms) while following the shared flags; undefined when not following. */
  private followMs: number | undefined;

  constructor(private readonly broker: Broker, private readonly activity: Activity) {
    this.dir = path.join(broker.config.dataDir, 'spool');
    this.file = path.join(this.dir, 'push.jsonl');
    this.posFile = path.join(this.dir, 'push.pos');
  }

  /** Loads the persisted flag and the spool; resumes a replay that a restart interrupted. */
  start(settings: ReadonlyMap<string, string>): void {
    this.pushMode = settings.get('maintenance.push') === 'true';
    this.pending = this.countPending();
    this.broker.pushGate = (items, sub) => (this.diverting ? this.spool(items, sub) : undefined);
    this.broker.pushesDiverted = () => this.diverting;
    if (!this.pushMode && this.pending > 0) void this.drain();
  }

  /**
   * Follows the flags that other nodes on the same database set: every `intervalMs` (ms, on the
   * broker's clock and scheduler) both are read back and applied here; push maintenance seen off
   * starts the replay of this node's spool. A failed read is logged and retried at the next period.
   */
  follow(intervalMs: number): void {
    this.followMs = intervalMs;
    this.armFollow();
  }

  private armFollow(): void {
    if (this.followMs === undefined) return;
    this.broker.scheduler.lane<string>('maintenance').schedule('follow', this.broker.clock.now() + this.followMs, () => {
      void this.readShared().finally(() => this.armFollow());
    });
  }

  private async readShared(): Promise<void> {
    try {
      const [push, pop] = await Promise.all([this.broker.backend.admin.setting('maintenance.push'), this.broker.backend.admin.setting('maintenance.pop')]);
      if (this.followMs === undefined) return; // stopped meanwhile
      this.applyPush(push === 'true');
      this.broker.applyPopMaintenance(pop === 'true');
    } catch (e) {
      this.broker.log.warn({ err: e }, 'reading the shared maintenance flags failed; retrying at the next heartbeat');
    }
  }

  /** Sets push maintenance here without persisting it; off starts the replay of this node's spool. */
  private applyPush(enabled: boolean): void {
    if (enabled === this.pushMode) return;
    this.pushMode = enabled;
    if (!enabled && this.pending > 0) void this.drain();
  }

  async stop(): Promise<void> {
    this.followMs = undefined;
    this.broker.scheduler.lane<string>('maintenance').cancel('follow');
    this.pushMode = true; // stop draining; what is left replays at the next boot
    await this.drainRun?.catch(() => undefined);
    await this.chain.catch(() => undefined);
  }

  get pushEnabled(): boolean {
    return this.pushMode;
  }

  /** True while pushes go to the spool (maintenance on, or its spool still draining). */
  get diverting(): boolean {
    return this.pushMode || this.draining || this.pending > 0;
  }

  status(): MaintenanceStatus {
    return {
      maintenanceMode: this.pushMode, popMaintenanceMode: this.broker.popMaintenanceEnabled, bufferedMessages: this.pending,
      bufferHealthy: this.healthy,
      bufferStats: { pending: this.pending, failed: this.failed, replayed: this.replayed, draining: this.draining, file: 'spool/push.jsonl' },
    };
  }

  /** Turns push maintenance on or off (persisted); off starts the replay of the spool. */
  async setPush(enabled: boolean): Promise<void> {
    await this.broker.backend.admin.setSetting('maintenance.push', String(enabled));
    this.applyPush(enabled);
  }

  /** Waits for a running replay (tests, shutdown). */
  async drained(): Promise<void> {
    await this.drainRun;
  }

  private countPending(): number {
    const pos = this.readPos();
    let text: string;
    try {
      text = fs.readFileSync(this.file, 'utf8');
    } catch {
      return 0;
    }
    let n = 0;
    for (let i = text.indexOf('\n', pos); i !== -1; i = text.indexOf('\n', i + 1)) n++;
    return n;
  }

  private readPos(): number {
    try {
      const n = Number(fs.readFileSync(this.posFile, 'utf8').trim());
      return Number.isSafeInteger(n) && n >= 0 ? n : 0;
    } catch {
      return 0;
    }
  }

  private writeDurable(file: string, data: string): void {
    const tmp = `${file}.tmp`;
    const fd = fs.openSync(tmp, 'w', 0o600);
    try {
      fs.writeSync(fd, data);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
  }

  private enqueue<T>(fn: () => T | Promise<T>): Promise<T> {
    const next = this.chain.then(fn, fn);
    this.chain = next.catch(() => undefined);
    return next;
  }

  /**
   * Appends `items` to the spool (validated as a push would be), fsync'd. An item that repeats the
   * (queue, partition, transactionId) of an earlier item of the request, in a queue whose dedup
   * window is on, is answered `duplicate` naming the earlier one and not spooled, as a push outside
   * maintenance answers it (docs/http-api.md#dedup): the replay would drop it.
   * @throws QueenError `name_too_long`, `payload_too_large`, `spool_failed`
   */
  private async spool(items: PushItem[], producerSub: string | null): Promise<PushResult[]> {
    const engine = this.broker;
    const maxPayload = engine.config.limits.maxPayloadBytes;
    const options = await queueOptionsOf(engine.backend, items);
    const lines: string[] = [];
    const results: PushResult[] = [];
    const firstOf = new Map<string, PushResult>();
    items.forEach((item, index) => {
      const partition = item.partition ?? 'Default';
      engine.checkName('queue', item.queue);
      engine.checkName('partition', partition);
      const json = stringifyClientJson(item.payload === undefined ? null : item.payload);
      if (Buffer.byteLength(json, 'utf8') > maxPayload) throw new QueenError('payload_too_large', `items[${index}].payload exceeds ${maxPayload} bytes`);
      const messageId = newId();
      const t = item.transactionId ? item.transactionId : messageId;
      if (item.transactionId) engine.checkName('transactionId', t); // a made id is not client text (planPush)
      const dedupKey = item.transactionId && dedupWindowMsOf(options, item.queue) > 0 ? repeatKey(item.queue, partition, t) : undefined;
      const first = dedupKey === undefined ? undefined : firstOf.get(dedupKey);
      if (first) {
        results.push({ index, message_id: first.message_id, transaction_id: t, queueName: item.queue, partition, status: 'duplicate' });
        return;
      }
      const stored = engine.codec.encode(engine.codec.canEncrypt, json);
      const d = stored.encrypted ? Buffer.from(stored.payload as Buffer).toString('base64') : String(stored.payload);
      const line: SpoolLine = { q: item.queue, p: partition, t, tr: typeof item.traceId === 'string' && item.traceId ? item.traceId : null, s: producerSub, d, e: stored.encrypted, m: messageId };
      lines.push(JSON.stringify(line));
      // `queue` and (when the caller named it) `transactionId` as the reference's buffered answer has them.
      const result: PushResult = { index, message_id: messageId, transaction_id: t, queueName: item.queue, partition, status: 'buffered', queue: item.queue };
      if (item.transactionId) result.transactionId = item.transactionId;
      results.push(result);
      if (dedupKey !== undefined) firstOf.set(dedupKey, result);
    });
    return this.enqueue(() => {
      try {
        fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
        const fd = fs.openSync(this.file, 'a', 0o600);
        try {
          fs.writeSync(fd, lines.join('\n') + '\n');
          fs.fsyncSync(fd);
        } finally {
          fs.closeSync(fd);
        }
      } catch (e) {
        this.healthy = false;
        this.broker.log.error({ err: e }, 'push maintenance spool write failed');
        throw new QueenError('spool_failed', `push maintenance spool write failed: ${(e as Error).message}`);
      }
      this.healthy = true;
      this.pending += lines.length;
      // Maintenance may have been turned off while this push's queue options were read.
      if (!this.pushMode) void this.drain();
      return results;
    });
  }

  /** Replays the spool in order until it is empty or push maintenance is switched back on. */
  private drain(): Promise<void> {
    if (this.drainRun) return this.drainRun;
    this.draining = true;
    this.drainRun = (async () => {
      try {
        for (;;) {
          if (this.pushMode) return;
          const more = await this.enqueue(() => this.replayStep());
          if (!more) return;
        }
      } catch (e) {
        this.healthy = false;
        this.broker.log.error({ err: e }, 'push maintenance replay stopped; it resumes when maintenance is toggled or at the next boot');
      } finally {
        this.draining = false;
        this.drainRun = undefined;
      }
    })();
    return this.drainRun;
  }

  /** One replay step: read up to a chunk from the checkpoint, push it, move the checkpoint. Returns false when done. */
  private async replayStep(): Promise<boolean> {
    const pos = this.readPos();
    let fd: number;
    try {
      fd = fs.openSync(this.file, 'r');
    } catch {
      this.pending = 0;
      return false;
    }
    let text: string;
    try {
      const buf = Buffer.alloc(READ_BYTES);
      const n = fs.readSync(fd, buf, 0, READ_BYTES, pos);
      text = buf.subarray(0, n).toString('utf8');
    } finally {
      fs.closeSync(fd);
    }
    const lines: string[] = [];
    let consumed = 0;
    for (let start = 0; lines.length < REPLAY_CHUNK;) {
      const nl = text.indexOf('\n', start);
      if (nl === -1) break;
      lines.push(text.slice(start, nl));
      start = nl + 1;
      consumed = Buffer.byteLength(text.slice(0, start), 'utf8');
    }
    if (lines.length === 0) {
      // Everything replayed: remove the spool (nothing can be appended meanwhile: same chain).
      fs.rmSync(this.file, { force: true });
      fs.rmSync(this.posFile, { force: true });
      this.pending = 0;
      return false;
    }
    await this.replay(lines.map((l) => JSON.parse(l) as SpoolLine));
    this.writeDurable(this.posFile, String(pos + consumed));
    this.pending = Math.max(0, this.pending - lines.length);
    this.replayed += lines.length;
    return true;
  }

  /** Pushes spooled items in order; runs of the same producer share one unit of work. */
  private async replay(items: SpoolLine[]): Promise<void> {
    const engine = this.broker;
    for (let i = 0; i < items.length;) {
      let j = i + 1;
      while (j < items.length && items[j]!.s === items[i]!.s) j++;
      const run = items.slice(i, j);
      const pushItems: PushItem[] = run.map((l) => ({
        queue: l.q, partition: l.p, transactionId: l.t, traceId: l.tr, messageId: l.m,
        payload: new RawJson(engine.codec.decode(l.e ? Buffer.from(l.d, 'base64') : l.d, l.e)),
      }));
      let results: PushResult[];
      try {
        results = await appendPush(this.broker.backend, planPush(this.broker, await queueOptionsOf(this.broker.backend, pushItems), pushItems, run[0]!.s), engine.clock.now());
      } catch (e) {
        if (!isQueenError(e)) throw e;
        results = await this.replayOneByOne(pushItems, run[0]!.s);
      }
      const queued = results.filter((r) => r.status === 'queued').length;
      this.broker.counters.pushMessages += queued;
      this.activity.pushed(results, engine.clock.now());
      i = j;
    }
  }

  /** A chunk was refused as a whole (e.g. a queue became encrypted without a key): push item by item, counting failures. */
  private async replayOneByOne(items: PushItem[], producerSub: string | null): Promise<PushResult[]> {
    const engine = this.broker;
    const out: PushResult[] = [];
    for (const item of items) {
      try {
        out.push(...await appendPush(this.broker.backend, planPush(this.broker, await queueOptionsOf(this.broker.backend, [item]), [item], producerSub), engine.clock.now()));
      } catch (e) {
        if (!isQueenError(e)) throw e;
        this.failed++;
        this.broker.log.error({ queue: item.queue, partition: item.partition, code: e.code }, 'spooled push refused at replay; item dropped');
      }
    }
    return out;
  }
}
