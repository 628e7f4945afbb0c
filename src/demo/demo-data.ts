import type { DataSource } from 'typeorm';

export const DEMO_ORGANIZATION_ID = 'org-demo';

export interface DemoOptions {
  workloads: number;
  seed: number;
  now?: Date;
  onProgress?: (message: string) => void;
}

export interface DemoSummary {
  organizationId: string;
  initiativeIds: string[];
  workloads: number;
  samples: number;
}

/** Placeholder until the demo generator lands: an organization with two initiatives and nothing else. */
export async function writeDemoData(dataSource: DataSource, _options: DemoOptions): Promise<DemoSummary> {
  await dataSource.query(
    `INSERT INTO organizations (organization_id, name, timezone, budget_period_start, budget_period_end)
     VALUES ($1, 'Demo', 'UTC', date_trunc('month', now()), date_trunc('month', now()) + interval '3 months')
     ON CONFLICT DO NOTHING`,
    [DEMO_ORGANIZATION_ID],
  );
  await dataSource.query(
    `INSERT INTO initiatives (organization_id, initiative_id, name) VALUES ($1, 'vision', 'Vision'), ($1, 'nlp', 'NLP')
     ON CONFLICT DO NOTHING`,
    [DEMO_ORGANIZATION_ID],
  );
  return { organizationId: DEMO_ORGANIZATION_ID, initiativeIds: ['nlp', 'vision'], workloads: 0, samples: 0 };
}
