// The demo page: connects <herald-inbox> with a pasted contact token (no backend needed) and logs
// what the stream delivers. Loaded from /demo/demo.js so the page runs under a strict CSP.
import { createHerald } from '/sdk/herald.js';
import '/sdk/herald-inbox.js';

const form = document.getElementById('connect');
const tokenInput = document.getElementById('token');
const inbox = document.getElementById('inbox');
const state = document.getElementById('state');
const errorBox = document.getElementById('error');
const log = document.getElementById('log');
const disconnectButton = document.getElementById('disconnect-button');
const pushButton = document.getElementById('push-button');

// The CLI reaches Herald where this page came from, whatever port or proxy serves it.
document.getElementById('origin').textContent = location.origin;

function addLog(text) {
  const li = document.createElement('li');
  li.textContent = `${new Date().toLocaleTimeString()}  ${text}`;
  log.prepend(li);
}

function showError(message) {
  errorBox.hidden = !message;
  errorBox.textContent = message ?? '';
}

form.addEventListener('submit', (event) => {
  event.preventDefault();
  const token = tokenInput.value.trim();
  if (!token) return showError('Paste a contact token first.');
  showError(null);
  // A real site's getToken calls its own backend; here the pasted token is the whole story.
  inbox.client = createHerald({ url: location.origin, getToken: () => token });
  inbox.hidden = false;
  disconnectButton.hidden = false;
  pushButton.hidden = !('serviceWorker' in navigator && 'PushManager' in window);
  addLog('connecting');
});

disconnectButton.addEventListener('click', () => {
  inbox.client = null;
  inbox.hidden = true;
  disconnectButton.hidden = true;
  pushButton.hidden = true;
  state.textContent = 'Not connected';
  addLog('disconnected');
});

pushButton.addEventListener('click', async () => {
  try {
    const registration = await navigator.serviceWorker.register('/sdk/herald-sw.js', { scope: '/demo' });
    await navigator.serviceWorker.ready;
    const record = await inbox.client.registerWebPush(registration);
    addLog(`web push registered (subscription ${record.id})`);
  } catch (error) {
    showError(`Web push: ${error.message}`);
  }
});

inbox.addEventListener('herald-state', (event) => {
  if (event.detail === 'open') showError(null);
  state.textContent = { connecting: 'Connecting…', open: 'Live', reconnecting: 'Reconnecting…', closed: 'Not connected' }[event.detail] ?? event.detail;
  addLog(`stream ${event.detail}`);
});
inbox.addEventListener('herald-notification', (event) => addLog(`notification: ${event.detail.title}`));
inbox.addEventListener('herald-counts', (event) => addLog(`unread: ${event.detail.unread}`));
inbox.addEventListener('herald-error', (event) => {
  const error = event.detail;
  showError(error && error.status === 401 ? 'The token was refused (expired or invalid): mint a new one.' : `Error: ${error?.message ?? error}`);
});
