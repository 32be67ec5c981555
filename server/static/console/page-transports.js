// Transports: the tenant's SMTP server and push providers. Secrets are write-only: the API never
// returns them, and an empty secret field keeps the stored one.
import { api } from './api.js';
import { h, mount, field, formatTime, notice, table } from './dom.js';
import { header, panel, actionForm, actionButton, parseJsonObject } from './kit.js';

/** What a tenant without its own SMTP settings sends through: the install's default, named, or nothing. */
function installDefaultNote(installDefault) {
  if (!installDefault) return notice('error', "Not set, and the install has no SMTP server of its own: emails are skipped (no transport) until you set one.");
  if (installDefault.credentials_unreadable) return notice('error', "Not set: emails would go through the install's SMTP server, but its stored password cannot be read any more; emails are skipped until the operator sets it again.");
  const where = installDefault.host ? `${installDefault.host}${installDefault.port ? `:${installDefault.port}` : ''}` : "the install's SMTP server";
  return h('p', { class: 'hint' }, `Not set: emails go through the install's SMTP server (${where}${installDefault.from ? `, from ${installDefault.from}` : ''}).`);
}

function emailPanel(current, ctx) {
  const c = current.configured ? current : {};
  const host = h('input', { name: 'host', value: c.host ?? '', required: true, placeholder: 'smtp.example.com' });
  const port = h('input', { name: 'port', type: 'number', value: c.port ?? 587, min: 1, max: 65535 });
  const secure = h('input', { type: 'checkbox', name: 'secure', checked: Boolean(c.secure) });
  const username = h('input', { name: 'username', value: c.username ?? '', autocomplete: 'off' });
  const password = h('input', { name: 'password', type: 'password', autocomplete: 'new-password', placeholder: current.configured ? 'stored: leave empty to keep it' : '' });
  const fromEmail = h('input', { type: 'email', name: 'from_email', value: c.from_email ?? '' });
  const fromName = h('input', { name: 'from_name', value: c.from_name ?? '' });
  const to = h('input', { type: 'email', name: 'to', placeholder: 'you@example.com' });
  return panel(
    'Email (SMTP)',
    current.credentials_unreadable ? notice('error', 'The stored password cannot be read any more (its encryption key was retired): enter it again.') : null,
    current.configured ? null : installDefaultNote(current.install_default),
    actionForm(
      [
        h('div', { class: 'grid' }, field('Host', host), field('Port', port), h('label', { class: 'check' }, secure, ' TLS from the start (port 465)')),
        h('div', { class: 'grid' }, field('Username', username), field('Password', password, 'Write-only: never shown again.')),
        h('div', { class: 'grid' }, field('From email', fromEmail), field('From name', fromName)),
      ],
      'Save SMTP settings',
      async () => {
        const body = { host: host.value.trim(), port: Number(port.value), secure: secure.checked, username: username.value.trim() || null, from_email: fromEmail.value.trim() || null, from_name: fromName.value.trim() || null };
        if (password.value) body.password = password.value;
        await api('PUT', '/v1/email-transport', body);
        password.value = '';
        return 'Saved.';
      },
    ),
    current.configured
      ? h('div', { class: 'row' },
        actionForm([field('Send a test email to', to)], 'Send test', async () => {
          const result = await api('POST', '/v1/email-transport/test', { to: to.value.trim() });
          if (!result.ok) throw new Error(`The test failed: ${result.error}`);
          return `Sent (${result.message_id ?? 'accepted'}).`;
        }, { inline: true }),
        actionButton('Remove SMTP settings', async () => { await api('DELETE', '/v1/email-transport'); await render(ctx); }, { question: 'Remove the SMTP settings?', kind: 'danger' }))
      : null,
  );
}

const PUSH_FORMS = {
  apns: () => [['team_id', 'Team id'], ['key_id', 'Key id'], ['bundle_id', 'Bundle id'], ['private_key', 'Private key (.p8, PEM)', 'textarea'], ['environment', 'Environment', ['production', 'sandbox']]],
  fcm: () => [['service_account', 'Service account (JSON)', 'textarea']],
  expo: () => [['access_token', 'Access token (optional)', 'password']],
  webpush: () => [['subject', 'Subject (mailto: or https: URL)']],
};
const PROVIDER_NAMES = { apns: 'Apple (APNs)', fcm: 'Firebase (FCM)', expo: 'Expo', webpush: 'Web push (VAPID)' };

function pushForm(provider, ctx) {
  const controls = PUSH_FORMS[provider]().map(([name, label, kind]) => {
    const control = Array.isArray(kind) ? h('select', { name }, kind.map((v) => h('option', { value: v }, v)))
      : kind === 'textarea' ? h('textarea', { name, rows: 4, class: 'code', autocomplete: 'off' })
        : h('input', { name, type: kind === 'password' ? 'password' : 'text', autocomplete: 'off' });
    return [name, field(label, control), control];
  });
  return actionForm(controls.map(([, f]) => f), `Save ${PROVIDER_NAMES[provider]}`, async () => {
    const body = {};
    for (const [name, , control] of controls) {
      if (!control.value) continue;
      body[name] = name === 'service_account' ? parseJsonObject(control.value, 'The service account') : control.value;
    }
    await api('PUT', `/v1/push-transport/${provider}`, body);
    await render(ctx);
  });
}

async function render(ctx) {
  const { root } = ctx;
  const [email, push] = await Promise.all([api('GET', '/v1/email-transport'), api('GET', '/v1/push-transport')]);
  mount(
    root,
    header('Transports', 'How Herald reaches people: your SMTP server and push providers. Secrets are write-only.'),
    emailPanel(email, ctx),
    panel(
      'Push providers',
      table(
        [
          ['Provider', (p) => PROVIDER_NAMES[p.provider] ?? p.provider],
          ['Settings', (p) => h('code', {}, Object.entries(p.settings).map(([k, v]) => `${k}: ${typeof v === 'object' ? JSON.stringify(v) : v}`).join(', '))],
          ['Status', (p) => (p.credentials_unreadable ? h('span', { class: 'error-text' }, 'credentials unreadable: set them again') : 'ready')],
          ['Updated', (p) => formatTime(p.updated_at)],
          ['', (p) => actionButton('Remove', async () => { await api('DELETE', `/v1/push-transport/${p.provider}`); await render(ctx); }, { question: `Remove ${PROVIDER_NAMES[p.provider]}?`, kind: 'danger', ariaLabel: `Remove ${p.provider}` })],
        ],
        push,
        'No push provider yet: push and web push deliveries are skipped.',
      ),
      Object.keys(PUSH_FORMS).map((provider) => h('details', {}, h('summary', {}, `Set up ${PROVIDER_NAMES[provider]}`), pushForm(provider, ctx))),
    ),
  );
}

export default { id: 'transports', label: 'Transports', group: 'Settings', render };
