import type { DataSource } from 'typeorm';
import type { UnknownInitiatives } from './sync-config';
import type { SyncRecord } from './sync-writer';

/**
 * Decides, per initiative a workload names, whether it exists, is created (`unknown_initiatives:
 * create`, named after its id) or refuses the workload (`refuse`).
 */
export class InitiativeResolver {
  private readonly toCreate = new Set<string>();

  private constructor(
    private readonly organizationId: string,
    private readonly existing: Set<string>,
    private readonly policy: UnknownInitiatives,
  ) {}

  static async load(dataSource: DataSource, organizationId: string, policy: UnknownInitiatives) {
    const rows: { initiative_id: string }[] = await dataSource.query(
      'SELECT initiative_id FROM initiatives WHERE organization_id = $1',
      [organizationId],
    );
    return new InitiativeResolver(organizationId, new Set(rows.map((row) => row.initiative_id)), policy);
  }

  /** Null when the workload may be written; otherwise the refusal reason. */
  admit(initiativeId: string): string | null {
    if (this.existing.has(initiativeId) || this.toCreate.has(initiativeId)) return null;
    if (this.policy === 'refuse') {
      return `unknown initiative '${initiativeId}' (unknown_initiatives: refuse; create it with gpucap import or set unknown_initiatives: create)`;
    }
    this.toCreate.add(initiativeId);
    return null;
  }

  /** The initiatives this run creates (named after their ids, with no allocation: no budget). */
  created(): string[] {
    return [...this.toCreate];
  }

  records(): SyncRecord[] {
    return [...this.toCreate].map((initiativeId) => ({
      section: 'initiatives',
      value: { organization_id: this.organizationId, initiative_id: initiativeId, name: initiativeId },
    }));
  }
}
