import { Module } from '@nestjs/common';
import { ScopedDatabase } from '../common/database/scoped-database';
import { CapacityController } from './capacity.controller';
import { CapacityService } from './capacity.service';

@Module({
  controllers: [CapacityController],
  providers: [CapacityService, ScopedDatabase],
})
export class CapacityModule {}
