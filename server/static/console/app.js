// The console's shell: routes by path, shows the link pages (sign-in, reset, verify, invitation) to
// anyone and the console sections to a signed-in admin or owner, with the tenant switcher and the
// navigation built from the section registry (sections.js).
import { api, session, onMfaEnrolmentRequired, onSessionExpired } from './api.js';
import { h, mount } from './dom.js';
import { AUTH_PAGES } from './auth-pages.js';
import { SECTIONS } from './sections.js';

const app = document.getElementById('app');
let tenants = null;
let availablePaths = null;
// The first page keeps the browser's own focus order (the skip link first); later navigations move focus to the new content.
let navigated = false;
const TWO_FACTOR_PAGE = '/console/two-factor';

export function navigate(path, { replace = false } = {}) {
  if (replace) history.replaceState(null, '', path);
  else {
    history.pushState(null, '', path);
    navigated = true;
  }
  render();
}

// Same-origin links marked data-nav change the page without a reload.
document.addEventListener('click', (event) => {
  const link = event.target instanceof Element ? event.target.closest('a[data-nav]') : null;
  if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
  event.preventDefault();
  navigate(link.getAttribute('href'));
});
window.addEventListener('popstate', () => render());
onSessionExpired(() => {
  session.clear();
  tenants = null;
  navigate(`/login?next=${encodeURIComponent(location.pathname + location.search)}&expired=1`, { replace: true });
});
// The tenant requires a second factor the user has not set up: only its enrolment page works for them.
onMfaEnrolmentRequired(() => navigate(TWO_FACTOR_PAGE, { replace: true }));

/** The paths of the API this install serves (optional sections appear only when their routes exist). */
async function apiPaths() {
  if (!availablePaths) {
    try {
      const doc = await api('GET', '/v1/openapi.json', undefined, { token: null });
      availablePaths = new Set(Object.keys(doc.paths ?? {}));
    } catch {
      availablePaths = new Set();
    }
  }
  return availablePaths;
}

export function signedIn(access, next = '/console') {
  session.save(access);
  tenants = null;
  if (access.mfa_enrolment_required) return navigate(TWO_FACTOR_PAGE, { replace: true });
  navigate(next.startsWith('/console') || next.startsWith('/invitations/') ? next : '/console', { replace: true });
}

async function render() {
  const path = location.pathname.replace(/\/+$/, '') || '/';
  for (const [pattern, page] of AUTH_PAGES) {
    const match = pattern.exec(path);
    if (match) {
      document.body.className = 'auth';
      return page(app, { params: match.slice(1).map(decodeURIComponent), query: new URLSearchParams(location.search), navigate, signedIn });
    }
  }
  if (path === '/' || !path.startsWith('/console')) return navigate('/console', { replace: true });
  if (!session.token) return navigate(`/login?next=${encodeURIComponent(location.pathname)}`, { replace: true });
  document.body.className = 'console';
  await renderConsole(path.split('/')[2] ?? '');
}

async function renderConsole(sectionId) {
  let paths;
  try {
    [tenants, paths] = await Promise.all([tenants ?? api('GET', '/v1/auth/tenants'), apiPaths()]);
  } catch (error) {
    return mount(app, h('main', { class: 'auth-card', id: 'main' }, h('h1', {}, 'Herald'), h('p', { role: 'alert', class: 'notice notice-error' }, error.message)));
  }
  const sections = SECTIONS.filter((s) => !s.requires || paths.has(s.requires));
  const section = sections.find((s) => s.id === sectionId) ?? sections[0];
  if (section.id !== sectionId) return navigate(`/console/${section.id}`, { replace: true });
  const tenant = tenants.find((t) => t.id === session.tenantId) ?? tenants[0];
  const main = h('main', { id: 'main', class: 'content', tabindex: '-1' });
  mount(app, h('div', { class: 'shell' }, sidebar(sections, section, tenant), main));
  document.title = `${section.label} · ${tenant?.name ?? 'Herald'}`;
  if (tenant && tenant.role !== 'admin' && tenant.role !== 'owner') {
    return mount(main, h('p', { class: 'notice notice-error', role: 'alert' }, 'You are not an admin of this tenant.'));
  }
  main.append(h('p', { class: 'loading' }, 'Loading…'));
  try {
    await section.render({ root: main, tenant, tenants, navigate, paths });
  } catch (error) {
    mount(main, h('h1', {}, section.label), h('p', { class: 'notice notice-error', role: 'alert' }, error.message));
  }
  if (navigated) main.focus({ preventScroll: true });
}

function sidebar(sections, current, tenant) {
  const groups = new Map();
  for (const s of sections) groups.set(s.group, [...(groups.get(s.group) ?? []), s]);
  const switcher = h(
    'select',
    {
      id: 'tenant-switcher',
      'aria-label': 'Tenant',
      onchange: async (event) => {
        const access = await api('POST', '/v1/auth/session', { tenant_id: event.target.value, remember: false });
        session.save(access);
        render();
      },
    },
    tenants.map((t) => h('option', { value: t.id, selected: t.id === tenant?.id }, `${t.name}${t.archived ? ' (archived)' : ''}`)),
  );
  return h(
    'nav',
    { class: 'sidebar', 'aria-label': 'Console' },
    h('div', { class: 'logo' }, h('img', { src: '/console/assets/logo.svg', alt: '', width: 28, height: 28 }), h('span', {}, 'Herald')),
    h('div', { class: 'tenant' }, h('label', { for: 'tenant-switcher', class: 'tenant-label' }, 'Tenant'), switcher, tenant ? h('span', { class: 'role' }, tenant.role) : null),
    [...groups].map(([group, items]) =>
      h(
        'div',
        { class: 'nav-group' },
        h('h2', {}, group),
        h(
          'ul',
          {},
          items.map((s) => h('li', {}, h('a', { href: `/console/${s.id}`, 'data-nav': true, 'aria-current': s === current ? 'page' : undefined }, s.label))),
        ),
      ),
    ),
    h('a', { class: 'account-link', href: TWO_FACTOR_PAGE, 'data-nav': true }, 'Two-factor sign-in'),
    h(
      'button',
      {
        class: 'signout',
        type: 'button',
        onclick: () => {
          session.clear();
          tenants = null;
          navigate('/login', { replace: true });
        },
      },
      'Sign out',
    ),
  );
}

render();
