// Configuration precedence (defaults -> file -> environment -> flags), validation and immutability.
import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { ConfigError, configFilePath, loadConfig, publicBaseUrl } from '../../server/base/config.ts';
import { testTempDir } from '../support/tmp.ts';

const dataDir = () => testTempDir('herald-config-');

describe('loadConfig', () => {
  it('applies defaults', () => {
    const config = loadConfig({ dataDir: dataDir() }, {});
    expect(config.mode).toBe('single');
    expect(config.port).toBe(8025);
    expect(config.host).toBe('127.0.0.1');
    expect(config.maxBodyBytes).toBe(1024 * 1024);
    expect(config.accessTokenTtlSeconds).toBe(12 * 3600);
    expect(config.contactTokenTtlSeconds).toBe(3600);
    expect(config.smtpConnections).toBe(20);
  });

  it('takes smtpConnections from the file, between 1 and 100', () => {
    const dir = dataDir();
    writeFileSync(configFilePath(dir), JSON.stringify({ smtpConnections: 3 }));
    expect(loadConfig({ dataDir: dir }, {}).smtpConnections).toBe(3);
    writeFileSync(configFilePath(dir), JSON.stringify({ smtpConnections: 0 }));
    expect(() => loadConfig({ dataDir: dir }, {})).toThrow(/smtpConnections/);
  });

  it('layers file < environment < flags', () => {
    const dir = dataDir();
    writeFileSync(
      configFilePath(dir),
      JSON.stringify({ port: 9001, mode: 'multi', publicUrl: 'https://file.example' }),
    );
    const fromFile = loadConfig({ dataDir: dir }, {});
    expect([fromFile.port, fromFile.mode, fromFile.publicUrl]).toEqual([9001, 'multi', 'https://file.example']);
    const fromEnv = loadConfig({ dataDir: dir }, { HERALD_PORT: '9002', HERALD_TRUSTED_PROXIES: '10.0.0.1, 10.0.0.2' });
    expect(fromEnv.port).toBe(9002);
    expect(fromEnv.trustedProxies).toEqual(['10.0.0.1', '10.0.0.2']);
    const fromFlags = loadConfig({ dataDir: dir, port: 9003 }, { HERALD_PORT: '9002' });
    expect(fromFlags.port).toBe(9003);
    expect(fromFlags.mode).toBe('multi');
  });

  it('reads the delivery retry schedule, which outlasts an outage of hours by default', () => {
    const defaults = loadConfig({ dataDir: dataDir() }, {});
    expect(defaults.deliveryRetrySchedule.reduce((a, b) => a + b, 0)).toBeGreaterThan(3 * 3600);
    const fromEnv = loadConfig({ dataDir: dataDir() }, { HERALD_DELIVERY_RETRY_SCHEDULE: '5, 60,600' });
    expect(fromEnv.deliveryRetrySchedule).toEqual([5, 60, 600]);
    for (const wrong of ['0', 'soon', '5,-1'])
      expect(() => loadConfig({ dataDir: dataDir() }, { HERALD_DELIVERY_RETRY_SCHEDULE: wrong })).toThrow(
        /deliveryRetrySchedule/,
      );
  });

  it('reads numbers from the environment as numbers, not as one-item lists', () => {
    const env = { HERALD_MAX_CONNECTIONS_PER_CLIENT: '10', HERALD_HEADERS_TIMEOUT_MS: '5000' };
    const config = loadConfig({ dataDir: dataDir() }, env);
    expect([config.maxConnectionsPerClient, config.headersTimeoutMs]).toEqual([10, 5000]);
    expect(() => loadConfig({ dataDir: dataDir() }, { HERALD_MAX_CONNECTIONS_PER_CLIENT: '10,20' })).toThrow(
      /maxConnectionsPerClient/,
    );
  });

  it('takes the data directory from HERALD_HOME when no flag is given', () => {
    const dir = dataDir();
    expect(loadConfig({}, { HERALD_HOME: dir }).dataDir).toBe(dir);
  });

  it('reads boolean switches from the environment', () => {
    const config = loadConfig({ dataDir: dataDir() }, { HERALD_ALLOW_PRIVATE_SMTP_HOSTS: 'true', HERALD_DEMO: '0' });
    expect([config.allowPrivateSmtpHosts, config.allowPrivatePushEndpoints, config.demo]).toEqual([true, false, false]);
    expect(() => loadConfig({ dataDir: dataDir() }, { HERALD_ALLOW_PRIVATE_SMTP_HOSTS: 'perhaps' })).toThrow(
      /allowPrivateSmtpHosts/,
    );
  });

  it('reads DATABASE_URL', () => {
    expect(loadConfig({ dataDir: dataDir() }, { DATABASE_URL: 'postgres://u@h/db' }).databaseUrl).toBe(
      'postgres://u@h/db',
    );
  });

  it('sizes the database pool from the cores and the role unless HERALD_DATABASE_POOL_SIZE sets it', async () => {
    const { availableParallelism } = await import('node:os');
    const { defaultPoolSize } = await import('../../server/app/runtime.ts');
    const config = loadConfig({ dataDir: dataDir(), workerConcurrency: 6 }, {});
    expect(config.databasePoolSize).toBeUndefined();
    const http = Math.max(4, 2 * availableParallelism());
    expect(defaultPoolSize('api', config)).toBe(http);
    expect(defaultPoolSize('all', config)).toBe(http + 6);
    expect(defaultPoolSize('worker', config)).toBe(2 + 6);
    expect(loadConfig({ dataDir: dataDir() }, { HERALD_DATABASE_POOL_SIZE: '12' }).databasePoolSize).toBe(12);
    expect(() => loadConfig({ dataDir: dataDir() }, { HERALD_DATABASE_POOL_SIZE: '1' })).toThrow(ConfigError);
  });

  it('refuses to start workers with no more connections than delivery jobs at once (they could all wait on each other)', async () => {
    const { startRuntime, StartupError } = await import('../../server/app/runtime.ts');
    const config = loadConfig({ dataDir: dataDir(), workerConcurrency: 8 }, { HERALD_DATABASE_POOL_SIZE: '8' });
    for (const role of ['all', 'worker'] as const) {
      const refused = await startRuntime(config, { role }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(StartupError);
      expect((refused as Error).message).toMatch(/databasePoolSize \(8\) must be larger than workerConcurrency \(8\)/);
    }
  });

  it('is frozen, deeply', () => {
    const config = loadConfig({ dataDir: dataDir() }, {});
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.providers)).toBe(true);
    expect(() => {
      (config as { port: number }).port = 1;
    }).toThrow(TypeError);
  });

  it('names every invalid key', () => {
    expect(() => loadConfig({ dataDir: dataDir() }, { HERALD_PORT: 'eighty', HERALD_MODE: 'both' })).toThrow(
      ConfigError,
    );
    try {
      loadConfig({ dataDir: dataDir() }, { HERALD_PORT: 'eighty', HERALD_MODE: 'both' });
    } catch (error) {
      expect((error as Error).message).toMatch(/port/);
      expect((error as Error).message).toMatch(/mode/);
    }
  });

  it('reports a config file that is not JSON', () => {
    const dir = dataDir();
    writeFileSync(configFilePath(dir), '{ not json');
    expect(() => loadConfig({ dataDir: dir }, {})).toThrow(/not valid JSON/);
  });

  it('derives the public URL from the listening address unless configured', () => {
    expect(publicBaseUrl(loadConfig({ dataDir: dataDir(), port: 1234 }, {}))).toBe('http://127.0.0.1:1234');
    expect(publicBaseUrl(loadConfig({ dataDir: dataDir(), publicUrl: 'https://h.example/' }, {}))).toBe(
      'https://h.example',
    );
  });
});
