import { Module } from '@nestjs/common';
import { ScopedDatabase } from '../common/database/scoped-database';
import { WorkloadsController } from './workloads.controller';
import { WorkloadsService } from './workloads.service';

@Module({
  controllers: [WorkloadsController],
  providers: [WorkloadsService, ScopedDatabase],
})
export class WorkloadsModule {}
