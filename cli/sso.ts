// herald sso: the SSO providers console users may sign in with (local admin: the database directly).
// Client secrets are sealed with the key ring; `list` never shows them.
import { Option, type Command } from 'commander';
import { AppError } from '../server/base/errors.ts';
import {
  SSO_KINDS,
  addSsoProvider,
  listSsoProviders,
  removeSsoProvider,
  type SsoKind,
} from '../server/resources/sso.ts';
import { configFrom, withDataDir, withLocalRuntime } from './support/context.ts';
import { CliError, print, printJson, printTable, usageError } from './support/output.ts';
import { confirmUnlessYes } from './support/confirm.ts';
import { checkTenantId, requireTenant } from './support/tenant-option.ts';
import { auditedWrite } from './support/audit.ts';
import { examples } from './support/examples.ts';

interface AddOptions {
  dataDir?: string;
  kind: SsoKind;
  name?: string;
  clientId: string;
  clientSecret?: string;
  clientSecretEnv?: string;
  issuer?: string;
  baseUrl?: string;
  apiUrl?: string;
  allowedDomains?: string;
  tenant?: string;
  role: 'admin' | 'owner';
  json?: boolean;
}

const SLUG = /^[a-z0-9][a-z0-9_-]{0,63}$/;

function checkUrl(flag: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  try {
    const url = new URL(value);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error('scheme');
  } catch {
    throw usageError(`${flag} must be an http(s) URL, got "${value}"`);
  }
  return value;
}

export function registerSso(program: Command): void {
  const group = program
    .command('sso')
    .description(
      'manage the SSO providers console users sign in with (GitHub, GitLab, Google, Microsoft Entra ID, Okta, Keycloak, any OpenID Connect issuer)',
    )
    .addHelpText(
      'after',
      `
The redirect (callback) URL to register with the provider is <publicUrl>/v1/auth/sso/<slug>/callback.
` +
        examples(
          'herald sso add github --kind github --client-id Iv1.abc --client-secret-env GITHUB_SECRET',
          'herald sso add okta --kind okta --issuer https://acme.okta.com/oauth2/default --client-id 0oa1 \\\n' +
            '      --client-secret-env OKTA_SECRET --allowed-domains acme.example --tenant <tenant-id> --role admin',
          'herald sso list --json',
          'herald sso remove okta --yes',
        ),
    );

  withDataDir(group.command('add'))
    .description('add a provider')
    .argument('<slug>', 'a short name used in URLs (lowercase letters, digits, - and _)')
    .addOption(new Option('--kind <kind>', 'provider type').choices([...SSO_KINDS]).makeOptionMandatory())
    .option('--name <name>', 'the button label on the sign-in page (default: the kind)')
    .requiredOption('--client-id <id>', 'the OAuth client id')
    .option(
      '--client-secret <secret>',
      'the OAuth client secret (prefer --client-secret-env: arguments show in process lists)',
    )
    .option('--client-secret-env <variable>', 'read the client secret from this environment variable')
    .option(
      '--issuer <url>',
      'OpenID Connect issuer (okta, keycloak: https://host/realms/<realm>, microsoft: https://login.microsoftonline.com/<tenant>/v2.0, oidc; google and gitlab have defaults)',
    )
    .option('--base-url <url>', 'github: the web base URL (GitHub Enterprise; default https://github.com)')
    .option('--api-url <url>', 'github: the API base URL (default https://api.github.com)')
    .option(
      '--allowed-domains <list>',
      'comma-separated email domains whose people may join on first sign-in (default: none, only existing users)',
    )
    .option('--tenant <id>', 'the tenant new users join (single mode: the install tenant by default)')
    .addOption(
      new Option('--role <role>', 'the role new users get in that tenant').choices(['admin', 'owner']).default('admin'),
    )
    .option('--json', 'print the provider as JSON')
    .addHelpText(
      'after',
      examples(
        'herald sso add github --kind github --client-id Iv1.abc --client-secret-env GITHUB_SECRET',
        'herald sso add kc --kind keycloak --issuer https://sso.acme.example/realms/acme --client-id herald \\\n' +
          '      --client-secret-env KEYCLOAK_SECRET --allowed-domains acme.example --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6',
      ),
    )
    .action(async (slug: string, options: AddOptions) => {
      if (!SLUG.test(slug)) throw usageError(`<slug> must match ${SLUG.source}, got "${slug}"`);
      const secret = options.clientSecretEnv ? process.env[options.clientSecretEnv] : options.clientSecret;
      if (!secret)
        throw usageError(
          options.clientSecretEnv
            ? `$${options.clientSecretEnv} is empty`
            : 'give --client-secret-env <variable> or --client-secret <secret>',
        );
      const tenantId = options.tenant === undefined ? null : checkTenantId(options.tenant);
      const allowedDomains = (options.allowedDomains ?? '')
        .split(',')
        .map((d) => d.trim().toLowerCase())
        .filter(Boolean);
      for (const d of allowedDomains)
        if (!/^[a-z0-9.-]+\.[a-z]{2,}$/.test(d)) throw usageError(`--allowed-domains: "${d}" is not a domain`);
      const provider = await withLocalRuntime(configFrom(options), async (runtime) => {
        if (tenantId) await requireTenant(runtime.orm.em.fork(), tenantId);
        return await auditedWrite(
          runtime,
          // The secret never reaches the entry (the audit masks it all the same).
          {
            tenantId: null,
            action: 'sso_provider.create',
            target: { kind: 'sso_provider', id: slug },
            changes: {
              slug,
              kind: options.kind,
              client_id: options.clientId,
              allowed_domains: allowedDomains,
              tenant_id: tenantId,
              role: options.role,
            },
          },
          (tx) =>
            addSsoProvider(runtime, tx, {
              slug,
              kind: options.kind,
              displayName: options.name,
              clientId: options.clientId,
              clientSecret: secret,
              issuer: checkUrl('--issuer', options.issuer),
              baseUrl: checkUrl('--base-url', options.baseUrl),
              apiUrl: checkUrl('--api-url', options.apiUrl),
              allowedDomains,
              tenantId,
              defaultRole: options.role,
            }),
        );
      });
      if (options.json) return printJson(provider);
      print(
        `Added SSO provider ${provider.slug} (${provider.kind}). Callback URL: <publicUrl>/v1/auth/sso/${provider.slug}/callback`,
      );
    });

  withDataDir(group.command('list'))
    .description('list the providers (never their secrets)')
    .option('--json', 'print the providers as JSON')
    .addHelpText('after', examples('herald sso list', 'herald sso list --json'))
    .action(async (options: { dataDir?: string; json?: boolean }) => {
      const providers = await withLocalRuntime(configFrom(options), (runtime) =>
        listSsoProviders(runtime.orm.em.fork()),
      );
      if (options.json) return printJson(providers);
      printTable(
        providers.map((p) => ({
          ...p,
          url: p.issuer ?? p.base_url,
          allowed_domains: p.allowed_domains.join(',') || '-',
          tenant_id: p.tenant_id ?? '-',
        })),
        ['slug', 'kind', 'display_name', 'client_id', 'url', 'allowed_domains', 'tenant_id', 'default_role'],
      );
    });

  withDataDir(group.command('remove'))
    .description('remove a provider: its sign-in button disappears at once')
    .argument('<slug>', 'the provider (see herald sso list)')
    .addHelpText('after', examples('herald sso remove github --yes'))
    .option('-y, --yes', 'remove without asking')
    .option('--json', 'print the result as JSON')
    .action(async (slug: string, options: { dataDir?: string; yes?: boolean; json?: boolean }) => {
      if (!SLUG.test(slug)) throw usageError(`<slug> must match ${SLUG.source}, got "${slug}"`);
      await confirmUnlessYes(options.yes, {
        question: `Remove SSO provider ${slug}? Users who sign in only with it will need a password reset.`,
        withoutTerminal: 'pass --yes to remove the provider',
        declined: 'not removed',
        initialValue: false,
      });
      await withLocalRuntime(configFrom(options), async (runtime) => {
        try {
          await auditedWrite(
            runtime,
            { tenantId: null, action: 'sso_provider.delete', target: { kind: 'sso_provider', id: slug } },
            (tx) => removeSsoProvider(tx, slug),
          );
        } catch (error) {
          if (error instanceof AppError && error.status === 404) throw new CliError(`no SSO provider named ${slug}`);
          throw error;
        }
      });
      if (options.json) return printJson({ slug, removed: true });
      print(`Removed SSO provider ${slug}.`);
    });
}
