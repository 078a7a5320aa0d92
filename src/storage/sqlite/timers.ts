/**
 * SQLite implementation of {@link TimerStore}. Shares the connection of {@link SqliteStore}:
 * writes run inside the callback of `store.run`, so they join its transaction and group commit.
 * One prepared statement per operation; reads are primary-key or due-index ranges with a limit.
 */
import type { Database as Db, Statement } from 'better-sqlite3';
import type { TimerKey, TimerRow, TimerStore } from '../timers.js';
import type { Row } from './rows.js';

function toTimer(r: Row): TimerRow {
  return {
    queue: r.queue as string,
    timerKey: r.timer_key as string,
    partition: r.partition as string,
    deliverAt: r.deliver_at as number,
    txn: r.txn as string,
    messageId: r.message_id as string,
    payload: r.payload as string | Buffer,
    encrypted: (r.encrypted as number) === 1,
    producerSub: (r.producer_sub as string | null) ?? null,
    attempts: r.attempts as number,
    lastError: (r.last_error as string | null) ?? null,
    createdAt: r.created_at as number,
    updatedAt: r.updated_at as number,
  };
}

/** Scheduled messages (docs/http-api.md#timers) on the SQLite connection. */
export class SqliteTimers implements TimerStore {
  private readonly s: Record<string, Statement>;

  constructor(db: Db) {
    const p = (sql: string) => db.prepare(sql);
    this.s = {
      get: p('SELECT * FROM timers WHERE queue = ? AND timer_key = ?'),
      listFirst: p('SELECT * FROM timers WHERE queue = ? ORDER BY timer_key LIMIT ?'),
      listAfter: p('SELECT * FROM timers WHERE queue = ? AND timer_key > ? ORDER BY timer_key LIMIT ?'),
      due: p('SELECT queue, timer_key FROM timers INDEXED BY timers_by_due WHERE deliver_at <= ? ORDER BY deliver_at LIMIT ?'),
      next: p('SELECT deliver_at FROM timers INDEXED BY timers_by_due ORDER BY deliver_at LIMIT 1'),
      scanFirst: p('SELECT * FROM timers ORDER BY queue, timer_key LIMIT ?'),
      scanAfter: p('SELECT * FROM timers WHERE (queue, timer_key) > (?, ?) ORDER BY queue, timer_key LIMIT ?'),
      put: p(`INSERT INTO timers (queue, timer_key, partition, deliver_at, txn, message_id, payload, encrypted, producer_sub,
                attempts, last_error, created_at, updated_at)
              VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
              ON CONFLICT (queue, timer_key) DO UPDATE SET partition = excluded.partition, deliver_at = excluded.deliver_at,
                txn = excluded.txn, message_id = excluded.message_id, payload = excluded.payload, encrypted = excluded.encrypted,
                producer_sub = excluded.producer_sub, attempts = excluded.attempts, last_error = excluded.last_error,
                created_at = excluded.created_at, updated_at = excluded.updated_at`),
      delete: p('DELETE FROM timers WHERE queue = ? AND timer_key = ?'),
      failed: p(`UPDATE timers SET attempts = attempts + 1, last_error = ?, deliver_at = ?, updated_at = ?
                 WHERE queue = ? AND timer_key = ?`),
    };
  }

  getTimer(queue: string, timerKey: string): TimerRow | undefined {
    const r = this.s.get!.get(queue, timerKey) as Row | undefined;
    return r ? toTimer(r) : undefined;
  }

  listTimers(queue: string, after: string | undefined, limit: number): TimerRow[] {
    const rows = (after === undefined ? this.s.listFirst!.all(queue, limit) : this.s.listAfter!.all(queue, after, limit)) as Row[];
    return rows.map(toTimer);
  }

  dueTimers(now: number, limit: number): TimerKey[] {
    return (this.s.due!.all(now, limit) as Row[]).map((r) => ({ queue: r.queue as string, timerKey: r.timer_key as string }));
  }

  nextDueAt(): number | undefined {
    const r = this.s.next!.get() as Row | undefined;
    return r ? (r.deliver_at as number) : undefined;
  }

  scanTimers(after: TimerKey | undefined, limit: number): TimerRow[] {
    const rows = (after === undefined ? this.s.scanFirst!.all(limit) : this.s.scanAfter!.all(after.queue, after.timerKey, limit)) as Row[];
    return rows.map(toTimer);
  }

  putTimer(t: TimerRow): void {
    this.s.put!.run(t.queue, t.timerKey, t.partition, t.deliverAt, t.txn, t.messageId, t.payload, t.encrypted ? 1 : 0,
      t.producerSub, t.attempts, t.lastError, t.createdAt, t.updatedAt);
  }

  deleteTimer(queue: string, timerKey: string): boolean {
    return this.s.delete!.run(queue, timerKey).changes > 0;
  }

  timerFailed(queue: string, timerKey: string, error: string, retryAt: number, now: number): void {
    this.s.failed!.run(error, retryAt, now, queue, timerKey);
  }
}
