import { Module } from '@nestjs/common';
import { ScopedDatabase } from '../common/database/scoped-database';
import { CostsController } from './costs.controller';
import { CostsService } from './costs.service';

@Module({
  controllers: [CostsController],
  providers: [CostsService, ScopedDatabase],
})
export class CostsModule {}
