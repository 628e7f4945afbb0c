import { parse } from 'csv-parse/sync';
import request from 'supertest';
import { Clock } from '../../../src/common/clock';
import {
  authHeaders,
  createApiToken,
  insertSamples,
  insertWorkloads,
  type SampleSeed,
  seedOrganization,
  writeAs,
} from '../../support/factories';
import { type SampleStore, sealForStore } from '../../support/samples';
import { createTestApp, type TestApp } from '../../support/test-app';

/*
 * The FOCUS export's energy columns: each record holds the parts of the samples whose time falls in
 * its charge period (the energy_kwh rule, max_sample_gap_seconds 120). Every figure below is worked
 * out by hand from the readings, prices and carbon intensities seeded here.
 */

const MINUTE = 60_000;
const NOW = Date.parse('2026-11-20T12:00:00Z');
const RANGE = 'start_date=2026-11-18&end_date=2026-11-21';

/** `count` readings of `watts` from `from`, a minute apart. */
function readings(workloadId: string, from: string, count: number, watts: number): SampleSeed[] {
  return Array.from({ length: count }, (_, index) => ({
    workloadId,
    at: new Date(Date.parse(from) + index * MINUTE),
    powerUsage: watts,
  }));
}

interface EnergyRecord {
  ResourceId: string;
  ChargePeriodStart: string;
  ChargePeriodEnd: string;
  ListUnitPrice: string;
  SubAccountId: string;
  x_EnergyKWh: string | null;
  x_CarbonKgCO2e: string | null;
}

const energyOf = (record: EnergyRecord) => [
  record.ResourceId,
  record.ChargePeriodStart,
  record.ChargePeriodEnd,
  record.ListUnitPrice,
  record.x_EnergyKWh,
  record.x_CarbonKgCO2e,
];

/*
 * wl-night runs 23:00 to 01:30 across midnight and a price change at 01:00, 300 W each minute from
 * 23:00:30: every reading holds 60 s (the one at 23:59:30 until 00:00:30, all in its own record), the
 * last (01:29:30) 30 s until completed_at. The cluster's intensity is 300 g/kWh × PUE 1.2 until 00:30,
 * then 500 g/kWh × PUE 1 until 02:00, and unknown after.
 */
const NIGHT = [
  // 60 readings × 60 s × 300 W = 0.3 kWh, at 360 g/kWh: 108 g.
  ['wl-night', '2026-11-18T23:00:00Z', '2026-11-19T00:00:00Z', '2', '0.300000', '0.108000'],
  // 30 readings before 00:30 (the one at 00:29:30 keeps 360 g/kWh for its whole minute) and 30 after:
  // 0.15 kWh × 360 g + 0.15 kWh × 500 g = 129 g.
  ['wl-night', '2026-11-19T00:00:00Z', '2026-11-19T01:00:00Z', '2', '0.300000', '0.129000'],
  // 29 readings × 60 s and the last 30 s: 300 W × 1770 s = 0.1475 kWh, at 500 g/kWh.
  ['wl-night', '2026-11-19T01:00:00Z', '2026-11-19T01:30:00Z', '3', '0.147500', '0.073750'],
];
const OTHERS = [
  // Leaves its price at 01:00: the 30 readings before it (0.15 kWh at 500 g/kWh) have a record, the
  // 30 after it none.
  ['wl-leaves', '2026-11-19T00:30:00Z', '2026-11-19T01:00:00Z', '2', '0.150000', '0.075000'],
  // 90 readings of 300 W held 60 s: 0.45 kWh, half of it after 02:00, where no intensity is known.
  ['wl-dark', '2026-11-19T01:30:00Z', '2026-11-19T03:00:00Z', '3', '0.450000', null],
  // 30 readings of 300 W before 02:00 (0.15 kWh at 500 g/kWh), then 0 W: no intensity needed.
  ['wl-quiet', '2026-11-19T01:30:00Z', '2026-11-19T03:00:00Z', '3', '0.150000', '0.075000'],
  ['wl-unsampled', '2026-11-19T04:00:00Z', '2026-11-19T05:00:00Z', '3', null, null],
  // Running: two readings of 100 W hold 60 s each, the last nothing yet: 12 kJ, after 02:00.
  ['wl-running', '2026-11-20T11:00:00Z', '2026-11-20T12:00:00Z', '3', '0.003333', null],
];

describe.each<SampleStore>(['rows', 'day blocks'])(
  'FOCUS energy and carbon columns, readings in %s',
  (store) => {
    let t: TestApp;
    let org: string;
    let admin: Record<string, string>;
    let member: Record<string, string>;

    const focus = async (headers: Record<string, string>, range = RANGE) =>
      (await request(t.server).get(`/v1/costs/focus?${range}&limit=1000`).set(headers).expect(200)).body.data
        .records as EnergyRecord[];

    beforeAll(async () => {
      t = await createTestApp({ RESPONSE_CACHE_TTL_SECONDS: '0' });
      jest.spyOn(t.app.get(Clock), 'now').mockImplementation(() => new Date(NOW));
      org = await seedOrganization(t.dataSource, { initiatives: ['init-a', 'init-b'] });
      const run = (workloadId: string, from: string, to: string | null, initiativeId = 'init-a') => ({
        workloadId,
        initiativeId,
        status: to === null ? ('running' as const) : ('completed' as const),
        instanceType: 'p5',
        clusterId: 'c-grid',
        submittedAt: from,
        startedAt: from,
        completedAt: to,
      });
      await insertWorkloads(t.dataSource, org, [
        run('wl-night', '2026-11-18T23:00:00Z', '2026-11-19T01:30:00Z'),
        run('wl-other-team', '2026-11-18T23:00:00Z', '2026-11-19T00:30:00Z', 'init-b'),
        { ...run('wl-leaves', '2026-11-19T00:30:00Z', '2026-11-19T01:30:00Z'), instanceType: 'g5' },
        run('wl-dark', '2026-11-19T01:30:00Z', '2026-11-19T03:00:00Z'),
        run('wl-quiet', '2026-11-19T01:30:00Z', '2026-11-19T03:00:00Z'),
        run('wl-unsampled', '2026-11-19T04:00:00Z', '2026-11-19T05:00:00Z'),
        run('wl-running', '2026-11-20T11:00:00Z', null),
      ]);
      await writeAs(
        t.dataSource,
        `INSERT INTO gpu_prices (organization_id, instance_type, effective_from, effective_to, price_per_gpu_hour,
                               currency, minor_units, pricing_model)
       VALUES ($1, 'p5', '2026-11-01T00:00:00Z', '2026-11-19T01:00:00Z', 2, 'EUR', 2, 'on_demand'),
              ($1, 'p5', '2026-11-19T01:00:00Z', NULL, 3, 'EUR', 2, 'on_demand'),
              ($1, 'g5', '2026-11-19T00:00:00Z', '2026-11-19T01:00:00Z', 2, 'EUR', 2, 'spot')`,
        [org],
      );
      await writeAs(
        t.dataSource,
        `INSERT INTO carbon_intensities (organization_id, cluster_id, effective_from, effective_to, grams_co2e_per_kwh, pue)
       VALUES ($1, 'c-grid', '2026-11-18T00:00:00Z', '2026-11-19T00:30:00Z', 300, 1.2),
              ($1, 'c-grid', '2026-11-19T00:30:00Z', '2026-11-19T02:00:00Z', 500, 1)`,
        [org],
      );
      await insertSamples(t.dataSource, org, [
        ...readings('wl-night', '2026-11-18T23:00:30Z', 150, 300),
        ...readings('wl-other-team', '2026-11-18T23:00:30Z', 90, 300),
        ...readings('wl-leaves', '2026-11-19T00:30:00Z', 60, 300),
        ...readings('wl-dark', '2026-11-19T01:30:00Z', 90, 300),
        ...readings('wl-quiet', '2026-11-19T01:30:00Z', 30, 300),
        ...readings('wl-quiet', '2026-11-19T02:00:00Z', 60, 0),
        ...readings('wl-running', '2026-11-20T11:00:00Z', 3, 100),
      ]);
      await sealForStore(t.dataSource, [org], store);
      admin = authHeaders(await createApiToken(t.dataSource, org, { role: 'ORG_ADMIN' }), org);
      member = authHeaders(
        await createApiToken(t.dataSource, org, { role: 'MEMBER', initiativeIds: ['init-a'] }),
        org,
      );
    });

    afterAll(() => t.close());

    it('gives each record the energy and carbon of the readings in its charge period', async () => {
      const records = await focus(admin);
      const other = records.filter((record) => record.ResourceId === 'wl-other-team').map(energyOf);
      expect(records.filter((record) => record.ResourceId !== 'wl-other-team').map(energyOf)).toEqual([
        ...NIGHT,
        ...OTHERS,
      ]);
      // 90 readings: 60 before midnight, 30 after, the last held 30 s until completed_at.
      expect(other).toEqual([
        ['wl-other-team', '2026-11-18T23:00:00Z', '2026-11-19T00:00:00Z', '2', '0.300000', '0.108000'],
        ['wl-other-team', '2026-11-19T00:00:00Z', '2026-11-19T00:30:00Z', '2', '0.147500', '0.053100'],
      ]);
    });

    it("adds a run's records up to its energy_kwh and carbon_kg when all of it is priced and in range", async () => {
      const records = (await focus(admin)).filter((record) => record.ResourceId === 'wl-night');
      const detail = (await request(t.server).get('/v1/workloads/wl-night').set(admin).expect(200)).body.data;
      const sum = (column: 'x_EnergyKWh' | 'x_CarbonKgCO2e') =>
        records.reduce((total, record) => total + Math.round(Number(record[column]) * 1e6), 0) / 1e6;
      expect([sum('x_EnergyKWh'), sum('x_CarbonKgCO2e')]).toEqual([0.7475, 0.31075]);
      expect([detail.energy_kwh, detail.carbon_kg]).toEqual([0.7475, 0.3108]);
    });

    it('leaves out the readings before the range, even the part one holds into it', async () => {
      const records = await focus(admin, 'start_date=2026-11-19&end_date=2026-11-19T02:00:00Z');
      expect(records.filter((record) => record.ResourceId === 'wl-night').map(energyOf)).toEqual(
        NIGHT.slice(1),
      );
    });

    it('writes both columns into the CSV, empty where null', async () => {
      const csv = await request(t.server)
        .get(`/v1/costs/focus?${RANGE}`)
        .set(admin)
        .set('Accept', 'text/csv')
        .expect(200);
      const [header] = csv.text.split('\r\n');
      expect(header.split(',').slice(-3)).toEqual(['Tags', 'x_CarbonKgCO2e', 'x_EnergyKWh']);
      const rows = parse<Record<string, string>>(csv.text, { columns: true });
      expect(
        rows
          .filter((row) => row.ResourceId !== 'wl-other-team')
          .map((row) => [row.ResourceId, row.ChargePeriodStart, row.x_EnergyKWh, row.x_CarbonKgCO2e]),
      ).toEqual(
        [...NIGHT, ...OTHERS].map(([id, from, , , energy, carbon]) => [id, from, energy ?? '', carbon ?? '']),
      );
    });

    it("shows a MEMBER only their initiatives' records, with the same figures", async () => {
      const records = await focus(member);
      expect(new Set(records.map((record) => record.SubAccountId))).toEqual(new Set(['init-a']));
      expect(records.map(energyOf)).toEqual([...NIGHT, ...OTHERS]);
    });
  },
);
