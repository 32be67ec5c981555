// Secret flags that predate the file-or-stdin rule (--owner-password, --password, --smtp-url with a
// password in it). They still work, but each use warns on stderr and names the option that replaces
// it: a flag's value sits in the process list, where other users of the host can read it. The warning
// names flags only, never the value.
import { Option } from 'commander';
import { readSecret } from './file-input.ts';
import { usageError } from './output.ts';

/** A deprecated secret flag, its help line naming the option that replaces it. */
export function deprecatedSecretOption(flags: string, description: string, replacement: string): Option {
  return new Option(flags, `${description} (deprecated: use ${replacement})`);
}

/** Writes the one-line deprecation warning of `flag` to stderr. */
export function warnDeprecatedSecretFlag(flag: string, replacement: string): void {
  process.stderr.write(
    `herald: warning: ${flag} is deprecated (other users of the host can read it in the process list): use ${replacement} <path|->\n`,
  );
}

/**
 * The secret of a file option (`--x-file <path|->`), else of its deprecated flag (with the warning),
 * else undefined. Both given is a usage error.
 */
export function secretOf(
  given: { file: string | undefined; flag: string | undefined },
  names: { file: string; flag: string },
): string | undefined {
  if (given.file !== undefined && given.flag !== undefined)
    throw usageError(`give ${names.file} or ${names.flag}, not both`);
  if (given.file !== undefined) return readSecret(given.file, names.file);
  if (given.flag !== undefined) warnDeprecatedSecretFlag(names.flag, names.file);
  return given.flag;
}
