import { Module } from '@nestjs/common';
import { ScopedDatabase } from '../common/database/scoped-database';
import { AlertsController } from './alerts.controller';
import { AlertsService } from './alerts.service';

@Module({
  controllers: [AlertsController],
  providers: [AlertsService, ScopedDatabase],
})
export class AlertsModule {}
