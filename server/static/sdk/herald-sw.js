// Herald web push service worker, served at /sdk/herald-sw.js. A service worker must come from the
// page's own origin, so host a one-line worker on your site that imports this one:
//     importScripts('https://herald.example.com/sdk/herald-sw.js');
// It shows each push Herald sends ({ title, body, data, action_url }, built by the web push transport)
// and, on click, focuses a window already showing the action URL or opens it.

const HERALD_DEFAULT_TITLE = 'New notification';

/** Turns a push message's payload into showNotification's arguments; tolerant of a non-Herald push. */
function heraldNotificationFromPush(data) {
  let payload = {};
  if (data) {
    try {
      payload = data.json();
    } catch {
      payload = { body: data.text() };
    }
  }
  if (!payload || typeof payload !== 'object') payload = { body: String(payload) };
  const extra = payload.data && typeof payload.data === 'object' ? payload.data : {};
  const title = typeof payload.title === 'string' && payload.title ? payload.title : HERALD_DEFAULT_TITLE;
  const options = {
    body: typeof payload.body === 'string' ? payload.body : '',
    data: { ...extra, action_url: heraldSafeUrl(payload.action_url) },
  };
  if (typeof extra.icon === 'string') options.icon = extra.icon;
  if (typeof extra.badge === 'string') options.badge = extra.badge;
  // The same inbox item shown twice (a retried push) replaces itself instead of stacking.
  const tag = extra.notification_id ?? extra.inbox_item_id ?? extra.event_id;
  if (typeof tag === 'string') options.tag = tag;
  return { title, options };
}

/** Only http(s) URLs are opened: a payload must never make the worker open javascript: or data: URLs. */
function heraldSafeUrl(value) {
  if (typeof value !== 'string' || value === '') return null;
  try {
    const url = new URL(value, self.location.origin);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null;
  } catch {
    return null;
  }
}

async function heraldHandlePush(data) {
  const { title, options } = heraldNotificationFromPush(data);
  await self.registration.showNotification(title, options);
  // Open pages (e.g. a <herald-inbox>) may want to refresh; the stream normally tells them already.
  const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  for (const client of windows) client.postMessage({ type: 'herald:push', title, data: options.data });
}

async function heraldHandleClick(notification) {
  notification.close();
  const target = heraldSafeUrl(notification.data && notification.data.action_url);
  const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  if (target) {
    const open = windows.find((client) => client.url === target);
    if (open) return open.focus();
    return self.clients.openWindow(target);
  }
  const any = windows.find((client) => 'focus' in client);
  if (any) return any.focus();
  return self.clients.openWindow(self.registration.scope);
}

self.addEventListener('push', (event) => {
  event.waitUntil(heraldHandlePush(event.data));
});

self.addEventListener('notificationclick', (event) => {
  event.waitUntil(heraldHandleClick(event.notification));
});
