// Brands: the values templates render against (name, colour, logo) and the sender of their emails.
import { api } from './api.js';
import { h, mount, field, notice } from './dom.js';
import { header, panel, actionForm, actionButton } from './kit.js';

function brandCard(brand, ctx) {
  const base = `/v1/brandings/${brand.key}`;
  const v = brand.values ?? {};
  const name = h('input', { name: 'name', value: v.name ?? '', maxlength: 200 });
  const colour = h('input', { type: 'color', name: 'colour', value: /^#[0-9a-f]{6}$/i.test(v.colour ?? '') ? v.colour : '#4338ca' });
  const logo = h('input', { type: 'url', name: 'logo_url', value: v.logo_url ?? '', placeholder: 'https://…' });
  const s = brand.sender ?? {};
  const fromName = h('input', { name: 'from_name', value: s.from_name ?? '', maxlength: 200 });
  const fromEmail = h('input', { type: 'email', name: 'from_email', value: s.from_email ?? '' });
  const replyTo = h('input', { type: 'email', name: 'reply_to', value: s.reply_to ?? '' });
  // What the brand's settings will not do (a From address the install's SMTP replaces), as the API says it.
  const warnings = h('div', { class: 'brand-warnings' });
  const showWarnings = (list) => mount(warnings, (list ?? []).map((text) => notice('warn', text)));
  showWarnings(brand.warnings);
  const swatch = h('span', { class: 'swatch', 'aria-hidden': 'true' });
  // The colour comes from the tenant: it is set as a style property, never parsed as CSS text.
  swatch.style.setProperty('background-color', colour.value);
  colour.addEventListener('input', () => swatch.style.setProperty('background-color', colour.value));
  return h(
    'article',
    { class: 'card', 'aria-labelledby': `brand-${brand.key}` },
    h('header', { class: 'card-header' },
      h('div', { class: 'brand-title' }, swatch, h('h2', { id: `brand-${brand.key}` }, v.name || brand.key), h('code', {}, brand.key), brand.is_default ? h('span', { class: 'pill' }, 'default') : null),
      brand.is_default ? null : actionButton('Delete', async () => { await api('DELETE', base); await render(ctx); }, { question: `Delete the brand “${brand.key}”?`, kind: 'danger', ariaLabel: `Delete ${brand.key}` })),
    warnings,
    h('div', { class: 'two-col' },
      actionForm([field('Name', name), field('Colour', colour), field('Logo URL', logo)], 'Save values', async () => {
        const values = { ...v, name: name.value.trim(), colour: colour.value };
        if (logo.value.trim()) values.logo_url = logo.value.trim();
        else delete values.logo_url;
        await api('PUT', `${base}/values`, { values });
        return 'Values saved.';
      }),
      actionForm([field('From name', fromName), field('From email', fromEmail), field('Reply-to', replyTo)], 'Save sender', async () => {
        const orNull = (input) => input.value.trim() || null;
        const saved = await api('PUT', `${base}/sender`, { from_name: orNull(fromName), from_email: orNull(fromEmail), reply_to: orNull(replyTo) });
        showWarnings(saved.warnings);
        return 'Sender saved.';
      })),
  );
}

async function render(ctx) {
  const { root } = ctx;
  const brands = await api('GET', '/v1/brandings');
  const key = h('input', { name: 'key', required: true, placeholder: 'acme-eu' });
  mount(
    root,
    header('Brands', 'Names, colours and logos your templates render with, and who emails come from.'),
    panel('New brand', actionForm([field('Key', key, 'Lowercase letters, digits, . _ -')], 'Create brand', async () => {
      await api('POST', '/v1/brandings', { key: key.value.trim(), values: { name: key.value.trim() } });
      await render(ctx);
    }, { inline: true })),
    h('div', { class: 'cards' }, brands.map((b) => brandCard(b, ctx))),
  );
}

export default { id: 'brands', label: 'Brands', group: 'Messages', render };
