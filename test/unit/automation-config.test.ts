import t from 'tap';
import { ConfigError, loadConfig } from '../../src/config/config.ts';

const cwd = '/tmp';

t.test('automation settings: defaults from config/default.json', (t) => {
  t.same(loadConfig({ env: {}, cwd }).automations, {
    dispatchIntervalMs: 5000,
    deliveryTimeoutMs: 10_000,
    maxAttempts: 10,
    backoffBaseMs: 10_000,
    backoffMaxMs: 3_600_000,
    concurrency: 8,
    deliveryRetentionDays: 30,
    allowPrivateTargets: false,
  });
  t.end();
});

t.test('automation settings: environment variables, one name each', (t) => {
  const config = loadConfig({
    env: {
      AUTOMATION_DISPATCH_INTERVAL_MS: '250', AUTOMATION_DELIVERY_TIMEOUT_MS: '1500', AUTOMATION_MAX_ATTEMPTS: '3', AUTOMATION_BACKOFF_BASE_MS: '20',
      AUTOMATION_BACKOFF_MAX_MS: '100', AUTOMATION_CONCURRENCY: '2', AUTOMATION_DELIVERY_RETENTION_DAYS: '7', AUTOMATION_ALLOW_PRIVATE_TARGETS: 'true',
    },
    cwd,
  });
  t.same(config.automations, {
    dispatchIntervalMs: 250, deliveryTimeoutMs: 1500, maxAttempts: 3, backoffBaseMs: 20, backoffMaxMs: 100, concurrency: 2, deliveryRetentionDays: 7,
    allowPrivateTargets: true,
  });
  t.end();
});

t.test('automation settings: invalid values stop start-up naming the setting', (t) => {
  for (const [name, value] of [
    ['AUTOMATION_MAX_ATTEMPTS', '0'], ['AUTOMATION_DELIVERY_TIMEOUT_MS', '50'], ['AUTOMATION_ALLOW_PRIVATE_TARGETS', 'maybe'],
    ['AUTOMATION_DISPATCH_INTERVAL_MS', 'soon'], ['AUTOMATION_CONCURRENCY', '-1'],
  ] as const) {
    t.throws(() => loadConfig({ env: { [name]: value }, cwd }), ConfigError);
    try {
      loadConfig({ env: { [name]: value }, cwd });
    } catch (error) {
      t.match((error as Error).message, new RegExp(`^Invalid configuration: ${name} must be`), name);
    }
  }
  t.end();
});
