// The install's address as a person opens it: GET / sends the browser to the console, which sends a
// tab without a session on to the sign-in page; that page links to the API description and, where the
// install serves it, the demo. Over HTTP, and in real Chromium.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../support/app.ts';
import { noChromium, launchChromium, recordingPage, type ChromiumSession } from '../../support/browser.ts';
import { titleUnless } from '../../support/skip-reasons.ts';
import { PASSWORD, createTenantFixture } from '../../support/fixtures.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

describe('GET /', () => {
  it('answers 302 to the console, with no body, and is no operation of the OpenAPI document', async () => {
    const res = await fetch(`${app.url}/`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/console');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.text()).toBe('');
    const followed = await fetch(`${app.url}/`);
    expect(followed.url).toBe(`${app.url}/console`);
    expect(followed.status).toBe(200);
    expect(followed.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const doc = (await app.request('GET', '/v1/openapi.json')).body as { paths: Record<string, unknown> };
    expect(doc.paths['/']).toBeUndefined();
  });

  it('answers 405 to another method', async () => {
    const res = await fetch(`${app.url}/`, { method: 'POST', redirect: 'manual' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET');
  });
});

describe.skipIf(noChromium)(titleUnless(noChromium, 'the way in, in Chromium'), { timeout: 60_000 }, () => {
  let browser: ChromiumSession;
  let demoOff: TestApp;
  const problems: string[] = [];

  beforeAll(async () => {
    demoOff = await startTestApp({ config: { demo: false } });
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await demoOff?.close();
  });

  it('ends a signed-out tab that opens / at the sign-in page, with links to the API description and the demo', async () => {
    const page = await recordingPage(browser, problems);
    await page.goto(`${app.url}/`);
    await page.waitForURL(/\/login(\?|$)/);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    const api = page.getByRole('link', { name: 'API description (OpenAPI)' });
    expect(await api.getAttribute('href')).toBe('/v1/openapi.json');
    const demo = page.getByRole('link', { name: 'Demo' });
    await demo.waitFor();
    expect(await demo.getAttribute('href')).toBe('/demo');
    await demo.click();
    await page.waitForURL(`${app.url}/demo`);
    await page.goBack();
    await api.click();
    await page.waitForURL(`${app.url}/v1/openapi.json`);
    expect(JSON.parse((await page.locator('body').textContent()) ?? '{}').openapi).toBe('3.1.0');
    await page.close();
  });

  it('takes a signed-in tab that opens / to the console', async () => {
    const acme = await createTenantFixture(app, 'Acme');
    const page = await recordingPage(browser, problems);
    await page.goto(`${app.url}/login`);
    await page.getByLabel('Email').fill(acme.ownerEmail);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/console\//);
    await page.goto(`${app.url}/`);
    await page.waitForURL(/\/console\/[a-z]/);
    await page.getByRole('navigation').first().waitFor();
    expect(new URL(page.url()).pathname).not.toBe('/login');
    await page.close();
  });

  it('leaves the demo link out where the install does not serve the demo', async () => {
    const page = await recordingPage(browser, problems);
    // The demo's answer is what decides: wait for it before looking for the link.
    const demoAnswer = page.waitForResponse((res) => new URL(res.url()).pathname === '/demo');
    await page.goto(`${demoOff.url}/`);
    await page.waitForURL(/\/login(\?|$)/);
    expect((await demoAnswer).status()).toBe(404);
    await page.getByRole('link', { name: 'API description (OpenAPI)' }).waitFor();
    expect(await page.getByRole('link', { name: 'Demo' }).count()).toBe(0);
    await page.close();
  });

  it('saw no script error and no policy violation', () => {
    expect(problems).toEqual([]);
  });
});
