// herald templates list|get: a tenant's templates of every kind (email, inbox, sms, chat, http), locally
// (--tenant, or the only tenant) or remotely (--url and a service key), the same requests. Without
// --kind they cover email and inbox, the kinds most types use. Templates are written with the API or
// herald apply.
import type { Command } from 'commander';
import { Option } from 'commander';
import type {
  ChatTemplateResponse,
  EmailTemplateResponse,
  HttpTemplateResponse,
  InboxTemplateResponse,
  SmsTemplateResponse,
  TemplateListQuery,
} from '../server/schemas/templates.ts';
import type { TemplateKind } from '../server/resources/templates.ts';
import { CliError, printJson, printRecord, printTable, usageError } from './support/output.ts';
import { templates as paths } from './support/paths.ts';
import { ApiError, type RemoteClient } from './support/remote.ts';
import { onTarget, withTarget, type TargetOptions } from './support/target.ts';
import { examples } from './support/examples.ts';

type TemplateResponse =
  EmailTemplateResponse | InboxTemplateResponse | SmsTemplateResponse | ChatTemplateResponse | HttpTemplateResponse;
type Template = TemplateResponse & { kind: TemplateKind };

const KINDS: TemplateKind[] = ['email', 'inbox', 'sms', 'chat', 'http'];

/** The kinds a command covers without --kind. */
const DEFAULT_KINDS: TemplateKind[] = ['email', 'inbox'];

interface ListOptions extends TargetOptions {
  kind?: TemplateKind;
  type?: string;
  brand?: string;
  language?: string;
}

function kindOption(): Option {
  return new Option('--kind <kind>', 'the template kind (default: email and inbox)').choices(KINDS);
}

export function registerTemplates(program: Command): void {
  const group = program
    .command('templates')
    .description("a tenant's email, inbox, SMS, chat and HTTP templates (write them with the API or herald apply)")
    .addHelpText(
      'after',
      examples(
        'herald templates list --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6 --type order_shipped',
        'herald templates list --kind sms --type order_shipped',
        'HERALD_URL=https://herald.acme.test HERALD_API_KEY=sk_... herald templates get <template-id> --json',
      ),
    );

  withTarget(group.command('list'))
    .description('list templates, filtered by kind, type, brand or language')
    .addOption(kindOption())
    .option('--type <key>', 'only templates of this notification type')
    .option('--brand <key>', 'only templates of this brand')
    .option('--language <tag>', 'only templates in this language')
    .addHelpText(
      'after',
      examples(
        'herald templates list --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6',
        'herald templates list --kind email --type order_shipped --language de --json',
        'herald templates list --kind chat --brand shop',
        'herald templates list --kind http --json',
      ),
    )
    .action(async (options: ListOptions) => {
      const filter: TemplateListQuery = {
        notification_type_key: options.type,
        brand_key: options.brand,
        language: options.language,
      };
      const kinds = options.kind ? [options.kind] : DEFAULT_KINDS;
      const templates = await onTarget(options, async (client) =>
        (await Promise.all(kinds.map((kind) => listKind(client, kind, filter)))).flat(),
      );
      if (options.json) return printJson(templates);
      printTable(
        templates.map((t) => ({ ...t, text: summary(t) })),
        ['id', 'kind', 'notification_type_key', 'brand_key', 'language', 'text'],
      );
    });

  withTarget(group.command('get'))
    .description('show one template by id')
    .argument('<template-id>', 'the template id (herald templates list)')
    .addHelpText(
      'after',
      examples(
        'herald templates get 0190f5e3-41d2-7c3d-8e4f-a1b2c3d4e5f6 --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6',
        'herald templates get 0190f5e3-41d2-7c3d-8e4f-a1b2c3d4e5f6 --kind inbox --json',
        'herald templates get 0190f5e3-41d2-7c3d-8e4f-a1b2c3d4e5f6 --kind sms',
      ),
    )
    .addOption(kindOption())
    .action(async (id: string, options: TargetOptions & { kind?: TemplateKind }) => {
      if (!/^[0-9a-f-]{36}$/i.test(id)) throw usageError(`a template id is a UUID, got "${id}"`);
      const kinds = options.kind ? [options.kind] : DEFAULT_KINDS;
      const template = await onTarget(options, (client) =>
        firstFound(kinds, async (kind) => ({
          ...(await client.call<TemplateResponse>('GET', paths.one(kind, id))),
          kind,
        })),
      );
      if (!template)
        throw new CliError(
          options.kind
            ? `no ${options.kind} template ${id}`
            : `no email or inbox template ${id} (an SMS, chat or HTTP one: --kind sms|chat|http)`,
        );
      if (options.json) return printJson(template);
      printRecord(template);
    });
}

async function listKind(client: RemoteClient, kind: TemplateKind, filter: TemplateListQuery): Promise<Template[]> {
  const rows = await client.call<TemplateResponse[]>('GET', paths.list(kind, filter));
  return rows.map((t) => ({ ...t, kind }));
}

/** A table's one-line view of a template: an email's subject, an inbox's title, else its text or body. */
function summary(t: Template): string {
  if ('subject' in t) return t.subject;
  if ('title' in t) return t.title;
  const text = ('content' in t ? t.content : JSON.stringify(t.body)).replace(/\s+/g, ' ');
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}

/** The first kind whose lookup finds the template; a 404 means "try the next kind". */
async function firstFound(
  kinds: TemplateKind[],
  find: (kind: TemplateKind) => Promise<Template>,
): Promise<Template | null> {
  for (const kind of kinds) {
    try {
      return await find(kind);
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 404)) throw error;
    }
  }
  return null;
}
