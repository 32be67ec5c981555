// The browser SDK in real Chromium (Debian's /usr/bin/chromium, driven by playwright-core): the
// client, the <herald-inbox> widget on the demo page, the web push service worker and a tenant's
// browser origins (CORS), each against its own real Herald. The suites run one after another so that
// only one Chromium runs at a time.
import { describe } from 'vitest';
import { noChromium } from '../../support/browser.ts';
import { titleUnless } from '../../support/skip-reasons.ts';
import { clientSuite } from '../../browser/client.ts';
import { inboxWidgetSuite } from '../../browser/inbox-widget.ts';
import { serviceWorkerSuite } from '../../browser/service-worker.ts';
import { corsSuite } from '../../browser/cors.ts';

describe.skipIf(noChromium)(titleUnless(noChromium, 'browser SDK in Chromium'), () => {
  clientSuite();
  inboxWidgetSuite();
  serviceWorkerSuite();
  corsSuite();
});
