import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseSyncConfig, SyncConfigError } from '../../../src/ingest/sync-config';
import { parse as parseYaml } from 'yaml';

/** The config of issue 11, as written. */
const ISSUE_CONFIG = {
  organization_id: 'org-acme',
  unknown_initiatives: 'create',
  kubernetes: {
    kubeconfig: './kubeconfig',
    namespaces: ['ml-vision', 'ml-nlp'],
    initiative_label: 'gpucap.io/initiative',
    submitter_label: 'gpucap.io/submitted-by',
    instance_type_label: 'node.kubernetes.io/instance-type',
  },
  prometheus: { url: 'http://127.0.0.1:9090', step_seconds: 60 },
  slurm: {
    sacct_json_file: './sacct.json',
    job_label: 'hpc_job',
    initiative_by_account: { physics: 'physics' },
    instance_type_by_partition: { 'gpu-a100': 'p4d.24xlarge' },
  },
};

describe('sync config', () => {
  it('reads the issue config as written, paths relative to the config file, defaults filled in', () => {
    const config = parseSyncConfig(ISSUE_CONFIG, '/etc/gpucap');
    expect(config.organizationId).toBe('org-acme');
    expect(config.unknownInitiatives).toBe('create');
    expect(config.kubernetes).toMatchObject({
      kubeconfig: '/etc/gpucap/kubeconfig',
      namespaces: ['ml-vision', 'ml-nlp'],
      gpuResource: 'nvidia.com/gpu',
      isManaged: true,
    });
    expect(config.prometheus).toMatchObject({
      url: 'http://127.0.0.1:9090',
      stepSeconds: 60,
      windowPoints: 60,
      overlapSeconds: 600,
      lagSeconds: 0,
      basicAuth: null,
      bearerToken: null,
    });
    expect(config.slurm).toMatchObject({ sacctJsonFile: '/etc/gpucap/sacct.json', jobLabel: 'hpc_job' });
  });

  it('reads the same config written in YAML', () => {
    const yaml = `
organization_id: org-acme
unknown_initiatives: refuse
kubernetes:
  namespaces: [ml-vision]
prometheus:
  url: https://prometheus.example:9090/
  bearer_token: secret-token
slurm:
  sacct_command: [sacct, --json, --allusers, --starttime, now-2days]
`;
    const config = parseSyncConfig(parseYaml(yaml), '/etc/gpucap');
    expect(config.kubernetes?.kubeconfig).toBeNull();
    expect(config.prometheus?.url).toBe('https://prometheus.example:9090');
    expect(config.prometheus?.bearerToken).toBe('secret-token');
    expect(config.slurm?.sacctCommand).toEqual(['sacct', '--json', '--allusers', '--starttime', 'now-2days']);
  });

  it.each([
    [{ ...ISSUE_CONFIG, organisation: 'x' }, "unknown key 'organisation'"],
    [{ ...ISSUE_CONFIG, unknown_initiatives: 'maybe' }, 'unknown_initiatives must be one of create, refuse'],
    [{ ...ISSUE_CONFIG, prometheus: { url: 'localhost:9090' } }, 'prometheus.url is required'],
    [{ ...ISSUE_CONFIG, prometheus: { url: 'http://p', window_points: 20_000 } }, 'at most 11000'],
    [{ ...ISSUE_CONFIG, slurm: { sacct_json_file: 'a', sacct_command: ['sacct'] } }, 'exclude each other'],
    [{ organization_id: 'org-acme' }, 'names no source'],
    [{ ...ISSUE_CONFIG, organization_id: 'org acme' }, 'organization_id must be an identifier'],
  ])('refuses a broken config, naming the key (%#)', (document, message) => {
    expect(() => parseSyncConfig(document, '/')).toThrow(SyncConfigError);
    expect(() => parseSyncConfig(document, '/')).toThrow(message);
  });
});

describe('the README example configs', () => {
  it('parse as documented: the issue config as written, and every key', () => {
    const readme = readFileSync(join(__dirname, '../../../README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Sync from Kubernetes, Prometheus and Slurm'));
    const [minimal, full] = [...section.matchAll(/```json\n([\s\S]*?)\n```/g)].map((match) => match[1]);
    expect(parseSyncConfig(JSON.parse(minimal), '/etc/gpucap')).toEqual(
      parseSyncConfig(ISSUE_CONFIG, '/etc/gpucap'),
    );
    const example = full;
    const directory = mkdtempSync(join(tmpdir(), 'gpucap-config-'));
    writeFileSync(join(directory, 'prometheus-password'), 'hunter2\n');
    try {
      const config = parseSyncConfig(JSON.parse(example), directory);
      expect(config.prometheus?.basicAuth).toEqual({ username: 'gpucap', password: 'hunter2' });
      expect(config.kubernetes?.initiativeByNamespace).toEqual({ 'ml-research': 'research' });
      expect(config.slurm?.instanceTypeByPartition).toEqual({ 'gpu-a100': 'p4d.24xlarge' });
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
