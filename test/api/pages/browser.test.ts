// The browser SDK in real Chromium (Debian's /usr/bin/chromium, driven by playwright-core): the
// client, the <herald-inbox> widget on the demo page and the web push service worker, each against
// its own real Herald. The suites run one after another so that only one Chromium runs at a time.
import { describe } from 'vitest';
import { chromiumAvailable } from '../../support/browser.ts';
import { clientSuite } from '../../browser/client.ts';
import { inboxWidgetSuite } from '../../browser/inbox-widget.ts';
import { serviceWorkerSuite } from '../../browser/service-worker.ts';

if (!chromiumAvailable)
  console.warn('browser tests skipped: /usr/bin/chromium is absent (apt-get install -y chromium)');

describe.skipIf(!chromiumAvailable)('browser SDK in Chromium', () => {
  clientSuite();
  inboxWidgetSuite();
  serviceWorkerSuite();
});
