// herald templates list|get: a tenant's email and inbox templates, locally (--tenant, or the only
// tenant) or remotely (--url and a service key), the same requests. Templates are written with the API or herald apply.
import type { Command } from 'commander';
import { Option } from 'commander';
import type { EmailTemplateResponse, InboxTemplateResponse, TemplateListQuery } from '../server/schemas/templates.ts';
import type { TemplateKind } from '../server/resources/templates.ts';
import { CliError, printJson, printRecord, printTable, usageError } from './support/output.ts';
import { templates as paths } from './support/paths.ts';
import { ApiError, type RemoteClient } from './support/remote.ts';
import { onTarget, withTarget, type TargetOptions } from './support/target.ts';
import { examples } from './support/examples.ts';

type Template = (EmailTemplateResponse | InboxTemplateResponse) & { kind: TemplateKind };

const KINDS: TemplateKind[] = ['email', 'inbox'];

interface ListOptions extends TargetOptions {
  kind?: TemplateKind;
  type?: string;
  brand?: string;
  language?: string;
}

function kindOption(): Option {
  return new Option('--kind <kind>', 'email or inbox (default: both)').choices(KINDS);
}

export function registerTemplates(program: Command): void {
  const group = program
    .command('templates')
    .description("a tenant's email and inbox templates (write them with the API or herald apply)")
    .addHelpText(
      'after',
      examples(
        'herald templates list --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6 --type order_shipped',
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
      ),
    )
    .action(async (options: ListOptions) => {
      const filter: TemplateListQuery = {
        notification_type_key: options.type,
        brand_key: options.brand,
        language: options.language,
      };
      const kinds = options.kind ? [options.kind] : KINDS;
      const templates = await onTarget(options, async (client) =>
        (await Promise.all(kinds.map((kind) => listKind(client, kind, filter)))).flat(),
      );
      if (options.json) return printJson(templates);
      printTable(
        templates.map((t) => ({ ...t, text: 'subject' in t ? t.subject : t.title })),
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
      ),
    )
    .addOption(kindOption())
    .action(async (id: string, options: TargetOptions & { kind?: TemplateKind }) => {
      if (!/^[0-9a-f-]{36}$/i.test(id)) throw usageError(`a template id is a UUID, got "${id}"`);
      const kinds = options.kind ? [options.kind] : KINDS;
      const template = await onTarget(options, (client) =>
        firstFound(kinds, async (kind) => ({
          ...(await client.call<EmailTemplateResponse | InboxTemplateResponse>('GET', paths.one(kind, id))),
          kind,
        })),
      );
      if (!template) throw new CliError(`no template ${id}`);
      if (options.json) return printJson(template);
      printRecord(template);
    });
}

async function listKind(client: RemoteClient, kind: TemplateKind, filter: TemplateListQuery): Promise<Template[]> {
  const rows = await client.call<Array<EmailTemplateResponse | InboxTemplateResponse>>('GET', paths.list(kind, filter));
  return rows.map((t) => ({ ...t, kind }));
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
