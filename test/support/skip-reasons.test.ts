import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromiumMissing, notRoot, titleUnless } from './skip-reasons.ts';

describe('skip reasons', () => {
  it('Chromium: missing names the path and how to install it; present, none', () => {
    const absent = join('/nonexistent', 'chromium');
    expect(chromiumMissing(absent)).toBe(
      `Chromium is not installed at ${absent} (apt-get install -y chromium, as .ci/run does)`,
    );
    expect(chromiumMissing(process.execPath)).toBeNull();
  });

  it('root: none as uid 0, else a reason naming the uid', () => {
    expect(notRoot(0)).toBeNull();
    expect(notRoot(1000)).toBe("it runs only as root (this run's uid is 1000)");
  });

  it('a skipped title carries its reason, and each reason is printed once', () => {
    const printed: string[] = [];
    const print = (line: string) => printed.push(line);
    expect(titleUnless(null, 'runs here', print)).toBe('runs here');
    expect(titleUnless('no browser', 'suite a', print)).toBe('suite a (skipped: no browser)');
    expect(titleUnless('no browser', 'suite b', print)).toBe('suite b (skipped: no browser)');
    expect(titleUnless('not root', 'suite c', print)).toBe('suite c (skipped: not root)');
    expect(printed).toEqual(['skipped "suite a": no browser', 'skipped "suite c": not root']);
  });
});

const TEST_DIR = fileURLToPath(new URL('..', import.meta.url));

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourcesUnder(path);
    return name.endsWith('.ts') && !name.startsWith('skip-reasons') ? [path] : [];
  });
}

/** The index just past the parenthesis that closes the one opened at `open`. */
function closing(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === '(') depth++;
    else if (text[i] === ')' && --depth === 0) return i + 1;
  }
  return text.length;
}

describe('skips in test/', () => {
  it('each names its reason: skipIf(reason)(titleUnless(reason, ...)), no bare skip() or todo()', () => {
    const offenders: string[] = [];
    for (const file of sourcesUnder(TEST_DIR)) {
      const text = readFileSync(file, 'utf8');
      const where = (index: number) => `${relative(TEST_DIR, file)}:${text.slice(0, index).split('\n').length}`;
      for (const m of text.matchAll(/\.(skipIf|runIf)\(/g)) {
        const after = text.slice(closing(text, m.index + m[0].length - 1));
        if (!/^\(\s*titleUnless\(/.test(after)) offenders.push(`${where(m.index)}: .${m[1]}() without titleUnless`);
      }
      for (const m of text.matchAll(/\.(skip|todo)\(/g)) offenders.push(`${where(m.index)}: .${m[1]}()`);
    }
    expect(offenders).toEqual([]);
  });
});
