import { Injectable } from '@nestjs/common';
import type { AuthScope } from '../common/auth/auth-scope';
import { ScopedDatabase } from '../common/database/scoped-database';
import { firingAlertsQuery } from './alerts.queries';
import type { AlertDto } from './dto/alert.dto';

@Injectable()
export class AlertsService {
  constructor(private readonly database: ScopedDatabase) {}

  /** What `gpucap alerts` last found firing, in the caller's scope. */
  async firing(scope: AuthScope): Promise<AlertDto[]> {
    const rows = await this.database.run<Omit<AlertDto, 'starts_at'> & { starts_at: Date }>(
      firingAlertsQuery(scope),
    );
    return rows.map((row) => ({
      alertname: row.alertname,
      labels: row.labels,
      annotations: row.annotations,
      starts_at: row.starts_at.toISOString(),
    }));
  }
}
