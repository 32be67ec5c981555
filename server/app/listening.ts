// Where a running `herald start` listens, kept in the data directory while it serves: the port may come
// from a flag, HERALD_PORT, herald.json or a free port (0), and `herald status`, run from another shell,
// sees none of the first two. Status probes the recorded address while the process that wrote it lives.
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ListeningRecord {
  pid: number;
  url: string;
}

export function listeningFilePath(dataDir: string): string {
  return join(dataDir, 'listening.json');
}

/** Records that this process serves `url`; the returned function removes the record if it is still this process's. */
export function recordListening(dataDir: string, url: string): () => void {
  const file = listeningFilePath(dataDir);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify({ pid: process.pid, url } satisfies ListeningRecord) + '\n', { mode: 0o644 });
  renameSync(tmp, file);
  return () => {
    if (readListening(dataDir)?.pid === process.pid) rmSync(file, { force: true });
  };
}

/** The address a live `herald start` of this data directory recorded; null when there is none or its process is gone. */
export function runningListener(dataDir: string): ListeningRecord | null {
  const record = readListening(dataDir);
  return record && isAlive(record.pid) ? record : null;
}

function readListening(dataDir: string): ListeningRecord | null {
  try {
    const parsed = JSON.parse(readFileSync(listeningFilePath(dataDir), 'utf8')) as Partial<ListeningRecord>;
    return Number.isInteger(parsed.pid) && typeof parsed.url === 'string' && /^https?:\/\//.test(parsed.url)
      ? { pid: parsed.pid!, url: parsed.url }
      : null;
  } catch {
    return null;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to another user (a service account).
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
