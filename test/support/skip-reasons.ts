// Why a test cannot run on this machine (no Chromium, not root, ...), said where it is skipped: in the
// title of the skipped test or suite, and once on stderr, so that a run that skips tests says which
// ones and what would make them run.
import { existsSync } from 'node:fs';

/** Why something is skipped here; null when it runs. */
export type SkipReason = string | null;

/** Why the browser tests cannot run: null when Chromium is at `path`. */
export function chromiumMissing(path: string): SkipReason {
  return existsSync(path)
    ? null
    : `Chromium is not installed at ${path} (apt-get install -y chromium, as .ci/run does)`;
}

/** Why a test that needs root cannot run: null as root. */
export function notRoot(uid: number | undefined = process.getuid?.()): SkipReason {
  return uid === 0 ? null : `it runs only as root (this run's uid is ${uid ?? 'unknown'})`;
}

const said = new Set<string>();

/**
 * The title of a test or suite that `reason` may skip: as it is when the reason is null, else with the
 * reason after it; the reason is printed the first time it skips something in this test file.
 */
export function titleUnless(
  reason: SkipReason,
  title: string,
  print: (line: string) => void = (line) => console.warn(line),
): string {
  if (reason === null) return title;
  if (!said.has(reason)) {
    said.add(reason);
    print(`skipped "${title}": ${reason}`);
  }
  return `${title} (skipped: ${reason})`;
}
