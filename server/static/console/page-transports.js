// Transports: the tenant's SMTP server (and the fallback asked when it fails for now), push
// providers, SMS providers, chat bots and the HTTP endpoint. Secrets are write-only: the API never
// returns them, and an empty secret field keeps the stored one. Parts whose routes this install does
// not serve are left out.
import { api } from './api.js';
import { h, mount, field, formatTime, notice, table } from './dom.js';
import { header, panel, actionForm, actionButton, parseJsonObject, getOrNull, served } from './kit.js';
import { smsPanel } from './transports-sms.js';
import { chatPanel } from './transports-chat.js';
import { httpPanel } from './transports-http.js';

/** What a tenant without its own SMTP settings sends through: the install's default, named, or nothing. */
function installDefaultNote(installDefault) {
  if (!installDefault) return notice('error', "Not set, and the install has no SMTP server of its own: emails are skipped (no transport) until you set one.");
  if (installDefault.credentials_unreadable) return notice('error', "Not set: emails would go through the install's SMTP server, but its stored password cannot be read any more; emails are skipped until the operator sets it again.");
  const where = installDefault.host ? `${installDefault.host}${installDefault.port ? `:${installDefault.port}` : ''}` : "the install's SMTP server";
  return h('p', { class: 'hint' }, `Not set: emails go through the install's SMTP server (${where}${installDefault.from ? `, from ${installDefault.from}` : ''}).`);
}

const EMAIL = {
  primary: { path: '/v1/email-transport', title: 'Email (SMTP)', save: 'Save SMTP settings', remove: 'Remove SMTP settings', test: true },
  fallback: { path: '/v1/email-transport/fallback', title: 'Fallback email (SMTP)', save: 'Save fallback', remove: 'Remove fallback', test: false },
};

function emailPanel(current, ctx, which = 'primary') {
  const kind = EMAIL[which];
  const c = current.configured ? current : {};
  const host = h('input', { name: 'host', value: c.host ?? '', required: true, placeholder: 'smtp.example.com' });
  const port = h('input', { name: 'port', type: 'number', value: c.port ?? 587, min: 1, max: 65535 });
  const secure = h('input', { type: 'checkbox', name: 'secure', checked: Boolean(c.secure) });
  const username = h('input', { name: 'username', value: c.username ?? '', autocomplete: 'off' });
  const password = h('input', { name: 'password', type: 'password', autocomplete: 'new-password', placeholder: current.configured ? 'stored: leave empty to keep it' : '' });
  const fromEmail = h('input', { type: 'email', name: 'from_email', value: c.from_email ?? '' });
  const fromName = h('input', { name: 'from_name', value: c.from_name ?? '' });
  const to = h('input', { type: 'email', name: 'to', placeholder: 'you@example.com' });
  const unset = which === 'primary'
    ? installDefaultNote(current.install_default)
    : h('p', { class: 'hint' }, 'Not set: an email the SMTP server above cannot take for now waits for its next attempt. Set one to hand it to a second server in the same attempt.');
  return panel(
    kind.title,
    current.credentials_unreadable ? notice('error', 'The stored password cannot be read any more (its encryption key was retired): enter it again.') : null,
    current.configured ? null : unset,
    actionForm(
      [
        h('div', { class: 'grid' }, field('Host', host), field('Port', port), h('label', { class: 'check' }, secure, ' TLS from the start (port 465)')),
        h('div', { class: 'grid' }, field('Username', username), field('Password', password, 'Write-only: never shown again.')),
        h('div', { class: 'grid' }, field('From email', fromEmail), field('From name', fromName)),
      ],
      kind.save,
      async () => {
        const body = { host: host.value.trim(), port: Number(port.value), secure: secure.checked, username: username.value.trim() || null, from_email: fromEmail.value.trim() || null, from_name: fromName.value.trim() || null };
        if (password.value) body.password = password.value;
        await api('PUT', kind.path, body);
        password.value = '';
        if (which === 'fallback' && !current.configured) return render(ctx);
        return 'Saved.';
      },
    ),
    current.configured
      ? h('div', { class: 'row' },
        kind.test
          ? actionForm([field('Send a test email to', to)], 'Send test', async () => {
            const result = await api('POST', '/v1/email-transport/test', { to: to.value.trim() });
            if (!result.ok) throw new Error(`The test failed: ${result.error}`);
            return `Sent (${result.message_id ?? 'accepted'}).`;
          }, { inline: true })
          : null,
        actionButton(kind.remove, async () => { await api('DELETE', kind.path); await render(ctx); }, { question: `${kind.remove}?`, kind: 'danger' }))
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

const PARTS = [
  ['email', 'Email'],
  ['push', 'Push'],
  ['sms', 'SMS'],
  ['chat', 'Chat'],
  ['http', 'HTTP'],
];

function pushPanel(push, ctx) {
  return panel(
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
  );
}

/** Scrolls to a part without a navigation (which would draw the page again). */
function jumpTo(event, id) {
  event.preventDefault();
  const target = document.getElementById(`transports-${id}`);
  target?.scrollIntoView({ block: 'start' });
  target?.querySelector('h2')?.focus?.();
}

/** A group of the page under its own heading, reachable from the page's table of contents. */
function part(id, title, ...panels) {
  return h('section', { class: 'transport-part', id: `transports-${id}`, 'aria-labelledby': `transports-${id}-title` }, h('h2', { class: 'part-title', id: `transports-${id}-title`, tabindex: '-1' }, title), ...panels);
}

async function render(ctx) {
  const { root, paths } = ctx;
  const has = (path) => served(paths, path);
  ctx.httpSecretSlot ??= h('div', { class: 'secret-slot' });
  const [email, fallback, push, sms, chat, http] = await Promise.all([
    api('GET', '/v1/email-transport'),
    has('/v1/email-transport/fallback') ? api('GET', '/v1/email-transport/fallback') : null,
    api('GET', '/v1/push-transport'),
    has('/v1/sms-transport') ? api('GET', '/v1/sms-transport') : null,
    has('/v1/chat-transport') ? api('GET', '/v1/chat-transport') : null,
    has('/v1/http-transport') ? getOrNull('/v1/http-transport') : undefined,
  ]);
  const rerender = () => render(ctx);
  const parts = [
    ['email', part('email', 'Email', emailPanel(email, ctx), fallback ? emailPanel(fallback, ctx, 'fallback') : null)],
    ['push', part('push', 'Push', pushPanel(push, ctx))],
    ['sms', sms ? part('sms', 'SMS', smsPanel(sms, rerender)) : null],
    ['chat', chat ? part('chat', 'Chat', chatPanel(chat, rerender)) : null],
    ['http', http !== undefined ? part('http', 'HTTP', httpPanel(http, { rerender, secretSlot: ctx.httpSecretSlot, canRotate: has('/v1/http-transport/rotate-secret') })) : null],
  ].filter(([, el]) => el);
  const shown = new Set(parts.map(([id]) => id));
  mount(
    root,
    header('Transports', 'How Herald reaches people: SMTP, push, SMS and chat providers, and your own HTTP endpoint. Secrets are write-only.'),
    h('nav', { class: 'toc', 'aria-label': 'On this page' }, PARTS.filter(([id]) => shown.has(id)).map(([id, label]) => h('a', { href: `#transports-${id}`, onclick: (event) => jumpTo(event, id) }, label))),
    parts.map(([, el]) => el),
  );
}

export default { id: 'transports', label: 'Transports', group: 'Settings', render };
