import type { UnknownInitiatives } from './sync-config';
import type { SyncRecord } from './sync-records';

/**
 * Decides, per initiative a workload names, whether it exists, is created (`unknown_initiatives:
 * create`, named after its id) or refuses the workload (`refuse`).
 */
export class InitiativeResolver {
  private readonly toCreate = new Set<string>();

  /** `existing`: the organization's initiatives as stored when the source starts. */
  constructor(
    private readonly organizationId: string,
    private readonly existing: ReadonlySet<string>,
    private readonly policy: UnknownInitiatives,
  ) {}

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
