// The pages anyone may open: sign in (password or SSO, then the second factor where the user has one),
// forgot password, and the three pages the system emails link to (reset password, verify email, accept
// an invitation); with them, on the same card, the signed-in user's two-factor page (two-factor.js). Each failure is told in
// words a person understands: the link expired, was already used, or was sent to another account.
import { api, session, ApiError } from './api.js';
import { h, mount, field, notice } from './dom.js';
import { actionForm as form } from './kit.js';
import { secondFactorStep, twoFactorPage } from './two-factor.js';

const NEXT = 'herald.next';

function card(root, title, ...children) {
  document.title = `${title} · Herald`;
  const main = h(
    'main',
    { class: 'auth-card', id: 'main' },
    h('div', { class: 'logo' }, h('img', { src: '/console/assets/logo.svg', alt: '', width: 36, height: 36 }), h('span', {}, 'Herald')),
    h('h1', {}, title),
    ...children,
  );
  mount(root, main);
  main.querySelector('input:not([type=hidden]), button')?.focus();
  return main;
}

const input = (attrs) => h('input', { required: true, ...attrs });

function passwordFields(autocomplete = 'new-password') {
  return [
    field('New password', input({ type: 'password', name: 'password', autocomplete, minlength: 10, maxlength: 256 }), 'At least 10 characters.'),
    field('Repeat the password', input({ type: 'password', name: 'repeat', autocomplete, minlength: 10, maxlength: 256 })),
  ];
}

function checkPasswords(formEl) {
  const password = formEl.elements.password.value;
  if (password.length < 10) throw new Error('Choose a password of at least 10 characters.');
  if (password.length > 256) throw new Error('Choose a password of at most 256 characters.');
  if (password !== formEl.elements.repeat.value) throw new Error('The two passwords are not the same.');
  return password;
}

const SSO_ERRORS = {
  sso_state_invalid: 'The sign-in could not be finished: it was started in another browser, took too long, or was already used. Please try again.',
  sso_denied: 'The sign-in was cancelled at the provider.',
  sso_failed: 'The provider could not confirm your sign-in. Try again, or sign in with your password.',
  sso_issuer_mismatch: 'This sign-in provider is not set up correctly: it names another issuer than the one Herald was given. Tell the operator of this Herald, or sign in with your password.',
  sso_id_token_invalid: "The provider's proof of your sign-in did not check out, so you are not signed in. Try again, or sign in with your password.",
  sso_identity_mismatch: 'Your Herald account is linked to another account at this sign-in provider. Sign in there with that account, or sign in with your password.',
  sso_email_unverified: 'The provider did not confirm your email address. Verify it there, then try again.',
  sso_not_allowed: 'There is no Herald account for that address, and its domain may not join through this provider. Ask an owner of your tenant for an invitation.',
  sso_account_unverified: 'A Herald account with this address exists, but its address was never verified. Sign in with its password and verify the address, then use single sign-on.',
  sso_provider_not_for_account: 'This sign-in provider may not sign in your Herald account. Use the provider of your tenant, or sign in with your password.',
  not_a_member: 'Your account is no longer a member of any tenant. Ask an owner for an invitation.',
};

async function loginPage(root, { query, navigate, signedIn }) {
  const next = query.get('next') ?? sessionStorage.getItem(NEXT) ?? '/console';
  // A sign-in whose password (or provider) checked out and that waits for the second factor; a spent or
  // expired mfa_token starts the sign-in again.
  const askForSecondFactor = (mfaToken) =>
    secondFactorStep(root, { card, mfaToken, next, signedIn, restart: () => navigate(`/login?mfa_expired=1&next=${encodeURIComponent(next)}`, { replace: true }) });
  // The SSO callback hands the token over in the fragment, which never reaches a server.
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (location.hash) history.replaceState(null, '', location.pathname + location.search);
  if (fragment.get('sso_token')) {
    sessionStorage.removeItem(NEXT);
    return signedIn({ access_token: fragment.get('sso_token'), expires_in: Number(fragment.get('expires_in') ?? 3600), tenant_id: fragment.get('tenant_id'), mfa_enrolment_required: fragment.get('mfa_enrolment_required') === 'true' }, next);
  }
  if (fragment.get('mfa_token')) {
    sessionStorage.removeItem(NEXT);
    return askForSecondFactor(fragment.get('mfa_token'));
  }
  const messages = [];
  if (fragment.get('sso_error')) messages.push(notice('error', SSO_ERRORS[fragment.get('sso_error')] ?? SSO_ERRORS.sso_failed));
  if (query.get('expired')) messages.push(notice('info', 'Your session has ended. Please sign in again.'));
  if (query.get('mfa_expired')) messages.push(notice('info', 'That sign-in took too long or was finished already. Please sign in again.'));
  if (query.get('reset')) messages.push(notice('success', 'Your new password is set. Sign in with it.'));
  if (query.get('verified')) messages.push(notice('success', 'Your email address is confirmed.'));
  const sso = h('div', { class: 'sso' });
  const main = card(
    root,
    'Sign in',
    messages,
    form(
      [
        field('Email', input({ type: 'email', name: 'email', autocomplete: 'username', maxlength: 254 })),
        field('Password', input({ type: 'password', name: 'password', autocomplete: 'current-password', maxlength: 256 })),
      ],
      'Sign in',
      async (formEl) => {
        try {
          const answer = await api('POST', '/v1/auth/login', { email: formEl.elements.email.value, password: formEl.elements.password.value }, { token: null });
          if (answer.mfa_required) return askForSecondFactor(answer.mfa_token);
          signedIn(answer, next);
        } catch (error) {
          if (error instanceof ApiError && error.status === 401) throw new Error('That email and password do not match an account.', { cause: error });
          if (error instanceof ApiError && error.status === 429) throw new Error('Too many attempts. Please wait a few minutes and try again.', { cause: error });
          if (error instanceof ApiError && error.status === 422) throw new Error('Enter your email address and password.', { cause: error });
          throw error;
        }
      },
    ),
    sso,
    h('p', { class: 'links' }, h('a', { href: '/forgot-password', 'data-nav': true }, 'Forgot your password?')),
    developerLinks(),
  );
  try {
    const providers = await api('GET', '/v1/auth/sso/providers', undefined, { token: null });
    if (providers.length > 0) {
      mount(
        sso,
        h('p', { class: 'divider' }, h('span', {}, 'or')),
        providers.map((p) =>
          h(
            'a',
            {
              class: `button sso-button sso-${p.kind}`,
              href: p.start_url,
              onclick: () => sessionStorage.setItem(NEXT, next),
            },
            `Continue with ${p.name}`,
          ),
        ),
      );
    }
  } catch {
    // No SSO buttons: password sign-in still works.
  }
  return main;
}

// Where someone who opened the install's address goes when they have no account yet: the API description,
// and the demo page where this install serves it (it is off on installs that are not local).
function developerLinks() {
  const demo = h('span', {});
  const links = h('p', { class: 'links developer-links' }, h('a', { href: '/v1/openapi.json' }, 'API description (OpenAPI)'), demo);
  fetch('/demo', { headers: { accept: 'text/html' } })
    .then((res) => {
      if (res.ok) mount(demo, ' · ', h('a', { href: '/demo' }, 'Demo'));
    })
    .catch(() => undefined);
  return links;
}

function forgotPasswordPage(root) {
  const main = card(
    root,
    'Reset your password',
    h('p', {}, "Enter your account's email address and we will send you a link to choose a new password."),
    form([field('Email', input({ type: 'email', name: 'email', autocomplete: 'username', maxlength: 254 }))], 'Send the link', async (formEl) => {
      const email = formEl.elements.email.value.trim();
      if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw new Error('Enter a valid email address.');
      try {
        await api('POST', '/v1/auth/password-reset', { email }, { token: null });
      } catch (error) {
        if (error instanceof ApiError && error.status === 429) throw new Error('Too many requests from here. Please wait an hour and try again.', { cause: error });
        throw error;
      }
      mount(
        main,
        h('h1', {}, 'Check your email'),
        h('p', {}, `If ${email} has a Herald account, a link to reset its password is on its way. The link works once, for an hour.`),
        h('p', { class: 'links' }, h('a', { href: '/login', 'data-nav': true }, 'Back to sign in')),
      );
    }),
    h('p', { class: 'links' }, h('a', { href: '/login', 'data-nav': true }, 'Back to sign in')),
  );
}

const askAgain = (text) => h('p', { class: 'links' }, h('a', { href: '/forgot-password', 'data-nav': true }, text));

async function resetPasswordPage(root, { query, navigate }) {
  const token = query.get('token') ?? '';
  const status = token ? await api('GET', `/v1/auth/password-reset/${encodeURIComponent(token)}`, undefined, { token: null }).catch(() => ({ valid: false })) : { valid: false };
  if (!status.valid) {
    return card(
      root,
      'This link no longer works',
      notice('error', 'This password reset link has expired or has already been used. Reset links work once, for an hour.'),
      askAgain('Ask for a new link'),
    );
  }
  card(
    root,
    'Choose a new password',
    form(passwordFields(), 'Set the password', async (formEl) => {
      const password = checkPasswords(formEl);
      try {
        await api('POST', '/v1/auth/password-reset/confirm', { token, password }, { token: null });
      } catch (error) {
        if (error?.code === 'link_expired') throw new Error('This reset link has expired (links last an hour). Ask for a new one.', { cause: error });
        if (error?.code === 'invalid_link') throw new Error('This reset link has already been used. Ask for a new one if you still need it.', { cause: error });
        throw error;
      }
      navigate('/login?reset=1', { replace: true });
    }),
  );
}

async function verifyEmailPage(root, { query }) {
  const token = query.get('token') ?? '';
  const main = card(root, 'Confirming your email…', h('p', { class: 'loading' }, 'One moment.'));
  const resend = () =>
    form([field('Email', input({ type: 'email', name: 'email', autocomplete: 'username' }))], 'Send a new link', async (formEl) => {
      await api('POST', '/v1/auth/resend-verification', { email: formEl.elements.email.value.trim() }, { token: null });
      return 'If that address has an unconfirmed account, a new link is on its way.';
    });
  try {
    if (!token) throw Object.assign(new Error('no token'), { code: 'invalid_link' });
    await api('POST', '/v1/auth/verify-email', { token }, { token: null });
    mount(
      main,
      h('h1', {}, 'Your email address is confirmed'),
      h('p', {}, 'Thank you. You can now use every part of the console.'),
      h('p', { class: 'links' }, h('a', { class: 'button primary', href: session.token ? '/console' : '/login?verified=1', 'data-nav': true }, session.token ? 'Open the console' : 'Sign in')),
    );
  } catch (error) {
    const expired = error?.code === 'link_expired';
    mount(
      main,
      h('h1', {}, expired ? 'This link has expired' : 'This link no longer works'),
      notice(
        'error',
        expired
          ? 'Verification links last 48 hours. Ask for a new one below.'
          : 'This verification link has already been used or is not valid. If you confirmed your address already, there is nothing more to do.',
      ),
      resend(),
      h('p', { class: 'links' }, h('a', { href: '/login', 'data-nav': true }, 'Sign in')),
    );
  }
}

const INVITATION_GONE = 'This invitation is no longer valid: it may have expired (invitations last 7 days), been accepted already, or been withdrawn. Ask the person who invited you to send a new one.';

async function invitationPage(root, { params, navigate, signedIn }) {
  const [token] = params;
  const here = `/invitations/${encodeURIComponent(token)}`;
  let preview;
  try {
    preview = await api('GET', `/v1/auth/invitations/${encodeURIComponent(token)}`, undefined, { token: null });
  } catch (error) {
    if (error instanceof ApiError && (error.status === 404 || error.status === 422)) {
      return card(root, 'This invitation no longer works', notice('error', INVITATION_GONE), h('p', { class: 'links' }, h('a', { href: '/login', 'data-nav': true }, 'Go to sign in')));
    }
    throw error;
  }
  const intro = h('p', { class: 'lead' }, 'You are invited to join ', h('strong', {}, preview.tenant_name), ` as ${preview.role === 'owner' ? 'an owner' : 'an admin'}.`);
  const failure = (error) => {
    if (error?.code === 'link_expired') return 'This invitation has expired (invitations last 7 days). Ask for a new one.';
    if (error?.code === 'invitation_not_pending') return 'This invitation was already accepted or has been withdrawn.';
    if (error?.code === 'invitation_email_mismatch') return `You are signed in with a different account. This invitation is for ${preview.email}: sign out, then sign in as ${preview.email}.`;
    if (error?.code === 'already_member') return `You are already a member of ${preview.tenant_name}.`;
    if (error?.code === 'user_exists') return `An account already exists for ${preview.email}. Sign in to accept the invitation.`;
    return error.message;
  };
  if (!preview.user_exists) {
    return card(
      root,
      `Join ${preview.tenant_name}`,
      intro,
      h('p', {}, 'Choose a password for your new account ', h('strong', {}, preview.email), '.'),
      form(passwordFields(), 'Create my account and join', async (formEl) => {
        const password = checkPasswords(formEl);
        try {
          signedIn(await api('POST', `/v1/auth/invitations/${encodeURIComponent(token)}/accept`, { password }, { token: null }), '/console');
        } catch (error) {
          throw new Error(failure(error), { cause: error });
        }
      }),
    );
  }
  if (!session.token) {
    return card(
      root,
      `Join ${preview.tenant_name}`,
      intro,
      h('p', {}, 'You already have an account as ', h('strong', {}, preview.email), '. Sign in with it to accept.'),
      h('p', {}, h('a', { class: 'button primary', href: `/login?next=${encodeURIComponent(here)}`, 'data-nav': true }, `Sign in as ${preview.email}`)),
    );
  }
  const status = h('div', { class: 'form-status' });
  card(
    root,
    `Join ${preview.tenant_name}`,
    intro,
    h('p', {}, 'The invitation is for ', h('strong', {}, preview.email), '.'),
    status,
    h('div', { class: 'actions' },
      h(
        'button',
        {
          class: 'primary',
          type: 'button',
          onclick: async (event) => {
            event.target.disabled = true;
            try {
              const access = await api('POST', `/v1/auth/invitations/${encodeURIComponent(token)}/accept-existing`);
              signedIn(access, '/console');
            } catch (error) {
              mount(status, notice('error', failure(error)));
              event.target.disabled = false;
            }
          },
        },
        `Accept and join ${preview.tenant_name}`,
      ),
      h('button', { type: 'button', onclick: () => { session.clear(); navigate(`/login?next=${encodeURIComponent(here)}`); } }, 'Use another account'),
    ),
  );
}

/** Path patterns of the pages anyone may open, with their renderers. */
export const AUTH_PAGES = [
  [/^\/login$/, loginPage],
  [/^\/forgot-password$/, forgotPasswordPage],
  [/^\/reset-password$/, resetPasswordPage],
  [/^\/verify-email$/, verifyEmailPage],
  [/^\/invitations\/([^/]+)$/, invitationPage],
  [/^\/console\/two-factor$/, (root, ctx) => twoFactorPage(root, { ...ctx, card })],
];
