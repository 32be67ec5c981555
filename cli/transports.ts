// herald transports email|push (and sms|chat|http, text-transports.ts): a tenant's delivery transports, for local admins (--tenant, the API's
// routes in process) and in remote mode (--url/--api-key or HERALD_URL/HERALD_API_KEY, the HTTP API),
// the same requests; the install's default SMTP is the host's alone (services). Secrets come from files or stdin, never from flags, and are
// never printed.
import type { Command } from 'commander';
import { PushProvider } from '../server/schemas/common.ts';
import type {
  EmailTransportResponse,
  PushTransportResponse,
  SendTestEmailResult,
  SendTestResult,
} from '../server/schemas/transports.ts';
import { setDefaultSmtp, testInstallSmtp } from '../server/channels/email/email-transport.ts';
import { smtpSettingsFromUrl } from '../server/channels/email/smtp.ts';
import { configFrom, withDataDir, withLocalRuntime } from './support/context.ts';
import { CliError, print, printJson, printTable, usageError } from './support/output.ts';
import { emailArg } from './tenants.ts';
import { confirmUnlessYes } from './support/confirm.ts';
import { readJsonObject, readSecret } from './support/file-input.ts';
import type { RemoteClient } from './support/remote.ts';
import { transports } from './support/paths.ts';
import { onTarget, withTarget, type TargetOptions } from './support/target.ts';
import { examples } from './support/examples.ts';
import { registerTextTransports } from './text-transports.ts';

/** The operations the commands need: the same requests, to Herald at --url or in process. */
interface TransportApi {
  /** `fallback`: the relay that takes what the first one could not send (failover). */
  getEmail(fallback?: boolean): Promise<EmailTransportResponse>;
  putEmail(body: unknown, fallback?: boolean): Promise<EmailTransportResponse>;
  deleteEmail(fallback?: boolean): Promise<void>;
  testEmail(body: unknown): Promise<SendTestEmailResult>;
  listPush(): Promise<PushTransportResponse[]>;
  putPush(provider: PushProvider, body: unknown): Promise<PushTransportResponse>;
  deletePush(provider: PushProvider): Promise<void>;
  testPush(provider: PushProvider, body: unknown): Promise<SendTestResult>;
}

function transportApi(client: RemoteClient): TransportApi {
  const call = <T>(method: string, path: string, body?: unknown): Promise<T> => client.call<T>(method, path, { body });
  return {
    getEmail: (fallback) => call('GET', fallback ? transports.emailFallback() : transports.email()),
    putEmail: (body, fallback) => call('PUT', fallback ? transports.emailFallback() : transports.email(), body),
    deleteEmail: (fallback) => call('DELETE', fallback ? transports.emailFallback() : transports.email()),
    testEmail: (body) => call('POST', transports.emailTest(), body),
    listPush: () => call('GET', transports.push()),
    putPush: (provider, body) => call('PUT', transports.pushOne(provider), body),
    deletePush: (provider) => call('DELETE', transports.pushOne(provider)),
    testPush: (provider, body) => call('POST', transports.pushTest(provider), body),
  };
}

/** Runs `fn` with the operations of the chosen mode: the same requests, to Herald at --url or in process. */
function withApi<T>(options: TargetOptions, fn: (api: TransportApi) => Promise<T>): Promise<T> {
  return onTarget(options, (client) => fn(transportApi(client)));
}

function parsePort(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw usageError('--port must be an integer from 1 to 65535');
  return port;
}

function confirmRemoval(yes: boolean | undefined, question: string): Promise<void> {
  return confirmUnlessYes(yes, { question, withoutTerminal: 'this removes configuration: confirm with --yes' });
}

function printEmail(transport: EmailTransportResponse): void {
  if (!transport.configured) return printInstallDefault(transport.install_default);
  printTable(
    [
      { field: 'host', value: transport.host },
      { field: 'port', value: transport.port },
      { field: 'secure', value: transport.secure },
      { field: 'username', value: transport.username },
      {
        field: 'from',
        value: transport.from_name ? `${transport.from_name} <${transport.from_email}>` : transport.from_email,
      },
      {
        field: 'credentials',
        value: transport.credentials_unreadable ? 'UNREADABLE (key gone): set the password again' : 'ok',
      },
    ],
    ['field', 'value'],
  );
}

/** What the email of a tenant without a transport of its own goes through. */
function printInstallDefault(install: EmailTransportResponse['install_default']): void {
  if (!install)
    return print(
      "no email transport of its own, and the install has no default SMTP: this tenant's email is skipped (no_transport)",
    );
  if (install.credentials_unreadable)
    return print(
      "no email transport of its own; the install's default SMTP is unreadable (its key is gone): email is skipped until it is set again",
    );
  print(
    `no email transport of its own: email goes through the install's default SMTP: ${install.host}:${install.port} (${install.secure ? 'TLS' : 'STARTTLS when offered'}), from ${install.from}`,
  );
}

function printTestResult(
  result: SendTestResult & Partial<Pick<SendTestEmailResult, 'transport'>>,
  json?: boolean,
): void {
  const through = result.transport === 'install_default' ? " through the install's default SMTP" : '';
  if (json) printJson(result);
  else if (result.ok) print(`sent${through}${result.message_id ? ` (message id ${result.message_id})` : ''}`);
  else print(`not sent${through}: ${result.error}`);
  if (!result.ok) process.exitCode = 1;
}

function parseProvider(value: string): PushProvider {
  const parsed = PushProvider.safeParse(value);
  if (!parsed.success) throw usageError(`unknown provider ${value}: use ${PushProvider.options.join(', ')}`);
  return parsed.data;
}

interface EmailSetOptions extends TargetOptions {
  file?: string;
  host?: string;
  port?: string;
  secure?: boolean;
  username?: string;
  passwordFile?: string;
  password?: boolean;
  fromEmail?: string;
  fromName?: string;
}

function emailBody(options: EmailSetOptions): Record<string, unknown> {
  const body: Record<string, unknown> = options.file ? readJsonObject(options.file, 'settings file') : {};
  if ('password' in body) throw usageError('the settings file must not hold the password: use --password-file');
  if (options.host !== undefined) body.host = options.host;
  if (options.port !== undefined) body.port = parsePort(options.port);
  if (options.secure !== undefined) body.secure = options.secure;
  if (options.username !== undefined) body.username = options.username;
  if (options.fromEmail !== undefined) body.from_email = options.fromEmail;
  if (options.fromName !== undefined) body.from_name = options.fromName;
  if (options.passwordFile) body.password = readSecret(options.passwordFile, 'password');
  else if (options.password === false) body.password = null;
  return body;
}

function registerEmail(transports: Command): void {
  const email = transports
    .command('email')
    .description("the tenant's SMTP transport and the install's default SMTP")
    .addHelpText(
      'after',
      examples(
        'herald transports email show --tenant <id>',
        'printf \'%s\' "$SMTP_PASSWORD" | herald transports email set --tenant <id> --host smtp.acme.test --port 587 --username herald --password-file - --from-email noreply@acme.test',
        'herald transports email test --url https://herald.acme.test --api-key sk_... --to ops@acme.test',
      ),
    );

  withTarget(email.command('show'))
    .description("show the tenant's email transport (the password is never shown)")
    .option('--fallback', 'the fallback relay instead')
    .addHelpText(
      'after',
      examples('herald transports email show --tenant <id> --json', 'herald transports email show --fallback'),
    )
    .action(async (options: TargetOptions & { fallback?: boolean }) => {
      await withApi(options, async (api) => {
        const transport = await api.getEmail(options.fallback);
        if (options.json) return printJson(transport);
        if (options.fallback && !transport.configured)
          return print('no fallback relay: a failed send waits for its retry');
        printEmail(transport);
      });
    });

  withTarget(email.command('set'))
    .description("create or replace the tenant's email transport")
    .option(
      '--file <path>',
      'JSON settings file {host, port, secure, username, from_email, from_name}; flags override it',
    )
    .option('--host <host>', 'SMTP host')
    .option('--port <port>', 'SMTP port (465 implicit TLS, 587 STARTTLS)')
    .option('--secure', 'implicit TLS (smtps, usually port 465)')
    .option('--no-secure', 'STARTTLS when offered (default)')
    .option('--username <user>', 'SMTP user name')
    .option('--password-file <path>', 'read the SMTP password from a file, or "-" for stdin')
    .option('--no-password', 'remove the stored password')
    .option('--from-email <email>', 'default From address')
    .option('--from-name <name>', 'default From name')
    .option('--fallback', 'set the fallback relay: it takes what the first one could not send (failover)')
    .addHelpText(
      'after',
      `
Without --password-file the stored password is kept.
` +
        examples(
          'herald transports email set --tenant <id> --host smtp.acme.test --port 587 --username herald --password-file /run/secrets/smtp --from-email noreply@acme.test',
          'herald transports email set --url $HERALD_URL --api-key $KEY --file smtp.json --password-file -',
        ),
    )
    .action(async (options: EmailSetOptions & { fallback?: boolean }) => {
      const body = emailBody(options);
      await withApi(options, async (api) => {
        const transport = await api.putEmail(body, options.fallback);
        if (options.json) return printJson(transport);
        print(options.fallback ? 'fallback email transport saved' : 'email transport saved');
        printEmail(transport);
      });
    });

  withTarget(email.command('remove'))
    .description("remove the tenant's email transport")
    .option('--fallback', 'remove the fallback relay instead')
    .option('-y, --yes', 'do not ask for confirmation')
    .addHelpText('after', examples('herald transports email remove --tenant <id> --yes'))
    .action(async (options: TargetOptions & { yes?: boolean; fallback?: boolean }) => {
      const which = options.fallback ? 'fallback email transport' : 'email transport';
      await confirmRemoval(options.yes, `Remove the ${which}?`);
      await withApi(options, async (api) => {
        await api.deleteEmail(options.fallback);
        if (options.json) printJson({ removed: true });
        else print(`${which} removed`);
      });
    });

  withTarget(email.command('test'))
    .description(
      "send a test email as the tenant's email goes (its transport, else the install's default SMTP), or with --install through the install's own SMTP",
    )
    .requiredOption('--to <email>', 'recipient')
    .option(
      '--install',
      "local mode: test the install's own SMTP (smtpUrl, else the stored default) instead of a tenant's transport",
    )
    .addHelpText(
      'after',
      `
Exit 0 when the SMTP server accepted the mail; 1 when it did not, or when there is nothing to test.
` +
        examples(
          'herald transports email test --tenant <id> --to ops@acme.test',
          'herald transports email test --install --to ops@acme.test',
        ),
    )
    .action(async (options: TargetOptions & { to: string; install?: boolean }) => {
      const to = emailArg(options.to);
      if (options.install) {
        if (options.tenant || options.url)
          throw usageError('--install tests the install SMTP on this host: give neither --tenant nor --url');
        const result = await withLocalRuntime(configFrom({ dataDir: options.dataDir }), (runtime) =>
          testInstallSmtp(runtime, runtime.orm.em.fork(), to),
        );
        return printTestResult(result, options.json);
      }
      await withApi(options, async (api) => printTestResult(await api.testEmail({ to }), options.json));
    });

  withDataDir(email.command('set-default'))
    .description("set the install's default SMTP (tenants without their own transport, system emails)")
    .option('--smtp-url-file <path>', 'read smtp://user:pass@host:port from a file, or "-" for stdin')
    .option('--host <host>', 'SMTP host')
    .option('--port <port>', 'SMTP port')
    .option('--secure', 'implicit TLS (smtps)')
    .option('--username <user>', 'SMTP user name')
    .option('--password-file <path>', 'read the SMTP password from a file, or "-" for stdin')
    .option('--from <from>', 'From of system emails, e.g. "Herald <herald@acme.test>"')
    .option('--json', 'print as JSON')
    .addHelpText(
      'after',
      `
config.smtpUrl (herald init --smtp-url) takes precedence over this stored default.
` +
        examples(
          'herald transports email set-default --host smtp.acme.test --port 587 --username herald --password-file - --from "Herald <herald@acme.test>"',
          'herald transports email set-default --smtp-url-file /run/secrets/smtp-url',
        ),
    )
    .action(
      async (options: {
        dataDir?: string;
        smtpUrlFile?: string;
        host?: string;
        port?: string;
        secure?: boolean;
        username?: string;
        passwordFile?: string;
        from?: string;
        json?: boolean;
      }) => {
        let settings;
        if (options.smtpUrlFile) {
          try {
            settings = smtpSettingsFromUrl(readSecret(options.smtpUrlFile, 'SMTP URL'));
          } catch (error) {
            if (error instanceof CliError) throw error;
            throw usageError('the SMTP URL must look like smtp://user:pass@host:587 or smtps://...');
          }
        } else {
          if (!options.host) throw usageError('give --host (and --port ...) or --smtp-url-file');
          settings = {
            host: options.host,
            port: parsePort(options.port) ?? (options.secure ? 465 : 587),
            secure: Boolean(options.secure),
            username: options.username ?? null,
            password: options.passwordFile ? readSecret(options.passwordFile, 'password') : null,
          };
        }
        const config = configFrom({ dataDir: options.dataDir });
        await withLocalRuntime(config, (runtime) =>
          setDefaultSmtp(runtime, runtime.orm.em.fork(), { ...settings, from: options.from ?? null }),
        );
        if (options.json)
          printJson({
            host: settings.host,
            port: settings.port,
            secure: settings.secure,
            username: settings.username ?? null,
            from: options.from ?? null,
          });
        else
          print(
            `install default SMTP set to ${settings.host}:${settings.port}${config.smtpUrl ? ' (note: config smtpUrl is set and takes precedence)' : ''}`,
          );
      },
    );
}

interface PushSetOptions extends TargetOptions {
  file?: string;
  teamId?: string;
  keyId?: string;
  bundleId?: string;
  environment?: string;
  privateKeyFile?: string;
  serviceAccountFile?: string;
  accessTokenFile?: string;
  subject?: string;
  publicKey?: string;
}

function pushBody(provider: PushProvider, options: PushSetOptions): Record<string, unknown> {
  const body: Record<string, unknown> = options.file ? readJsonObject(options.file, 'settings file') : {};
  for (const secret of ['private_key', 'access_token', 'service_account']) {
    if (secret in body) throw usageError(`the settings file must not hold ${secret}: pass it with its --*-file option`);
  }
  const flags: Record<string, string | undefined> = {
    team_id: options.teamId,
    key_id: options.keyId,
    bundle_id: options.bundleId,
    environment: options.environment,
    subject: options.subject,
    public_key: options.publicKey,
  };
  for (const [k, v] of Object.entries(flags)) if (v !== undefined) body[k] = v;
  if (options.privateKeyFile) {
    if (provider !== 'apns' && provider !== 'webpush')
      throw usageError('--private-key-file is for apns (.p8) and webpush (VAPID private key)');
    body.private_key = readSecret(options.privateKeyFile, 'private key');
  }
  if (options.serviceAccountFile) {
    if (provider !== 'fcm') throw usageError('--service-account-file is for fcm');
    body.service_account = readJsonObject(options.serviceAccountFile, 'service account file');
  }
  if (options.accessTokenFile) {
    if (provider !== 'expo') throw usageError('--access-token-file is for expo');
    body.access_token = readSecret(options.accessTokenFile, 'access token');
  }
  return body;
}

function registerPush(transports: Command): void {
  const push = transports
    .command('push')
    .description("the tenant's push transports: apns, fcm, expo, webpush")
    .addHelpText(
      'after',
      examples(
        'herald transports push list --tenant <id>',
        'herald transports push set apns --tenant <id> --team-id ABCDE12345 --key-id KEY1234567 --bundle-id com.acme.app --environment production --private-key-file AuthKey.p8',
        'herald transports push set fcm --tenant <id> --service-account-file firebase-sa.json',
        'herald transports push set webpush --tenant <id> --subject mailto:ops@acme.test     # VAPID keys are generated',
        "herald transports push test expo --tenant <id> --token 'ExponentPushToken[...]'",
      ),
    );

  withTarget(push.command('list'))
    .description("list the tenant's push transports (secrets are never shown)")
    .addHelpText('after', examples('herald transports push list --tenant <id> --json'))
    .action(async (options: TargetOptions) => {
      await withApi(options, async (api) => {
        const list = await api.listPush();
        if (options.json) return printJson(list);
        if (list.length === 0) return print('no push transports: no push can be sent');
        printTable(
          list.map((t) => ({
            provider: t.provider,
            settings: JSON.stringify(t.settings),
            credentials: t.credentials_unreadable ? 'UNREADABLE' : 'ok',
            updated_at: t.updated_at,
          })),
          ['provider', 'settings', 'credentials', 'updated_at'],
        );
      });
    });

  withTarget(push.command('set <provider>'))
    .description("create or replace one provider's transport")
    .option('--file <path>', 'JSON file with the non-secret settings; flags override it')
    .option('--team-id <id>', 'apns: Apple team id')
    .option('--key-id <id>', 'apns: key id of the .p8 key')
    .option('--bundle-id <id>', 'apns: app bundle id (apns-topic)')
    .option('--environment <env>', 'apns: sandbox or production')
    .option('--private-key-file <path>', 'apns: the .p8 key; webpush: the VAPID private key ("-" for stdin)')
    .option('--service-account-file <path>', 'fcm: the service account JSON ("-" for stdin)')
    .option('--access-token-file <path>', 'expo: the access token ("-" for stdin)')
    .option('--subject <subject>', 'webpush: mailto: or https: contact of the sender')
    .option('--public-key <key>', 'webpush: the VAPID public key (with --private-key-file)')
    .addHelpText(
      'after',
      examples(
        'herald transports push set webpush --tenant <id> --subject mailto:ops@acme.test',
        'cat AuthKey.p8 | herald transports push set apns --url $HERALD_URL --api-key $KEY --file apns.json --private-key-file -',
      ),
    )
    .action(async (providerName: string, options: PushSetOptions) => {
      const provider = parseProvider(providerName);
      const body = pushBody(provider, options);
      await withApi(options, async (api) => {
        const transport = await api.putPush(provider, body);
        if (options.json) return printJson(transport);
        print(`${provider} push transport saved`);
        for (const [k, v] of Object.entries(transport.settings))
          print(`  ${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`);
      });
    });

  withTarget(push.command('remove <provider>'))
    .description("remove one provider's transport")
    .option('-y, --yes', 'do not ask for confirmation')
    .addHelpText('after', examples('herald transports push remove expo --tenant <id> --yes'))
    .action(async (providerName: string, options: TargetOptions & { yes?: boolean }) => {
      const provider = parseProvider(providerName);
      await confirmRemoval(options.yes, `Remove the ${provider} push transport?`);
      await withApi(options, async (api) => {
        await api.deletePush(provider);
        if (options.json) printJson({ removed: true, provider });
        else print(`${provider} push transport removed`);
      });
    });

  withTarget(push.command('test <provider>'))
    .description('send a test notification to a device token or a browser subscription')
    .option('--token <token>', 'apns, fcm, expo: the device or Expo push token')
    .option('--subscription-file <path>', 'webpush: the browser PushSubscription JSON ("-" for stdin)')
    .addHelpText(
      'after',
      examples(
        'herald transports push test fcm --tenant <id> --token <fcm-registration-token>',
        'herald transports push test webpush --tenant <id> --subscription-file sub.json',
      ),
    )
    .action(async (providerName: string, options: TargetOptions & { token?: string; subscriptionFile?: string }) => {
      const provider = parseProvider(providerName);
      const body: Record<string, unknown> = {};
      if (options.token) body.token = options.token;
      if (options.subscriptionFile) {
        const sub = readJsonObject(options.subscriptionFile, 'subscription file');
        body.subscription = { endpoint: sub.endpoint, keys: sub.keys };
      }
      await withApi(options, async (api) => printTestResult(await api.testPush(provider, body), options.json));
    });
}

export function registerTransports(program: Command): void {
  const transports = program
    .command('transports')
    .description("manage a tenant's transports: email, push, sms, chat and http")
    .addHelpText(
      'after',
      `
Local mode (on the host): --tenant <id> [--data-dir <dir>]. Remote mode: --url and --api-key, or HERALD_URL and HERALD_API_KEY.
` +
        examples(
          'herald transports email show --tenant <id>',
          'herald transports push list --url https://herald.acme.test --api-key sk_...',
        ),
    );
  registerEmail(transports);
  registerPush(transports);
  registerTextTransports(transports);
}
