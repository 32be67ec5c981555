// Herald is Apache-2.0 (LICENSE, NOTICE), and what it ships must let it be: every production
// dependency in package-lock.json carries a licence from ALLOWED, or an SPDX "A OR B" choice with one
// of them. The lock records each package's licence, so this needs no install and no network.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * Permissive licences, and MPL-2.0 (web-push): its copyleft covers changes to its own files, which
 * Herald uses unchanged.
 */
const ALLOWED = new Set([
  'MIT',
  'MIT-0',
  'ISC',
  '0BSD',
  'BSD-2-Clause',
  'BSD-3-Clause',
  'Apache-2.0',
  'BlueOak-1.0.0',
  'CC0-1.0',
  'Unlicense',
  'MPL-2.0',
]);

export function allowed(expression: string): boolean {
  const choices = expression.replace(/^\((.*)\)$/, '$1').split(/\s+OR\s+/);
  return choices.some((choice) => ALLOWED.has(choice.trim()));
}

interface LockEntry {
  license?: string;
  dev?: boolean;
}

describe('licences', () => {
  it('reads SPDX choices', () => {
    expect(allowed('(MIT OR EUPL-1.1+)')).toBe(true);
    expect(allowed('(BSD-3-Clause OR GPL-2.0)')).toBe(true);
    expect(allowed('GPL-3.0-only')).toBe(false);
    expect(allowed('AGPL-3.0 OR SSPL-1.0')).toBe(false);
  });

  it('Herald is Apache-2.0, with its LICENSE and NOTICE', () => {
    const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { license: string };
    expect(pkg.license).toBe('Apache-2.0');
    expect(readFileSync(`${ROOT}LICENSE`, 'utf8')).toContain('Apache License\n                           Version 2.0');
    expect(readFileSync(`${ROOT}NOTICE`, 'utf8')).toMatch(/^Herald\n/);
  });

  it('every production dependency has a licence that allows it', () => {
    const lock = JSON.parse(readFileSync(`${ROOT}package-lock.json`, 'utf8')) as {
      packages: Record<string, LockEntry>;
    };
    const production = Object.entries(lock.packages).filter(([path, entry]) => path !== '' && !entry.dev);
    expect(production.length).toBeGreaterThan(100);
    const refused = production
      .filter(([, entry]) => !entry.license || !allowed(entry.license))
      .map(([path, entry]) => `${path.replace(/^.*node_modules\//, '')}: ${entry.license ?? 'no licence'}`);
    expect(refused).toEqual([]);
  });
});
