import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AlertsConfigError, alertsConfigOf, loadAlertsConfig } from '../../../src/alerts/alerts-config';

const VALID = {
  organization_id: 'org-acme',
  alertmanager: { url: 'http://127.0.0.1:9093/' },
  dashboard_url: 'https://gpucap.example.com/',
  rules: {
    budget_thresholds: [0.9, 0.75, 1.0],
    exhaustion_forecast: true,
    idle_workload: { max_utilization: 10, for_minutes: 60 },
    sync_stale_minutes: 30,
  },
};

function refusal(document: unknown): string {
  try {
    alertsConfigOf(document, '/');
  } catch (error) {
    expect(error).toBeInstanceOf(AlertsConfigError);
    return (error as Error).message;
  }
  throw new Error('accepted');
}

function withRules(rules: object) {
  return { ...VALID, rules };
}

describe('alerts config', () => {
  let directory: string;
  beforeAll(() => (directory = mkdtempSync(join(tmpdir(), 'gpucap-alerts-config-'))));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  it("reads docs/configuration.md's example from YAML: thresholds ascending, labelled as written", () => {
    const file = join(directory, 'alerts.yaml');
    writeFileSync(
      file,
      [
        'organization_id: org-acme',
        'alertmanager: { url: "http://127.0.0.1:9093" }',
        'dashboard_url: "https://gpucap.example.com/"',
        'rules:',
        '  budget_thresholds: [0.75, 0.9, 1.0]',
        '  exhaustion_forecast: true',
        '  idle_workload: { max_utilization: 10, for_minutes: 60 }',
        '  oversized_workload: { min_gpu_hours_saved_per_day: 12 }',
        '  sync_stale_minutes: 30',
      ].join('\n'),
    );
    expect(loadAlertsConfig(file)).toEqual({
      organizationId: 'org-acme',
      alertmanager: { url: 'http://127.0.0.1:9093', basicAuth: null, bearerToken: null, timeoutMs: 10_000 },
      dashboardUrl: 'https://gpucap.example.com/',
      rules: {
        budgetThresholds: [
          { value: 0.75, label: '0.75' },
          { value: 0.9, label: '0.9' },
          { value: 1, label: '1.0' },
        ],
        exhaustionForecast: true,
        idleWorkload: { maxUtilization: 10, forMinutes: 60 },
        oversizedWorkload: { minGpuHoursSavedPerDay: 12 },
        syncStaleMinutes: 30,
      },
    });
  });

  it('reads JSON too, and rules left out are off', () => {
    const file = join(directory, 'alerts.json');
    writeFileSync(file, JSON.stringify({ ...VALID, rules: {} }));
    expect(loadAlertsConfig(file).rules).toEqual({
      budgetThresholds: [],
      exhaustionForecast: false,
      idleWorkload: null,
      oversizedWorkload: null,
      syncStaleMinutes: null,
    });
  });

  it('takes basic auth with a password file, relative to the config', () => {
    writeFileSync(join(directory, 'am-password'), 's3cret\n');
    const config = alertsConfigOf(
      {
        ...VALID,
        alertmanager: {
          url: 'https://am.example',
          basic_auth: { username: 'gpucap', password_file: 'am-password' },
        },
      },
      directory,
    );
    expect(config.alertmanager.basicAuth).toEqual({ username: 'gpucap', password: 's3cret' });
    expect(config.alertmanager.bearerToken).toBeNull();
  });

  it('takes a bearer token', () => {
    const config = alertsConfigOf(
      { ...VALID, alertmanager: { url: 'https://am.example', bearer_token: 't0k' } },
      '/',
    );
    expect(config.alertmanager.bearerToken).toBe('t0k');
  });

  it.each([
    [{ ...VALID, organization_id: 'bad id' }, 'organization_id: must be 1 to 128 characters'],
    [{ ...VALID, alertmanager: undefined }, 'alertmanager: '],
    [{ ...VALID, alertmanager: { url: 'ftp://x' } }, 'alertmanager.url: must be an http(s) URL'],
    [
      { ...VALID, alertmanager: { url: 'http://x', bearer_token: 'a', bearer_token_file: 'b' } },
      'alertmanager.bearer_token and alertmanager.bearer_token_file exclude each other',
    ],
    [
      { ...VALID, alertmanager: { url: 'http://x', basic_auth: { username: 'u' } } },
      'alertmanager.basic_auth: a password (or password_file) is required',
    ],
    [
      { ...VALID, alertmanager: { url: 'http://x', basic_auth: { password: 'p' } } },
      'alertmanager.basic_auth.username: ',
    ],
    [
      { ...VALID, alertmanager: { url: 'http://x', timeout_seconds: 0 } },
      'alertmanager.timeout_seconds: must be a positive number',
    ],
    [{ ...VALID, dashboard_url: 'gpucap.example.com' }, 'dashboard_url: must be an http(s) URL'],
    [{ ...VALID, rules: undefined }, 'rules: '],
    [{ ...VALID, extra: 1 }, 'extra: is not a known key'],
    [withRules({ budget_tresholds: [0.9] }), 'rules.budget_tresholds: is not a known key'],
    [
      withRules({ budget_thresholds: [0.9, 'x'] }),
      'rules.budget_thresholds: each value in budget_thresholds must be a number',
    ],
    [
      withRules({ budget_thresholds: [0] }),
      'rules.budget_thresholds: each value in budget_thresholds must be a positive number',
    ],
    [withRules({ budget_thresholds: [] }), 'rules.budget_thresholds: must contain at least 1 elements'],
    [withRules({ budget_thresholds: [0.9, 0.9] }), 'rules.budget_thresholds: each threshold may appear once'],
    [withRules({ exhaustion_forecast: 'yes' }), 'rules.exhaustion_forecast: must be a boolean value'],
    [
      withRules({ idle_workload: { max_utilization: 101, for_minutes: 60 } }),
      'rules.idle_workload.max_utilization: must not be greater than 100',
    ],
    [
      withRules({ idle_workload: { max_utilization: 10 } }),
      'rules.idle_workload.for_minutes: must be an integer number',
    ],
    [
      withRules({ idle_workload: { max_utilization: 10, for_minutes: 60, extra: true } }),
      'rules.idle_workload.extra: is not a known key',
    ],
    [
      withRules({ oversized_workload: { min_gpu_hours_saved_per_day: 0 } }),
      'rules.oversized_workload.min_gpu_hours_saved_per_day: must be a positive number',
    ],
    [
      withRules({ oversized_workload: {} }),
      'rules.oversized_workload.min_gpu_hours_saved_per_day: must be a number conforming to the specified constraints',
    ],
    [withRules({ sync_stale_minutes: 0.5 }), 'rules.sync_stale_minutes: must be an integer number'],
  ])('refuses %j naming the key', (document, message) => {
    expect(refusal(document)).toContain(message);
  });

  it('refuses a document that is not a mapping, and a file that is not JSON or YAML', () => {
    expect(refusal([1, 2])).toContain('the config must be a mapping');
    const file = join(directory, 'broken.yaml');
    writeFileSync(file, 'rules: [unclosed');
    expect(() => loadAlertsConfig(file)).toThrow(/not valid JSON or YAML/);
    expect(() => loadAlertsConfig(join(directory, 'missing.yaml'))).toThrow('cannot read the config file');
  });
});
