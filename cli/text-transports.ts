// herald transports sms|chat|http: the transports of the text channels, locally (--tenant, the API's
// routes in process) or remotely (--url/--api-key), the same requests. SMS and chat transports are a
// list in priority order (failover: the next one takes a message the first could not send). Secret
// fields come from files or stdin (--*-file, or a --file that may hold them), never from flags, and the
// answers, which never hold them, are printed as they come.
import type { Command } from 'commander';
import { print, printJson, printTable, usageError } from './support/output.ts';
import { confirmUnlessYes } from './support/confirm.ts';
import { readJsonObject, readSecret } from './support/file-input.ts';
import { transports as paths } from './support/paths.ts';
import { onTarget, withTarget, type TargetOptions } from './support/target.ts';
import { examples } from './support/examples.ts';

const SMS_PROVIDERS = ['twilio', 'vonage', 'http'] as const;
const CHAT_PROVIDERS = ['slack', 'telegram'] as const;

type Entry = Record<string, unknown>;

function providerOf<P extends string>(value: string, providers: readonly P[]): P {
  if (!(providers as readonly string[]).includes(value))
    throw usageError(`unknown provider ${value}: use ${providers.join(', ')}`);
  return value as P;
}

function parsePriority(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const priority = Number(value);
  if (!Number.isInteger(priority) || priority < 0 || priority > 1000)
    throw usageError('--priority must be an integer from 0 to 1000 (lower is asked first)');
  return priority;
}

function removal(yes: boolean | undefined, question: string): Promise<void> {
  return confirmUnlessYes(yes, { question, withoutTerminal: 'this removes configuration: confirm with --yes' });
}

/** A test send's answer: "sent" with the provider's id, or why not (exit 1). */
function printTest(result: Entry, json?: boolean): void {
  if (json) printJson(result);
  else if (result.ok) print(`sent${result.message_id ? ` (message id ${String(result.message_id)})` : ''}`);
  else print(`not sent: ${String(result.error)}`);
  if (!result.ok) process.exitCode = 1;
}

function printEntries(list: Entry[], empty: string): void {
  if (list.length === 0) return print(empty);
  printTable(
    list.map((t) => ({
      provider: t.provider,
      priority: t.priority,
      enabled: t.enabled,
      settings: JSON.stringify(t.settings ?? {}),
      credentials: t.credentials_unreadable ? 'UNREADABLE' : 'ok',
    })),
    ['provider', 'priority', 'enabled', 'settings', 'credentials'],
  );
}

interface ListedSetOptions extends TargetOptions {
  file?: string;
  priority?: string;
  enabled?: boolean;
}

/** The settings file, then the flags over it. */
function baseBody(options: ListedSetOptions): Entry {
  const body: Entry = options.file ? readJsonObject(options.file, 'settings file') : {};
  const priority = parsePriority(options.priority);
  if (priority !== undefined) body.priority = priority;
  if (options.enabled !== undefined) body.enabled = options.enabled;
  return body;
}

function withListedSetOptions(command: Command): Command {
  return command
    .option('--file <path>', 'JSON settings file (it may hold the secret fields: a file is not in the process list)')
    .option('--priority <n>', 'the order providers are asked in, lower first (failover)')
    .option('--enabled', 'ask this provider (default)')
    .option('--no-enabled', 'keep it configured, but do not ask it');
}

interface SmsSetOptions extends ListedSetOptions {
  accountSid?: string;
  authTokenFile?: string;
  from?: string;
  messagingServiceSid?: string;
  vonageApiKey?: string;
  apiSecretFile?: string;
  signatureSecretFile?: string;
  gatewayUrl?: string;
  method?: string;
  headersFile?: string;
  bodyFile?: string;
}

type SmsProvider = (typeof SMS_PROVIDERS)[number];

/** Each flag of `herald transports sms set`: the providers it is for, and the body field it fills. */
const SMS_FLAGS: Array<{
  option: keyof SmsSetOptions;
  flag: string;
  providers: SmsProvider[];
  field: string;
  read?: (source: string) => unknown;
}> = [
  { option: 'accountSid', flag: '--account-sid', providers: ['twilio'], field: 'account_sid' },
  {
    option: 'messagingServiceSid',
    flag: '--messaging-service-sid',
    providers: ['twilio'],
    field: 'messaging_service_sid',
  },
  {
    option: 'authTokenFile',
    flag: '--auth-token-file',
    providers: ['twilio'],
    field: 'auth_token',
    read: (f) => readSecret(f, 'auth token'),
  },
  { option: 'from', flag: '--from', providers: ['twilio', 'vonage'], field: 'from' },
  { option: 'vonageApiKey', flag: '--vonage-api-key', providers: ['vonage'], field: 'api_key' },
  {
    option: 'apiSecretFile',
    flag: '--api-secret-file',
    providers: ['vonage'],
    field: 'api_secret',
    read: (f) => readSecret(f, 'API secret'),
  },
  {
    option: 'signatureSecretFile',
    flag: '--signature-secret-file',
    providers: ['vonage'],
    field: 'signature_secret',
    read: (f) => readSecret(f, 'signature secret'),
  },
  { option: 'gatewayUrl', flag: '--gateway-url', providers: ['http'], field: 'url' },
  { option: 'method', flag: '--method', providers: ['http'], field: 'method' },
  {
    option: 'headersFile',
    flag: '--headers-file',
    providers: ['http'],
    field: 'headers',
    read: (f) => readJsonObject(f, 'headers file'),
  },
  {
    option: 'bodyFile',
    flag: '--body-file',
    providers: ['http'],
    field: 'body',
    read: (f) => readJsonObject(f, 'body file'),
  },
];

function smsBody(provider: SmsProvider, options: SmsSetOptions): Entry {
  const body = baseBody(options);
  for (const { option, flag, providers, field, read } of SMS_FLAGS) {
    const value = options[option];
    if (value === undefined || typeof value === 'boolean') continue;
    if (!providers.includes(provider)) throw usageError(`${flag} is for ${providers.join(', ')}`);
    body[field] = read ? read(value) : value;
  }
  return body;
}

function registerSms(transports: Command): void {
  const sms = transports
    .command('sms')
    .description("the tenant's SMS providers in priority order: twilio, vonage, http (a generic gateway)")
    .addHelpText(
      'after',
      examples(
        'printf \'%s\' "$TWILIO_AUTH_TOKEN" | herald transports sms set twilio --account-sid AC... --from +15005550006 --auth-token-file -',
        'printf \'%s\' "$VONAGE_SECRET" | herald transports sms set vonage --vonage-api-key abc123 --from Acme --api-secret-file - --priority 2',
        'herald transports sms list',
        'herald transports sms test twilio --to +4915112345678',
      ),
    );

  withTarget(sms.command('list'))
    .description("list the tenant's SMS providers, first asked first (secrets are never shown)")
    .addHelpText('after', examples('herald transports sms list --json'))
    .action(async (options: TargetOptions) => {
      await onTarget(options, async (client) => {
        const list = await client.call<Entry[]>('GET', paths.sms());
        if (options.json) return printJson(list);
        printEntries(list, 'no SMS provider: SMS is skipped (no_transport)');
      });
    });

  withListedSetOptions(withTarget(sms.command('set <provider>')))
    .description("create or replace one provider's settings")
    .option('--account-sid <sid>', 'twilio: the account SID (AC...)')
    .option('--auth-token-file <path>', 'twilio: the auth token, from a file or "-" for stdin')
    .option('--messaging-service-sid <sid>', 'twilio: send through a Messaging Service (MG...) instead of --from')
    .option('--from <sender>', 'twilio, vonage: the sender number (E.164) or alphanumeric sender id')
    .option('--vonage-api-key <key>', 'vonage: the API key')
    .option('--api-secret-file <path>', 'vonage: the API secret, from a file or "-" for stdin')
    .option(
      '--signature-secret-file <path>',
      'vonage: the signature secret, from a file or "-" for stdin; receipts and replies must then be signed',
    )
    .option('--gateway-url <url>', 'http: the gateway URL')
    .option('--method <method>', 'http: POST (default) or PUT')
    .option('--headers-file <path>', 'http: JSON object of headers sent with each request (secret: never shown)')
    .option('--body-file <path>', 'http: the JSON body template over {{ to }} and {{ text }}')
    .addHelpText(
      'after',
      examples(
        'herald transports sms set twilio --file twilio.json --priority 1',
        'herald transports sms set vonage --vonage-api-key abc123 --from Acme --api-secret-file /run/secrets/vonage-api --signature-secret-file /run/secrets/vonage-signature',
        'herald transports sms set http --gateway-url https://sms.example.net/send --headers-file headers.json --body-file body.json',
      ),
    )
    .action(async (providerName: string, options: SmsSetOptions) => {
      const provider = providerOf(providerName, SMS_PROVIDERS);
      const body = smsBody(provider, options);
      await onTarget(options, async (client) => {
        const entry = await client.call<Entry>('PUT', paths.smsOne(provider), { body });
        if (options.json) return printJson(entry);
        print(
          `${provider} SMS transport saved (priority ${String(entry.priority)}${entry.enabled ? '' : ', disabled'})`,
        );
        if (entry.callback_url) print(`  delivery receipts and STOP replies: ${String(entry.callback_url)}`);
      });
    });

  withTarget(sms.command('remove <provider>'))
    .description("remove one provider's settings")
    .addHelpText('after', examples('herald transports sms remove vonage --yes'))
    .option('-y, --yes', 'do not ask for confirmation')
    .action(async (providerName: string, options: TargetOptions & { yes?: boolean }) => {
      const provider = providerOf(providerName, SMS_PROVIDERS);
      await removal(options.yes, `Remove the ${provider} SMS transport?`);
      await onTarget(options, async (client) => {
        await client.call('DELETE', paths.smsOne(provider));
        if (options.json) printJson({ removed: true, provider });
        else print(`${provider} SMS transport removed`);
      });
    });

  withTarget(sms.command('test <provider>'))
    .description('send a test SMS through one provider and show its answer')
    .addHelpText('after', examples('herald transports sms test twilio --to +4915112345678'))
    .requiredOption('--to <phone>', 'the number to send to, E.164 (+4915112345678)')
    .action(async (providerName: string, options: TargetOptions & { to: string }) => {
      const provider = providerOf(providerName, SMS_PROVIDERS);
      await onTarget(options, async (client) =>
        printTest(
          await client.call<Entry>('POST', paths.smsTest(provider), { body: { to: options.to } }),
          options.json,
        ),
      );
    });
}

function registerChat(transports: Command): void {
  const chat = transports
    .command('chat')
    .description("the tenant's chat bots: slack (chat.postMessage) and telegram; webhook URLs are per contact")
    .addHelpText(
      'after',
      `
Webhook destinations (Slack, Teams, Discord, Mattermost, Google Chat) need no transport: add them to a
contact with herald contacts destinations add.
` +
        examples(
          'printf \'%s\' "$SLACK_BOT_TOKEN" | herald transports chat set slack --bot-token-file -',
          'herald transports chat test slack --channel C0123456789',
          'herald transports chat test telegram --chat-id -1001234567890',
        ),
    );

  withTarget(chat.command('list'))
    .description("list the tenant's chat bots (tokens are never shown)")
    .addHelpText('after', examples('herald transports chat list'))
    .action(async (options: TargetOptions) => {
      await onTarget(options, async (client) => {
        const list = await client.call<Entry[]>('GET', paths.chat());
        if (options.json) return printJson(list);
        printEntries(list, 'no chat bot: Slack channel ids and Telegram chats are skipped (no_transport)');
      });
    });

  withListedSetOptions(withTarget(chat.command('set <provider>')))
    .description("create or replace one bot's token")
    .addHelpText(
      'after',
      examples(
        'printf \'%s\' "$SLACK_BOT_TOKEN" | herald transports chat set slack --bot-token-file -',
        'herald transports chat set telegram --bot-token-file /run/secrets/telegram-bot',
      ),
    )
    .option('--bot-token-file <path>', 'the bot token (xoxb-... or 123456:ABC...), from a file or "-" for stdin')
    .action(async (providerName: string, options: ListedSetOptions & { botTokenFile?: string }) => {
      const provider = providerOf(providerName, CHAT_PROVIDERS);
      const body = baseBody(options);
      if (options.botTokenFile) body.bot_token = readSecret(options.botTokenFile, 'bot token');
      await onTarget(options, async (client) => {
        const entry = await client.call<Entry>('PUT', paths.chatOne(provider), { body });
        if (options.json) return printJson(entry);
        print(`${provider} chat transport saved`);
      });
    });

  withTarget(chat.command('remove <provider>'))
    .description("remove one bot's token")
    .addHelpText('after', examples('herald transports chat remove telegram --yes'))
    .option('-y, --yes', 'do not ask for confirmation')
    .action(async (providerName: string, options: TargetOptions & { yes?: boolean }) => {
      const provider = providerOf(providerName, CHAT_PROVIDERS);
      await removal(options.yes, `Remove the ${provider} chat transport?`);
      await onTarget(options, async (client) => {
        await client.call('DELETE', paths.chatOne(provider));
        if (options.json) printJson({ removed: true, provider });
        else print(`${provider} chat transport removed`);
      });
    });

  withTarget(chat.command('test <provider>'))
    .description('post a test message with one bot and show the answer')
    .addHelpText('after', examples('herald transports chat test slack --channel C0123456789'))
    .option('--channel <id>', 'slack: the channel or user id')
    .option('--chat-id <id>', 'telegram: the chat id')
    .action(async (providerName: string, options: TargetOptions & { channel?: string; chatId?: string }) => {
      const provider = providerOf(providerName, CHAT_PROVIDERS);
      const body: Entry = {};
      if (options.channel) body.channel = options.channel;
      if (options.chatId) body.chat_id = options.chatId;
      await onTarget(options, async (client) =>
        printTest(await client.call<Entry>('POST', paths.chatTest(provider), { body }), options.json),
      );
    });
}

function registerHttp(transports: Command): void {
  const http = transports
    .command('http')
    .description("the tenant's own endpoint: one signed POST per recipient (Standard Webhooks)")
    .addHelpText(
      'after',
      examples(
        'herald transports http set --endpoint https://hooks.acme.test/herald',
        'herald transports http show',
        'herald transports http test',
      ),
    );

  withTarget(http.command('show'))
    .description('show the endpoint (header values and the signing secret are never shown)')
    .addHelpText('after', examples('herald transports http show --json'))
    .action(async (options: TargetOptions) => {
      await onTarget(options, async (client) => {
        const entry = await client.call<Entry>('GET', paths.http());
        if (options.json) return printJson(entry);
        for (const [k, v] of Object.entries(entry))
          print(`${k.padEnd(26)} ${typeof v === 'string' ? v : JSON.stringify(v)}`);
      });
    });

  withTarget(http.command('set'))
    .description('create or replace the endpoint; the signing secret is printed once, on creation')
    .addHelpText(
      'after',
      examples('herald transports http set --endpoint https://hooks.acme.test/herald --headers-file headers.json'),
    )
    .option('--file <path>', 'JSON settings file {url, headers, include_secret_variables}')
    .option('--endpoint <url>', 'the endpoint URL (https)')
    .option('--headers-file <path>', 'JSON object of headers sent with each request (secret: never shown)')
    .option('--include-secret-variables', 'send secret variables in clear (masked otherwise)')
    .action(
      async (
        options: TargetOptions & {
          file?: string;
          endpoint?: string;
          headersFile?: string;
          includeSecretVariables?: boolean;
        },
      ) => {
        const body: Entry = options.file ? readJsonObject(options.file, 'settings file') : {};
        if (options.endpoint !== undefined) body.url = options.endpoint;
        if (options.headersFile) body.headers = readJsonObject(options.headersFile, 'headers file');
        if (options.includeSecretVariables) body.include_secret_variables = true;
        await onTarget(options, async (client) => {
          const entry = await client.call<Entry>('PUT', paths.http(), { body });
          if (options.json) return printJson(entry);
          print(`http transport saved: ${String(entry.url)}`);
          if (entry.secret) print(`signing secret (shown once): ${String(entry.secret)}`);
        });
      },
    );

  withTarget(http.command('remove'))
    .description('remove the endpoint')
    .addHelpText('after', examples('herald transports http remove --yes'))
    .option('-y, --yes', 'do not ask for confirmation')
    .action(async (options: TargetOptions & { yes?: boolean }) => {
      await removal(options.yes, 'Remove the http transport?');
      await onTarget(options, async (client) => {
        await client.call('DELETE', paths.http());
        if (options.json) printJson({ removed: true });
        else print('http transport removed');
      });
    });

  withTarget(http.command('test'))
    .description('post a signed sample body to the endpoint and show its answer')
    .addHelpText('after', examples('herald transports http test'))
    .action(async (options: TargetOptions) => {
      await onTarget(options, async (client) =>
        printTest(await client.call<Entry>('POST', paths.httpTest(), { body: {} }), options.json),
      );
    });
}

export function registerTextTransports(transports: Command): void {
  registerSms(transports);
  registerChat(transports);
  registerHttp(transports);
}
