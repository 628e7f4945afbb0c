import { Injectable } from '@nestjs/common';
import type { AuthScope } from '../common/auth/auth-scope';
import { ScopedDatabase } from '../common/database/scoped-database';
import { firingAlertsQuery } from './alerts.queries';
import type { AlertDto } from './dto/alert.dto';

@Injectable()
export class AlertsService {
  constructor(private readonly database: ScopedDatabase) {}

  /** What the last cycle of `gpucap alerts` found firing, in the caller's scope. */
  async firing(scope: AuthScope): Promise<AlertDto[]> {
    const rows = await this.database.run<Omit<AlertDto, 'starts_at'> & { starts_at: Date }>(
      firingAlertsQuery(scope),
    );
    return rows.map((row) => ({
      alertname: row.alertname,
      labels: ordered(row.labels, []),
      annotations: ordered(row.annotations, ['summary', 'description']),
      starts_at: row.starts_at.toISOString(),
    }));
  }
}

/**
 * jsonb keeps keys shortest first: the answer (and a CSV's columns) lists them by name instead, the
 * ones a person reads first ahead.
 */
function ordered(values: Record<string, string>, first: string[]): Record<string, string> {
  const rest = Object.keys(values)
    .filter((key) => !first.includes(key))
    .sort();
  return Object.fromEntries(
    [...first, ...rest].filter((key) => key in values).map((key) => [key, values[key]]),
  );
}
