// Two-factor sign-in: the second step of signing in (the authenticator app's code, or a recovery code),
// and the signed-in user's own page to set up an authenticator app (a QR code, then the recovery codes,
// shown once) or to turn it off. The QR code is the server's SVG shown as an image, so nothing of a
// response becomes markup in the page.
import { api, session, ApiError } from './api.js';
import { h, field, notice, copyText, formatTime } from './dom.js';
import { actionForm as form } from './kit.js';

const codeInput = () =>
  h('input', { name: 'code', required: true, inputmode: 'numeric', autocomplete: 'one-time-code', maxlength: 9, spellcheck: 'false' });
const recoveryInput = () => h('input', { name: 'recovery_code', required: true, autocomplete: 'off', maxlength: 24, spellcheck: 'false' });

/** The code or recovery code of a form, as the API takes it. */
function proofOf(formEl, useRecovery) {
  return useRecovery ? { recovery_code: formEl.elements.recovery_code.value.trim() } : { code: formEl.elements.code.value.trim() };
}

/** The code field, or the recovery code field, with a link that swaps them (re-rendering through `render`). */
function proofFields(useRecovery, codeHint) {
  return useRecovery
    ? [field('Recovery code', recoveryInput(), 'One of the codes you saved when you set up two-factor sign-in. Each works once.')]
    : [field('Code', codeInput(), codeHint)];
}

const swapLink = (useRecovery, swap) =>
  h('p', { class: 'links' }, h('button', { type: 'button', class: 'link', onclick: swap }, useRecovery ? 'Use the authenticator app instead' : 'Use a recovery code instead'));

/** Words for a refused code on the signed-in user's own page (422 names the field). */
function refusal(error, useRecovery) {
  if (error instanceof ApiError && error.status === 429) return 'Too many attempts. Please wait a few minutes and try again.';
  if (error instanceof ApiError && error.status === 422 && error.fields.length > 0)
    return useRecovery ? 'That recovery code is not valid, or was used already.' : 'That code is not right. Enter the 6 digits your app shows now.';
  return error.message;
}

/**
 * The sign-in's second step, after the password (or single sign-on): asks for the code, or a recovery
 * code, and signs in with the mfa_token. `restart` goes back to the password when the token is spent.
 */
export function secondFactorStep(root, { card, mfaToken, next, signedIn, restart }) {
  let useRecovery = false;
  const render = () =>
    card(
      root,
      'Two-factor sign-in',
      h('p', {}, useRecovery ? 'Enter one of your recovery codes.' : 'Open your authenticator app and enter the code it shows for Herald.'),
      form(proofFields(useRecovery, 'The 6-digit code your app shows now.'), 'Verify', async (formEl) => {
        try {
          signedIn(await api('POST', '/v1/auth/mfa/verify', { mfa_token: mfaToken, ...proofOf(formEl, useRecovery) }, { token: null }), next);
        } catch (error) {
          if (error?.code === 'invalid_mfa_token') return restart();
          if (error?.code === 'invalid_mfa_code')
            throw new Error(useRecovery ? 'That recovery code is not valid, or was used already.' : 'That code is not right, or was used already. Enter the code your app shows now.', { cause: error });
          if (error instanceof ApiError && error.status === 429) throw new Error('Too many attempts. Please wait a few minutes and try again.', { cause: error });
          if (error instanceof ApiError && error.status === 422)
            throw new Error(useRecovery ? 'Enter the recovery code as it was shown: 16 letters and digits.' : 'Enter the 6 digits your app shows.', { cause: error });
          throw error;
        }
      }),
      swapLink(useRecovery, () => {
        useRecovery = !useRecovery;
        render();
      }),
    );
  render();
}

const backToConsole = () => h('p', { class: 'links' }, h('a', { href: '/console', 'data-nav': true }, 'Back to the console'));

/** /console/two-factor: the signed-in user's own second factor. */
export async function twoFactorPage(root, { navigate, card, done }) {
  if (!session.token) return navigate(`/login?next=${encodeURIComponent('/console/two-factor')}`, { replace: true });
  const status = await api('GET', '/v1/auth/mfa');
  if (status.totp_enabled) return enabledCard(root, { navigate, card, status });
  const required = status.required
    ? notice('info', 'Your tenant requires two-factor sign-in of every member. Set it up to use the console.')
    : null;
  card(
    root,
    'Set up two-factor sign-in',
    done ? notice('success', done) : null,
    required,
    h('p', {}, 'Signing in will ask for a code from an authenticator app on your phone (such as 1Password, Google Authenticator or Microsoft Authenticator) after your password.'),
    form([], 'Set up an authenticator app', async () => {
      scanCard(root, { navigate, card, enrolment: await api('POST', '/v1/auth/mfa/totp') });
    }),
    required ? null : backToConsole(),
  );
}

/** The key an authenticator takes when the QR code cannot be scanned, in groups of four. */
function manualKey(uri) {
  const secret = new URL(uri).searchParams.get('secret') ?? '';
  return secret.match(/.{1,4}/g)?.join(' ') ?? '';
}

function scanCard(root, { navigate, card, enrolment }) {
  const qr = h('img', {
    class: 'qr',
    src: `data:image/svg+xml;base64,${btoa(enrolment.qr_svg)}`,
    width: 200,
    height: 200,
    alt: 'QR code to scan with your authenticator app',
  });
  card(
    root,
    'Scan the QR code',
    h('p', {}, 'Scan this code with your authenticator app, then enter the 6-digit code it shows.'),
    qr,
    h('details', { class: 'manual-key' }, h('summary', {}, 'Cannot scan it? Enter this key instead'), h('code', { id: 'totp-key' }, manualKey(enrolment.otpauth_uri))),
    form([field('Code', codeInput(), 'The 6-digit code your app shows now.')], 'Turn on two-factor sign-in', async (formEl) => {
      try {
        const { recovery_codes } = await api('POST', '/v1/auth/mfa/totp/confirm', { code: formEl.elements.code.value.trim() });
        recoveryCard(root, { navigate, card, codes: recovery_codes });
      } catch (error) {
        throw new Error(refusal(error, false), { cause: error });
      }
    }),
  );
}

function recoveryCard(root, { navigate, card, codes }) {
  const copy = h('button', { type: 'button', onclick: () => copyText(copy, codes.join('\n')) }, 'Copy the codes');
  card(
    root,
    'Save your recovery codes',
    notice('success', 'Two-factor sign-in is on.'),
    h('p', {}, 'If you lose your phone, each of these codes signs you in once in place of a code. Keep them somewhere safe, such as your password manager: they are shown only now.'),
    h('ol', { class: 'recovery-codes', id: 'recovery-codes' }, codes.map((c) => h('li', {}, h('code', {}, c)))),
    h('div', { class: 'actions' }, copy, h('button', { type: 'button', class: 'primary', onclick: () => navigate('/console', { replace: true }) }, 'I have saved them: continue')),
  );
}

function enabledCard(root, { navigate, card, status }) {
  let useRecovery = false;
  const render = () =>
    card(
      root,
      'Two-factor sign-in is on',
      h('p', {}, `Since ${formatTime(status.enabled_at)}. ${status.recovery_codes_remaining} of your recovery codes are left.`),
      status.required ? notice('info', 'Your tenant requires it: without it you can only set it up again.') : null,
      h('h2', {}, 'Turn it off'),
      h('p', {}, 'To turn it off (to move to another phone, for example), confirm with a current code or a recovery code.'),
      form(proofFields(useRecovery, 'The 6-digit code your app shows now.'), 'Turn off two-factor sign-in', async (formEl) => {
        try {
          await api('POST', '/v1/auth/mfa/totp/disable', proofOf(formEl, useRecovery));
        } catch (error) {
          throw new Error(refusal(error, useRecovery), { cause: error });
        }
        await twoFactorPage(root, { navigate, card, done: 'Two-factor sign-in is off.' });
      }),
      swapLink(useRecovery, () => {
        useRecovery = !useRecovery;
        render();
      }),
      backToConsole(),
    );
  render();
}
