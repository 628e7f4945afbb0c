import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseSyncConfig, SyncConfigError, syncTargets } from '../../../src/ingest/sync-config';
import { configuredTasks } from '../../../src/ingest/sync-runner';
import { parse as parseYaml } from 'yaml';

/** The config from the sync documentation, as written. */
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

describe('sync config: clusters and GPU shares', () => {
  const TWO_CLUSTERS = {
    organization_id: 'org-acme',
    kubernetes: { kubeconfig: './kubeconfig', mig_profiles: { '1g.16gb': 0.125 } },
    prometheus: { url: 'http://127.0.0.1:9090' },
    clusters: [
      {
        cluster_id: 'eks-west',
        kubernetes: { kubeconfig: './west' },
        prometheus: { url: 'http://prometheus-west:9090' },
      },
      {
        cluster_id: 'hpc2',
        slurm: { sacct_json_file: './hpc2.json', gpu_share_by_type: { 'a100l.2': 0.25 } },
      },
    ],
  };

  it('reads clusters[]: each entry names the cluster_id its sources write and keeps its own watermarks', () => {
    const config = parseSyncConfig(TWO_CLUSTERS, '/etc/gpucap');
    expect(config.kubernetes?.migProfiles).toEqual({ '1g.16gb': 0.125 });
    expect(config.clusters.map((entry) => entry.clusterId)).toEqual(['eks-west', 'hpc2']);
    expect(config.clusters[0].kubernetes).toMatchObject({
      kubeconfig: '/etc/gpucap/west',
      clusterId: 'eks-west',
    });
    expect(config.clusters[1].slurm).toMatchObject({
      sacctJsonFile: '/etc/gpucap/hpc2.json',
      clusterId: 'hpc2',
      gpuShareByType: { 'a100l.2': 0.25 },
    });
    expect(syncTargets(config).map(({ cluster, joinScope }) => ({ cluster, joinScope }))).toEqual([
      { cluster: '', joinScope: { except: ['eks-west', 'hpc2'] } },
      { cluster: 'eks-west', joinScope: { only: 'eks-west' } },
      { cluster: 'hpc2', joinScope: { only: 'hpc2' } },
    ]);
    expect(configuredTasks(config)).toEqual([
      { cluster: '', source: 'kubernetes' },
      { cluster: '', source: 'prometheus' },
      { cluster: 'eks-west', source: 'kubernetes' },
      { cluster: 'eks-west', source: 'prometheus' },
      { cluster: 'hpc2', source: 'slurm' },
    ]);
  });

  it('a config of clusters only, without top-level sources', () => {
    const config = parseSyncConfig({ organization_id: 'o', clusters: TWO_CLUSTERS.clusters }, '/');
    expect(config.kubernetes).toBeNull();
    expect(syncTargets(config).map((target) => target.cluster)).toEqual(['eks-west', 'hpc2']);
  });

  const entry = (value: Record<string, unknown>) => ({ organization_id: 'o', clusters: [value] });
  it.each([
    [{ organization_id: 'o', clusters: {} }, 'clusters must be an array of objects'],
    [entry({ kubernetes: {} }), 'clusters[0].cluster_id is required'],
    [entry({ cluster_id: 'a b', kubernetes: {} }), 'clusters[0].cluster_id must be an identifier'],
    [entry({ cluster_id: 'a' }), 'clusters[0] names no source'],
    [entry({ cluster_id: 'a', kubernetes: {}, region: 'x' }), "unknown key 'clusters[0].region'"],
    [
      entry({ cluster_id: 'a', kubernetes: { namespace: 'x' } }),
      "unknown key 'clusters[0].kubernetes.namespace'",
    ],
    [entry({ cluster_id: 'a', prometheus: { url: 'x' } }), 'clusters[0].prometheus.url is required'],
    [
      entry({ cluster_id: 'a', kubernetes: { cluster_id: 'b' } }),
      "clusters[0].kubernetes.cluster_id must be left out or equal clusters[0].cluster_id ('a')",
    ],
    [
      {
        organization_id: 'o',
        clusters: [
          { cluster_id: 'a', kubernetes: {} },
          { cluster_id: 'a', slurm: {} },
        ],
      },
      "clusters[1].cluster_id 'a' is already used by clusters[0].cluster_id",
    ],
    [
      { organization_id: 'o', kubernetes: { cluster_id: 'a' }, clusters: [{ cluster_id: 'a', slurm: {} }] },
      "clusters[0].cluster_id 'a' is already used by kubernetes.cluster_id",
    ],
    [
      { organization_id: 'o', kubernetes: { mig_profiles: { '1g.16gb': 2 } } },
      'kubernetes.mig_profiles.1g.16gb must be a number greater than 0 and at most 1',
    ],
    [
      entry({ cluster_id: 'a', slurm: { gpu_share_by_type: { 'a100l.2': '2/7' } } }),
      'clusters[0].slurm.gpu_share_by_type.a100l.2 must be a number greater than 0 and at most 1',
    ],
  ])('refuses a broken clusters entry or share map, naming the key (%#)', (document, message) => {
    expect(() => parseSyncConfig(document, '/')).toThrow(SyncConfigError);
    expect(() => parseSyncConfig(document, '/')).toThrow(message);
  });
});

describe('sync config: every rule names its key', () => {
  const at = (section: string, value: Record<string, unknown>) => ({
    organization_id: 'o',
    [section]: value,
  });
  const prometheus = (value: Record<string, unknown>) => at('prometheus', { url: 'http://p', ...value });
  it.each([
    [[], 'the config must be an object'],
    [null, 'the config must be an object'],
    [{ kubernetes: {} }, 'organization_id is required'],
    [{ organization_id: 'o', kubernetes: [] }, 'kubernetes must be an object'],
    [at('kubernetes', { a: 1, b: 2 }), "unknown keys 'kubernetes.a', 'kubernetes.b'"],
    [at('kubernetes', { context: ' ' }), 'kubernetes.context must be a non-empty string'],
    [
      at('kubernetes', { namespaces: ['a', ''] }),
      'kubernetes.namespaces must be an array of non-empty strings',
    ],
    [
      at('kubernetes', { initiative_by_namespace: { ml: 'a b' } }),
      'kubernetes.initiative_by_namespace.ml must be an identifier (A-Z a-z 0-9 . _ : -, at most 128)',
    ],
    [
      at('kubernetes', { initiative_by_namespace: 'ml' }),
      'kubernetes.initiative_by_namespace must be an object',
    ],
    [at('kubernetes', { mig_profiles: { ' ': 0.5 } }), 'kubernetes.mig_profiles has an empty name'],
    [at('kubernetes', { is_managed: 'yes' }), 'kubernetes.is_managed must be true or false'],
    [
      at('kubernetes', { timeout_seconds: '30' }),
      'kubernetes.timeout_seconds must be a number greater than 0',
    ],
    [prometheus({ url: 7 }), 'prometheus.url must be a non-empty string'],
    [prometheus({ step_seconds: 0 }), 'prometheus.step_seconds must be a number greater than 0'],
    [prometheus({ step_seconds: 1.5 }), 'prometheus.step_seconds must be a whole number'],
    [
      prometheus({ window_points: 11_001 }),
      "prometheus.window_points must be at most 11000 (Prometheus' limit)",
    ],
    [prometheus({ lag_seconds: -1 }), 'prometheus.lag_seconds must be a number greater than or equal to 0'],
    [
      prometheus({ gr_engine_active_unit: 'x' }),
      'prometheus.gr_engine_active_unit must be one of auto, ratio, percent',
    ],
    [
      prometheus({ basic_auth: { username: 'u' } }),
      'prometheus.basic_auth.username and a password (or password_file) are required',
    ],
    [
      prometheus({ basic_auth: { password_file: 'none' } }),
      "prometheus.basic_auth.password_file: cannot read 'none'",
    ],
    [
      prometheus({ bearer_token: 't', bearer_token_file: 'f' }),
      'prometheus.bearer_token and prometheus.bearer_token_file exclude each other',
    ],
    [at('slurm', { sacct_command: [] }), 'slurm.sacct_command must name a program'],
    [at('slurm', { cluster_id: 'a b' }), 'slurm.cluster_id must be an identifier: 1 to 128 characters'],
    [
      { organization_id: 'o', clusters: [{ cluster_id: 'a', slurm: {} }, 'b'] },
      'clusters[1] must be an object',
    ],
    // Keys class-transformer leaves out are unknown all the same; values are read as written.
    [JSON.parse('{"organization_id": "o", "slurm": {"constructor": 1}}'), "unknown key 'slurm.constructor'"],
    [JSON.parse('{"organization_id": "o", "__proto__": {"slurm": {}}}'), "unknown key '__proto__'"],
    [
      at('slurm', { initiative_by_account: { phys: { constructor: 1 } } }),
      'slurm.initiative_by_account.phys must be an identifier',
    ],
    [
      at('kubernetes', { namespaces: [{ constructor: 1 }] }),
      'kubernetes.namespaces must be an array of non-empty strings',
    ],
  ])('refuses %j: %s', (document, message) => {
    expect(() => parseSyncConfig(document, '/')).toThrow(SyncConfigError);
    expect(() => parseSyncConfig(document, '/')).toThrow(message);
  });

  it('keeps map entries of any name, null as left out, and fills in the defaults', () => {
    const config = parseSyncConfig(
      {
        organization_id: 'o',
        unknown_initiatives: null,
        kubernetes: { initiative_by_namespace: { constructor: 'team' }, timeout_seconds: null },
        slurm: { sacct_json_file: null },
      },
      '/',
    );
    expect(config.unknownInitiatives).toBe('refuse');
    expect(config.kubernetes).toMatchObject({
      initiativeByNamespace: { constructor: 'team' },
      timeoutSeconds: 30,
    });
    expect(config.slurm).toMatchObject({
      sacctJsonFile: null,
      sacctCommand: ['sacct', '--json', '--allusers'],
    });
  });
});

describe('the example configs of docs/configuration.md', () => {
  it('parse as documented: the issue config as written, and every key', () => {
    const guide = readFileSync(join(__dirname, '../../../docs/configuration.md'), 'utf8');
    const section = guide.slice(guide.indexOf('## Sync from Kubernetes, Prometheus and Slurm'));
    const [minimal, full, clusters] = [...section.matchAll(/```json\n([\s\S]*?)\n```/g)].map(
      (match) => match[1],
    );
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
      expect(config.kubernetes?.migProfiles).toEqual({ '1g.16gb': 0.142857 });
      expect(config.slurm?.gpuShareByType).toEqual({ 'a100l.2': 2 / 7 });
      const several = parseSyncConfig(JSON.parse(clusters), directory);
      expect(syncTargets(several).map((target) => target.cluster)).toEqual(['eks-west', 'eks-east', 'hpc2']);
      expect(several.clusters[2].slurm?.sacctCommand[0]).toBe('ssh');
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});

describe('sync config: prices', () => {
  const price = {
    organization_id: 'org-acme',
    instance_type: 'p4d.24xlarge',
    price_per_gpu_hour: '4.10',
    currency: 'EUR',
    pricing_model: 'reserved',
    effective_from: '2026-10-01T00:00:00Z',
  };

  it('takes import price records as written', () => {
    expect(parseSyncConfig({ ...ISSUE_CONFIG, prices: [price] }, '/etc/gpucap').prices).toEqual([price]);
    expect(parseSyncConfig(ISSUE_CONFIG, '/etc/gpucap').prices).toEqual([]);
  });

  it.each([
    [{ ...price, currency: 'EURO' }, 'prices[0]: currency must be an ISO 4217 currency code'],
    [{ ...price, price_per_gpu_hour: -1 }, 'prices[0]: price_per_gpu_hour must be a decimal number'],
    [
      { ...price, organization_id: 'org-other' },
      "prices[0].organization_id must be the config's organization_id",
    ],
  ])('refuses %p naming the record and the rule', (record, message) => {
    expect(() => parseSyncConfig({ ...ISSUE_CONFIG, prices: [record] }, '/etc/gpucap')).toThrow(message);
  });

  it('refuses prices that are not a list', () => {
    expect(() => parseSyncConfig({ ...ISSUE_CONFIG, prices: price }, '/etc/gpucap')).toThrow(SyncConfigError);
  });
});

describe('sync config: instance_types', () => {
  const entry = {
    organization_id: 'org-acme',
    instance_type: 'onprem-h100',
    gpu_model: 'H100 80GB',
    gpu_memory_gib: 80,
    mig_capable: true,
    mig_profiles: [
      { profile: '1g.10gb', memory_gib: 10, compute_slices: 1 },
      { profile: '7g.80gb', memory_gib: 80, compute_slices: 7 },
    ],
  };

  it('takes import instance type records as written', () => {
    const config = parseSyncConfig({ ...ISSUE_CONFIG, instance_types: [entry] }, '/etc/gpucap');
    expect(config.instanceTypes).toEqual([entry]);
    expect(parseSyncConfig(ISSUE_CONFIG, '/etc/gpucap').instanceTypes).toEqual([]);
  });

  it.each([
    [
      { ...entry, mig_profiles: [] },
      'instance_types[0]: mig_profiles must list the profiles of a MIG-capable GPU',
    ],
    [{ ...entry, gpu_memory_gib: 0 }, 'instance_types[0]: gpu_memory_gib must be a number greater than 0'],
    [
      { ...entry, organization_id: 'org-other' },
      "instance_types[0].organization_id must be the config's organization_id",
    ],
  ])('refuses %p naming the record and the rule', (record, message) => {
    expect(() => parseSyncConfig({ ...ISSUE_CONFIG, instance_types: [record] }, '/etc/gpucap')).toThrow(
      message,
    );
  });

  it('refuses instance types that are not a list', () => {
    expect(() => parseSyncConfig({ ...ISSUE_CONFIG, instance_types: entry }, '/etc/gpucap')).toThrow(
      'instance_types must be a list of instance type records (the import format)',
    );
  });
});
