/**
 * What the database recorded of a test's cursors, for verdicts that client-side observations
 * cannot give: the moment a client sees an answer is not the moment the database decided it (two
 * answers on two sockets reach the test in either order), so "two live leases at once" or "acked
 * in order" judged from the answers can fail on a correct backend and pass on a wrong one.
 *
 * {@link installCursorAudit} adds, to a test database whose schema is migrated, a row trigger on
 * `queen.consumers` that writes every insert and update of a cursor row to `public.cursor_audit`:
 * the row before and after (position, lease, delivered up to, delivery counts) and the
 * partition's first offset. Writers of one cursor row are serialised by its row lock (a claim
 * skips a locked row, never overtakes it), and the trigger runs inside the writing statement, so
 * per cursor the audit's `seq` order is the order in which the changes were made.
 */
import type pg from 'pg';

/** One recorded change of a cursor row (see the module comment); offsets and times in ms as bigint columns come back as numbers. */
export interface CursorChange {
  seq: number;
  partitionId: string;
  group: string;
  /** `INSERT` (first touch) or `UPDATE`. */
  op: string;
  oldNext: number | null;
  newNext: number;
  oldLease: string | null;
  newLease: string | null;
  /** Lease expiries, epoch ms. */
  oldExpires: number | null;
  newExpires: number | null;
  oldUpTo: number | null;
  newUpTo: number | null;
  /** The partition's first offset when the change was made. */
  firstOffset: number;
}

/** Installs the audit table and trigger (see the module comment) through `client`. */
export async function installCursorAudit(client: pg.Client): Promise<void> {
  await client.query(`
    CREATE TABLE public.cursor_audit (
      seq bigserial PRIMARY KEY, partition_id uuid NOT NULL, consumer_group text NOT NULL, op text NOT NULL,
      old_next bigint, new_next bigint NOT NULL, old_lease text, new_lease text, old_expires bigint, new_expires bigint,
      old_upto bigint, new_upto bigint, first_offset bigint NOT NULL);
    CREATE FUNCTION public.audit_cursor() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      INSERT INTO public.cursor_audit (partition_id, consumer_group, op, old_next, new_next, old_lease, new_lease, old_expires, new_expires,
                                       old_upto, new_upto, first_offset)
      SELECT NEW.partition_id, NEW.consumer_group, TG_OP,
             CASE WHEN TG_OP = 'UPDATE' THEN OLD.next_offset END, NEW.next_offset,
             CASE WHEN TG_OP = 'UPDATE' THEN OLD.lease_id END, NEW.lease_id,
             CASE WHEN TG_OP = 'UPDATE' THEN OLD.lease_expires_at_ms END, NEW.lease_expires_at_ms,
             CASE WHEN TG_OP = 'UPDATE' THEN OLD.delivered_up_to END, NEW.delivered_up_to,
             p.first_offset
        FROM queen.partitions p WHERE p.id = NEW.partition_id;
      RETURN NULL;
    END $fn$;
    CREATE TRIGGER cursor_audit AFTER INSERT OR UPDATE ON queen.consumers FOR EACH ROW EXECUTE FUNCTION public.audit_cursor();`);
}

/** Every recorded change, in `seq` order. */
export async function cursorChanges(client: pg.Client): Promise<CursorChange[]> {
  const n = (v: unknown) => (v === null ? null : Number(v));
  const rows = (await client.query('SELECT * FROM public.cursor_audit ORDER BY seq')).rows as Record<string, unknown>[];
  return rows.map((r) => ({
    seq: Number(r.seq), partitionId: r.partition_id as string, group: r.consumer_group as string, op: r.op as string,
    oldNext: n(r.old_next), newNext: Number(r.new_next), oldLease: (r.old_lease as string | null) ?? null, newLease: (r.new_lease as string | null) ?? null,
    oldExpires: n(r.old_expires), newExpires: n(r.new_expires), oldUpTo: n(r.old_upto), newUpTo: n(r.new_upto), firstOffset: Number(r.first_offset),
  }));
}

/** The key of a grant in {@link trueAttempts}: one lease may cover several partitions. */
export function grantKey(leaseId: string, partitionId: string): string {
  return `${leaseId}\u0000${partitionId}`;
}

/** A lease grant the audit shows: the change that gave the cursor a new lease id. */
export interface Grant {
  change: CursorChange;
  /** The delivered range [from, upTo): from the cursor's position (or the log's first offset) to the new delivered-up-to. */
  from: number;
  upTo: number;
}

/** The grants among `changes` (a new, non-null lease id on an existing row), in order. */
export function grantsOf(changes: CursorChange[]): Grant[] {
  return changes.filter((c) => c.op === 'UPDATE' && c.newLease !== null && c.newLease !== c.oldLease)
    .map((c) => ({ change: c, from: Math.max(c.oldNext!, c.firstOffset), upTo: c.newUpTo! }));
}

/**
 * The leases that were granted while another was live, judged on the database's records: a grant
 * at time T (its expiry less `leaseMs`) over a cursor whose previous lease was still set and
 * expired after T. Empty when the lease rule held.
 */
export function overlappingGrants(changes: CursorChange[], leaseMs: number): string[] {
  return grantsOf(changes)
    .filter((g) => g.change.oldLease !== null && g.change.oldExpires !== null && g.change.oldExpires > g.change.newExpires! - leaseMs)
    .map((g) => `${g.change.newLease} granted at ${g.change.newExpires! - leaseMs} while ${g.change.oldLease} was live until ${g.change.oldExpires} (seq ${g.change.seq})`);
}

/**
 * Per grant (keyed by {@link grantKey}), each delivered offset's true delivery count, this delivery included,
 * counted from the audit: every earlier grant of the same cursor that covered the offset, since
 * the cursor's position was last set back (none of the tests using this seeks).
 */
export function trueAttempts(changes: CursorChange[]): Map<string, Map<number, number>> {
  const counts = new Map<string, Map<number, number>>();
  const out = new Map<string, Map<number, number>>();
  for (const g of grantsOf(changes)) {
    const key = `${g.change.partitionId}\u0000${g.change.group}`;
    const seen = counts.get(key) ?? new Map<number, number>();
    counts.set(key, seen);
    const mine = new Map<number, number>();
    for (let o = g.from; o < g.upTo; o++) {
      const n = (seen.get(o) ?? 0) + 1;
      seen.set(o, n);
      mine.set(o, n);
    }
    out.set(grantKey(g.change.newLease!, g.change.partitionId), mine);
  }
  return out;
}
