// Members and invitations of the current tenant: change a role, remove a member, invite by email,
// withdraw a pending invitation, and (owners) require two-factor sign-in of every member. The server
// judges who may do what (owners alone touch owners).
import { api, session } from './api.js';
import { h, mount, field, formatTime, notice, table, pill } from './dom.js';
import { header, panel, actionForm, actionButton } from './kit.js';

/** The owner's switch: every member must sign in with a second factor (the server asks the owner's first). */
function requireTwoFactor(tenant) {
  const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const input = h('input', { type: 'checkbox', id: 'require-mfa', checked: tenant.require_mfa, 'aria-describedby': 'require-mfa-hint' });
  input.addEventListener('change', async () => {
    mount(status);
    input.disabled = true;
    try {
      const updated = await api('PATCH', `/v1/auth/tenants/${tenant.id}`, { require_mfa: input.checked });
      tenant.require_mfa = updated.require_mfa;
      mount(status, notice('success', updated.require_mfa ? 'Every member now signs in with a second factor.' : 'Two-factor sign-in is up to each member again.'));
    } catch (error) {
      input.checked = !input.checked;
      mount(
        status,
        error.code === 'mfa_not_enabled'
          ? h('p', { class: 'notice notice-error', role: 'alert' }, 'Set up your own two-factor sign-in first: ', h('a', { href: '/console/two-factor', 'data-nav': true }, 'set it up'), '.')
          : notice('error', error.message),
      );
    } finally {
      input.disabled = false;
    }
  });
  return [
    h('label', { class: 'switch' }, input, 'Require two-factor sign-in of every member'),
    h('p', { class: 'hint', id: 'require-mfa-hint' }, 'A member who has not set it up can only set it up until they have.'),
    status,
  ];
}

async function render(ctx) {
  const { root, tenant } = ctx;
  const base = `/v1/auth/tenants/${tenant.id}`;
  const me = session.userId;
  const [members, invitations] = await Promise.all([api('GET', `${base}/members`), api('GET', `${base}/invitations`)]);
  const email = h('input', { type: 'email', name: 'email', required: true, autocomplete: 'off', placeholder: 'colleague@example.com' });
  const role = h('select', { name: 'role' }, h('option', { value: 'admin' }, 'Admin'));
  const roleSelect = (m) => {
    const select = h('select', { 'aria-label': `Role of ${m.email}` }, ['admin', 'owner'].map((r) => h('option', { value: r, selected: m.role === r }, r)));
    select.addEventListener('change', async () => {
      try {
        await api('PATCH', `${base}/members/${m.user_id}`, { role: select.value });
      } catch (error) {
        select.value = m.role;
        select.after(h('span', { class: 'error-text', role: 'alert' }, ` ${error.message}`));
      }
    });
    return select;
  };
  mount(
    root,
    header('Members', `Who can manage ${tenant.name}.`),
    panel(
      'Invite someone',
      actionForm([field('Email', email), field('Role', role, 'Owners are made by an owner changing a role.')], 'Send invitation', async () => {
        await api('POST', `${base}/invitations`, { email: email.value.trim(), role: role.value });
        await render(ctx);
        return undefined;
      }, { inline: true }),
    ),
    // Nobody changes or removes their own membership: the controls are left out of the signed-in user's row.
    panel('Members', table([['Email', (m) => (m.user_id === me ? h('span', {}, m.email, h('span', { class: 'hint' }, ' (you)')) : m.email)], ['Role', (m) => (m.user_id === me ? m.role : roleSelect(m))], ['', (m) => m.user_id === me ? null : actionButton('Remove', async () => { await api('DELETE', `${base}/members/${m.user_id}`); await render(ctx); }, { question: `Remove ${m.email} from ${tenant.name}?`, kind: 'danger', ariaLabel: `Remove ${m.email}` })]], members)),
    tenant.role === 'owner' ? panel('Sign-in security', requireTwoFactor(tenant)) : null,
    panel(
      'Pending invitations',
      table(
        [
          ['Email', (i) => i.email],
          ['Role', (i) => i.role],
          ['Status', (i) => pill(i.status)],
          ['Expires', (i) => formatTime(i.expires_at)],
          ['', (i) => actionButton('Withdraw', async () => { await api('DELETE', `${base}/invitations/${i.id}`); await render(ctx); }, { question: `Withdraw the invitation to ${i.email}?`, ariaLabel: `Withdraw invitation to ${i.email}` })],
        ],
        invitations,
        'No pending invitations.',
      ),
    ),
  );
}

export default { id: 'members', label: 'Members', group: 'Settings', render };
