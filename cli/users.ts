// herald users: local admin commands over console users (through the services, never HTTP): create,
// list, reset-password, verify, and mfa reset (a user who lost their second factor and its recovery
// codes). Generated passwords are printed once and never logged.
import { randomBytes } from 'node:crypto';
import { type Command, Option } from 'commander';
import { PASSWORD_MAX, PASSWORD_MIN } from '../server/base/auth/passwords.ts';
import {
  addFirstMembership,
  createUser,
  findUserByEmail,
  listUsers,
  markUserVerified,
  setUserPassword,
} from '../server/resources/users.ts';
import { findTenant } from '../server/resources/tenants.ts';
import { toUserResponse } from '../server/resources/auth.ts';
import { resetSecondFactor } from '../server/resources/mfa.ts';
import { confirmUnlessYes } from './support/confirm.ts';
import { CliError, print, printJson, printTable, usageError } from './support/output.ts';
import { configFrom, withDataDir, withLocalRuntime } from './support/context.ts';
import { auditedWrite } from './support/audit.ts';
import { cliActor, recordAudit } from '../server/resources/audit-log.ts';
import { emailArg } from './tenants.ts';
import { toIsoTimestamp } from '../server/base/timestamps.ts';
import { examples } from './support/examples.ts';
import { deprecatedSecretOption, secretOf } from './support/deprecated-secret-flag.ts';

interface CommonOptions {
  dataDir?: string;
  json?: boolean;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface PasswordOptions {
  passwordFile?: string;
  /** Deprecated: --password-file keeps the password out of the process list. */
  password?: string;
}

function passwordFlag(what: string): Option {
  return deprecatedSecretOption('--password <password>', what, '--password-file');
}

/** The given password (checked against the bounds) or a generated one. */
function passwordOf(options: PasswordOptions): { password: string; generated: boolean } {
  const given = secretOf(
    { file: options.passwordFile, flag: options.password },
    { file: '--password-file', flag: '--password' },
  );
  if (given === undefined) return { password: randomBytes(18).toString('base64url'), generated: true };
  if (given.length < PASSWORD_MIN || given.length > PASSWORD_MAX)
    throw usageError(`the password must be ${PASSWORD_MIN} to ${PASSWORD_MAX} characters`);
  return { password: given, generated: false };
}

export function registerUsers(program: Command): void {
  const users = program
    .command('users')
    .description('manage console users (local admin: talks to the database directly)')
    .addHelpText(
      'after',
      examples(
        'herald users create ops@acme.test --verified',
        'herald users create dev@acme.test --tenant 0190f5e2-... --role admin',
        'herald users create dev@acme.test --password-file /run/secrets/dev-password',
        'herald users list --json',
        'herald users reset-password ops@acme.test',
        'herald users verify dev@acme.test',
        'herald users mfa reset dev@acme.test --yes',
      ),
    );

  withDataDir(
    users
      .command('create <email>')
      .description('create a console user (password generated and printed once unless given)'),
  )
    .option(
      '--password-file <path>',
      `read the password (${PASSWORD_MIN} to ${PASSWORD_MAX} characters) from a file, or "-" for stdin; default: generated`,
    )
    .addOption(passwordFlag('the password'))
    .option('--verified', 'mark the email address as verified')
    .option('--tenant <tenant-id>', 'also add the user to this tenant')
    .addOption(new Option('--role <role>', 'role in --tenant').choices(['owner', 'admin']).default('admin'))
    .option('--json', 'print JSON')
    .addHelpText('after', examples('herald users create ops@acme.test --verified --json'))
    .action(
      async (
        rawEmail: string,
        options: CommonOptions & PasswordOptions & { verified?: boolean; tenant?: string; role: 'owner' | 'admin' },
      ) => {
        const email = emailArg(rawEmail);
        if (options.tenant !== undefined && !UUID.test(options.tenant))
          throw usageError(`not a tenant id: ${options.tenant}`);
        const { password, generated } = passwordOf(options);
        const user = await withLocalRuntime(configFrom(options), async (runtime) =>
          runtime.orm.em.fork().transactional(async (tx) => {
            if (await findUserByEmail(tx, email)) throw new CliError(`a user with email ${email} already exists`);
            const created = await createUser(tx, { email, password, verified: Boolean(options.verified) });
            if (options.tenant) {
              if (!(await findTenant(tx, options.tenant))) throw new CliError(`no tenant ${options.tenant}`);
              await addFirstMembership(tx, created.id, options.tenant, options.role);
            }
            await recordAudit(tx, {
              tenantId: options.tenant ?? null,
              actor: cliActor(),
              action: 'user.create',
              target: { kind: 'user', id: created.id },
              changes: {
                email,
                verified: Boolean(options.verified),
                tenant_id: options.tenant ?? null,
                role: options.tenant ? options.role : null,
              },
            });
            return created;
          }),
        );
        if (options.json)
          printJson({ ...toUserResponse(user), ...(generated ? { generated_password: password } : {}) });
        else {
          print(`Created user ${user.email} (${user.id})`);
          if (generated) print(`Password (shown once, store it now): ${password}`);
        }
      },
    );

  withDataDir(users.command('list').description('list console users with their verification state and tenant count'))
    .option('--json', 'print JSON')
    .addHelpText('after', examples('herald users list', 'herald users list --json'))
    .action(async (options: CommonOptions) => {
      const rows = await withLocalRuntime(configFrom(options), (runtime) => listUsers(runtime.orm.em.fork()));
      const out = rows.map((r) => ({
        id: r.id,
        email: r.email,
        email_verified: r.email_verified,
        tenants: r.tenants,
        created_at: toIsoTimestamp(r.created_at),
      }));
      if (options.json) printJson(out);
      else printTable(out, ['id', 'email', 'email_verified', 'tenants', 'created_at']);
    });

  withDataDir(
    users
      .command('reset-password <email>')
      .description("set a user's password (generated and printed once unless given)"),
  )
    .option(
      '--password-file <path>',
      `read the new password (${PASSWORD_MIN} to ${PASSWORD_MAX} characters) from a file, or "-" for stdin; default: generated`,
    )
    .addOption(passwordFlag('the new password'))
    .option('--json', 'print JSON')
    .addHelpText(
      'after',
      examples(
        'herald users reset-password ops@acme.test',
        'printf \'%s\' "$NEW_PASSWORD" | herald users reset-password ops@acme.test --password-file -',
      ),
    )
    .action(async (rawEmail: string, options: CommonOptions & PasswordOptions) => {
      const email = emailArg(rawEmail);
      const { password, generated } = passwordOf(options);
      const user = await withLocalRuntime(configFrom(options), (runtime) =>
        auditedWrite(
          runtime,
          { tenantId: null, action: 'user.password.update', target: { kind: 'user' }, changes: { email } },
          (tx) => setUserPassword(tx, email, password),
          (u) => u.id,
        ),
      );
      if (options.json) printJson({ ...toUserResponse(user), ...(generated ? { generated_password: password } : {}) });
      else {
        print(`Password of ${user.email} changed (access tokens already issued stay valid until they expire).`);
        if (generated) print(`New password (shown once, store it now): ${password}`);
      }
    });

  withDataDir(users.command('verify <email>').description("mark a user's email address as verified"))
    .option('--json', 'print JSON')
    .addHelpText('after', examples('herald users verify dev@acme.test'))
    .action(async (rawEmail: string, options: CommonOptions) => {
      const email = emailArg(rawEmail);
      const user = await withLocalRuntime(configFrom(options), (runtime) =>
        auditedWrite(
          runtime,
          { tenantId: null, action: 'user.verify', target: { kind: 'user' }, changes: { email } },
          (tx) => markUserVerified(tx, email),
          (u) => u.id,
        ),
      );
      if (options.json) printJson(toUserResponse(user));
      else print(`Verified ${user.email}`);
    });
  const mfa = users
    .command('mfa')
    .description("a console user's second factor (local admin)")
    .addHelpText('after', examples('herald users mfa reset dev@acme.test --yes'));
  withDataDir(
    mfa
      .command('reset <email>')
      .description(
        "remove a user's second factor and recovery codes: they sign in with their password alone, then enrol again",
      ),
  )
    .option('--yes', 'do not ask for confirmation')
    .option('--json', 'print JSON')
    .addHelpText('after', examples('herald users mfa reset dev@acme.test --yes'))
    .action(async (rawEmail: string, options: CommonOptions & { yes?: boolean }) => {
      const email = emailArg(rawEmail);
      await confirmUnlessYes(options.yes, {
        question: `Remove the second factor of ${email}? Their password alone then signs them in.`,
        withoutTerminal: 'removing a second factor weakens the account: pass --yes to confirm',
        declined: 'not reset',
        initialValue: false,
      });
      const { user, removed } = await withLocalRuntime(configFrom(options), (runtime) =>
        auditedWrite(
          runtime,
          { tenantId: null, action: 'user.mfa.reset', target: { kind: 'user' }, changes: { email } },
          (tx) => resetSecondFactor(tx, email),
          (r) => r.user.id,
        ),
      );
      if (options.json) printJson({ ...toUserResponse(user), second_factor_removed: removed });
      else if (removed)
        print(`Removed the second factor of ${user.email}: they sign in with their password, then enrol again.`);
      else print(`${user.email} had no second factor set up; nothing to remove.`);
    });
}
