// What a send says besides its recipients, shared by `herald send` and `herald broadcasts create`:
// variables (--var, --data-file), secret variables (--secret, --secrets-file), --brand, --channel and
// --idempotency-key, and the request body fields they make.
import type { Command } from 'commander';
import { readJsonObject } from './file-input.ts';
import { usageError } from './output.ts';

export interface MessageOptions {
  var: string[];
  secret: string[];
  secretsFile?: string;
  dataFile?: string;
  brand?: string;
  channel: string[];
  idempotencyKey?: string;
}

const collect = (value: string, previous: string[]) => [...previous, value];

export function withMessageOptions(command: Command): Command {
  return command
    .option('--var <name=value>', 'a variable (repeatable)', collect, [])
    .option(
      '--secret <name=value>',
      'a secret variable, masked in the activity log (repeatable; other users can see it in the process list: prefer --secrets-file)',
      collect,
      [],
    )
    .option(
      '--secrets-file <file>',
      "JSON object of secret variables, or '-' to read it from stdin (merged under --secret)",
    )
    .option('--data-file <file>', 'JSON object of variables (merged under --var)')
    .option('--brand <key>', 'brand key (default: the tenant default brand)')
    .option(
      '--channel <channel>',
      'only these channels: inbox, email, push, web_push, sms, chat, http (repeatable)',
      collect,
      [],
    )
    .option('--idempotency-key <key>', 'makes a retry safe: the same key and input never send twice');
}

/** The body fields (variables, secret_variables, brand, channels) and the Idempotency-Key header. */
export function messageFields(options: MessageOptions): {
  body: Record<string, unknown>;
  headers: Record<string, string> | undefined;
} {
  const variables = {
    ...(options.dataFile ? readJsonObject(options.dataFile, '--data-file') : {}),
    ...pairs(options.var, '--var'),
  };
  const secretVariables = {
    ...(options.secretsFile ? readJsonObject(options.secretsFile, '--secrets-file') : {}),
    ...pairs(options.secret, '--secret'),
  };
  const body: Record<string, unknown> = { variables, secret_variables: secretVariables };
  if (options.brand) body.brand = options.brand;
  if (options.channel.length > 0) body.channels = options.channel;
  return { body, headers: options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : undefined };
}

function pairs(values: string[], flag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const value of values) {
    const at = value.indexOf('=');
    if (at <= 0)
      throw usageError(`${flag} takes name=value, got "${flag === '--secret' ? value.split('=')[0] : value}"`);
    out[value.slice(0, at)] = value.slice(at + 1);
  }
  return out;
}
