// herald contacts: manage a tenant's contacts over the HTTP API (remote mode, service key): create,
// get, find by external_id, update, delete, import a file (NDJSON or CSV streamed to the import route;
// a JSON array in bulk calls of 500, honouring 429) and mint a contact token for testing a front end.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { print, printJson, usageError } from './support/output.ts';
import { confirmUnlessYes } from './support/confirm.ts';
import { contacts as paths } from './support/paths.ts';
import { remoteClient, withRemote, type RemoteOptions } from './support/remote.ts';
import { importContactsFile, type ImportFormat } from './support/contact-import.ts';
import {
  CONTACT_TEXT_FIELDS,
  MUTABLE_CONTACT_FIELDS,
  type BulkContactsResponse,
  type ContactResponse,
  type ContactTokenResponse,
} from '../server/schemas/contacts.ts';
import { examples } from './support/examples.ts';
import { registerChatDestinations } from './chat-destinations.ts';

interface ContactFieldOptions {
  email?: string;
  phone?: string;
  name?: string;
  language?: string;
  property?: string[];
}

type Json = { json?: boolean };

const BULK_SIZE = 500;

const collect = (value: string, previous: string[] = []) => [...previous, value];

function withFields(command: Command): Command {
  return command
    .option('--email <email>', 'email address')
    .option('--phone <phone>', 'phone number')
    .option('--name <name>', 'display name')
    .option('--language <tag>', 'preferred language (BCP 47, e.g. de or pt-BR)')
    .option('--property <key=value>', 'a property (repeatable); the value is parsed as JSON when it can be', collect);
}

function parseProperties(pairs: string[] | undefined): Record<string, unknown> | undefined {
  if (!pairs) return undefined;
  const properties: Record<string, unknown> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw usageError(`--property expects key=value, got "${pair}"`);
    const raw = pair.slice(eq + 1);
    let value: unknown = raw;
    try {
      value = JSON.parse(raw);
    } catch {
      // a plain string
    }
    properties[pair.slice(0, eq)] = value;
  }
  return properties;
}

function fieldsOf(options: ContactFieldOptions): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const key of CONTACT_TEXT_FIELDS) if (options[key] !== undefined) fields[key] = options[key];
  const properties = parseProperties(options.property);
  if (properties) fields.properties = properties;
  return fields;
}

function printContact(contact: ContactResponse, options: Json): void {
  if (options.json) return printJson(contact);
  print(`id           ${contact.id}`);
  print(`external_id  ${contact.external_id}`);
  print(`email        ${contact.email ?? '-'}`);
  print(`phone        ${contact.phone ?? '-'}`);
  print(`name         ${contact.name ?? '-'}`);
  print(`language     ${contact.language ?? '-'}`);
  print(`properties   ${JSON.stringify(contact.properties)}`);
  print(`created_at   ${contact.created_at}`);
  print(`updated_at   ${contact.updated_at}`);
}

export function registerContacts(program: Command): void {
  const contacts = program
    .command('contacts')
    .description("manage a tenant's contacts over the API (remote: --url/--api-key or HERALD_URL/HERALD_API_KEY)")
    .addHelpText(
      'after',
      examples(
        'export HERALD_URL=https://herald.example.com HERALD_API_KEY=sk_...',
        'herald contacts create user-42 --email ann@example.com --name Ann --language de',
        'herald contacts find user-42 --json',
        'herald contacts import contacts.ndjson',
        'herald contacts token user-42',
      ),
    );

  withFields(withRemote(contacts.command('create <external_id>')))
    .description('create a contact (fails when the external_id exists)')
    .option('--json', 'print the contact as JSON')
    .addHelpText('after', examples('herald contacts create user-42 --email ann@example.com --property plan=\\"pro\\"'))
    .action(async (externalId: string, options: ContactFieldOptions & RemoteOptions & Json) => {
      const client = remoteClient(options);
      printContact(
        await client.call<ContactResponse>('POST', paths.list(), {
          body: { external_id: externalId, ...fieldsOf(options) },
        }),
        options,
      );
    });

  withRemote(contacts.command('get <id>'))
    .description('show a contact by its Herald id')
    .option('--json', 'print the contact as JSON')
    .addHelpText('after', examples('herald contacts get 01890a5d-ac96-774b-bcce-b302099a8057 --json'))
    .action(async (id: string, options: RemoteOptions & Json) => {
      printContact(await remoteClient(options).call<ContactResponse>('GET', paths.one(id)), options);
    });

  withRemote(contacts.command('find <external_id>'))
    .description('show the contact with an external_id (exit 1 when there is none)')
    .option('--json', 'print the contact as JSON')
    .addHelpText('after', examples('herald contacts find user-42'))
    .action(async (externalId: string, options: RemoteOptions & Json) => {
      printContact(await remoteClient(options).call<ContactResponse>('GET', paths.byExternalId(externalId)), options);
    });

  withFields(withRemote(contacts.command('update <id>')))
    .description('change some fields of a contact; the others keep their values')
    .option('--clear <field>', 'clear a field (email, phone, name, language, properties); repeatable', collect)
    .option('--json', 'print the contact as JSON')
    .addHelpText(
      'after',
      examples('herald contacts update 01890a5d-ac96-774b-bcce-b302099a8057 --name "Ann B." --clear phone'),
    )
    .action(async (id: string, options: ContactFieldOptions & RemoteOptions & Json & { clear?: string[] }) => {
      const client = remoteClient(options);
      const changes = fieldsOf(options);
      const clear = options.clear ?? [];
      for (const field of clear) {
        if (!(MUTABLE_CONTACT_FIELDS as string[]).includes(field))
          throw usageError(`--clear: unknown field "${field}"`);
      }
      if (Object.keys(changes).length === 0 && clear.length === 0)
        throw usageError('nothing to update: give --email, --phone, --name, --language, --property or --clear');
      // The API's PUT replaces every mutable field: start from the stored contact.
      const current = await client.call<ContactResponse>('GET', paths.one(id));
      const next: Record<string, unknown> = {
        email: current.email,
        phone: current.phone,
        name: current.name,
        language: current.language,
        ...changes,
        // --property adds or changes keys; the others stay.
        properties: { ...current.properties, ...((changes.properties as object | undefined) ?? {}) },
      };
      for (const field of clear) next[field] = field === 'properties' ? {} : null;
      printContact(await client.call<ContactResponse>('PUT', paths.one(id), { body: next }), options);
    });

  withRemote(contacts.command('delete <id>'))
    .description('delete a contact with its preferences, push subscriptions and inbox')
    .option('--yes', 'do not ask for confirmation (required when stdin is not a terminal)')
    .option('--json', 'print {"deleted": id} as JSON')
    .addHelpText('after', examples('herald contacts delete 01890a5d-ac96-774b-bcce-b302099a8057 --yes'))
    .action(async (id: string, options: RemoteOptions & Json & { yes?: boolean }) => {
      const client = remoteClient(options);
      await confirmUnlessYes(options.yes, {
        question: `Delete contact ${id}, its preferences, push subscriptions and inbox?`,
        withoutTerminal: 'refusing to delete without --yes (stdin is not a terminal)',
      });
      await client.call('DELETE', paths.one(id));
      if (options.json) printJson({ deleted: id });
      else print(`deleted contact ${id}`);
    });

  withRemote(contacts.command('import <file>'))
    .description(
      'create or update contacts from a file: NDJSON (one contact a line), CSV with a header, or a JSON array',
    )
    .option('--format <format>', 'ndjson, csv or json (default: from the extension: .csv, .json, else ndjson)')
    .option('--json', 'print the summary as JSON')
    .addHelpText(
      'after',
      `
Contacts are matched by external_id, and a field left out keeps its stored value. NDJSON holds one
object a line, like {"external_id": "user-42", "email": "ann@example.com", "name": "Ann"}; a CSV file
names its columns in its first line (external_id, email, phone, name, language; any other column
becomes a property). Both are streamed to the server as they are read (up to 100 MB), with a
progress bar on a terminal; refused lines are reported by line number and the others kept. A .json
file (an array, or {"contacts": [...]}) is sent 500 contacts per call, refused entries reported by
index. Exit 1 when some were refused.
` + examples('herald contacts import users.ndjson', 'herald contacts import users.csv --json'),
    )
    .action(async (file: string, options: RemoteOptions & Json & { format?: string }) => {
      const format = options.format ?? (/\.csv$/i.test(file) ? 'csv' : /\.json$/i.test(file) ? 'json' : 'ndjson');
      if (!['ndjson', 'csv', 'json'].includes(format))
        throw usageError(`--format must be ndjson, csv or json, got "${format}"`);
      const client = remoteClient(options);
      if (format !== 'json') {
        const result = await importContactsFile(client, file, format as ImportFormat);
        if (options.json) printJson(result);
        else {
          print(`created ${result.created}, updated ${result.updated}, refused ${result.refused}`);
          for (const e of result.errors) print(`  line ${e.line}: ${e.detail}`);
          if (result.refused > result.errors.length)
            print(`  (${result.refused - result.errors.length} more not listed)`);
        }
        if (result.refused > 0) process.exitCode = 1;
        return;
      }
      const entries = readContactsFile(file);
      const summary: BulkContactsResponse = { created: 0, updated: 0, errors: [] };
      for (let start = 0; start < entries.length; start += BULK_SIZE) {
        const chunk = entries.slice(start, start + BULK_SIZE);
        const result = await client.call<BulkContactsResponse>('POST', paths.bulk(), {
          body: { contacts: chunk },
          waitWhenRateLimited: true,
        });
        summary.created += result.created;
        summary.updated += result.updated;
        summary.errors.push(...result.errors.map((e) => ({ index: e.index + start, detail: e.detail })));
      }
      if (options.json) printJson(summary);
      else {
        print(`created ${summary.created}, updated ${summary.updated}, refused ${summary.errors.length}`);
        for (const e of summary.errors) print(`  entry ${e.index}: ${e.detail}`);
      }
      if (summary.errors.length > 0) process.exitCode = 1;
    });

  withRemote(contacts.command('token <external_id>'))
    .description('mint a contact token (for trying a front end; a real backend mints them per session)')
    .option('--json', 'print {token, token_type, expires_in, contact_id} as JSON')
    .addHelpText('after', examples('TOKEN=$(herald contacts token user-42)'))
    .action(async (externalId: string, options: RemoteOptions & Json) => {
      const result = await remoteClient(options).call<ContactTokenResponse>('POST', paths.tokens(), {
        body: { external_id: externalId },
      });
      if (options.json) printJson(result);
      else print(result.token);
    });

  registerChatDestinations(contacts);
}

function readContactsFile(file: string): unknown[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw usageError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw usageError(`${file} is not valid JSON: ${(error as Error).message}`);
  }
  const list = Array.isArray(parsed) ? parsed : (parsed as { contacts?: unknown })?.contacts;
  if (!Array.isArray(list)) throw usageError(`${file} must hold an array of contacts or {"contacts": [...]}`);
  if (list.length === 0) throw usageError(`${file} holds no contacts`);
  return list;
}
