// A broadcast's fan-out: pages through its audience by key (a topic's subscribers in contact id order,
// all contacts in external_id order, each an index range scan from the cursor) and writes each page's
// events, and their delivery jobs, in one statement. That statement also moves the cursor on the
// broadcast row, so a fan-out that dies resumes after the last page it committed; should a page be
// written twice anyway (two runs of the job at once), the unique index on (broadcast_id, contact_id)
// drops the second event of a contact, and only inserted events are enqueued. Memory stays one page
// whatever the audience's size.
//
// A page commits without waiting for the disk (synchronous_commit off, for that statement only). Its
// megabytes of WAL are then flushed in the background, not inside the commits of other tenants'
// triggers that queue behind that flush. Nothing accepted can be lost by it: the broadcast itself was
// committed durably when it was accepted; a crash loses at most the last pages, each whole with its
// cursor move, and the fan-out writes them again; and a delivery stores its plan in a durable commit
// before anything leaves, which flushes the WAL before it, the page included.
//
// Events are written exactly as a trigger writes them (the same columns, secret variables encrypted per
// event under the event's own additional data), so delivery, preferences and workflows treat them
// alike. Their delivery jobs are bulk jobs (delivery/enqueue.ts): fetched after any trigger job waiting,
// and stored after the fetched batches that carry one, so a broadcast of one tenant does not hold up
// the triggers of others.
import type { EntityManager } from '@mikro-orm/postgresql';
import { execute, query, queryOne } from '../../base/db/sql.ts';
import { newId } from '../../base/ids.ts';
import { statementPerQueue } from '../../base/queue.ts';
import type { Context } from '../../base/context.ts';
import { deliveryJobsCte, wakeDeliveryWorkers } from '../enqueue.ts';
import { eventTypeJoin } from '../stages/load.ts';
import { eventsPerJobSql } from '../stages/plan.ts';
import { BROADCAST_COLUMNS, scheduleCompletionCheck, type BroadcastRow } from './broadcasts.ts';
import { broadcastSecretAad } from '../../base/crypto/aad.ts';
import { secretVariablesAad } from './notifications.ts';

/** Contacts per page (one statement): thousands of events per statement, one page held at a time. */
export const FAN_OUT_PAGE_SIZE = 5000;

/** Below every contact id and external id: where a fan-out starts (a key, not NULL, keeps the scans on the index). */
const START = { topic: '00000000-0000-0000-0000-000000000000', all: '' };

interface AudienceMember {
  contact_id: string;
  external_id: string;
  key: string;
}

/** The fan-out's page statement, around `jobsCte` (deliveryJobsCte's, bulk) that enqueues its events. */
function fanOutPageSql(jobsCte: string): string {
  return `
  WITH tenant AS MATERIALIZED (
    -- Locked first, so that the tenant's deletion waits here for the page's events to commit (events
    -- have no foreign key to tenants; the deletion's trigger then deletes them), before its cascades
    -- take the broadcast and contacts the page locks (the two could deadlock).
    SELECT t.id FROM tenants t WHERE t.id = (SELECT tenant_id FROM broadcasts WHERE id = $1) FOR KEY SHARE
  ), b AS MATERIALIZED (
    SELECT id, tenant_id, type_key, brand_key, channels, variables, secret_keys FROM broadcasts
     WHERE id = $1 AND status = 'running' AND tenant_id IN (SELECT id FROM tenant)
       FOR UPDATE
  ), kind AS MATERIALIZED (
    SELECT ${eventsPerJobSql('nt', 'b.channels')} AS events_per_job FROM b ${eventTypeJoin('b')}
  ), inserted AS (
    INSERT INTO events (id, tenant_id, type_key, contact_id, external_id, brand_key, channels, variables, secret_variables_ciphertext, secret_keys, broadcast_id)
    SELECT p.id, b.tenant_id, b.type_key, p.contact_id, p.external_id, b.brand_key, b.channels, b.variables, p.ciphertext, b.secret_keys, b.id
      FROM b CROSS JOIN unnest($2::uuid[], $3::uuid[], $4::text[], $5::text[]) AS p(id, contact_id, external_id, ciphertext)
      -- Each contact locked (by index, in the page's order), so that its deletion waits for its event
      -- to commit; one deleted since the page was read gets none.
     CROSS JOIN LATERAL (SELECT 1 FROM contacts c WHERE c.id = p.contact_id FOR KEY SHARE) AS c
    ON CONFLICT (broadcast_id, contact_id) WHERE broadcast_id IS NOT NULL DO NOTHING
    RETURNING id, tenant_id
  ), to_enqueue AS (
    SELECT i.id, i.tenant_id, k.events_per_job, NULL::text AS start_after FROM inserted i CROSS JOIN kind k
  ), ${jobsCte}, moved AS (
    UPDATE broadcasts SET fan_out_cursor = $6, events_created = events_created + (SELECT count(*) FROM inserted), updated_at = now()
     WHERE id IN (SELECT id FROM b)
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM moved)::int AS running, (SELECT count(*) FROM inserted)::int AS inserted,
         (SELECT coalesce(sum(cardinality(je.event_ids)), 0) FROM delivery_job_events je JOIN delivery_jobs j ON j.id = je.id)::int AS enqueued,
         set_config('synchronous_commit', 'off', true) AS commit_mode`;
}

const ALL_CONTACTS_PAGE = `SELECT id AS contact_id, external_id, external_id AS key FROM contacts
  WHERE tenant_id = $1 AND external_id > $2 ORDER BY external_id LIMIT $3`;
const TOPIC_SUBSCRIBERS_PAGE = `SELECT s.contact_id, c.external_id, s.contact_id::text AS key
  FROM topic_subscriptions s JOIN contacts c ON c.id = s.contact_id
  WHERE s.topic_id = $1 AND s.contact_id > $2::uuid ORDER BY s.contact_id LIMIT $3`;
const START_FAN_OUT = `UPDATE broadcasts b SET status = 'running', updated_at = now(),
    targeted = CASE WHEN b.audience ? 'all_contacts'
                    THEN (SELECT count(*) FROM contacts c WHERE c.tenant_id = b.tenant_id)
                    ELSE (SELECT count(*) FROM topic_subscriptions s WHERE s.topic_id = b.topic_id) END
  WHERE id = $1 AND status = 'queued'`;
const BROADCAST_BY_ID = `SELECT ${BROADCAST_COLUMNS} FROM broadcasts WHERE id = $1`;
const END_FAN_OUT = `UPDATE broadcasts SET fanned_out_at = now(), updated_at = now()
  WHERE id = $1 AND status = 'running' AND fanned_out_at IS NULL`;

/**
 * $1 broadcast id; $2 event ids, $3 contact ids, $4 external ids, $5 ciphertexts (arrays, one entry per
 * audience member); $6 the page's last key. Writes nothing unless the broadcast is still running: its row
 * is locked for the statement, so a cancel waits for a page in flight, and a page after it writes nothing.
 * Exported for the tests.
 */
export const fanOutStatement = statementPerQueue(async (boss) =>
  fanOutPageSql(await deliveryJobsCte(boss, 'to_enqueue', { bulk: true })),
);

/** The next page of the audience after `cursor`: a topic's subscribers by contact id, or all contacts by external id. */
async function audiencePage(
  em: EntityManager,
  broadcast: BroadcastRow,
  cursor: string | null,
  size: number,
): Promise<AudienceMember[]> {
  if ('all_contacts' in broadcast.audience) {
    return query<AudienceMember>(em, ALL_CONTACTS_PAGE, [broadcast.tenant_id, cursor ?? START.all, size]);
  }
  // A topic deleted since the broadcast was accepted has no subscribers left: the fan-out ends.
  if (!broadcast.topic_id) return [];
  return query<AudienceMember>(em, TOPIC_SUBSCRIBERS_PAGE, [broadcast.topic_id, cursor ?? START.topic, size]);
}

/** Moves a queued broadcast to running, counting its audience; answers the row as it is now (null when gone). */
async function startFanOut(em: EntityManager, broadcastId: string): Promise<BroadcastRow | null> {
  await execute(em, START_FAN_OUT, [broadcastId]);
  return (await queryOne<BroadcastRow>(em, BROADCAST_BY_ID, [broadcastId])) ?? null;
}

interface PageWritten {
  running: number;
  inserted: number;
  enqueued: number;
}

export interface FanOutOptions {
  pageSize?: number;
  /** A pause between pages, to leave the database to other work (0: none). */
  pauseMs?: number;
}

/**
 * Runs (or resumes) a broadcast's fan-out to its end, or until the broadcast is canceled, then has its
 * completion checked. The fan-out job calls it; running it twice at once writes no event twice.
 */
export async function fanOutBroadcast(
  runtime: Context,
  broadcastId: string,
  options: FanOutOptions = {},
): Promise<void> {
  const boss = runtime.boss;
  if (!boss) throw new Error('the fan-out needs the job queue');
  const pageSize = options.pageSize ?? FAN_OUT_PAGE_SIZE;
  const em = runtime.orm.em.fork();
  const broadcast = await startFanOut(em, broadcastId);
  if (!broadcast || broadcast.status !== 'running') return;
  if (broadcast.fanned_out_at === null) {
    const secrets = broadcast.secret_variables_ciphertext
      ? runtime.keyRing.decrypt(broadcast.secret_variables_ciphertext, broadcastSecretAad(broadcast.id))
      : null;
    const statement = await fanOutStatement(boss);
    // The next page is read while the current one is written: the read is an index range scan from
    // the current page's last key, known before its write commits.
    let page = await audiencePage(em, broadcast, broadcast.fan_out_cursor, pageSize);
    while (page.length > 0) {
      const now = runtime.clock.now();
      const eventIds = page.map(() => newId(now));
      const ciphertexts = eventIds.map((id) =>
        secrets === null ? null : runtime.keyRing.encrypt(secrets, secretVariablesAad(id)),
      );
      const last = page[page.length - 1]!.key;
      const writing = query<PageWritten>(em, statement, [
        broadcast.id,
        eventIds,
        page.map((m) => m.contact_id),
        page.map((m) => m.external_id),
        ciphertexts,
        last,
      ]);
      const next = page.length < pageSize ? Promise.resolve([]) : audiencePage(em, broadcast, last, pageSize);
      next.catch(() => undefined); // awaited below; meanwhile a failure is not unhandled
      const [written] = (await writing) as [PageWritten];
      if (written.running === 0) return; // canceled
      if (written.enqueued !== written.inserted)
        throw new Error(`fan-out page wrote ${written.inserted} events but enqueued ${written.enqueued}`);
      if (written.inserted > 0) wakeDeliveryWorkers(boss, runtime.logger);
      page = await next;
      if (options.pauseMs && page.length > 0) await new Promise((resolve) => setTimeout(resolve, options.pauseMs));
    }
    const ended = await execute(em, END_FAN_OUT, [broadcast.id]);
    if (ended === 0) return; // canceled at the last moment
  }
  await scheduleCompletionCheck(runtime, broadcast.id, 0);
}
