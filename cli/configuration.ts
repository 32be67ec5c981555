// herald export / herald apply: a tenant's notification types, brands, templates, sender domains, topics
// and webhook endpoints kept in a YAML file (configuration as code), locally (--tenant, on the host) or
// remotely (--url and a service key), the same requests. apply prints the plan and applies it in one
// transaction; --dry-run checks it and changes nothing; --prune also deletes what the file leaves out.
// No secret is ever in the file.
import type { Command } from 'commander';
import { stringify } from 'yaml';
import {
  ApplyConfigurationRequest,
  ConfigurationDocument,
  type ConfigurationPlanResponse,
} from '../server/schemas/configuration.ts';
import { CliError, describeFailure, print, printJson, usageError } from './support/output.ts';
import { configuration } from './support/paths.ts';
import { onTarget, withTarget, type TargetOptions } from './support/target.ts';
import { readYamlDocument } from './support/yaml-document.ts';
import { examples } from './support/examples.ts';

const HEADER = `# Herald configuration (herald export). Apply it with: herald apply -f <this file> [--dry-run] [--prune]
`;

export function registerExport(program: Command): void {
  withTarget(program.command('export'))
    .description(
      "print a tenant's configuration (types, brands, templates, sender domains, topics, webhooks) as YAML; never secrets",
    )
    .addHelpText(
      'after',
      examples(
        'herald export --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6 > herald.yaml',
        'HERALD_URL=https://herald.acme.test HERALD_API_KEY=sk_... herald export > herald.yaml',
      ),
    )
    .action(async (options: TargetOptions) => {
      const document = await onTarget(options, (client) =>
        client.call<ConfigurationDocument>('GET', configuration.export()),
      );
      if (options.json) return printJson(document);
      process.stdout.write(HEADER + stringify(document, { lineWidth: 0 }));
    });
}

interface ApplyOptions extends TargetOptions {
  file?: string;
  dryRun?: boolean;
  prune?: boolean;
}

export function registerApply(program: Command): void {
  withTarget(program.command('apply'))
    .description('make a YAML file the configuration of a tenant: prints the plan and applies it in one transaction')
    .option('-f, --file <file>', "the YAML file (herald export writes one), or '-' for stdin")
    .option('--dry-run', 'print the plan and check it, change nothing')
    .option('--prune', 'also delete what the file does not list (never the default brand)')
    .addHelpText(
      'after',
      examples(
        'herald apply -f herald.yaml --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6 --dry-run',
        'HERALD_URL=https://herald.acme.test HERALD_API_KEY=sk_... herald apply -f herald.yaml --prune',
      ) +
        `

Exit codes: 0 applied (or nothing to change), 1 Herald refused or failed the apply (a value a service
refuses, a conflict, the brand cap, Herald unreachable), 2 the file is malformed (nothing is sent); after 1 or
2 nothing was changed.`,
    )
    .action(async (options: ApplyOptions) => {
      if (!options.file) throw usageError('give the file: -f herald.yaml (or -f - for stdin)');
      const document = readYamlDocument(options.file, ConfigurationDocument);
      const request = ApplyConfigurationRequest.parse({
        document,
        dry_run: options.dryRun ?? false,
        prune: options.prune ?? false,
      });
      const result = await onTarget(options, (client) =>
        client.call<ConfigurationPlanResponse>('POST', configuration.apply(), { body: request }),
      ).catch((error: unknown) => {
        // Errors locate their entry in the request ("body.document.brands.1..."): name it as the file does.
        const { exitCode, message, answer } = describeFailure(error);
        throw new CliError(
          message.replaceAll('body.document.', `${options.file === '-' ? '(stdin)' : options.file}: `),
          exitCode,
          answer,
        );
      });
      if (options.json) return printJson(result);
      printPlan(result, request.dry_run);
    });
}

const SIGN = { create: '+', update: '~', delete: '-' } as const;

function printPlan(result: ConfigurationPlanResponse, dryRun: boolean): void {
  if (result.changes.length === 0) return print('no changes');
  for (const change of result.changes) {
    print(
      `${SIGN[change.action]} ${change.action} ${change.kind} ${change.id}${change.fields.length > 0 ? ` (${change.fields.join(', ')})` : ''}`,
    );
  }
  const count = (action: string) => result.changes.filter((c) => c.action === action).length;
  print(
    `Plan: ${count('create')} to create, ${count('update')} to update, ${count('delete')} to delete. ${dryRun ? 'Dry run: nothing changed.' : 'Applied.'}`,
  );
}
