import { Module } from '@nestjs/common';
import { ScopedDatabase } from '../common/database/scoped-database';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';

@Module({
  controllers: [MetricsController],
  providers: [MetricsService, ScopedDatabase],
})
export class MetricsModule {}
